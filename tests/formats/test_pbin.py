"""The .pbin layout (docs/formats.md §2), its legacy variant (§3), and merging."""

import os
import pickle
import struct

import numpy as np
import pytest

from conftest import GPT2, GPT2_EOD, MIXED_JSONL, run_tokenmill
from tokenmill.errors import TokenmillError
from tokenmill.formats.pbin import LAYOUT_050, LAYOUT_LEGACY, PbinFile, PbinWriter, read_sidecar


def write_three_documents(path):
    with PbinWriter(path, token_width=2) as writer:
        writer.write(np.array([1, 2, 50256, 3, 50256]), np.array([3, 2]))
        writer.write(np.array([50256]), np.array([1]))


def test_three_document_file_worked_example(tmp_path):
    path = tmp_path / "three.pbin"
    write_three_documents(path)
    expected = (
        b"\x0c\x00\x00\x00\x00\x00\x00\x00"  # u64 D = 12 data bytes (6 tokens x 2 bytes)
        b"\x02\x00\x00\x00"  # u32 token width 2
        b"\x01\x00\x02\x00\x50\xc4"  # document 0: 1, 2, 50256 (0xc450), little-endian u16
        b"\x03\x00\x50\xc4"  # document 1: 3, 50256
        b"\x50\xc4"  # document 2: 50256
        # pickle of [(0, 6), (6, 4), (10, 2)]: byte offsets from the data start, byte lengths
        b"\x80\x04\x95\x17\x00\x00\x00\x00\x00\x00\x00]\x94("
        b"K\x00K\x06\x86\x94K\x06K\x04\x86\x94K\nK\x02\x86\x94e."
    )
    assert path.read_bytes() == expected
    assert expected[24:] == pickle.dumps([(0, 6), (6, 4), (10, 2)], protocol=4)

    pbin = PbinFile(path)
    assert (pbin.layout.name, pbin.token_width, pbin.num_tokens, pbin.num_documents) == (LAYOUT_050, 2, 6, 3)
    assert [pbin.document(i).tolist() for i in range(3)] == [[1, 2, 50256], [3, 50256], [50256]]


def test_empty_file_has_zero_data_bytes_and_an_empty_index(tmp_path):
    path = tmp_path / "empty.pbin"
    PbinWriter(path, token_width=4).close()
    assert path.read_bytes() == struct.pack("<QI", 0, 4) + pickle.dumps([], protocol=4)
    assert PbinFile(path).num_documents == 0


@pytest.mark.parametrize("first_offset", [8, 0], ids=["file-relative", "data-relative"])
def test_legacy_layout_with_8_byte_header_and_4_byte_tokens_is_read(tmp_path, first_offset):
    documents = [[5, 6, 7], [70000, 0]]
    data = np.array([t for doc in documents for t in doc], dtype="<u4").tobytes()
    index = [(first_offset, 12), (first_offset + 12, 8)]
    path = tmp_path / "legacy.pbin"
    path.write_bytes(struct.pack("<Q", len(data)) + data + pickle.dumps(index))
    pbin = PbinFile(path)
    assert (pbin.layout.name, pbin.token_width) == (LAYOUT_LEGACY, 4)
    assert [pbin.document(i).tolist() for i in range(2)] == documents


@pytest.mark.parametrize("content", [b"", b"abc", b"PK\x03\x04" + bytes(100), struct.pack("<QI", 400, 2) + bytes(30)])
def test_a_file_that_is_neither_layout_is_named_and_refused(tmp_path, content):
    path = tmp_path / "foreign.pbin"
    path.write_bytes(content)
    with pytest.raises(TokenmillError, match=rf"{path}: .*(too short|not a \.pbin file)"):
        PbinFile(path)


def test_truncated_index_is_refused_with_its_offset(tmp_path):
    path = tmp_path / "three.pbin"
    write_three_documents(path)
    path.write_bytes(path.read_bytes()[:-5])
    with pytest.raises(TokenmillError, match=r"three\.pbin \(index at byte 24\): not a readable index pickle"):
        PbinFile(path).document(0)


