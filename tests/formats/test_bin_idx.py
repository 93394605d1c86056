"""Megatron MMIDIDX .bin/.idx (docs/formats.md §5): bytes, dtype rule, round trips, merges, bad files."""

import struct

import numpy as np
import pytest

from conftest import (DATA, DEMO_JSONL, GPT2, GPT2_EOD, MIXED_JSONL, TEKKEN, run_tokenmill,
                      run_tokenmill_with_file_size_limit)
from tokenmill.errors import TokenmillError
from tokenmill.formats.bin_idx import MMapIndexedDataset, MMapIndexedDatasetBuilder, optimal_dtype, pbin_to_megatron
from tokenmill.formats.pbin import PbinFile, PbinWriter
from tokenmill.formats.sidecar import write_sidecar


def test_three_document_idx_worked_example(tmp_path):
    with MMapIndexedDatasetBuilder(tmp_path / "three", np.uint16) as builder:
        builder.add_document([5, 6, 50256], [3])
        builder.add_document([7], [1])
        builder.add_document([8, 50256], [2])
    assert (tmp_path / "three.bin").read_bytes() == bytes.fromhex("0500 0600 50c4 0700 0800 50c4")
    assert (tmp_path / "three.idx").read_bytes() == (
        b"MMIDIDX\x00\x00"  # magic
        + bytes.fromhex("0100000000000000")  # version 1
        + bytes.fromhex("08")  # dtype code 8 = uint16
        + bytes.fromhex("0300000000000000")  # 3 sequences
        + bytes.fromhex("0400000000000000")  # 4 document boundaries (documents + 1)
        + bytes.fromhex("03000000 01000000 02000000")  # int32 sequence lengths
        + bytes.fromhex("0000000000000000 0600000000000000 0800000000000000")  # int64 byte pointers
        + bytes.fromhex("0000000000000000 0100000000000000 0200000000000000 0300000000000000")  # boundaries
    )
    dataset = MMapIndexedDataset(tmp_path / "three")
    assert [dataset[i].tolist() for i in range(3)] == [[5, 6, 50256], [7], [8, 50256]]
    assert dataset.get(0, offset=1, length=2).tolist() == [6, 50256]
    assert dataset.document_indices.tolist() == [0, 1, 2, 3]


def test_multi_sequence_and_empty_documents_keep_megatron_boundaries(tmp_path):
    with MMapIndexedDatasetBuilder(tmp_path / "x", np.int32) as builder:
        builder.add_document([1, 2, 3, 4], [1, 3])  # one document of two sequences
        builder.add_document([], [])  # an empty document repeats the boundary
        builder.add_item([9, 9])
        builder.add_item([8])
        builder.end_document()
    dataset = MMapIndexedDataset(tmp_path / "x")
    assert dataset.sizes.tolist() == [1, 3, 2, 1]
    assert dataset.document_indices.tolist() == [0, 2, 2, 4]
    assert dataset.sequence_pointers.tolist() == [0, 4, 16, 24]
    assert dataset.dtype == np.int32


@pytest.mark.parametrize("vocab_size, dtype", [(50257, np.uint16), (65499, np.uint16), (65500, np.int32),
                                               (65536, np.int32), (131072, np.int32)])
def test_dtype_is_uint16_below_65500_else_int32(vocab_size, dtype):
    assert optimal_dtype(vocab_size) == dtype


def _pbin(path, tokens, lengths, vocab_size, width):
    with PbinWriter(path, width) as writer:
        writer.write(np.array(tokens), np.array(lengths))
    write_sidecar(path, {"tokenizer": {"vocab_size": vocab_size}})
    return path


def test_a_disk_full_at_the_final_flush_of_the_bin_names_the_output_and_leaves_no_temporary(tmp_path):
    # 1000 tokens (2000 bytes) stay in the .bin's write buffer until finalize's flush, which fails
    # one byte short; closing the .bin to clean up flushes, and fails, again
    pbin = _pbin(tmp_path / "x.pbin", np.arange(1000) % 500, [10] * 100, 50257, 2)
    (tmp_path / "out").mkdir()
    result = run_tokenmill_with_file_size_limit(1999, "to-megatron", pbin, "-o", tmp_path / "out" / "x")
    assert (result.returncode, result.stderr) == (
        1, f"tokenmill: error: {tmp_path / 'out' / 'x'}: cannot write (File too large); nothing was written\n")
    assert list((tmp_path / "out").iterdir()) == []


