"""Bad input across the verbs: one line naming the file and what is wrong, exit 1, no output left."""

import json

import pytest

from conftest import GPT2, GPT2_EOD, MIXED_JSONL, run_tokenmill, write_jsonl_bytes


def assert_one_line_error(result, *fragments):
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("tokenmill: error: ") and "Traceback" not in result.stderr
    for fragment in fragments:
        assert fragment in lines[0]


def test_crlf_and_escaped_nul_are_good_lines_and_a_raw_nul_is_not(tmp_path):
    good = write_jsonl_bytes(tmp_path / "good.jsonl",
                             [b'{"text": "windows line"}\r', b'{"text": "nul \\u0000 escaped"}'])
    run_tokenmill("pack", good, "--tokenizer", GPT2, "--eod", GPT2_EOD, "-o", tmp_path / "good.pbin")
    bad = write_jsonl_bytes(tmp_path / "bad.jsonl", [b'{"text": "fine"}', b'{"text": "raw \x00 nul"}'])
    result = run_tokenmill("pack", bad, "--tokenizer", GPT2, "--no-eod", "-o", tmp_path / "bad.pbin", check=False)
    assert_one_line_error(result, f"{bad}:2: invalid JSON")
    assert not (tmp_path / "bad.pbin").exists()


def test_empty_input_file_packs_to_an_empty_pbin_that_says_so(tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    run_tokenmill("pack", empty, "--tokenizer", GPT2, "--no-eod", "-o", tmp_path / "empty.pbin")
    meta = json.loads((tmp_path / "empty.pbin.meta.json").read_text())
    assert (meta["documents"], meta["tokens"], meta["sources"][0]["lines"]) == (0, 0, 0)


@pytest.mark.parametrize("verb_args, fragment", [
    (["to-megatron", "{tmp}/missing.pbin", "-o", "{tmp}/out"], "missing.pbin: cannot read (No such file"),
    (["to-megatron", "{tmp}/foreign.pbin", "-o", "{tmp}/out"], "foreign.pbin: not a .pbin file"),
    (["merge", "{tmp}/foreign.pbin", "-o", "{tmp}/out.pbin"], "foreign.pbin: not a .pbin file"),
    (["merge", "{tmp}/nothing", "-o", "{tmp}/out"], "nothing.idx: cannot read (No such file"),
    (["merge", "{tmp}/nothing", "-o", "{tmp}/out.pbin"], "either .pbin files only or Megatron prefixes only"),
    (["sample-index", "{tmp}/nothing", "-o", "{tmp}/cache", "--seq-length", "8", "--seed", "1", "--epochs", "1",
      "--vocab-size", "10"], "nothing.idx: cannot read (No such file"),
    (["sample-index", "{tmp}/nothing", "-o", "{tmp}/cache", "--seq-length", "8", "--seed", "1", "--epochs", "1",
      "--tokenizer-identifiers", "[1, 2]"], "--tokenizer-identifiers: expected a JSON object"),
    (["pack", "{tmp}/missing.jsonl", "--tokenizer", str(GPT2), "--no-eod", "-o", "{tmp}/out.pbin"],
     "missing.jsonl: input file not found"),
    (["pack", str(MIXED_JSONL), "--tokenizer", "{tmp}/missing.json", "--no-eod", "-o", "{tmp}/out.pbin"],
     "missing.json: tokenizer file not found"),
    (["pack", str(MIXED_JSONL), "--tokenizer", str(GPT2), "--no-eod", "--index", "{tmp}/foreign.pbin", "-o",
      "{tmp}/out.pbin"],
     "foreign.pbin: not a readable index pickle"),
    (["verify", "{tmp}/nothing"], "nothing: no such file"),
])
def test_bad_paths_and_foreign_files_give_one_line_errors(tmp_path, verb_args, fragment):
    (tmp_path / "foreign.pbin").write_bytes(b"PK\x03\x04 this is a zip file, not a pbin" * 3)
    args = [arg.format(tmp=tmp_path) for arg in verb_args]
    assert_one_line_error(run_tokenmill(*args, check=False), fragment)
    assert not (tmp_path / "out.pbin").exists() and not (tmp_path / "out.idx").exists()
    assert not (tmp_path / "cache").exists()


@pytest.mark.slow
def test_a_50_mb_line_is_indexed_and_judged_like_any_other(tmp_path):
    huge = json.dumps({"body": "x" * 50_000_000}).encode()  # valid JSON, but no "text" key
    source = write_jsonl_bytes(tmp_path / "huge.jsonl", [b'{"text": "small"}', huge, b'{"text": "after"}'])
    run_tokenmill("index", source, "-o", tmp_path / "huge.idx")
    result = run_tokenmill("pack", source, "--index", tmp_path / "huge.idx", "--tokenizer", GPT2, "--no-eod",
                           "-o", tmp_path / "huge.pbin", check=False)
    assert_one_line_error(result, f"{source}:2: no key 'text'")
    run_tokenmill("pack", source, "--tokenizer", GPT2, "--no-eod", "--on-bad-line", "skip", "-o",
                  tmp_path / "huge.pbin")
    assert json.loads((tmp_path / "huge.pbin.meta.json").read_text())["documents"] == 2


def test_debug_shows_the_traceback_that_users_are_spared(tmp_path):
    result = run_tokenmill("--debug", "verify", tmp_path / "nothing", check=False)
    assert result.returncode == 1 and "Traceback" in result.stderr
    assert result.stderr.strip().splitlines()[-1].startswith("tokenmill: error: ")
