"""Torch datasets over JSONL and .pbin (docs/algorithms.md §5)."""

import numpy as np
import pytest
import torch

from conftest import DEMO_JSONL, GPT2, GPT2_EOD, GPT2_EOD_ID, run_tokenmill
from tokenmill.errors import TokenmillError
from tokenmill.formats.pbin import PbinWriter
from tokenmill.training.datasets import (MemMapDataset, PackedMemMapDatasetBase, PackedMemMapDatasetContinuous,
                                         PackedMemMapDatasetMegatron)


@pytest.fixture
def fifteen_tokens(tmp_path):
    """A .pbin holding tokens 100..114 as three documents of 5 (T = 15)."""
    path = tmp_path / "t15.pbin"
    with PbinWriter(path, token_width=2) as writer:
        writer.write(np.arange(100, 115), np.array([5, 5, 5]))
    return path


@pytest.mark.parametrize("block_size, reuse, starts", [
    (4, True, [0, 3, 6, 9]),  # N = (15 - 4) // 3 + 1 = 4, consecutive blocks share one token
    (4, False, [0, 4, 8]),  # N = 15 // 4 = 3, the 3-token tail is dropped
    (5, True, [0, 4, 8]),  # N = (15 - 5) // 4 + 1 = 3
])
def test_continuous_blocks_are_modalities_blocks(fifteen_tokens, block_size, reuse, starts):
    dataset = PackedMemMapDatasetContinuous(fifteen_tokens, block_size, reuse_last_target=reuse)
    assert len(dataset) == len(starts)
    assert [dataset[i].tolist() for i in range(len(dataset))] == \
        [list(range(100 + s, 100 + s + block_size)) for s in starts]
    assert dataset[0].dtype == np.int64  # what cross_entropy takes as targets
    compact = PackedMemMapDatasetContinuous(fifteen_tokens, block_size, reuse_last_target=reuse, compact=True)
    assert compact[0].dtype == np.int32 and compact[0].tolist() == dataset[0].tolist()  # Modalities' dtype


@pytest.mark.parametrize("block_size, message", [(1, "at least 2"), (16, "exceeds the file's 15 tokens")])
def test_continuous_rejects_impossible_block_sizes(fifteen_tokens, block_size, message):
    with pytest.raises(TokenmillError, match=message):
        PackedMemMapDatasetContinuous(fifteen_tokens, block_size)


def test_documents_and_lines_agree_on_the_demo_corpus(tmp_path):
    pbin, idx = tmp_path / "demo.pbin", tmp_path / "demo.idx"
    run_tokenmill("index", DEMO_JSONL, "-o", idx)
    run_tokenmill("pack", DEMO_JSONL, "--index", idx, "--tokenizer", GPT2, "--eod", GPT2_EOD, "-o", pbin)
    documents = PackedMemMapDatasetBase(pbin, sample_key="input_ids")
    lines = MemMapDataset(DEMO_JSONL, GPT2, index=idx)
    assert len(documents) == len(lines) == 2990
    for i in [0, 1, 1000, 2989, -1]:
        document = documents[i]["input_ids"]
        assert document[-1] == GPT2_EOD_ID
        assert document[:-1].tolist() == lines[i].tolist()
    assert torch.as_tensor(documents[3]["input_ids"]).dtype == torch.int64
    compact = PackedMemMapDatasetBase(pbin, sample_key="input_ids", compact=True)
    assert torch.as_tensor(compact[3]["input_ids"]).dtype == torch.int32


def test_memmap_dataset_names_the_bad_line(tmp_path):
    path = tmp_path / "x.jsonl"
    path.write_text('{"text": "fine"}\n{"txt": "typo"}\n')
    dataset = MemMapDataset(path, GPT2)
    assert dataset[0].tolist() == [38125]
    with pytest.raises(TokenmillError, match=rf"{path}:2: no key 'text'"):
        dataset[1]


def test_megatron_blocks_hold_whole_documents_and_cut_only_oversized_ones(tmp_path):
    path = tmp_path / "docs.pbin"
    with PbinWriter(path, token_width=2) as writer:  # documents of 3, 2, 4, 9, 1 tokens
        writer.write(np.arange(19), np.array([3, 2, 4, 9, 1]))
    dataset = PackedMemMapDatasetMegatron(path, block_size=5)
    assert [dataset[i].tolist() for i in range(len(dataset))] == [
        [0, 1, 2, 3, 4],  # documents 0 and 1 fill the block exactly
        [5, 6, 7, 8],  # document 2; document 3 does not fit after it
        [9, 10, 11, 12, 13],  # document 3 alone is longer than a block: cut
        [18],  # document 4
    ]
    assert dataset.truncated_documents == 1
    starts = set(PackedMemMapDatasetBase(path).pbin.doc_offsets.tolist())
    assert set(dataset.block_offsets.tolist()) <= starts  # no block starts mid-document
