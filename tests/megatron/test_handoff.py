"""megatron_args.txt: the Megatron arguments that find a cache folder instead of rebuilding it."""

from conftest import DEMO_JSONL, GPT2, GPT2_EOD, run_tokenmill
from tokenmill.megatron.handoff import megatron_args
from tokenmill.megatron.job_tokenizer import JobTokenizer, job_tokenizer, null_tokenizer_flags


def arguments(text: str) -> list[str]:
    return [line for line in text.splitlines() if not line.startswith("#")]


def test_worked_example_the_demo_cache():
    text = megatron_args("data/cache/demo/seq512_seed1234", ["/data/megatron/demo_text_document"], 512, 1234,
                         "969,30,1", {"train": 20000, "valid": 200, "test": 20},
                         [job_tokenizer("0.19", null_tokenizer_flags(50257))])
    assert arguments(text) == ["--data-path /data/megatron/demo_text_document",
                               "--data-cache-path data/cache/demo/seq512_seed1234", "--split 969,30,1",
                               "--seq-length 512", "--seed 1234", "--train-samples 20000",
                               "--tokenizer-type NullTokenizer", "--vocab-size 50257"]
    # the counts Megatron derives from its evaluation flags are stated, with how it derives them
    assert "# valid: 200 samples; Megatron asks for (train_iters // eval_interval + 1) x eval_iters x global " \
           "batch size" in text.splitlines()
    assert "# test: 20 samples; Megatron asks for eval_iters x global batch size" in text.splitlines()
    assert "# NullTokenizer: the job's tokenizer.eod is 50256;" in text
    assert "extra token" not in text


def test_identifiers_given_as_they_are_say_that_no_flags_are_known():
    identifiers = {"class": "HuggingFaceTokenizer", "tokenizer_path": "/models/llama3"}
    text = megatron_args("c", ["0.5", "a", "0.5", "b"], 2048, 7, None, {"train": None},
                         [JobTokenizer(None, None, identifiers)], extra=0)
    assert arguments(text) == ["--data-path 0.5 a 0.5 b", "--data-cache-path c", "--seq-length 2048", "--seed 7"]
    assert "# train: one epoch (num_samples null)" in text
    assert 'no job flags are known for the identifiers {"class": "HuggingFaceTokenizer", "tokenizer_path": ' \
           '"/models/llama3"}' in text
    assert "add_extra_token_to_sequence=False" in text


def test_flags_of_two_versions_and_quoted_values():
    flags = ["--tokenizer-type", "HuggingFaceTokenizer", "--tokenizer-model", "/models/my model",
             "--tokenizer-special-tokens", "<a>", "<b>"]
    tokenizers = [job_tokenizer(version, flags) for version in ("0.19", "main")]
    text = megatron_args("c", ["a"], 8, 1, "1,0,0", {"train": 5}, tokenizers, token_dtypes={"int32"})
    assert arguments(text)[-4:] == ["--tokenizer-type HuggingFaceTokenizer", "--tokenizer-model '/models/my model'",
                                    "--tokenizer-special-tokens '<a>' '<b>'", "--per-dataset-sequences-path c/"
                                                                              "sequences_per_dataset.json"]
    assert "# tokenizer flags of the job (megatron-core 0.19.2 or Megatron-LM main (2026-08))" in text
    # the tokenizer's vocab_size is in its files: the file says what the fast path assumes
    assert "this data is int32: keep it only if vocab_size is above 65536" in text
    # Megatron loads the folder's tokenizer_config.json for the eos_token: what the folder must hold is said
    assert ("# HuggingFaceTokenizer: --tokenizer-model must be a folder (or a Hub name) holding tokenizer.json and a "
            "tokenizer_config.json whose eos_token is the data's end-of-document token (Megatron's eod); a path to a "
            "bare tokenizer.json fails inside Megatron") in text.splitlines()
    null = megatron_args("c", ["a"], 8, 1, "1,0,0", {"train": 5}, [job_tokenizer("0.19", null_tokenizer_flags(50257))])
    assert "HuggingFaceTokenizer" not in null