def test_index_entry_outside_the_data_is_refused(tmp_path):
    path = tmp_path / "bad.pbin"
    path.write_bytes(struct.pack("<QI", 4, 2) + bytes(4) + pickle.dumps([(0, 2), (2, 6)]))
    with pytest.raises(TokenmillError, match="index entry 1 = \\(offset 2, length 6\\) does not fit"):
        _ = PbinFile(path).doc_lengths


def test_token_beyond_the_width_names_the_document(tmp_path):
    with pytest.raises(TokenmillError, match="token id 70000 of document 1 does not fit 2-byte tokens"):
        with PbinWriter(tmp_path / "x.pbin", token_width=2) as writer:
            writer.write(np.array([1, 2, 70000]), np.array([2, 1]))
    assert list(tmp_path.iterdir()) == []  # neither the output nor its temporary file is left


@pytest.mark.slow
def test_merging_shards_equals_packing_the_concatenation(tmp_path):
    lines = MIXED_JSONL.read_bytes().splitlines(keepends=True)
    shards = []
    for k, chunk in enumerate([lines[:7], lines[7:30], lines[30:]]):
        shard = tmp_path / f"shard{k}.jsonl"
        shard.write_bytes(b"".join(chunk))
        run_tokenmill("pack", shard, "--tokenizer", GPT2, "--eod", GPT2_EOD, "-o", tmp_path / f"shard{k}.pbin")
        shards.append(tmp_path / f"shard{k}.pbin")
    run_tokenmill("merge", *shards, "-o", tmp_path / "merged.pbin")
    run_tokenmill("pack", MIXED_JSONL, "--tokenizer", GPT2, "--eod", GPT2_EOD, "-o", tmp_path / "whole.pbin")
    assert (tmp_path / "merged.pbin").read_bytes() == (tmp_path / "whole.pbin").read_bytes()

    # Offsets are shifted by the full data length of the earlier shards (Modalities shifts by D - 12).
    merged, first = PbinFile(tmp_path / "merged.pbin"), PbinFile(shards[0])
    assert merged.doc_offsets[7] == first.num_tokens
    meta = read_sidecar(tmp_path / "merged.pbin")
    assert [part["documents"] for part in meta["parts"]] == [7, 23, 20]
    assert meta["documents"] == 50 and len(meta["sources"]) == 3


def test_merging_different_token_widths_is_an_error(tmp_path):
    write_three_documents(tmp_path / "two.pbin")
    with PbinWriter(tmp_path / "four.pbin", token_width=4) as writer:
        writer.write(np.array([1]), np.array([1]))
    result = run_tokenmill("merge", tmp_path / "two.pbin", tmp_path / "four.pbin", "-o", tmp_path / "out.pbin",
                           check=False)
    assert result.returncode == 1
    assert "different token widths" in result.stderr and "four.pbin: 4" in result.stderr
    assert not (tmp_path / "out.pbin").exists()


def test_a_source_outside_the_working_folder_is_found_after_the_folder_moves(tmp_path):
    """An input spelled ../../c/edge.jsonl is recorded relative and absolute: once the work folder moves
    to another depth, the relative spelling leads nowhere and verify and inspect use the absolute one."""
    (tmp_path / "a/c").mkdir(parents=True)
    (tmp_path / "a/c/edge.jsonl").write_bytes(MIXED_JSONL.read_bytes())
    work = tmp_path / "a/b/work"
    work.mkdir(parents=True)
    run_tokenmill("pack", "../../c/edge.jsonl", "--tokenizer", GPT2, "--eod", GPT2_EOD, "-o", "data/x.pbin", cwd=work)
    source = read_sidecar(work / "data/x.pbin")["sources"][0]
    assert source["path"] == "../../../c/edge.jsonl"
    assert source["absolute_path"] == str(tmp_path / "a/c/edge.jsonl")
    moved = tmp_path / "work"
    os.rename(work, moved)
    run_tokenmill("verify", "data/x.pbin", "--against-tokenizer", "1", cwd=moved)
    shown = run_tokenmill("inspect", "data/x.pbin", "--doc", "0", cwd=moved).stdout
    assert f"source: {tmp_path / 'a/c/edge.jsonl'}, line 1" in shown
