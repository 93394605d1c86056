"""Nanoset: Megatron GPTDataset samples (docs/algorithms.md §3) read through tokenmill's cached indices.

Small worked examples here; the demo's samples are compared with megatron-core's own
``GPTDataset.__getitem__`` and ``BlendedDataset`` results in test_megatron_golden.py.
"""

import numpy as np

from tokenmill.formats.bin_idx import MMapIndexedDatasetBuilder
from tokenmill.megatron.index_cache import null_tokenizer_identifiers
from tokenmill.training.datasets import NanosetBuilder, NanosetConfig

EOD = 99


def two_documents(tmp_path, **overrides):
    """Documents [10, 11, EOD] and [20, 21, 22, EOD]; seed 1 keeps them in this order."""
    with MMapIndexedDatasetBuilder(tmp_path / "two", np.uint16) as builder:
        builder.add_document([10, 11, EOD], [3])
        builder.add_document([20, 21, 22, EOD], [4])
    settings = dict(prefix=str(tmp_path / "two"), cache_dir=str(tmp_path / "cache"), seq_length=4, seed=1,
                    tokenizer_identifiers=null_tokenizer_identifiers(100), split="1,0,0", eod_id=EOD)
    settings.update(overrides)
    return NanosetBuilder(NanosetConfig(**settings)).build()


def test_worked_example_with_the_extra_token(tmp_path):
    train = two_documents(tmp_path)["train"]
    assert len(train) == 1  # (7 - 1) // 4
    sample = train[0]
    assert sample["tokens"].tolist() == [10, 11, EOD, 20]
    assert sample["labels"].tolist() == [11, EOD, 20, 21]
    assert sample["loss_mask"].tolist() == [1, 1, 1, 1]
    assert sample["position_ids"].tolist() == [0, 1, 2, 3]
    assert sample["cu_seqlens"].tolist() == [0, 3, 4]  # from the index: document 0 is 3 tokens


def test_eod_mask_loss_and_reset_position_ids(tmp_path):
    sample = two_documents(tmp_path, eod_mask_loss=True, reset_position_ids=True)["train"][0]
    assert sample["loss_mask"].tolist() == [1, 1, 0, 1]  # the prediction after EOD is masked
    assert sample["position_ids"].tolist() == [0, 1, 2, 0]  # EOD keeps its position, the next restarts


def test_without_the_extra_token_the_last_label_is_padding(tmp_path):
    train = two_documents(tmp_path, add_extra_token=False, pad_id=-1)["train"]
    assert len(train) == 1  # 7 // 4
    sample = train[0]
    assert sample["tokens"].tolist() == [10, 11, EOD, 20]
    assert sample["labels"].tolist() == [11, EOD, 20, 0]  # pad (-1) replaced by 0 ...
    assert sample["loss_mask"].tolist() == [1, 1, 1, 0]  # ... and masked


def test_blended_nanoset_draws_samples_from_each_part_by_the_blend_index(tmp_path):
    prefixes = []
    for name, token in (("a", 1), ("b", 2)):
        with MMapIndexedDatasetBuilder(tmp_path / name, np.uint16) as builder:
            builder.add_document(np.full(20000, token, np.uint16), np.full(2000, 10))
        prefixes.append(str(tmp_path / name))
    config = NanosetConfig("", str(tmp_path / "cache"), 8, 3, null_tokenizer_identifiers(100),
                           num_samples={"train": 100, "valid": 10, "test": 2})
    train = NanosetBuilder(config).build_blend(prefixes, [0.25, 0.75])["train"]
    assert len(train) == 100
    drawn = [train[i] for i in range(len(train))]
    assert sum(sample["dataset_id"] == 0 for sample in drawn) == 25
    assert all(set(sample["tokens"].tolist()) == {sample["dataset_id"] + 1} for sample in drawn)
