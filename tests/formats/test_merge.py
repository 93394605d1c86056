"""Merging .pbin parts (tokenmill.formats.merge): parts packed differently are refused, naming both."""

from __future__ import annotations

import json

from conftest import DATA, DEMO_JSONL, GPT2, run_tokenmill


def test_parts_of_two_types_over_one_vocabulary_file_are_refused(tmp_path):
    """BertWordPieceCase and BertWordPieceLowerCase read the same vocab.txt (one sha256) and give other ids."""
    vocab = json.loads((DATA / "minilm-bert.tokenizer.json").read_text())["model"]["vocab"]
    (tmp_path / "vocab.txt").write_text("".join(f"{token}\n" for token in sorted(vocab, key=vocab.get)))
    (tmp_path / "in.jsonl").write_bytes(b"".join(DEMO_JSONL.read_bytes().splitlines(keepends=True)[:20]))
    for kind in ("BertWordPieceCase", "BertWordPieceLowerCase"):
        run_tokenmill("pack", tmp_path / "in.jsonl", "--tokenizer", tmp_path / "vocab.txt", "--tokenizer-type", kind,
                      "-o", tmp_path / f"{kind}.pbin")
    result = run_tokenmill("merge", tmp_path / "BertWordPieceCase.pbin", tmp_path / "BertWordPieceLowerCase.pbin",
                           "-o", tmp_path / "out.pbin", check=False)
    assert result.returncode == 1 and result.stderr == (
        f"tokenmill: error: {tmp_path / 'BertWordPieceLowerCase.pbin'}: packed with tokenizer type "
        f"'BertWordPieceLowerCase', {tmp_path / 'BertWordPieceCase.pbin'} with 'BertWordPieceCase'; cannot merge "
        f"parts made differently\n")
    assert not (tmp_path / "out.pbin").exists()


def test_a_merge_sums_its_parts_counts_of_eod_ids_inside_documents(tmp_path):
    lines = DEMO_JSONL.read_bytes().splitlines(keepends=True)
    counts = []
    for k in range(2):
        (tmp_path / f"{k}.jsonl").write_bytes(b"".join(lines[30 * k:30 * k + 30]))
        run_tokenmill("pack", tmp_path / f"{k}.jsonl", "--tokenizer", GPT2, "--eod", "Ċ",
                      "-o", tmp_path / f"{k}.pbin")
        counts.append(json.loads((tmp_path / f"{k}.pbin.meta.json").read_text())["eod_within_documents"])
    run_tokenmill("merge", tmp_path / "0.pbin", tmp_path / "1.pbin", "-o", tmp_path / "out.pbin")
    assert json.loads((tmp_path / "out.pbin.meta.json").read_text())["eod_within_documents"] == sum(counts) > 0


def test_parts_packed_under_error_and_skip_merge_and_under_error_a_part_with_skipped_lines_is_refused(tmp_path):
    """on_bad_line is no part of a unit's identity: a part packed under error (no bad line) is byte for byte what
    skip makes of it, so parts of both policies merge; under error, a part with skipped lines is refused in one
    line naming its file, the line and why, as a fresh pack under error stops there."""
    lines = DEMO_JSONL.read_bytes().splitlines(keepends=True)
    (tmp_path / "0.jsonl").write_bytes(b"".join(lines[:20]))
    (tmp_path / "1.jsonl").write_bytes(b"".join(lines[20:25]) + b"not json\n" + b"".join(lines[25:40]))
    pack = ("--tokenizer", GPT2, "--eod", "<|endoftext|>")
    run_tokenmill("pack", tmp_path / "0.jsonl", *pack, "--on-bad-line", "error", "-o", tmp_path / "0-error.pbin")
    run_tokenmill("pack", tmp_path / "0.jsonl", *pack, "--on-bad-line", "skip", "-o", tmp_path / "0-skip.pbin")
    assert (tmp_path / "0-error.pbin.meta.json").read_bytes() == (tmp_path / "0-skip.pbin.meta.json").read_bytes()
    run_tokenmill("pack", tmp_path / "1.jsonl", *pack, "--on-bad-line", "skip", "-o", tmp_path / "1.pbin")
    parts = [tmp_path / "0-error.pbin", tmp_path / "1.pbin"]
    run_tokenmill("merge", *parts, "-o", tmp_path / "skip.pbin", "--on-bad-line", "skip")
    assert json.loads((tmp_path / "skip.pbin.meta.json").read_text())["skipped"] == {
        "invalid JSON (invalid literal, expected 'null' at byte 0)": 1}
    result = run_tokenmill("merge", *parts, "-o", tmp_path / "error.pbin", "--on-bad-line", "error", check=False)
    assert result.returncode == 1 and result.stderr == (
        f"tokenmill: error: {tmp_path / '1.pbin'}: {tmp_path / '1.jsonl'}:6: invalid JSON (invalid literal, expected "
        f"'null' at byte 0): skipped (lines skipped in that "
        f"file: 1), but on_bad_line is error, which stops at that line: fix or remove it, or "
        f"set on_bad_line: skip\n")
    assert not (tmp_path / "error.pbin").exists()
