"""The packed blend (tokenmill.best_fit.packed_blend) and the samples it serves
(tokenmill.training.packed_samples.PackedBlend): a worked example, the epochs' property, verify."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import run_tokenmill
from tokenmill.errors import TokenmillError
from tokenmill.formats.bin_idx import MMapIndexedDatasetBuilder
from tokenmill.megatron.blend import build_blending_indices
from tokenmill.best_fit.packed_blend import blend_draws, build_packed_blend, load_packed_blend, packed_blend_problems
from tokenmill.best_fit.packed_index import load_packed_index
from tokenmill.training.loader import collate_samples
from tokenmill.training.packed_samples import PackedBlend
from tokenmill.verify.checks import verify


def write_documents(prefix, documents: list[list[int]]) -> None:
    with MMapIndexedDatasetBuilder(prefix, np.uint16) as builder:
        for document in documents:
            builder.add_document(document, [len(document)])


@pytest.fixture
def two(tmp_path):
    """a: documents of 4, 3 and 2 tokens (9 = EOD); b: of 7 and 2; L = 8, everything in train."""
    write_documents(tmp_path / "a", [[1, 2, 3, 9], [4, 5, 9], [6, 9]])
    write_documents(tmp_path / "b", [[7, 7, 7, 7, 7, 7, 9], [8, 9]])
    return tmp_path


def test_a_worked_example(two):
    """Weights 3 : 1 and 6 train samples: a gives ceil(6 · 0.75) = 5, b ceil(6 · 0.25) = 2, 7 in all, in
    Megatron's greedy order a b a a a b a. a packs into 2 samples (4 + 3, then 2), b into 2 (7, then 2); seed 1
    keeps both orders (RandomState(1).permutation(2) = [0, 1]). a is drawn 5 times: epoch 0 in its index's
    order, epochs 1 and 2 by RandomState([1, e]).permutation(2), here [0, 1] each: 0 1 0 1 0."""
    description = build_packed_blend([two / "a", two / "b"], [3, 1], two / "c", 8, 1, "1,0,0", {"train": 6})["train"]
    assert build_blending_indices([0.75, 0.25], 7)[0].tolist() == [0, 1, 0, 0, 0, 1, 0]
    _, dataset_index, dataset_sample_index = load_packed_blend(two / "c", "truncate", "train")
    assert dataset_index.tolist() == [0, 1, 0, 0, 0, 1, 0] and dataset_index.dtype == np.int16
    assert dataset_sample_index.tolist() == [0, 0, 1, 0, 1, 1, 0]
    assert load_packed_index(two / "c/dataset-0", "truncate", "train")[1].tolist() == [[0, 0, 4], [1, 0, 3],
                                                                                        [2, 0, 2]]
    assert [{key: each[key] for key in ("packed_samples", "drawn", "epochs")} for each in description["datasets"]] \
        == [{"packed_samples": 2, "drawn": 5, "epochs": 3}, {"packed_samples": 2, "drawn": 2, "epochs": 1}]
    # padding: a's samples hold 7 and 2 tokens (drawn 3 and 2 times), b's 7 and 2 (once each): 56 - 34
    assert (description["samples"], description["padding"], description["padding_share"]) == (7, 22, 0.392857)
    blend = PackedBlend(two / "c", prefixes=[two / "a", two / "b"], eod_id=9)
    assert len(blend) == 7
    assert [(item["dataset_id"], item["tokens"].tolist()) for item in (blend[0], blend[1], blend[2])] == [
        (0, [1, 2, 3, 9, 4, 5, 9, 0]), (1, [7, 7, 7, 7, 7, 7, 9, 0]), (0, [6, 9, 0, 0, 0, 0, 0, 0])]
    assert blend[0]["cu_seqlens"].tolist() == [0, 4, 7, 8] and blend[0]["position_ids"].tolist() == [
        0, 1, 2, 3, 0, 1, 2, 0]
    batch = collate_samples([blend[0], blend[5]])
    assert batch["dataset_id"].tolist() == [0, 1] and batch["tokens"].shape == (2, 8)
    assert packed_blend_problems(two / "c") == []
    shown = run_tokenmill("inspect", two / "c", "--sample", "5", "--best-fit", "truncate").stdout.splitlines()
    assert shown[:2] == [f"sample 5 of the train packed blend = dataset 1 ({two / 'b'}), its packed sample 1",
                         "sample 1 of train, best fit (seq 8, seed 1, truncate): 1 documents, 2 tokens, 6 padding"]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(0.1, 10), min_size=1, max_size=4), st.integers(1, 300), st.integers(0, 2 ** 31 - 1),
       st.data())
def test_every_epoch_of_a_dataset_draws_each_packed_sample_once(weights, size, seed, data):
    counts = [data.draw(st.integers(1, 40)) for _ in weights]
    dataset_index, dataset_sample_index = blend_draws(weights, size, seed, counts)
    assert len(dataset_index) >= size
    for i, count in enumerate(counts):
        drawn = dataset_sample_index[dataset_index == i]
        for epoch in range(0, len(drawn), count):
            chunk = drawn[epoch:epoch + count]
            assert len(set(chunk.tolist())) == len(chunk) and chunk.max(initial=0) < count
        assert drawn[:count].tolist() == list(range(min(count, len(drawn))))  # epoch 0: the index's own order


def test_a_dataset_drawn_from_with_nothing_to_pack_is_named(two):
    write_documents(two / "e", [[1, 9]])  # split 1,1,0: its one document is valid's, train has none
    with pytest.raises(TokenmillError, match="e: the blend draws from it, and its split has no documents"):
        build_packed_blend([two / "a", two / "e"], [1, 1], two / "c", 8, 1, "1,1,0", {"train": 2})


def test_the_cli_builds_it_and_verify_finds_a_tampered_draw(two):
    log = run_tokenmill("best-fit", "--blend", "2", two / "a", "1", two / "b", "-o", two / "c", "--seq-length",
                        "8", "--seed", "3", "--split", "1,0,0", "--train-samples", "9", "--long-doc-strategy",
                        "fragment").stderr.splitlines()
    assert verify(two / "c") == []
    description = json.loads((two / "c/blend-fragment-train-description.json").read_text())
    assert description["samples"] == 6 + 3 and description["datasets"][0]["dataset"] == str(two / "a")
    # the log: each dataset's packing with what it cost in tokens, then the blend with the epochs it repeats
    assert [line.split(": ")[:2] for line in log[:2]] == [[f"{two / 'c/dataset-0'} ({two / 'a'})", "train"],
                                                         [f"{two / 'c/dataset-1'} ({two / 'b'})", "train"]]
    assert all("fragment kept every one of the train split's" in line for line in log[:2])
    epochs = ", ".join(f"{each['drawn']} of {each['dataset']}, {each['epochs']} epoch(s) of its packed samples"
                       for each in description["datasets"])
    assert log[2] == (f"{two / 'c'}: blend train: 9 samples ({epochs}), padding "
                      f"{100 * description['padding_share']:.2f} %")
    path = two / "c/blend-fragment-train-dataset_sample_index.npy"
    draws = np.load(path)
    np.save(path, draws[::-1].copy())
    assert verify(two / "c") == [f"{path}: not the draw the blend makes from its datasets' packed samples"]
    np.save(path, draws + 5)
    assert verify(two / "c") == [f"{two / 'c/blend-fragment-train-dataset_index.npy'}: blend sample 0 names "
                                      f"no packed sample of its dataset"]


def test_the_cli_asks_for_weights_and_sample_counts(two):
    result = run_tokenmill("best-fit", "--blend", two / "a", two / "b", "-o", two / "c", "--seq-length", "8",
                           "--train-samples", "4", check=False)
    assert result.returncode == 1 and "best-fit --blend: give 'WEIGHT PREFIX' pairs" in result.stderr
    result = run_tokenmill("best-fit", "--blend", "1", two / "a", "-o", two / "c", "--seq-length", "8", check=False)
    assert result.returncode == 1 and result.stderr == ("tokenmill: error: best-fit --blend: give the blend's samples "
                                                        "(--train-samples, --valid-samples, --test-samples)\n")
    assert not (two / "c").exists()