@pytest.mark.parametrize("vocab_size, width, dtype_code", [(65499, 2, 8), (65500, 2, 4), (131072, 4, 4)])
def test_conversion_round_trip_at_the_dtype_boundaries(tmp_path, vocab_size, width, dtype_code):
    tokens = [0, 65498, vocab_size - 1, 7, 1]
    pbin = _pbin(tmp_path / "x.pbin", tokens, [3, 1, 1], vocab_size, width)
    run_tokenmill("to-megatron", pbin, "-o", tmp_path / "x")
    assert (tmp_path / "x.idx").read_bytes()[17] == dtype_code
    dataset = MMapIndexedDataset(tmp_path / "x")
    assert [dataset[i].tolist() for i in range(3)] == [tokens[:3], [7], [1]]


def test_token_that_does_not_fit_names_the_document(tmp_path):
    pbin = _pbin(tmp_path / "x.pbin", [1, 2, 3, 2**31 + 5, 4], [2, 1, 2], 131072, 4)
    with pytest.raises(TokenmillError, match=r"token id 2147483653 of .*x\.pbin document 2 does not fit int32"):
        pbin_to_megatron(pbin, tmp_path / "x")
    assert not (tmp_path / "x.bin").exists() and not (tmp_path / "x.idx").exists()


def test_demo_round_trip_pbin_to_megatron_to_tokens(tmp_path):
    run_tokenmill("pack", DEMO_JSONL, "--tokenizer", GPT2, "--eod", GPT2_EOD, "-o", tmp_path / "demo.pbin")
    run_tokenmill("to-megatron", tmp_path / "demo.pbin", "-o", tmp_path / "demo_text_document")
    pbin, dataset = PbinFile(tmp_path / "demo.pbin"), MMapIndexedDataset(tmp_path / "demo_text_document")
    assert len(dataset) == dataset.num_documents == pbin.num_documents == 2990
    assert np.array_equal(dataset.sizes, pbin.doc_lengths)
    # uint16 .bin holds exactly the .pbin's 2-byte data section
    assert (tmp_path / "demo_text_document.bin").read_bytes() == \
        (tmp_path / "demo.pbin").read_bytes()[12:12 + 2 * pbin.num_tokens]
    for i in (0, 17, 2989):
        assert dataset[i].tolist() == pbin.document(i).tolist()


@pytest.mark.slow
def test_merging_shards_equals_converting_the_concatenation(tmp_path):
    lines = MIXED_JSONL.read_bytes().splitlines(keepends=True)
    prefixes = []
    for k, chunk in enumerate([lines[:1], lines[1:20], lines[20:]]):
        (tmp_path / f"s{k}.jsonl").write_bytes(b"".join(chunk))
        run_tokenmill("pack", tmp_path / f"s{k}.jsonl", "--tokenizer", TEKKEN, "--eod", "</s>",
                      "-o", tmp_path / f"s{k}.pbin")
        run_tokenmill("to-megatron", tmp_path / f"s{k}.pbin", "-o", tmp_path / f"s{k}")
        prefixes.append(tmp_path / f"s{k}")
    run_tokenmill("merge", *prefixes, "-o", tmp_path / "merged")
    run_tokenmill("pack", MIXED_JSONL, "--tokenizer", TEKKEN, "--eod", "</s>", "-o", tmp_path / "all.pbin")
    run_tokenmill("to-megatron", tmp_path / "all.pbin", "-o", tmp_path / "all")
    for extension in ("bin", "idx"):
        assert (tmp_path / f"merged.{extension}").read_bytes() == (tmp_path / f"all.{extension}").read_bytes()
    assert MMapIndexedDataset(tmp_path / "merged").dtype == np.int32


def test_merging_different_dtypes_is_refused(tmp_path):
    for name, dtype in (("a", np.uint16), ("b", np.int32)):
        with MMapIndexedDatasetBuilder(tmp_path / name, dtype) as builder:
            builder.add_document([1, 2], [2])
    result = run_tokenmill("merge", tmp_path / "a", tmp_path / "b", "-o", tmp_path / "out", check=False)
    assert result.returncode == 1 and result.stderr == (
        f"tokenmill: error: {tmp_path / 'b.idx'}: dtype int32, {tmp_path / 'a.idx'}: uint16; parts of different "
        f"tokenizers cannot be merged\n")
    assert not (tmp_path / "out.idx").exists() and not (tmp_path / "out.bin").exists()


