"""cli.build: the verbs that make tokens refuse arguments that cannot make what was asked in one line, exit 1,
before reading or writing anything (their outputs: tests/pack/, tests/inputs/, tests/formats/test_merge.py)."""

from conftest import GPT2, GPT2_EOD, MIXED_JSONL, run_tokenmill


def test_pack_refuses_an_index_per_input_that_does_not_count_the_inputs(tmp_path):
    result = run_tokenmill("pack", MIXED_JSONL, "--tokenizer", GPT2, "--eod", GPT2_EOD, "-o", tmp_path / "x.pbin",
                           "--index", tmp_path / "a.idx", "--index", tmp_path / "b.idx", check=False)
    assert (result.returncode, result.stderr) == (1, "tokenmill: error: --index was given 2 times for 1 inputs\n")
    assert list(tmp_path.iterdir()) == []


def test_tokens_in_needs_the_eod_the_tokens_were_made_with_or_no_eod_and_not_both(tmp_path):
    common = ("tokens-in", tmp_path / "part.pbin", "-o", tmp_path / "x.pbin", "--tokenizer", GPT2)
    neither = run_tokenmill(*common, check=False)
    assert (neither.returncode, neither.stderr) == (
        1, "tokenmill: error: tokens-in needs --eod TOKEN, the EOD the tokens were made with (each document must end "
           "with it), or --no-eod for documents without one\n")
    both = run_tokenmill(*common, "--eod", GPT2_EOD, "--no-eod", check=False)
    assert (both.returncode, both.stderr) == (
        1, "tokenmill: error: tokens-in takes --eod TOKEN or --no-eod, not both\n")
    assert list(tmp_path.iterdir()) == []


def test_merge_takes_pbin_files_or_megatron_prefixes_not_a_mix(tmp_path):
    for inputs, output in ((["a.pbin", "b_text_document"], "x.pbin"), (["a.pbin", "b.pbin"], "x_text_document"),
                           (["a_text_document"], "x.pbin")):
        result = run_tokenmill("merge", *(tmp_path / name for name in inputs), "-o", tmp_path / output, check=False)
        assert (result.returncode, result.stderr) == (
            1, "tokenmill: error: merge takes either .pbin files only or Megatron prefixes only, output included\n")
    assert list(tmp_path.iterdir()) == []
