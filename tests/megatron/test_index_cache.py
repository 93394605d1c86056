"""megatron/index_cache: a GPTDataset split's cache as megatron-core writes and finds it — the description
text and its md5 (the files' names), the four files of each split, loaded without pickle, a found cache
left as it is."""

import hashlib

import numpy as np
import pytest

from conftest import DEMO_JSONL, GPT2, GPT2_EOD, run_tokenmill
from tokenmill.errors import TokenmillError
from tokenmill.megatron.gpt_indices import parse_split, split_matrix
from tokenmill.megatron.index_cache import description, load_cache, load_npy, null_tokenizer_identifiers, write_cache


def test_description_text_and_md5_equal_megatrons():
    text = description("data/megatron/demo_text_document", 20, "test", 1234, 512, "969,30,1",
                       [list(pair) for pair in split_matrix(parse_split("969,30,1"))],
                       {"class": "megatron.core.tokenizers.text.models.default_tokenizer.DefaultTokenizerText",
                        "tokenizer_path": None, "vocab_size": "50257"})  # as megatron-core's library call gave them
    assert text.startswith('{\n    "class": "GPTDataset",\n    "dataset_path": "data/megatron/demo_text_document",\n'
                           '    "num_samples": 20,\n    "index_split": "test",\n    "random_seed": 1234,\n')
    assert '"split_matrix": [\n        [\n            0,\n            0.969\n        ],' in text
    assert hashlib.md5(text.encode()).hexdigest() == "4582b762b30f3ec3a1ffa211a64c9fdb"


# The names megatron-core 0.19.2 gave the demo caches (seq 512, seed 1234, 969,30,1, 20000/200/20 samples,
# dataset path data/megatron/demo_text_document) in a job with --tokenizer-type NullTokenizer --vocab-size 50257
# (recorded in tests/megatron/test_job_tokenizer.py), and their shuffle lengths.
MEGATRON_DEMO_CACHE = {"train": ("9f855c467e240b61d400d8f93f51828c", 21343),
                       "valid": ("a6bf0a119bedb5dc63bb3c0c0cb44153", 255),
                       "test": ("1c69f37a227c591fd1e9caa176a49734", 20)}


@pytest.mark.slow
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


def test_a_split_written_is_found_by_its_description_and_loaded_as_the_same_arrays(tmp_path):
    text = description("p", 10, "train", 1, 8, "1,0,0", [[0, 1], None, None], null_tokenizer_identifiers(100))
    arrays = {"document_index": np.arange(5, dtype=np.int32), "sample_index": np.zeros((3, 2), np.int32),
              "shuffle_index": np.array([1, 0], np.uint32)}
    written = write_cache(tmp_path, text, "train", arrays, fingerprint={"idx_bytes": 1})
    md5 = hashlib.md5(text.encode()).hexdigest()
    assert written["description"] == tmp_path / f"{md5}-GPTDataset-train-description.txt"
    assert sorted(path.name for path in tmp_path.iterdir()) == sorted(
        f"{md5}-GPTDataset-train-{suffix}" for suffix in ("description.txt", "document_index.npy", "sample_index.npy",
                                                          "shuffle_index.npy", "tokenmill_fingerprint.json"))
    loaded = load_cache(tmp_path, text, "train")
    assert all(np.array_equal(loaded[key], array) and loaded[key].dtype == array.dtype for key, array in arrays.items())
    assert (tmp_path / written["shuffle_index"].name).read_bytes().startswith(b"\x93NUMPY")  # numpy.save's bytes
    assert load_cache(tmp_path, text, "valid") is None  # another split: not there
    written["description"].unlink()  # written last: a folder without it is not complete
    assert load_cache(tmp_path, text, "train") is None


def test_a_cache_file_that_holds_objects_is_refused_never_unpickled(tmp_path):
    path = tmp_path / "x.npy"
    np.save(path, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    with pytest.raises(TokenmillError, match=rf"^{path}: not a readable .npy array \(ValueError: "):
        load_npy(path)
    path.write_bytes(b"not numpy")
    with pytest.raises(TokenmillError, match=rf"^{path}: not a readable .npy array"):
        load_npy(path)
