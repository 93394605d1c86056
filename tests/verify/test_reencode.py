"""verify/reencode: `tokenmill verify --against-tokenizer` re-encodes a share of a .pbin's documents from the
lines its sidecar names and reports the first document whose ids differ from the tokenizer's, by file, line and
token."""

import gzip
import json

import numpy as np

from conftest import GPT2, GPT2_EOD, run_tokenmill, write_jsonl_bytes
from tokenmill.formats.pbin import PbinFile, PbinWriter, read_sidecar


def test_verify_against_tokenizer_re_encodes_documents_from_their_lines(tmp_path):
    lines = [json.dumps({"text": f"document {i}: " + "word " * i}).encode() for i in range(60)]
    lines[10] = b"not json"  # skipped: documents after it come from one line further
    source = write_jsonl_bytes(tmp_path / "x.jsonl", lines)
    run_tokenmill("pack", source, "--tokenizer", GPT2, "--eod", GPT2_EOD, "--on-bad-line", "skip",
                  "-o", tmp_path / "x.pbin")
    result = run_tokenmill("verify", tmp_path / "x.pbin", "--against-tokenizer", "1.0")
    assert "no problem found" in result.stderr

    # Rewrite the file with one id changed in document 30 (line 32), its sidecar consistent with it.
    original, meta = PbinFile(tmp_path / "x.pbin"), read_sidecar(tmp_path / "x.pbin")
    tokens = np.array(original.tokens, dtype=np.int64)
    tokens[original.doc_offsets[30] + 3] += 1
    with PbinWriter(tmp_path / "y.pbin", 2) as writer:
        writer.write(tokens, original.doc_lengths)
        writer.sidecar = {key: value for key, value in meta.items() if key != "file"}
    assert run_tokenmill("verify", tmp_path / "y.pbin").returncode == 0  # structurally sound
    result = run_tokenmill("verify", tmp_path / "y.pbin", "--against-tokenizer", "1.0", check=False)
    assert result.returncode == 1
    assert f"y.pbin: document 30 ({source}:32) differs from what the tokenizer gives at token 3" in result.stderr


def test_lines_over_max_line_bytes_are_skipped_by_the_check_as_by_the_pack_plain_or_compressed(tmp_path):
    lines = [json.dumps({"text": f"document {i}: " + "word " * (i % 7)}).encode() for i in range(30)]
    lines[4] = json.dumps({"text": "a valid line, but longer than the longest allowed " * 4}).encode()
    plain = write_jsonl_bytes(tmp_path / "x.jsonl", lines)
    compressed = tmp_path / "x.jsonl.gz"
    compressed.write_bytes(gzip.compress(plain.read_bytes()))
    for source in (plain, compressed):
        output = tmp_path / f"{source.name}.pbin"
        run_tokenmill("pack", source, "--tokenizer", GPT2, "--eod", GPT2_EOD, "--on-bad-line", "skip",
                      "--max-line-bytes", "100", "-o", output)
        assert PbinFile(output).num_documents == 29  # the long line is a bad line, not a document
        result = run_tokenmill("verify", output, "--against-tokenizer", "1.0")
        assert "no problem found" in result.stderr
