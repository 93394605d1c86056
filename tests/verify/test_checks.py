"""verify/checks: `tokenmill verify` — sound files pass; each planted defect is found and named."""

import json
import pickle
import shutil

import numpy as np
import pytest

from conftest import GPT2, GPT2_EOD, MIXED_JSONL, run_tokenmill
from tokenmill.verify.checks import verify


@pytest.fixture(scope="module")
def built_once(tmp_path_factory):
    """Raw index, .pbin, Megatron files and a cache folder for the mixed fixture, built once, by relative
    paths (the cache's description names the dataset as given), for :func:`built` to copy."""
    folder = tmp_path_factory.mktemp("verify")
    run_tokenmill("index", MIXED_JSONL, "-o", "mixed.idx", cwd=folder)
    run_tokenmill("pack", MIXED_JSONL, "--index", "mixed.idx", "--tokenizer", GPT2, "--eod", GPT2_EOD,
                  "-o", "mixed.pbin", cwd=folder)
    run_tokenmill("to-megatron", "mixed.pbin", "-o", "mixed", cwd=folder)
    run_tokenmill("sample-index", "mixed", "-o", "cache", "--seq-length", "16", "--seed", "1", "--split", "1,0,0",
                  "--num-samples", "300", "--vocab-size", "50257", cwd=folder)
    return folder


@pytest.fixture
def built(built_once, tmp_path, monkeypatch):
    """A copy of :func:`built_once` of the test's own, the working directory, so that a test may damage it."""
    shutil.copytree(built_once, tmp_path / "built")
    monkeypatch.chdir(tmp_path / "built")
    return tmp_path / "built"


def test_sound_files_verify_clean_and_the_cli_writes_a_stamp(built):
    paths = [built / "mixed.idx", built / "mixed.pbin", built / "mixed", built / "cache"]
    assert [verify(path, jsonl=MIXED_JSONL) for path in paths] == [[], [], [], []]
    run_tokenmill("verify", "--jsonl", MIXED_JSONL, *paths, "--stamp", built / "ok")
    assert (built / "ok").read_text().count("ok ") == 4


def test_pbin_sidecar_disagreements_are_found(built):
    meta_path = built / "mixed.pbin.meta.json"
    meta = json.loads(meta_path.read_text())
    meta["documents"] += 1
    meta["tokenizer"]["vocab_size"] = 1000
    meta_path.write_text(json.dumps(meta))
    problems = verify(built / "mixed.pbin")
    assert any("sidecar says documents = 51, the file has 50" in p for p in problems)
    assert any("beyond the vocabulary of 1000" in p for p in problems)


def test_changed_source_and_missing_eod_are_found(built, tmp_path):
    source = tmp_path / "source.jsonl"
    source.write_bytes(MIXED_JSONL.read_bytes())
    run_tokenmill("pack", source, "--tokenizer", GPT2, "--no-eod", "-o", tmp_path / "no_eod.pbin")
    meta = json.loads((tmp_path / "no_eod.pbin.meta.json").read_text())
    meta["tokenizer"]["eod_id"] = 50256
    (tmp_path / "no_eod.pbin.meta.json").write_text(json.dumps(meta))
    source.write_bytes(source.read_bytes() + b'{"text": "appended"}\n')
    problems = verify(tmp_path / "no_eod.pbin")
    assert any("50 documents do not end with the EOD id 50256" in p for p in problems)
    assert any("has changed since it was packed" in p for p in problems)


def test_cache_with_a_renamed_description_or_a_broken_shuffle_is_found(built):
    cache = built / "cache"
    shuffle = next(cache.glob("*-shuffle_index.npy"))
    np.save(shuffle, np.zeros(len(np.load(shuffle)), dtype=np.uint32))
    assert any("not a permutation" in p for p in verify(cache))
    description = next(cache.glob("*-description.txt"))
    description.write_text(description.read_text().replace('"random_seed": 1', '"random_seed": 2'))
    assert any("its md5 is" in p for p in verify(cache))


def test_overlapping_raw_index_and_pickled_code_are_found(tmp_path):
    (tmp_path / "x.idx").write_bytes(pickle.dumps([(0, 10), (5, 3)]))
    assert verify(tmp_path / "x.idx") == [f"{tmp_path / 'x.idx'}: line 2 starts at byte 5, inside or right at the "
                                          f"end of the line before it"]


def test_cli_exit_code_lists_every_problem(built):
    (built / "mixed.bin").write_bytes((built / "mixed.bin").read_bytes()[:-2])
    meta = json.loads((built / "mixed.pbin.meta.json").read_text())
    meta["tokens"] = 1
    (built / "mixed.pbin.meta.json").write_text(json.dumps(meta))
    result = run_tokenmill("verify", built / "mixed", built / "mixed.pbin", check=False)
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert "mixed.bin" in lines[0] and "bytes, but" in lines[0]
    assert "sidecar says tokens = 1" in lines[1]
    assert lines[-1] == "tokenmill: error: 2 problem(s) found in 2 file(s)"


def test_an_eod_inside_documents_is_warned_with_its_count_and_a_wrong_count_is_a_problem(tmp_path):
    """GPT-2's "Ċ" (a newline) as the EOD: the texts' own newlines are that id too."""
    from tokenmill.formats.pbin import PbinFile
    pbin = tmp_path / "newline.pbin"
    run_tokenmill("pack", MIXED_JSONL, "--tokenizer", GPT2, "--eod", "Ċ", "-o", pbin)
    inside = int(np.count_nonzero(PbinFile(pbin).tokens == 198)) - PbinFile(pbin).num_documents
    assert inside > 0
    warnings = []
    assert verify(pbin, warn=warnings.append) == []
    assert warnings == [f"{pbin}: warning: the EOD 'Ċ' (id 198) occurs {inside:,} times inside documents' own "
                        f"tokens: a reader that finds documents by scanning for the EOS (OLMo-core without its csv, "
                        f"datatrove) cuts them there"]
    meta = json.loads((tmp_path / "newline.pbin.meta.json").read_text())
    meta["eod_within_documents"] = 0
    (tmp_path / "newline.pbin.meta.json").write_text(json.dumps(meta))
    assert verify(pbin, warn=warnings.append) == [
        f"{pbin}: the sidecar says eod_within_documents = 0, the file's documents hold {inside} EOD ids before their "
        f"last token"]


def test_a_pbin_with_skipped_lines_is_a_problem_under_on_bad_line_error_only(tmp_path):
    """A switch of on_bad_line back to error keeps every unit (it is no part of their identity) and reruns verify,
    which refuses a build with skipped lines as a fresh build under error would stop: one line, file, line, why."""
    source = tmp_path / "x.jsonl"
    source.write_text('{"text": "one"}\n{"text": 5}\n{"text": "three"}\n')
    run_tokenmill("pack", source, "--tokenizer", GPT2, "--eod", GPT2_EOD, "--on-bad-line", "skip",
                  "-o", tmp_path / "x.pbin")
    pbin = tmp_path / "x.pbin"
    assert verify(pbin) == verify(pbin, on_bad_line="skip") == []
    assert verify(pbin, on_bad_line="error") == [
        f"{pbin}: {source}:2: text is not a string (a int): skipped (lines skipped in that file: 1), but "
        f"on_bad_line is error, which stops at that line: fix or remove it, or set on_bad_line: skip"]
    result = run_tokenmill("verify", "--on-bad-line", "error", pbin, "--stamp", tmp_path / "ok", check=False)
    assert result.returncode == 1 and f"{source}:2: text is not a string (a int): skipped" in result.stderr
    assert not (tmp_path / "ok").exists()
