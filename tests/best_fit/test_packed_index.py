"""The packed index over a Megatron .bin/.idx (tokenmill.best_fit.packed_index) and the samples it serves
(tokenmill.training.packed_samples): a worked example, then the demo corpus's properties."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest
import torch
from tokenizers import Tokenizer

from conftest import DEMO_JSONL, GPT2, GPT2_EOD, GPT2_EOD_ID, built_once, run_tokenmill
from tokenmill.errors import TokenmillError
from tokenmill.formats.bin_idx import MMapIndexedDataset, MMapIndexedDatasetBuilder
from tokenmill.best_fit.packed_index import (TRUNCATION_WARNING_SHARE, build_packed_index, document_token_ranges,
                                            load_packed_index, packed_index_problems, truncation_cost)
from tokenmill.training.loader import collate_samples
from tokenmill.training.packed_samples import PackedSamples


def write_documents(prefix, documents: list[list[int]]) -> None:
    with MMapIndexedDatasetBuilder(prefix, np.uint16) as builder:
        for document in documents:
            builder.add_document(document, [len(document)])


def test_a_worked_example(tmp_path):
    """Documents of 5, 3, 6, 2 and 9 tokens (9 = EOD), L = 8, everything in train, fragment: the 9-token one
    becomes 8 + 1. Longest first: 8 fills sample 0; 6 opens sample 1 (room 2); 5 opens sample 2 (room 3); 3 fits
    only sample 2's room 3; 2 fits sample 1's room 2; 1 opens sample 3. Seed 1's order of the 4 samples is
    RandomState(1).permutation(4) = [3, 2, 0, 1]. Cut every 8 tokens, only the 9-token document would be split."""
    documents = [[1, 2, 3, 4, 9], [5, 6, 9], [7, 7, 7, 7, 7, 9], [8, 9], [10, 11, 12, 13, 14, 15, 16, 17, 9]]
    write_documents(tmp_path / "d", documents)
    description = build_packed_index(tmp_path / "d", tmp_path / "cache", 8, 1, "1,0,0", "fragment")["train"]
    assert np.random.RandomState(1).permutation(4).tolist() == [3, 2, 0, 1]
    _, pieces, offsets = load_packed_index(tmp_path / "cache", "fragment", "train")
    assert offsets.tolist() == [0, 1, 3, 4, 6]
    assert pieces.tolist() == [[4, 8, 1],  # sample 3: the fragment's last token
                               [0, 0, 5], [1, 0, 3],  # sample 2
                               [4, 0, 8],  # sample 0
                               [2, 0, 6], [3, 0, 2]]  # sample 1
    assert {key: description[key] for key in ("documents", "samples", "kept_whole", "long", "padding",
                                              "cut_by_concat")} == {
        "documents": 5, "samples": 4, "kept_whole": 4, "long": 1, "padding": 7, "cut_by_concat": 1}
    samples = PackedSamples(tmp_path / "d", tmp_path / "cache", "train", "fragment", eod_id=9, pad_id=0)
    item = samples[1]  # the 5- and 3-token documents
    assert item["tokens"].tolist() == [1, 2, 3, 4, 9, 5, 6, 9]
    assert item["labels"].tolist() == [2, 3, 4, 9, 5, 6, 9, 0]
    assert item["loss_mask"].tolist() == [1, 1, 1, 1, 1, 1, 1, 0]
    assert item["position_ids"].tolist() == [0, 1, 2, 3, 4, 0, 1, 2]
    assert item["cu_seqlens"].tolist() == [0, 5, 8]
    item = samples[0]  # one token, then padding
    assert item["tokens"].tolist() == [9, 0, 0, 0, 0, 0, 0, 0] and item["loss_mask"].sum() == 0
    assert item["cu_seqlens"].tolist() == [0, 1, 8] and item["position_ids"].tolist() == [0, 0, 1, 2, 3, 4, 5, 6]
    masked = PackedSamples(tmp_path / "d", tmp_path / "cache", "train", "fragment", eod_id=9, eod_mask_loss=True)
    assert masked[1]["loss_mask"].tolist() == [1, 1, 1, 1, 0, 1, 1, 0]


def test_truncate_keeps_a_long_documents_first_tokens_and_counts_the_rest(tmp_path):
    write_documents(tmp_path / "d", [[1] * 20, [2] * 3])
    description = build_packed_index(tmp_path / "d", tmp_path / "cache", 8, 1, "1", "truncate")["train"]
    assert description["long_tokens_dropped"] == 12 and description["samples"] == 2
    assert sorted(piece.tolist() for piece in load_packed_index(tmp_path / "cache", "truncate", "train")[1]) == [
        [0, 0, 8], [1, 0, 3]]


def test_the_log_says_the_tokens_truncate_dropped_of_each_split_beside_the_padding_and_warns(tmp_path):
    """Documents of 20 and 3 tokens, all in train, L = 8: truncate keeps 8 of the 20, so it drops 12 of the
    split's 23 tokens (52.2 %, over TRUNCATION_WARNING_SHARE), and 2 samples of 8 hold 11 tokens (padding 5,
    31.25 %). The log (stderr) says the dropped tokens, whose split they are of, and a warning naming
    long_doc_strategy: fragment; with fragment it says none was dropped and does not warn."""
    write_documents(tmp_path / "d", [list(range(1, 21)), [2] * 3])
    log = run_tokenmill("best-fit", tmp_path / "d", "-o", tmp_path / "cache", "--seq-length", "8", "--split",
                        "1").stderr.splitlines()
    assert log == [f"{tmp_path / 'cache'}: train: 2 documents in 2 samples of 8: 1 whole (1 that concatenation "
                   f"would cut), 1 longer: truncate dropped 12 of the train split's 23 tokens (52.2 %); padding "
                   f"31.25 % of these samples",
                   f"{tmp_path / 'cache'}: train: warning: truncate dropped 52.2 % of the train split's tokens "
                   f"(documents over 8 tokens cut to their first 8; more than 5 %): long_doc_strategy: fragment "
                   f"(--long-doc-strategy fragment) keeps them, as pieces of 8"]
    assert TRUNCATION_WARNING_SHARE == 0.05
    log = run_tokenmill("best-fit", tmp_path / "d", "-o", tmp_path / "cache", "--seq-length", "8", "--split",
                        "1", "--long-doc-strategy", "fragment").stderr.splitlines()
    assert len(log) == 1 and "1 longer: fragment kept every one of the train split's 23 tokens;" in log[0]


def test_a_rebuild_killed_after_its_first_array_leaves_no_description_of_other_arrays(tmp_path, monkeypatch):
    """A packed index rewritten in its folder (``best-fit -o DIR`` again, at another L) and killed between its arrays
    and its description: the folder holds no description, never the old one over the new arrays (which inspect
    read as samples of 128 tokens at L = 64, "-64 padding")."""
    write_documents(tmp_path / "d", [[1] * 50 + [9], [2] * 70 + [9], [3] * 20 + [9]] * 10)
    build_packed_index(tmp_path / "d", tmp_path / "cache", 64, 1, "1,0,0", "truncate")
    saved = np.save

    def killed(*_, **__):
        raise KeyboardInterrupt

    def killed_after_one(handle, array, **options):
        saved(handle, array, **options)
        monkeypatch.setattr(np, "save", killed)

    monkeypatch.setattr(np, "save", killed_after_one)
    with pytest.raises(KeyboardInterrupt):
        build_packed_index(tmp_path / "d", tmp_path / "cache", 128, 1, "1,0,0", "truncate")
    monkeypatch.setattr(np, "save", saved)
    with pytest.raises(TokenmillError, match="no packed index"):
        load_packed_index(tmp_path / "cache", "truncate", "train")


def test_a_small_share_truncated_is_said_without_a_warning():
    figures = {"split_name": "valid", "long_document_strategy": "truncate", "tokens": 1000,
               "long_tokens_dropped": 50, "sequence_length": 8}
    assert truncation_cost(figures) == ("truncate dropped 50 of the valid split's 1,000 tokens (5.0 %)", None)
    cost, warning = truncation_cost({**figures, "long_tokens_dropped": 51})
    assert cost.endswith("(5.1 %)") and warning.startswith("warning: truncate dropped 5.1 % of the valid split's")


def test_a_prefix_of_several_sequences_per_document_splits_by_sequence_as_gptdataset(tmp_path):
    """GPTDataset splits by sequence (specs/megatron.md §2): over the S sequences of the .idx, a split
    (start, end) of the book-ends holds sequences [round(start·S), round(end·S)). Here 4 documents hold 7
    sequences (2, 1, 3 and 1: ``--split-sentences``); "60,30,10" gives the book-ends (0, 0.6), (0.6, 0.9),
    (0.9, 1.0), so train = sequences [0, round(4.2)) = [0, 4), valid = [4, round(6.3)) = [4, 6), test = [6, 7).
    Train then holds documents 0 and 1 and document 2's first sequence; valid document 2's other two (from its
    third token), test document 3. (By document, as before, train held documents 0 and 1, valid 2 and 3 and
    test nothing: valid held sequences Megatron trains on.)"""
    sequences_of = [[[1, 2, 3], [4, 5]], [[6, 7, 8, 9]], [[10, 11], [12, 13], [14, 15, 16]], [[17, 18, 19, 20, 21]]]
    with MMapIndexedDatasetBuilder(tmp_path / "d", np.uint16) as builder:
        for sequences in sequences_of:
            builder.add_document(sum(sequences, []), [len(sequence) for sequence in sequences])
    flat = [sequence for sequences in sequences_of for sequence in sequences]
    bounds = list(itertools.accumulate([weight / 100.0 for weight in (60.0, 30.0, 10.0)], initial=0))
    ranges = {name: range(round(bounds[k] * float(len(flat))), round(bounds[k + 1] * float(len(flat))))
              for k, name in enumerate(("train", "valid", "test"))}
    assert {name: (r.start, r.stop) for name, r in ranges.items()} == {"train": (0, 4), "valid": (4, 6),
                                                                        "test": (6, 7)}
    descriptions = build_packed_index(tmp_path / "d", tmp_path / "cache", 8, 1, "60,30,10", "fragment")
    dataset = MMapIndexedDataset(tmp_path / "d")
    for name, sequences in ranges.items():
        _, pieces, _ = load_packed_index(tmp_path / "cache", "fragment", name)
        starts = document_token_ranges(dataset)[0][pieces[:, 0]] + pieces[:, 1]
        packed = sorted(dataset.tokens_at(int(start), int(count)).tolist() for start, count in zip(starts,
                                                                                                  pieces[:, 2]))
        assert sum(packed, []) == sum((flat[k] for k in sequences), []), name
        assert descriptions[name]["tokens"] == sum(len(flat[k]) for k in sequences)
    assert load_packed_index(tmp_path / "cache", "fragment", "valid")[1].tolist() == [[2, 2, 5]]
    assert packed_index_problems(tmp_path / "cache") == []
    # inspect shows valid's part of document 2 (its tokens 12..16, from its third token), not sequence 2's
    shown = run_tokenmill("inspect", tmp_path / "d", "--sample", "0", "--cache", tmp_path / "cache", "--split",
                          "valid", "--best-fit", "fragment", "--tokenizer", GPT2).stdout.splitlines()
    assert shown[1:] == ["  document 2: 5 tokens (tokens 2-6 of 7)",
                         f"    {Tokenizer.from_file(str(GPT2)).decode([12, 13, 14, 15, 16])}"]


@pytest.fixture(scope="module")
def demo(request, tmp_path_factory):
    """The demo packed with its Megatron files and their packed index (seq 512, seed 7), once per run for every
    xdist worker. Read only."""
    return built_once(request.config, tmp_path_factory, "packed-index", _make_demo)


def _make_demo(folder) -> None:
    folder.mkdir()
    run_tokenmill("pack", DEMO_JSONL, "--tokenizer", GPT2, "--eod", GPT2_EOD, "-o", folder / "demo.pbin",
                  "--megatron", folder / "demo")
    run_tokenmill("best-fit", folder / "demo", "-o", folder / "cache", "--seq-length", "512", "--seed", "7")


def test_every_document_that_fits_is_whole_in_exactly_one_sample(demo):
    dataset = MMapIndexedDataset(demo / "demo")
    lengths = dataset.sequence_lengths
    seen = []
    for split in ("train", "valid", "test"):
        description, pieces, offsets = load_packed_index(demo / "cache", "truncate", split)
        samples = PackedSamples(demo / "demo", demo / "cache", split, eod_id=GPT2_EOD_ID)
        assert len(samples) == description["samples"] == len(offsets) - 1
        for k in range(len(samples)):
            sample = pieces[offsets[k]:offsets[k + 1]]
            item = samples[k]
            used = int(sample[:, 2].sum())
            assert used <= 512
            assert item["cu_seqlens"].tolist()[:len(sample) + 1] == [0, *np.cumsum(sample[:, 2]).tolist()]
            assert item["loss_mask"][used - 1:].sum() == 0 and item["tokens"][used:].sum() == 0
            for (document, offset, count), start in zip(sample, item["cu_seqlens"][:-1].tolist()):
                assert offset == 0 and count == min(lengths[document], 512)
                assert item["tokens"][start:start + count].tolist() == dataset[document][:count].tolist()
        seen += pieces[:, 0].tolist()
    assert sorted(seen) == list(range(dataset.num_documents))
    assert json.loads((demo / "cache/best_fit-truncate-train-description.json").read_text())["seed"] == 7


def test_the_samples_batch_with_collate_samples(demo):
    samples = PackedSamples(demo / "demo", demo / "cache", "valid")
    batch = collate_samples([samples[0], samples[1]])
    assert batch["tokens"].shape == (2, 512) and batch["cu_seqlens"].dtype == torch.int32
    assert batch["cu_seqlens"][-1] == 1024


def test_the_same_inputs_give_the_same_bytes_and_another_seed_another_order(demo, tmp_path):
    run_tokenmill("best-fit", demo / "demo", "-o", tmp_path / "again", "--seq-length", "512", "--seed", "7")
    run_tokenmill("best-fit", demo / "demo", "-o", tmp_path / "other", "--seq-length", "512", "--seed", "8")
    for name in ("pieces", "sample_offsets"):
        path = f"best_fit-truncate-train-{name}.npy"
        assert (tmp_path / "again" / path).read_bytes() == (demo / "cache" / path).read_bytes()
    assert (tmp_path / "other" / "best_fit-truncate-train-pieces.npy").read_bytes() != \
        (demo / "cache" / "best_fit-truncate-train-pieces.npy").read_bytes()


def test_an_index_of_another_idx_is_refused(demo, tmp_path):
    write_documents(tmp_path / "d", [[1, 2, 3]])
    with pytest.raises(TokenmillError, match=r"cache: its train packed index was built from another .*d\.idx; "
                                             r"build it again"):
        PackedSamples(tmp_path / "d", demo / "cache", "train")
    with pytest.raises(TokenmillError, match=r"best_fit-fragment-train-description.json: no packed index"):
        PackedSamples(demo / "demo", demo / "cache", "train", "fragment")


def test_verify_finds_a_damaged_or_stale_packed_index(demo, tmp_path):
    import shutil

    assert run_tokenmill("verify", demo / "cache").stderr.endswith("1 file(s) verified, no problem found\n")
    shutil.copytree(demo / "cache", tmp_path / "cache")
    pieces_path = tmp_path / "cache/best_fit-truncate-valid-pieces.npy"
    pieces = np.load(pieces_path)
    pieces[[0, 1]] = pieces[[1, 0]]  # two pieces swapped: still whole, not the packer's order
    np.save(pieces_path, pieces)
    offsets_path = tmp_path / "cache/best_fit-truncate-test-sample_offsets.npy"
    np.save(offsets_path, np.array([0, 0, 3]))  # an empty sample before the split's one
    result = run_tokenmill("verify", tmp_path / "cache", check=False)
    assert result.returncode == 1
    assert f"{pieces_path}: not what the packer makes from {demo / 'demo'}" in result.stderr
    assert "best_fit-truncate-test-description.json: sample 0 holds 0 tokens, not 1..512" in result.stderr


def test_verify_checks_olmo_work_dirs_too(tmp_path):
    run_tokenmill("pack", DEMO_JSONL, "--tokenizer", GPT2, "--eod", GPT2_EOD, "-o", tmp_path / "demo.pbin")
    run_tokenmill("to-olmo", tmp_path / "demo.pbin", "-o", tmp_path / "parts", "--max-tokens", "400000")
    run_tokenmill("best-fit", tmp_path / "parts", "-o", tmp_path / "work", "--seq-length", "1024")
    assert run_tokenmill("verify", tmp_path / "work").returncode == 0
    damaged = sorted((tmp_path / "work/dataset-common").glob("documents-by-instance-*"))[0]
    damaged.write_bytes(damaged.read_bytes()[8:] + damaged.read_bytes()[:8])
    missing = sorted((tmp_path / "work/dataset-common").glob("instance-offsets-*"))[1]
    missing.unlink()
    result = run_tokenmill("verify", tmp_path / "work", check=False)
    parts = ", ".join(str(tmp_path / f"parts/part-0000{k}.npy") for k in range(3))
    assert result.returncode == 1 and sorted(result.stderr.splitlines()[:2]) == sorted([
        f"{damaged}: not what the packer makes from {parts}", f"{missing}: missing (the job would pack again)"])


def test_inspect_shows_a_packed_samples_documents(demo):
    _, pieces, offsets = load_packed_index(demo / "cache", "truncate", "train")
    shown = run_tokenmill("inspect", demo / "demo", "--sample", "5", "--cache", demo / "cache", "--best-fit",
                          "truncate", "--tokenizer", GPT2).stdout.splitlines()
    sample = pieces[offsets[5]:offsets[6]]
    assert shown[0] == (f"sample 5 of train, best fit (seq 512, seed 7, truncate): {len(sample)} documents, "
                        f"{sample[:, 2].sum()} tokens, {512 - sample[:, 2].sum()} padding")
    assert [line.split(":")[0] for line in shown[1::2]] == [f"  document {document}" for document in sample[:, 0]]
