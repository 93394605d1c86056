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
