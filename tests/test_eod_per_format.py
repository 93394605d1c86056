"""A text that already ends with the EOD: each format follows its own peer.

Facts measured on the peers: Modalities 0.5.0 appends the EOD only when a document's ids do not already
end with it; Megatron's ``preprocess_data.py --append-eod`` appends it whatever the last id, so GPT-2's
``"hello<|endoftext|>"`` becomes ``[31373, 50256, 50256]`` in its ``.bin``. The ``.pbin`` holds
Modalities' bytes and lists such documents in its sidecar (``eod_in_text``); ``to-megatron`` writes
Megatron's.
"""

from __future__ import annotations

import json

import numpy as np

from conftest import GPT2, GPT2_EOD, run_tokenmill
from tokenmill.mmidx import MMapIndexedDataset
from tokenmill.pbin import PbinFile, read_sidecar
from tokenmill.verify import verify

TEXTS = [b'{"text": "hello<|endoftext|>"}', b'{"text": "world"}', b'{"text": "<|endoftext|>"}']
MODALITIES_DOCUMENTS = [[31373, 50256], [6894, 50256], [50256]]
MEGATRON_DOCUMENTS = [[31373, 50256, 50256], [6894, 50256], [50256, 50256]]


def _pack(tmp_path, name="x", workers=1):
    corpus = tmp_path / "eod.jsonl"
    corpus.write_bytes(b"\n".join(TEXTS) + b"\n")
    run_tokenmill("pack", corpus, "--tokenizer", GPT2, "--eod", GPT2_EOD, "--workers", workers,
                  "-o", tmp_path / f"{name}.pbin")
    return tmp_path / f"{name}.pbin"


def test_the_pbin_holds_modalities_documents_and_the_bin_megatrons(tmp_path):
    pbin = _pack(tmp_path)
    assert [PbinFile(pbin).document(i).tolist() for i in range(3)] == MODALITIES_DOCUMENTS
    assert read_sidecar(pbin)["eod_in_text"] == [[0, 1], [2, 3]]
    run_tokenmill("to-megatron", pbin, "-o", tmp_path / "x")
    megatron = MMapIndexedDataset(tmp_path / "x")
    assert [megatron[i].tolist() for i in range(3)] == MEGATRON_DOCUMENTS
    assert verify(pbin) == [] and verify(tmp_path / "x") == []


def test_merged_parts_keep_the_list_and_convert_as_one_megatron_run(tmp_path):
    parts = [_pack(tmp_path, "a"), _pack(tmp_path, "b", workers=2)]
    run_tokenmill("merge", *parts, "-o", tmp_path / "ab.pbin")
    assert read_sidecar(tmp_path / "ab.pbin")["eod_in_text"] == [[0, 1], [2, 4], [5, 6]]
    run_tokenmill("to-megatron", tmp_path / "ab.pbin", "-o", tmp_path / "ab")
    megatron = MMapIndexedDataset(tmp_path / "ab")
    assert [megatron[i].tolist() for i in range(6)] == MEGATRON_DOCUMENTS * 2
    assert megatron.sizes.tolist() == [3, 2, 2] * 2


def test_a_sidecar_that_forgets_such_a_document_is_found(tmp_path):
    pbin = _pack(tmp_path)
    meta_path = tmp_path / "x.pbin.meta.json"
    meta = json.loads(meta_path.read_text())
    meta["eod_in_text"] = [[0, 1]]
    meta_path.write_text(json.dumps(meta))
    assert verify(pbin) == [f"{pbin}: 1 documents end with two EODs (or are one EOD) but are not in the sidecar's "
                            f"eod_in_text (first: document 2); the Megatron .bin would lack an EOD"]


def test_documents_in_blocks_convert_as_one_pass(tmp_path, monkeypatch):
    """The slow path cuts documents in blocks: the bytes do not depend on where the cuts fall."""
    from tokenmill import mmidx

    corpus = tmp_path / "many.jsonl"
    corpus.write_bytes(b"".join(TEXTS[i % 3] + b"\n" for i in range(300)))
    run_tokenmill("pack", corpus, "--tokenizer", GPT2, "--eod", GPT2_EOD, "-o", tmp_path / "many.pbin")
    monkeypatch.setattr(mmidx, "_BLOCK_TOKENS", 7)
    mmidx.pbin_to_megatron(tmp_path / "many.pbin", tmp_path / "many")
    tokens = np.fromfile(tmp_path / "many.bin", dtype=np.uint16)
    assert tokens.tolist() == sum(MEGATRON_DOCUMENTS, []) * 100
