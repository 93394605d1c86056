"""verify/index_caches: every problem of an index cache folder as a Megatron job reads it — descriptions that do
not hash to their names, arrays of the wrong dtype or shape, a shuffle that is no permutation, rows outside the
dataset, a cache built for another version of the dataset — and a second cache of one dataset and split, of
which a job reads only one."""

import hashlib
import json

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from tokenmill.formats.bin_idx import MMapIndexedDatasetBuilder
from tokenmill.megatron.blend import build_blend_cache
from tokenmill.megatron.index_cache import build_gpt_cache, null_tokenizer_identifiers
from tokenmill.verify.index_caches import duplicate_caches, verify_cache


@pytest.fixture
def cache(tmp_path):
    """A GPTDataset cache (train split only) of a small Megatron dataset, by its absolute prefix."""
    lengths = np.random.default_rng(5).integers(1, 60, 300)
    with MMapIndexedDatasetBuilder(tmp_path / "d", np.uint16) as builder:
        builder.add_document(np.ones(int(lengths.sum()), np.uint16), lengths)
    build_gpt_cache(tmp_path / "d", tmp_path / "cache", 32, 7, "1,0,0", {"train": None},
                    null_tokenizer_identifiers(1000), dataset_path=str(tmp_path / "d"))
    return tmp_path / "cache"


def split_file(cache, suffix: str):
    (path,) = cache.glob(f"*-GPTDataset-train-{suffix}")
    return path


def test_a_sound_cache_has_no_problem_and_a_folder_without_descriptions_is_named(cache, tmp_path):
    assert verify_cache(cache) == [] and duplicate_caches(cache) == {}
    assert verify_cache(tmp_path) == [f"{tmp_path}: no *-description.txt: not an index cache folder"]


def test_each_damaged_array_is_one_problem_naming_its_file(cache):
    shuffle = split_file(cache, "shuffle_index.npy")
    original = np.load(shuffle)
    np.save(shuffle, np.zeros(len(original), dtype=np.uint32))
    assert verify_cache(cache) == [f"{str(shuffle)[:-len('-shuffle_index.npy')]}-shuffle_index.npy: not a "
                                   f"permutation of the samples"]
    np.save(shuffle, original.astype(np.int16))
    assert verify_cache(cache) == [f"{shuffle}: dtype int16, Megatron writes uint32 or int64"]
    np.save(shuffle, original)
    document_index = split_file(cache, "document_index.npy")
    np.save(document_index, np.load(document_index) + 300)
    assert verify_cache(cache) == [f"{document_index}: sequence ids beyond the 300 of {cache.parent / 'd'}"]


def test_a_description_edited_after_its_name_was_hashed_is_found(cache):
    description = split_file(cache, "description.txt")
    description.write_text(description.read_text().replace('"random_seed": 7', '"random_seed": 8'))
    (problem,) = verify_cache(cache)
    assert problem.startswith(f"{description}: its md5 is ") and problem.endswith(f"not the "
                                                                                 f"{description.name[:32]} of its name")


def test_a_cache_of_a_dataset_rebuilt_since_is_found(cache):
    lengths = np.full(300, 20)  # other documents under the same prefix
    with MMapIndexedDatasetBuilder(cache.parent / "d", np.uint16) as builder:
        builder.add_document(np.ones(int(lengths.sum()), np.uint16), lengths)
    (problem,) = verify_cache(cache)
    assert problem.endswith(f": built for another version of {cache.parent / 'd'} (its .idx fingerprint differs): "
                            f"rebuild it with tokenmill sample-index")


def test_a_second_cache_of_one_dataset_spelled_otherwise_is_one_problem_for_its_split(cache):
    build_gpt_cache(cache.parent / "d", cache, 32, 7, "1,0,0", {"train": None}, null_tokenizer_identifiers(1000),
                    dataset_path="d")  # a job that spelled the path relative
    problems = duplicate_caches(cache)
    assert list(problems) == [("GPTDataset", "train")]
    assert "2 GPTDataset train caches of one dataset" in problems[("GPTDataset", "train")]
    assert f"differing in dataset_path '{cache.parent / 'd'}', 'd'" in problems[("GPTDataset", "train")] or \
        f"differing in dataset_path 'd', '{cache.parent / 'd'}'" in problems[("GPTDataset", "train")]
    assert verify_cache(cache)[-1] == problems[("GPTDataset", "train")]


def test_a_blends_parts_of_equal_tokens_are_no_second_cache_of_one_dataset_but_a_stray_one_still_is(cache):
    """Two datasets made from copies of one file hold equal tokens: the blend of both reads each part's cache, so
    its folder is sound (it failed the workflow's verify); a job's own spelling of one of them is still named."""
    for name in ("a", "b"):
        for suffix in (".bin", ".idx"):
            (cache.parent / f"{name}{suffix}").write_bytes((cache.parent / f"d{suffix}").read_bytes())
    blend = cache.parent / "blend"
    build_blend_cache([str(cache.parent / "a"), str(cache.parent / "b")], [0.5, 0.5], blend, 32, 7, "1,0,0",
                      {"train": 100, "valid": 0, "test": 0}, null_tokenizer_identifiers(1000))
    assert duplicate_caches(blend) == {} and verify_cache(blend) == []
    build_gpt_cache(cache.parent / "a", blend, 32, 7, "1,0,0", {"train": 60}, null_tokenizer_identifiers(1000),
                    dataset_path="a")  # a job that spelled a's path relative
    assert list(duplicate_caches(blend)) == [("GPTDataset", "train")]


@settings(max_examples=25, deadline=None)
@given(text=st.one_of(st.text(max_size=20), st.lists(st.integers(), max_size=3).map(json.dumps)))
def test_a_description_that_is_no_json_object_is_one_problem_never_an_exception(tmp_path_factory, text):
    try:
        assume(not isinstance(json.loads(text), dict))
    except ValueError:
        pass
    folder = tmp_path_factory.mktemp("c")
    description = folder / f"{hashlib.md5(text.encode()).hexdigest()}-GPTDataset-train-description.txt"
    description.write_text(text)
    (problem,) = verify_cache(folder)
    assert problem.startswith(f"{description}: ") and ("not JSON" in problem or "Megatron writes an object" in problem)
    assert duplicate_caches(folder) == {}
