"""cli.caches: sample-index, blend and best-fit refuse, in one line and exit 1, what Megatron or the packing
could not be asked, before any cache is written (the caches themselves: tests/megatron/, tests/best_fit/)."""

import pytest

from conftest import run_tokenmill

SAMPLING = ("--seq-length", "8", "--seed", "1")


def test_blend_takes_one_epoch_of_each_part_or_sample_counts(tmp_path):
    result = run_tokenmill("blend", tmp_path / "a", "-o", tmp_path / "cache", *SAMPLING, "--epochs", "2",
                           "--vocab-size", "100", check=False)
    assert (result.returncode, result.stderr) == (
        1, "tokenmill: error: blend: --epochs supports 1 (each part one epoch); give sample counts otherwise\n")
    assert list(tmp_path.iterdir()) == []


def test_blend_wants_a_job_data_path_per_dataset(tmp_path):
    result = run_tokenmill("blend", "0.5", tmp_path / "a", "0.5", tmp_path / "b", "-o", tmp_path / "cache", *SAMPLING,
                           "--num-samples", "10", "--vocab-size", "100", "--job-data-paths", "/data/a", check=False)
    assert (result.returncode, result.stderr) == (
        1, "tokenmill: error: --job-data-paths names 1 paths for 2 datasets\n")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("identity, message", [
    (("--tokenizer-identifiers", "{nope"), "--tokenizer-identifiers: not JSON (Expecting property name enclosed in "
                                           "double quotes: line 1 column 2 (char 1))"),
    (("--tokenizer-identifiers", '{"class": "X"}', "--megatron-version", "main"),
     "--megatron-version names the version whose identifiers the tokenizer flags give; --tokenizer-identifiers "
     "gives the identifiers themselves: use one or the other"),
])
def test_the_job_s_tokenizer_identity_is_one_json_object_or_the_flags_of_a_version(tmp_path, identity, message):
    result = run_tokenmill("sample-index", tmp_path / "a", "-o", tmp_path / "cache", *SAMPLING, "--epochs", "1",
                           *identity, check=False)
    assert (result.returncode, result.stderr) == (1, f"tokenmill: error: {message}\n")
    assert list(tmp_path.iterdir()) == []


def test_a_vocabulary_size_from_a_file_without_a_sidecar_is_refused(tmp_path):
    result = run_tokenmill("sample-index", tmp_path / "a", "-o", tmp_path / "cache", *SAMPLING, "--epochs", "1",
                           "--vocab-size-from", tmp_path / "a.pbin.meta.json", check=False)
    assert (result.returncode, result.stderr) == (
        1, f"tokenmill: error: {tmp_path / 'a.pbin.meta.json'}: no .pbin sidecar with a tokenizer vocabulary size\n")
    assert list(tmp_path.iterdir()) == []


def test_best_fit_packs_one_input_or_a_blend_with_its_samples(tmp_path):
    two = run_tokenmill("best-fit", tmp_path / "a", tmp_path / "b", "-o", tmp_path / "cache", "--seq-length", "8",
                        check=False)
    assert (two.returncode, two.stderr) == (1, "tokenmill: error: best-fit: one input without --blend, got 2\n")
    no_samples = run_tokenmill("best-fit", "--blend", "1", tmp_path / "a", "-o", tmp_path / "cache", "--seq-length",
                               "8", check=False)
    assert (no_samples.returncode, no_samples.stderr) == (
        1, "tokenmill: error: best-fit --blend: give the blend's samples (--train-samples, --valid-samples, "
           "--test-samples)\n")
    assert list(tmp_path.iterdir()) == []