def test_no_sequences_file_where_megatron_would_misread_the_tokens():
    """A NullTokenizer job of 131072 ids reads the tokens as int32 on the fast path; uint16 data then
    comes out wrong, so the argument is not listed (it is where the sizes agree)."""
    job = [job_tokenizer("0.19", null_tokenizer_flags(131072, 2))]
    text = megatron_args("c", ["a"], 8, 1, "1,0,0", {"train": 5}, job, token_dtypes={"uint16"})
    assert not any("per-dataset-sequences-path" in line for line in arguments(text))
    assert "reads the tokens as int32 (vocab_size 131072) without the .idx header, and this data is uint16" in text
    assert arguments(text)[-3:] == ["--tokenizer-type NullTokenizer", "--vocab-size 131072",
                                    "--null-tokenizer-eod-id 2"]
    text = megatron_args("c", ["a"], 8, 1, "1,0,0", {"train": 5}, job, token_dtypes={"int32"})
    assert arguments(text)[-1] == "--per-dataset-sequences-path c/sequences_per_dataset.json"


def test_sample_index_writes_it_into_the_cache_folder(tmp_path):
    run_tokenmill("pack", DEMO_JSONL, "--tokenizer", GPT2, "--eod", GPT2_EOD, "-o", tmp_path / "demo.pbin")
    run_tokenmill("to-megatron", tmp_path / "demo.pbin", "-o", tmp_path / "demo_text_document")
    run_tokenmill("sample-index", tmp_path / "demo_text_document", "-o", tmp_path / "cache", "--seq-length", "256",
                  "--seed", "3", "--split", "1,0,0", "--num-samples", "100", "--vocab-size", "50257",
                  "--megatron-path-prefix", "/shared/demo_text_document")
    written = (tmp_path / "cache" / "megatron_args.txt").read_text()
    assert arguments(written) == ["--data-path /shared/demo_text_document", f"--data-cache-path {tmp_path / 'cache'}",
                                  "--split 1,0,0", "--seq-length 256", "--seed 3", "--train-samples 100",
                                  "--tokenizer-type NullTokenizer", "--vocab-size 50257",
                                  f"--per-dataset-sequences-path {tmp_path / 'cache' / 'sequences_per_dataset.json'}"]


def test_the_tokenizer_folder_megatrons_huggingface_tokenizer_loads(tmp_path):
    import json

    import pytest

    from tokenmill.errors import TokenmillError
    from tokenmill.megatron.handoff import write_hf_tokenizer_folder

    folder = write_hf_tokenizer_folder(GPT2, GPT2_EOD, tmp_path / "gpt2")
    assert (folder / "tokenizer.json").read_bytes() == GPT2.read_bytes()
    assert json.loads((folder / "tokenizer_config.json").read_text()) == {
        "eos_token": GPT2_EOD, "tokenizer_class": "PreTrainedTokenizerFast"}
    before = {path.name: path.stat().st_mtime_ns for path in folder.iterdir()}
    write_hf_tokenizer_folder(GPT2, GPT2_EOD, folder)  # unchanged: not rewritten
    assert {path.name: path.stat().st_mtime_ns for path in folder.iterdir()} == before
    with pytest.raises(TokenmillError, match="EOD token '<eos>' is not a single token"):
        write_hf_tokenizer_folder(GPT2, "<eos>", tmp_path / "bad")
    assert not (tmp_path / "bad").exists()
    shown = run_tokenmill("hf-tokenizer-folder", GPT2, "--eod", GPT2_EOD, "-o", tmp_path / "cli").stdout
    assert shown == f"{tmp_path / 'cli'}: tokenizer.json and tokenizer_config.json (eos_token '<|endoftext|>')\n"
