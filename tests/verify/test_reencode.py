"""verify/reencode: `tokenmill verify --against-tokenizer` re-encodes a share of a .pbin's documents from the
lines its sidecar names and reports the first document whose ids differ from the tokenizer's, by file, line and
token."""

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
