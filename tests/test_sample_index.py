"""Megatron GPTDataset index caches (spec megatron §2–§4): worked examples, then properties.

Every table below was produced by megatron-core 0.19.2 (its C++ build_sample_idx, or GPTDataset
through BlendedMegatronDatasetBuilder) in a throwaway venv, not by tokenmill.
"""

import hashlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import DEMO_JSONL, GPT2, GPT2_EOD, run_tokenmill
from tokenmill.errors import TokenmillError
from tokenmill.mmidx import MMapIndexedDatasetBuilder
from tokenmill.sample_index import (GPTIndexSpec, build_document_index, build_gpt_indices, build_sample_index,
                                    description, null_tokenizer_identifiers, parse_split, split_matrix,
                                    split_ranges)


def test_split_parsing_and_bookends():
    assert parse_split("969,30,1") == [0.969, 0.03, 0.001]
    assert parse_split("80/10/10") == parse_split("0.8 0.1 0.1") == parse_split("8,1,1")
    assert parse_split("1") == [1.0, 0.0, 0.0]
    assert split_matrix(parse_split("969,30,1")) == [(0, 0.969), (0.969, 0.999), (0.999, 1.0)]
    assert split_matrix(parse_split("90,5,5"))[1] == (0.9, 0.9500000000000001)  # float noise kept: it is hashed
    assert split_matrix(parse_split("98,2,0"))[2] is None


def test_split_ranges_use_bankers_rounding_and_can_be_empty():
    ranges = split_ranges(split_matrix(parse_split("969,30,1")), 12)
    assert [r.tolist() for r in ranges] == [list(range(12)), [], []]  # round(11.988) = 12
    assert [r.tolist() for r in split_ranges([(0, 0.625), (0.625, 1.0)], 4)] == [[0, 1], [2, 3]]  # round(2.5) = 2


@pytest.mark.parametrize("split", ["1,2,3,4", ",,"])
def test_bad_splits_are_refused(split):
    with pytest.raises(TokenmillError, match="split"):
        parse_split(split)


SIZES = np.array([20, 50, 60, 30, 100, 5], dtype=np.int32)


@pytest.mark.parametrize("extra, drop_last, rows", [
    # the seed docs' example: sizes [20, 50, 60, 30, 100, 5], seq 30, document_index 0..5, one epoch
    (1, True, [[0, 0], [1, 10], [1, 40], [2, 20], [2, 50], [3, 20], [4, 20], [4, 50], [4, 80]]),
    (0, True, [[0, 0], [1, 10], [1, 40], [2, 20], [2, 50], [3, 20], [4, 20], [4, 50], [4, 80]]),
    (1, False, [[0, 0], [1, 10], [1, 40], [2, 20], [2, 50], [3, 20], [4, 20], [4, 50], [4, 80], [5, 4]]),
])
def test_sample_index_worked_example(extra, drop_last, rows):
    sample_index = build_sample_index(SIZES, np.arange(6, dtype=np.int32), 30, 1, 265, drop_last, extra)
    assert sample_index.tolist() == rows and sample_index.dtype == np.int32


@pytest.mark.parametrize("extra, rows", [
    (1, [[0, 0], [1, 0], [3, 0]]),  # the extra token pushes a boundary start into the next sequence
    (0, [[0, 0], [0, 30], [1, 30], [3, 30]]),  # without it the row stays at the end (offset == size)
])
def test_sample_index_at_sequence_boundaries_skips_empty_sequences(extra, rows):
    sizes = np.array([30, 30, 0, 30], dtype=np.int32)
    assert build_sample_index(sizes, np.arange(4, dtype=np.int32), 30, 1, 90, True, extra).tolist() == rows


def reference_sample_index(sizes, document_index, seq, epochs, tokens_per_epoch, drop_last, extra):
    """The spec's loop (megatron §3.5), transcribed literally: the specification our vectorised code meets."""
    total = epochs * tokens_per_epoch - extra
    n = total // seq if drop_last else int(np.ceil(np.float32(total) / np.float32(seq)))
    rows, position, offset = [[0, 0]], 0, 0
    for _ in range(n):
        need = seq + extra
        while need != 0:
            available = sizes[document_index[position]] - offset
            need -= available
            if need <= 0:
                offset += need + available - extra
                need = 0
            elif position == len(document_index) - 1:
                offset = sizes[document_index[position]] - extra
                break
            else:
                position, offset = position + 1, 0
        rows.append([position, offset])
    return rows


@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(0, 60), min_size=1, max_size=40), st.integers(1, 50), st.integers(1, 3),
       st.sampled_from([0, 1]), st.booleans(), st.randoms(use_true_random=False))
def test_vectorised_sample_index_equals_the_reference_loop(sizes, seq, epochs, extra, drop_last, rng):
    sizes = np.array(sizes, dtype=np.int32)
    tokens_per_epoch = int(sizes.sum())
    if tokens_per_epoch * epochs <= seq + extra:
        return  # not even one sample
    document_index = np.tile(np.arange(len(sizes), dtype=np.int32), epochs)
    rng.shuffle(document_index)
    expected = reference_sample_index(sizes, document_index, seq, epochs, tokens_per_epoch, drop_last, extra)
    actual = build_sample_index(sizes, document_index, seq, epochs, tokens_per_epoch, drop_last, extra)
    assert actual.tolist() == expected


