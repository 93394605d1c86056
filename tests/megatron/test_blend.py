"""Blends (docs/algorithms.md §4): sizes with surplus, greedy and exhaustive blending, the blend cache."""

import numpy as np
import pytest

from tokenmill.errors import TokenmillError
from tokenmill.formats.bin_idx import MMapIndexedDatasetBuilder
from tokenmill.megatron.blend import (blend_sizes, build_blend_cache, build_blending_indices,
                                      build_exhaustive_blending_indices, parse_blend)
from tokenmill.megatron.index_cache import null_tokenizer_identifiers


def test_parse_blend_like_megatrons_data_path():
    assert parse_blend(["0.3", "a", "0.7", " b "]) == (["a", "b"], [0.3, 0.7])
    assert parse_blend(["a", "b", "c"]) == (["a", "b", "c"], None)
    assert parse_blend(["a", "b"]) == (["a", "b"], None)


def test_sizes_round_up_per_dataset_and_add_the_surplus():
    targets, built = blend_sizes([1, 1, 1], 1000)
    assert targets == [334, 334, 334] and sum(targets) == 1002  # the blend exceeds the request
    assert built == [336, 336, 336]  # ceil(334 * 1.005)


def test_greedy_blending_worked_example():
    # step s takes argmax_j  w_j * max(s, 1) - count_j, ties to the lowest j:
    # s=0: (.5, .3, .2) -> 0;  s=1: (-.5, .3, .2) -> 1;  s=2: (0, -.4, .4) -> 2;  s=3: (.5, -.1, -.4) -> 0 ...
    dataset_index, dataset_sample_index = build_blending_indices([0.5, 0.3, 0.2], 10)
    assert dataset_index.tolist() == [0, 1, 2, 0, 1, 0, 2, 0, 1, 0]
    assert dataset_sample_index.tolist() == [0, 0, 0, 1, 1, 2, 1, 3, 2, 4]
    assert (dataset_index.dtype, dataset_sample_index.dtype) == (np.int16, np.int64)


def test_exhaustive_blending_spends_every_sample_once():
    dataset_index, dataset_sample_index = build_exhaustive_blending_indices([3, 1, 2])
    assert dataset_index.tolist() == [0, 2, 1, 0, 2, 0]
    for dataset, size in enumerate([3, 1, 2]):
        assert sorted(dataset_sample_index[dataset_index == dataset].tolist()) == list(range(size))
    with pytest.raises(TokenmillError, match="samples in every dataset"):
        build_exhaustive_blending_indices([3, 0])


def test_weighted_blend_needs_every_split_size(tmp_path):
    with MMapIndexedDatasetBuilder(tmp_path / "a", np.uint16) as builder:
        builder.add_document(np.zeros(5000, np.uint16), np.full(1000, 5))
    with pytest.raises(TokenmillError, match="needs a sample count for every split"):
        build_blend_cache([str(tmp_path / "a")], [1.0], tmp_path / "cache", 4, 1, "969,30,1", {"train": 10},
                          null_tokenizer_identifiers(10))
    results = build_blend_cache([str(tmp_path / "a")], [1.0], tmp_path / "cache", 4, 1, "969,30,1",
                                {"train": 10, "valid": 2, "test": 0}, null_tokenizer_identifiers(10))
    assert [results[split]["samples"] for split in ("train", "valid", "test")] == [10, 2, 0]


def test_a_blend_split_without_tokens_of_a_dataset_names_the_split_and_the_datasets_weight(tmp_path):
    """b has 3 documents: with split 98,2,0 none falls in valid (round(0.98 * 3) = 3). Megatron still builds b's valid
    split, weight 0 and 0 samples included, and loops on it: refused, naming the blend's split (not only b)."""
    for name, documents in (("a", 40), ("b", 3)):
        with MMapIndexedDatasetBuilder(tmp_path / name, np.uint16) as builder:
            builder.add_document(np.ones(10 * documents, np.uint16), np.full(documents, 10))
    for weights, weighted in (([1.0, 0.0], "weight 0"), (None, "its length as weight")):
        with pytest.raises(TokenmillError) as raised:
            build_blend_cache([str(tmp_path / "a"), str(tmp_path / "b")], weights, tmp_path / "cache", 4, 1, "98,2,0",
                              {"train": 10, "valid": 2, "test": 0}, null_tokenizer_identifiers(10))
        assert str(raised.value) == (
            f"the blend's valid split (split 98,2,0) has no tokens of {tmp_path / 'b'} ({weighted}; 0 sequences fall "
            f"in it): Megatron builds every dataset's valid split of a blend, whatever its weight or sample count, and "
            f"would loop forever on it; change the split, add data to {tmp_path / 'b'}, or leave it out of the blend")
