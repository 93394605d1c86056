"""A text that already ends with the EOD, and a tokenizer whose post-processor adds a BOS or an EOS:
each format follows its own peer.

Facts measured on the peers: Modalities 0.5.0 appends the EOD only when a document's ids do not already
end with it; Megatron's ``preprocess_data.py --append-eod`` appends it whatever the last id, so GPT-2's
``"hello<|endoftext|>"`` becomes ``[31373, 50256, 50256]`` in its ``.bin``; its HuggingFaceTokenizer
encodes with the tokenizer's special tokens (a BOS kept). The ``.pbin`` holds Modalities' bytes and lists
such documents in its sidecar (``eod_in_text``); ``to-megatron`` writes Megatron's. datatrove 0.10.1's
``DocumentTokenizer`` (``eos_token="<|endoftext|>"``; the recipe and the tokenizers ``bos`` and ``eos``
are tests/formats/test_datatrove.py's) replaces the post-processor by ``$A <EOS>``: for the three :data:`TEXTS`
it wrote :data:`DATATROVE_DOCUMENTS` with plain GPT-2, with ``bos`` and with ``eos`` alike.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from conftest import GPT2, GPT2_EOD, run_tokenmill
from test_datatrove import write_variant
from tokenmill.formats.datatrove import DatatroveFile, pbin_to_datatrove
from tokenmill.formats.bin_idx import MMapIndexedDataset, pbin_to_megatron
from tokenmill.formats.pbin import PbinFile, read_sidecar
from tokenmill.pack.pretraining import PackSettings, pack

from tokenmill.verify.checks import verify, verify_made_from

TEXTS = [b'{"text": "hello<|endoftext|>"}', b'{"text": "world"}', b'{"text": "<|endoftext|>"}']
MODALITIES_DOCUMENTS = [[31373, 50256], [6894, 50256], [50256]]
MEGATRON_DOCUMENTS = [[31373, 50256, 50256], [6894, 50256], [50256, 50256]]
DATATROVE_DOCUMENTS = [[31373, 50256, 50256], [6894, 50256], [50256, 50256]]  # measured, GPT-2 and both variants


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
    from tokenmill.formats import document_blocks, bin_idx

    corpus = tmp_path / "many.jsonl"
    corpus.write_bytes(b"".join(TEXTS[i % 3] + b"\n" for i in range(300)))
    run_tokenmill("pack", corpus, "--tokenizer", GPT2, "--eod", GPT2_EOD, "-o", tmp_path / "many.pbin")
    monkeypatch.setattr(document_blocks, "BLOCK_TOKENS", 7)
    bin_idx.pbin_to_megatron(tmp_path / "many.pbin", tmp_path / "many")
    tokens = np.fromfile(tmp_path / "many.bin", dtype=np.uint16)
    assert tokens.tolist() == sum(MEGATRON_DOCUMENTS, []) * 100


@pytest.mark.parametrize("variant, modalities, megatron", [
    ("bos", [[50257, 31373, 50256], [50257, 6894, 50256], [50257, 50256]],  # the BOS kept; no EOD appended where
     [[50257, 31373, 50256, 50256], [50257, 6894, 50256], [50257, 50256, 50256]]),  # the ids end with it
    ("eos", [[31373, 50256, 50256], [6894, 50256], [50256, 50256]],  # the template's EOS is the EOD: never appended
     [[31373, 50256, 50256, 50256], [6894, 50256, 50256], [50256, 50256, 50256]]),
])
def test_a_post_processor_s_bos_or_eos_stays_in_the_pbin_and_bin_and_leaves_the_ds(tmp_path, monkeypatch, variant,
                                                                                   modalities, megatron):
    """One pass writes the three formats, each by its peer's rule; the conversions from the .pbin agree."""
    monkeypatch.chdir(tmp_path)
    tokenizer = write_variant(tmp_path, variant)
    (tmp_path / "eod.jsonl").write_bytes(b"\n".join(TEXTS) + b"\n")
    pack(["eod.jsonl"], "x.pbin", PackSettings(tokenizer, eod=GPT2_EOD), log=lambda message: None,
         megatron_prefix="x", datatrove_name="ds/x")
    pbin_to_megatron("x.pbin", "converted")
    pbin_to_datatrove("x.pbin", "converted/x")
    packed, ours, theirs = PbinFile("x.pbin"), MMapIndexedDataset("x"), MMapIndexedDataset("converted")
    assert [packed.document(i).tolist() for i in range(3)] == modalities
    assert [ours[i].tolist() for i in range(3)] == [theirs[i].tolist() for i in range(3)] == megatron
    for name in ("ds/x", "converted/x"):
        dataset = DatatroveFile(name)
        assert [dataset.document(i).tolist() for i in range(3)] == DATATROVE_DOCUMENTS, name
    assert verify("x.pbin") == [] and verify_made_from("x.pbin", "x", "ds/x") == []
