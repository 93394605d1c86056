"""Every verb creates its output's folder, as pack does (once its arguments are found good)."""

from __future__ import annotations

import pytest

from conftest import GPT2, GPT2_EOD, MIXED_JSONL, run_tokenmill


@pytest.fixture(scope="module")
def packed(tmp_path_factory):
    folder = tmp_path_factory.mktemp("packed")
    run_tokenmill("pack", MIXED_JSONL, "--tokenizer", GPT2, "--eod", GPT2_EOD, "-o", folder / "p.pbin")
    return folder / "p.pbin"


@pytest.mark.parametrize(("verb", "output"), [
    (lambda pbin, out: ["index", MIXED_JSONL, "-o", out], "new/a.idx"),
    (lambda pbin, out: ["merge", pbin, pbin, "-o", out], "new/m.pbin"),
    (lambda pbin, out: ["to-megatron", pbin, "-o", out], "new/deeper/a_text_document"),
    (lambda pbin, out: ["verify", pbin, "--stamp", out], "new/ok"),
    (lambda pbin, out: ["report", pbin, "-o", out], "new/r.html"),
])
def test_a_verb_writes_into_a_folder_that_does_not_exist_yet(packed, tmp_path, verb, output):
    run_tokenmill(*verb(packed, tmp_path / output))
    written = tmp_path / output
    assert written.exists() or written.with_suffix(".bin").exists()


def test_a_refused_run_leaves_no_folder(tmp_path):
    result = run_tokenmill("to-megatron", tmp_path / "missing.pbin", "-o", tmp_path / "new/a", check=False)
    assert result.returncode == 1 and not (tmp_path / "new").exists()


def test_verify_made_from_checks_the_conversions_dtype_against_the_pbins_vocabulary(packed, tmp_path):
    """The workflow's verify passes --made-from: a Megatron .bin of another dtype than Megatron's rule gives
    for the .pbin's vocabulary is a problem in one line."""
    run_tokenmill("to-megatron", packed, "-o", tmp_path / "right")
    run_tokenmill("verify", "--made-from", packed, "--", packed, tmp_path / "right")
    run_tokenmill("to-megatron", packed, "-o", tmp_path / "wide", "--vocab-size", "70000")
    result = run_tokenmill("verify", "--made-from", packed, "--", packed, tmp_path / "wide", check=False)
    assert result.returncode == 1
    assert "int32 tokens, but Megatron's preprocess_data.py writes uint16" in result.stderr
