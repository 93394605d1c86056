"""Every input byte is packed exactly once, and `verify` proves it: shards tile their file, no file is
packed twice unless asked, and a file that changes while it is packed is refused."""

from __future__ import annotations

import json

import pytest

from conftest import DEMO_JSONL, GPT2, GPT2_EOD, run_tokenmill
from tokenmill import FORMAT_VERSIONS
from tokenmill.errors import TokenmillError
from tokenmill.formats.pbin import read_sidecar
from tokenmill.pack.pretraining import PackSettings, pack
from tokenmill.verify.checks import verify
from tokenmill.verify.exactly_once import coverage_problems


@pytest.fixture
def corpus(tmp_path):
    """120 demo lines (~150 kB) and their raw index."""
    path = tmp_path / "corpus.jsonl"
    path.write_bytes(b"".join(DEMO_JSONL.read_bytes().splitlines(keepends=True)[:120]))
    run_tokenmill("index", path, "-o", tmp_path / "corpus.idx")
    return path


def pack_cli(out, *arguments, check=True):
    return run_tokenmill("pack", *arguments, "--tokenizer", GPT2, "--eod", GPT2_EOD, "-o", out, check=check)


@pytest.mark.slow
def test_shards_that_tile_the_file_verify_and_a_missing_shard_is_found(corpus, tmp_path):
    size = corpus.stat().st_size
    cuts = [0, 40_000, 90_000, size]
    shards = []
    for j, (start, end) in enumerate(zip(cuts[:-1], cuts[1:])):
        shards.append(tmp_path / f"s{j}.pbin")
        pack_cli(shards[-1], corpus, "--index", tmp_path / "corpus.idx", "--byte-range", f"{start}:{end}")
    run_tokenmill("merge", *shards, "-o", tmp_path / "all.pbin")
    assert verify(tmp_path / "all.pbin", inputs=[str(corpus)]) == []

    run_tokenmill("merge", shards[0], shards[2], "-o", tmp_path / "gap.pbin")  # the middle shard left out
    meta = read_sidecar(tmp_path / "gap.pbin")
    middle = read_sidecar(shards[1])["sources"][0]["byte_range"]
    assert verify(tmp_path / "gap.pbin") == [f"{tmp_path / 'gap.pbin'}: bytes {middle[0]}-{middle[1]} of {corpus} "
                                             f"are not packed"]
    assert coverage_problems("x.pbin", meta)  # the same finding from the sidecar alone


def test_a_stale_shard_from_another_layout_is_found(tmp_path, monkeypatch):
    """Shards of 300 kB and 700 kB layouts mixed: the ranges overlap and stop short of the file's end."""
    monkeypatch.chdir(tmp_path)
    with open("b.jsonl", "wb") as handle:
        handle.truncate(1_874_436)
    sources = [{"path": "b.jsonl", "bytes": 1_874_436, "byte_range": [0, 300_120]},
               {"path": "b.jsonl", "bytes": 1_874_436, "byte_range": [300_120, 700_350]},
               {"path": "b.jsonl", "bytes": 1_874_436, "byte_range": [600_080, 904_589]}]
    assert coverage_problems("b.pbin", {"sources": sources}) == [
        "b.pbin: bytes 600080-700350 of b.jsonl are packed twice",
        "b.pbin: bytes 904589-1874436 of b.jsonl are not packed (of 1874436)"]


def test_files_named_two_ways_are_one_file_and_a_lost_source_is_said(corpus, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "link.jsonl").hardlink_to(corpus)
    twice = {"documents": 0, "sources": [{"path": "corpus.jsonl", "bytes": corpus.stat().st_size},
                                         {"path": "./link.jsonl", "bytes": corpus.stat().st_size}]}
    assert coverage_problems("x.pbin", twice) == [  # paths as resolved against the sidecar's folder, normalised
        "x.pbin: corpus.jsonl is packed 2 times (allow_duplicate_inputs is off)",
        "x.pbin: link.jsonl is packed 2 times (allow_duplicate_inputs is off)"]
    lost = {"sources": [{"path": "gone.jsonl", "bytes": 5}]}
    assert coverage_problems("x.pbin", lost) == [
        f"x.pbin: source gone.jsonl not found (resolved against ., then {tmp_path}: a sidecar without a format names "
        f"paths relative to where it was written; rebuild it to make them relative to its folder); its bytes cannot "
        f"be checked"]
    lost["format"] = FORMAT_VERSIONS["pbin"]  # today's: relative to the sidecar's folder only
    assert coverage_problems("out/x.pbin", lost) == [
        "out/x.pbin: source out/gone.jsonl not found (resolved against out); its bytes cannot be checked"]


@pytest.mark.parametrize("edit, message", [
    (lambda meta: meta["sources"][0].update(byte_range=None), "sources[0].byte_range: None is not [start, end]"),
    (lambda meta: meta["sources"][0].update(byte_range=["a", "b"]), "sources[0].byte_range: ['a', 'b'] is not"),
    (lambda meta: meta.update(allow_duplicate_inputs="no"), "allow_duplicate_inputs: 'no' is not true or false"),
    (lambda meta: meta.update(eod_in_text="x"), "eod_in_text: x is not a list of [first, stop] ranges"),
])
def test_a_hand_edited_sidecar_is_named_not_a_traceback(corpus, tmp_path, edit, message):
    pack_cli(tmp_path / "out.pbin", corpus)
    meta_path = tmp_path / "out.pbin.meta.json"
    meta = json.loads(meta_path.read_text())
    edit(meta)
    meta_path.write_text(json.dumps(meta))
    result = run_tokenmill("verify", tmp_path / "out.pbin", check=False)
    assert result.returncode == 1 and message in result.stderr and "Traceback" not in result.stderr