def test_merging_prefixes_of_different_tokenizers_is_refused(tmp_path):
    """GPT-2 and BERT both write uint16; Megatron's files name no tokenizer, but every document of each ends with
    its EOD (50256, [SEP] 102): that tells them apart."""
    bert = DATA / "minilm-bert.tokenizer.json"
    for name, tokenizer, eod in (("gpt2", GPT2, GPT2_EOD), ("gpt2b", GPT2, GPT2_EOD), ("bert", bert, "[SEP]")):
        run_tokenmill("pack", DEMO_JSONL, "--tokenizer", tokenizer, "--eod", eod, "-o", tmp_path / f"{name}.pbin",
                      "--megatron", tmp_path / name)
    result = run_tokenmill("merge", tmp_path / "gpt2", tmp_path / "bert", "-o", tmp_path / "out", check=False)
    assert result.returncode == 1 and result.stderr == (
        f"tokenmill: error: {tmp_path / 'bert'}: packed with EOD id 102, {tmp_path / 'gpt2'} with EOD id 50256; "
        f"parts of different tokenizers or EODs cannot be merged\n")
    assert not list(tmp_path.glob("out*"))
    run_tokenmill("merge", tmp_path / "gpt2", tmp_path / "gpt2b", "-o", tmp_path / "out")
    run_tokenmill("pack", DEMO_JSONL, "--tokenizer", GPT2, "--no-eod", "-o", tmp_path / "none.pbin", "--megatron",
                  tmp_path / "none")
    result = run_tokenmill("merge", tmp_path / "gpt2", tmp_path / "none", "-o", tmp_path / "out2", check=False)
    assert result.returncode == 1 and result.stderr.startswith(
        f"tokenmill: error: {tmp_path / 'none'}: packed without an EOD (documents end with different ids), "
        f"{tmp_path / 'gpt2'} with EOD id 50256;")
    result = run_tokenmill("merge", tmp_path / "gpt2.pbin", tmp_path / "bert.pbin", "-o", tmp_path / "out.pbin",
                           check=False)  # the .pbin sidecars name the tokenizer itself
    assert result.returncode == 1 and "bert.pbin: packed with tokenizer sha256" in result.stderr


def _valid_pair(tmp_path):
    with MMapIndexedDatasetBuilder(tmp_path / "ok", np.uint16) as builder:
        builder.add_document([1, 2, 3], [3])
        builder.add_document([4], [1])
    return (tmp_path / "ok.idx").read_bytes()


@pytest.mark.parametrize("corrupt, message", [
    (lambda idx: idx[:20], "too short for an MMIDIDX header"),
    (lambda idx: b"NOTMMIDX\x00" + idx[9:], "not a Megatron .idx"),
    (lambda idx: idx[:9] + struct.pack("<Q", 2) + idx[17:], "version 2 at byte 9"),
    (lambda idx: idx[:17] + b"\x09" + idx[18:], "unknown dtype code 9 at byte 17"),
    (lambda idx: idx[:-3], "header says 2 sequences and 3 boundaries"),
    (lambda idx: idx[:34] + struct.pack("<i", 5) + idx[38:], "pointer of sequence 1 is 6"),
    (lambda idx: idx[:-8] + struct.pack("<q", 7), "document boundaries are not"),
])
def test_bad_idx_files_are_refused_clearly(tmp_path, corrupt, message):
    (tmp_path / "ok.idx").write_bytes(corrupt(_valid_pair(tmp_path)))
    with pytest.raises(TokenmillError, match=message):
        MMapIndexedDataset(tmp_path / "ok")


def test_bin_size_disagreeing_with_idx_is_refused(tmp_path):
    _valid_pair(tmp_path)
    (tmp_path / "ok.bin").write_bytes(b"\x00" * 6)
    with pytest.raises(TokenmillError, match=r"ok\.bin: 6 bytes, but .*ok\.idx describes 8 bytes of uint16"):
        MMapIndexedDataset(tmp_path / "ok")