def test_document_index_shuffles_all_epochs_at_once_or_the_final_one_apart():
    documents = np.arange(5, 10, dtype=np.int32)
    together = build_document_index(documents, 3, np.random.RandomState(1), separate_final_epoch=False)
    apart = build_document_index(documents, 3, np.random.RandomState(1), separate_final_epoch=True)
    assert together.dtype == apart.dtype == np.int32
    assert sorted(together.tolist()) == sorted(apart.tolist()) == sorted(documents.tolist() * 3)
    assert sorted(apart[-5:].tolist()) == documents.tolist()  # the final epoch stays at the end


def test_separate_final_epoch_keeps_final_samples_at_the_end_of_the_shuffle():
    sizes = np.full(100, 10, dtype=np.int32)  # 1000 tokens, 99 samples of 10 (+1) per epoch
    # 2 epochs for 110 samples: only 11 come from the final epoch, fewer than int(0.8 * 99) = 79
    indices = build_gpt_indices(sizes, np.arange(100, dtype=np.int32), GPTIndexSpec(10, 7, 110))
    samples_before_final = (1000 - 1) // 10
    assert len(indices.shuffle_index) == (2000 - 1) // 10
    assert sorted(indices.shuffle_index[:samples_before_final].tolist()) == list(range(samples_before_final))
    assert indices.shuffle_index.dtype == np.uint32


def test_a_split_without_tokens_is_an_error_not_a_hang():
    with pytest.raises(TokenmillError, match="the valid split has 0 sequences and no tokens"):
        build_gpt_indices(np.full(12, 5, np.int32), np.arange(12, 12, dtype=np.int32),
                          GPTIndexSpec(4, 1, 10, "valid"), where="x")


def test_description_text_and_md5_equal_megatrons():
    text = description("data/megatron/demo_text_document", 20, "test", 1234, 512, "969,30,1",
                       [list(pair) for pair in split_matrix(parse_split("969,30,1"))],
                       null_tokenizer_identifiers(50257))
    assert text.startswith('{\n    "class": "GPTDataset",\n    "dataset_path": "data/megatron/demo_text_document",\n'
                           '    "num_samples": 20,\n    "index_split": "test",\n    "random_seed": 1234,\n')
    assert '"split_matrix": [\n        [\n            0,\n            0.969\n        ],' in text
    assert hashlib.md5(text.encode()).hexdigest() == "4582b762b30f3ec3a1ffa211a64c9fdb"


# The names megatron-core 0.19.2 gave the demo caches (seq 512, seed 1234, 969,30,1, 20000/200/20 samples,
# NullTokenizer of vocab 50257, dataset path data/megatron/demo_text_document), and their shuffle lengths.
MEGATRON_DEMO_CACHE = {"train": ("d7fac598acd694476210d86c720c29bc", 21343),
                       "valid": ("466ee48891da216665f3e2362ca323ed", 255),
                       "test": ("4582b762b30f3ec3a1ffa211a64c9fdb", 20)}


def test_demo_cache_folder_has_megatrons_names_and_loads_without_pickle(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    run_tokenmill("pack", DEMO_JSONL, "--tokenizer", GPT2, "--eod", GPT2_EOD, "-o", "demo.pbin")
    (tmp_path / "data/megatron").mkdir(parents=True)
    run_tokenmill("to-megatron", "demo.pbin", "-o", "data/megatron/demo_text_document")
    args = ["sample-index", "data/megatron/demo_text_document", "-o", "cache", "--seq-length", "512", "--seed",
            "1234", "--num-samples", "20000", "--valid-samples", "200", "--test-samples", "20"]
    run_tokenmill(*args, "--vocab-size-from", "demo.pbin.meta.json")
    for split, (md5, samples) in MEGATRON_DEMO_CACHE.items():
        for suffix in ("description.txt", "document_index.npy", "sample_index.npy", "shuffle_index.npy"):
            assert (tmp_path / "cache" / f"{md5}-GPTDataset-{split}-{suffix}").exists()
        shuffle = np.load(tmp_path / "cache" / f"{md5}-GPTDataset-{split}-shuffle_index.npy", allow_pickle=False)
        assert len(shuffle) == samples and shuffle.dtype == np.uint32
    # a second run finds the cache and rewrites nothing
    before = {path.name: path.stat().st_mtime_ns for path in (tmp_path / "cache").iterdir()}
    assert "(found)" in run_tokenmill(*args, "--vocab-size", "50257").stderr
    assert before == {path.name: path.stat().st_mtime_ns for path in (tmp_path / "cache").iterdir()}


def test_uint16_and_int32_datasets_give_the_same_indices(tmp_path):
    lengths = np.random.default_rng(3).integers(1, 200, 3000)
    for dtype in (np.uint16, np.int32):
        with MMapIndexedDatasetBuilder(tmp_path / dtype.__name__, dtype) as builder:
            builder.add_document(np.zeros(int(lengths.sum()), dtype), lengths)
        run_tokenmill("sample-index", tmp_path / dtype.__name__, "-o", tmp_path / f"c_{dtype.__name__}",
                      "--seq-length", "64", "--seed", "5", "--epochs", "3", "--megatron-path-prefix", "same",
                      "--vocab-size", "1000")
    files = sorted(path.name for path in (tmp_path / "c_uint16").iterdir())
    assert files == sorted(path.name for path in (tmp_path / "c_int32").iterdir()) and len(files) == 15  # 12 of Megatron + 3 fingerprints
    for name in files:
        assert (tmp_path / "c_uint16" / name).read_bytes() == (tmp_path / "c_int32" / name).read_bytes()