def test_merge_refuses_parts_made_differently_or_without_a_sidecar(corpus, tmp_path):
    pack_cli(tmp_path / "a.pbin", corpus)
    pack_cli(tmp_path / "b.pbin", corpus, "--no-special-tokens", "--allow-duplicate-inputs")
    refused = run_tokenmill("merge", tmp_path / "a.pbin", tmp_path / "b.pbin", "-o", tmp_path / "m.pbin", check=False)
    assert refused.stderr.strip() == (f"tokenmill: error: {tmp_path / 'b.pbin'}: packed with tokenizer "
                                      f"add_special_tokens False, {tmp_path / 'a.pbin'} with True; cannot merge parts "
                                      f"made differently")
    (tmp_path / "bare.pbin").write_bytes((tmp_path / "a.pbin").read_bytes())
    refused = run_tokenmill("merge", tmp_path / "bare.pbin", tmp_path / "a.pbin", "-o", tmp_path / "m.pbin",
                            check=False)
    assert f"{tmp_path / 'bare.pbin'}: has no sidecar" in refused.stderr and not (tmp_path / "m.pbin").exists()


def test_verify_names_inputs_missing_extra_or_out_of_order(corpus, tmp_path):
    other = tmp_path / "other.jsonl"
    other.write_bytes(b'{"text": "other"}\n')
    pack_cli(tmp_path / "two.pbin", corpus, other)
    pbin = tmp_path / "two.pbin"
    assert verify(pbin, inputs=[str(corpus), str(other)]) == []
    assert verify(pbin, inputs=[str(other), str(corpus)]) == [f"{pbin}: its inputs are packed in another order "
                                                              f"than given"]
    assert verify(pbin, inputs=[str(corpus)]) == [f"{pbin}: it packs 1 files that are not its inputs (first: {other})"]
    third = str(tmp_path / "third.jsonl")
    assert verify(pbin, inputs=[str(corpus), str(other), third]) == [
        f"{pbin}: 1 of its 3 inputs are not packed in it (first: {third})"]


def test_an_input_named_twice_is_refused_by_pack_unless_allowed_and_verify_knows(corpus, tmp_path):
    refused = pack_cli(tmp_path / "twice.pbin", corpus, corpus, check=False)
    assert refused.returncode == 1 and not (tmp_path / "twice.pbin").exists()
    assert refused.stderr.strip() == (f"tokenmill: error: {corpus}: is the input {corpus} again and would be packed "
                                      f"twice (pass --allow-duplicate-inputs to pack it once per mention)")
    pack_cli(tmp_path / "twice.pbin", corpus, corpus, "--allow-duplicate-inputs")
    meta = read_sidecar(tmp_path / "twice.pbin")
    assert meta["allow_duplicate_inputs"] is True and meta["documents"] == 240
    assert verify(tmp_path / "twice.pbin") == []
    meta["allow_duplicate_inputs"] = False
    assert coverage_problems("twice.pbin", meta) == [f"twice.pbin: {corpus} is packed 2 times "
                                                     f"(allow_duplicate_inputs is off)"]


def test_an_input_that_grows_while_it_is_packed_is_refused_and_nothing_is_written(tmp_path):
    """The input gains a line after it was read (the log of its bad line is the moment): the job must not
    end with a sidecar whose size and hash describe bytes that were never packed."""
    corpus = tmp_path / "growing.jsonl"
    corpus.write_bytes(b'{"text": "one"}\nnot json\n{"text": "two"}\n')

    def append_once(message: str) -> None:
        if "skipped" in message:
            with open(corpus, "ab") as handle:
                handle.write(b'{"text": "appended while packing"}\n')

    settings = PackSettings(tokenizer_path=str(GPT2), eod=GPT2_EOD, on_bad_line="skip")
    with pytest.raises(TokenmillError, match=r"growing\.jsonl: modified while it was being packed \(41 → 76 bytes\); "
                                             r"nothing was written"):
        pack([str(corpus)], str(tmp_path / "out.pbin"), settings, log=append_once)
    assert sorted(path.name for path in tmp_path.iterdir()) == ["growing.jsonl"]


def test_the_sidecar_hash_covers_the_bytes_packed(corpus, tmp_path):
    pack_cli(tmp_path / "out.pbin", corpus)
    source = json.loads((tmp_path / "out.pbin.meta.json").read_text())["sources"][0]
    assert source["bytes"] == corpus.stat().st_size
    with open(corpus, "ab") as handle:
        handle.write(b'{"text": "later"}\n')
    assert any(f"{corpus} is {corpus.stat().st_size} bytes now, {source['bytes']} when packed" in problem
               for problem in verify(tmp_path / "out.pbin"))
