"""megatron_args.txt: the Megatron arguments that find a cache folder instead of rebuilding it."""

from conftest import DEMO_JSONL, GPT2, GPT2_EOD, run_tokenmill
from tokenmill.handoff import megatron_args
from tokenmill.sample_index import null_tokenizer_identifiers


def arguments(text: str) -> list[str]:
    return [line for line in text.splitlines() if not line.startswith("#")]


def test_worked_example_the_demo_cache():
    text = megatron_args("data/cache/demo/seq512_seed1234", ["/data/megatron/demo_text_document"], 512, 1234,
                         "969,30,1", {"train": 20000, "valid": 200, "test": 20}, null_tokenizer_identifiers(50257))
    assert arguments(text) == ["--data-path /data/megatron/demo_text_document",
                               "--data-cache-path data/cache/demo/seq512_seed1234", "--split 969,30,1",
                               "--seq-length 512", "--seed 1234", "--train-samples 20000",
                               "--tokenizer-type NullTokenizer", "--vocab-size 50257"]
    # the counts Megatron derives from its evaluation flags are stated, with how it derives them
    assert "# valid: 200 samples; Megatron asks for (train_iters // eval_interval + 1) x eval_iters x global " \
           "batch size" in text.splitlines()
    assert "# test: 20 samples; Megatron asks for eval_iters x global batch size" in text.splitlines()
    assert "extra token" not in text


def test_another_tokenizer_and_no_extra_token_are_named():
    identifiers = {"class": "HuggingFaceTokenizer", "tokenizer_path": "/models/llama3"}
    text = megatron_args("c", ["0.5", "a", "0.5", "b"], 2048, 7, None, {"train": None}, identifiers, extra=0)
    assert arguments(text) == ["--data-path 0.5 a 0.5 b", "--data-cache-path c", "--seq-length 2048", "--seed 7"]
    assert "# train: one epoch (num_samples null)" in text
    assert "'tokenizer_path': '/models/llama3'" in text
    assert "add_extra_token_to_sequence=False" in text


def test_sample_index_writes_it_into_the_cache_folder(tmp_path):
    run_tokenmill("pack", DEMO_JSONL, "--tokenizer", GPT2, "--eod", GPT2_EOD, "-o", tmp_path / "demo.pbin")
    run_tokenmill("to-megatron", tmp_path / "demo.pbin", "-o", tmp_path / "demo_text_document")
    run_tokenmill("sample-index", tmp_path / "demo_text_document", "-o", tmp_path / "cache", "--seq-length", "256",
                  "--seed", "3", "--split", "1,0,0", "--num-samples", "100", "--vocab-size", "50257",
                  "--megatron-path-prefix", "/shared/demo_text_document")
    written = (tmp_path / "cache" / "megatron_args.txt").read_text()
    assert arguments(written) == ["--data-path /shared/demo_text_document", f"--data-cache-path {tmp_path / 'cache'}",
                                  "--split 1,0,0", "--seq-length 256", "--seed 3", "--train-samples 100",
                                  "--tokenizer-type NullTokenizer", "--vocab-size 50257"]
