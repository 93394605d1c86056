"""DataLoader hand-off: collate functions for the datasets' items and a sampler that resumes exactly."""

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader

from tokenmill.errors import TokenmillError
from tokenmill.formats.bin_idx import MMapIndexedDatasetBuilder
from tokenmill.formats.pbin import PbinWriter
from tokenmill.megatron.index_cache import null_tokenizer_identifiers
from tokenmill.training.datasets import NanosetBuilder, NanosetConfig, PackedMemMapDatasetBase
from tokenmill.training.loader import ResumableSampler, collate_documents, collate_samples

EOD = 99
SEQ = 16


@pytest.fixture
def nanoset(tmp_path):
    """300 documents of 1-40 tokens (seeded) as a Nanoset of 16-token samples."""
    lengths = np.random.default_rng(7).integers(1, 41, size=300)
    with MMapIndexedDatasetBuilder(tmp_path / "docs", np.uint16) as builder:
        for document, length in enumerate(lengths):
            builder.add_document(np.append(np.full(length - 1, document % 90), EOD), [length])
    config = NanosetConfig(str(tmp_path / "docs"), str(tmp_path / "cache"), SEQ, 1, null_tokenizer_identifiers(100),
                           split="1,0,0", eod_id=EOD)
    return NanosetBuilder(config).build()["train"]


def test_collate_samples_worked_example():
    def item(bounds):
        return {"tokens": torch.zeros(4, dtype=torch.int64), "labels": torch.zeros(4, dtype=torch.int64),
                "cu_seqlens": torch.tensor(bounds, dtype=torch.int32)}

    items = [item([0, 3, 4]), item([0, 4]), item([0, 1, 2, 4])]
    batch = collate_samples(items)
    assert batch["tokens"].shape == (3, 4) and batch["labels"].dtype == torch.int64
    # item b's boundaries shifted by 4·b, one vector as flash-attention's varlen kernels take it
    assert batch["cu_seqlens"].tolist() == [0, 3, 4, 8, 9, 10, 12] and batch["cu_seqlens"].dtype == torch.int32
    assert batch["max_seqlen"] == 4
    padded = collate_samples(items, flatten=False)
    assert padded["cu_seqlens"].tolist() == [[0, 3, 4, 4], [0, 4, 4, 4], [0, 1, 2, 4]]
    assert padded["num_cu_seqlens"].tolist() == [3, 2, 4] and padded["max_seqlen"] == 4


def test_collate_samples_refuses_mixed_lengths():
    items = [{"tokens": torch.zeros(n), "cu_seqlens": torch.tensor([0, n])} for n in (4, 5)]
    with pytest.raises(TokenmillError, match=r"different lengths \[4, 5\]"):
        collate_samples(items)


def test_collate_documents_pads_and_gives_varlen_boundaries():
    batch = collate_documents([np.array([5, 6, 7], np.int32), np.array([8], np.int32)], pad_id=-1)
    assert batch["input_ids"].tolist() == [[5, 6, 7], [8, -1, -1]] and batch["input_ids"].dtype == torch.int64
    assert batch["attention_mask"].tolist() == [[1, 1, 1], [1, 0, 0]]
    assert batch["lengths"].tolist() == [3, 1]
    assert batch["cu_seqlens"].tolist() == [0, 3, 4] and batch["max_seqlen"] == 3


def test_dataloader_with_two_workers_batches_a_nanoset(nanoset):
    loader = DataLoader(nanoset, batch_size=8, num_workers=2, collate_fn=collate_samples)
    batches = list(loader)
    assert len(batches) == -(-len(nanoset) // 8)
    first = batches[0]
    assert first["tokens"].shape == (8, SEQ) and first["tokens"].dtype == torch.int64
    expected = [nanoset[i] for i in range(8)]
    assert first["tokens"].tolist() == [item["tokens"].tolist() for item in expected]
    bounds = first["cu_seqlens"].tolist()
    assert bounds[0] == 0 and bounds[-1] == 8 * SEQ and bounds == sorted(bounds)
    assert len(bounds) == 1 + sum(len(item["cu_seqlens"]) - 1 for item in expected)
    assert first["max_seqlen"] == max(np.diff(item["cu_seqlens"].numpy()).max() for item in expected)


def test_packed_documents_batch_through_a_dataloader(tmp_path):
    pbin = tmp_path / "docs.pbin"
    with PbinWriter(pbin, token_width=2) as writer:
        writer.write(np.array([1, 2, 3, 4, 5, 6]), np.array([3, 1, 2]))
    documents = PackedMemMapDatasetBase(pbin)
    batch = next(iter(DataLoader(documents, batch_size=3, collate_fn=collate_documents)))
    assert batch["input_ids"].tolist() == [[1, 2, 3], [4, 0, 0], [5, 6, 0]]
    assert batch["lengths"].tolist() == [3, 1, 2]


def rank_streams(dataset_length, micro_batch, world, **options):
    """Every rank's indices for one epoch, each from its own sampler."""
    return [list(ResumableSampler(dataset_length, micro_batch, rank, world, **options)) for rank in range(world)]


def test_ranks_take_disjoint_micro_batches_of_each_global_batch():
    # 10 samples, micro-batch 2, 2 ranks: global batches [0..3], [4..7]; 8 and 9 are dropped
    assert rank_streams(10, 2, 2) == [[0, 1, 4, 5], [2, 3, 6, 7]]
    assert rank_streams(10, 2, 2, drop_last=False) == [[0, 1, 4, 5, 8], [2, 3, 6, 7, 9]]
    streams = rank_streams(1000, 4, 3, shuffle=True, seed=5)
    drawn = [index for stream in streams for index in stream]
    assert len(drawn) == len(set(drawn)) == 996 and set(drawn) <= set(range(1000))
    assert [len(ResumableSampler(1000, 4, rank, 3)) for rank in range(3)] == [len(s) for s in streams] == [332] * 3


def train(dataset, sampler, steps, num_workers):
    """Up to ``steps`` batches as a trainer takes them, counting consumed samples after each (two epochs)."""
    loader = DataLoader(dataset, batch_size=sampler.micro_batch_size, sampler=sampler, num_workers=num_workers,
                        collate_fn=collate_samples)
    taken = []
    while len(taken) < steps and sampler.epoch < 2:
        for batch in loader:
            taken.append(batch["tokens"])
            sampler.mark_consumed(sampler.global_batch)
            if len(taken) == steps:
                break
    return taken


@pytest.mark.parametrize("stop_epoch", [0, 1])  # stop within the first epoch, and within the second
def test_resuming_gives_the_uninterrupted_stream_whatever_the_workers(nanoset, stop_epoch):
    options = dict(micro_batch_size=4, rank=1, world_size=2, shuffle=True, seed=3)
    steps_per_epoch = len(ResumableSampler(len(nanoset), **options)) // 4
    assert steps_per_epoch > 3
    stop_at = stop_epoch * steps_per_epoch + 3
    uninterrupted = train(nanoset, ResumableSampler(len(nanoset), **options), 10**6, num_workers=0)
    assert len(uninterrupted) == 2 * steps_per_epoch

    first_run = ResumableSampler(len(nanoset), **options)
    before = train(nanoset, first_run, stop_at, num_workers=0)
    checkpoint = first_run.state_dict()
    assert checkpoint["consumed_samples"] == stop_at * 8 and checkpoint["epoch"] == stop_at // steps_per_epoch
    resumed = ResumableSampler(len(nanoset), **options)
    resumed.load_state_dict(checkpoint)
    after = train(nanoset, resumed, 10**6, num_workers=2)
    assert [t.tolist() for t in before + after] == [t.tolist() for t in uninterrupted]


def test_epochs_are_reshuffled_and_megatron_consumed_samples_resume_directly():
    sampler = ResumableSampler(100, 5, 0, 2, shuffle=True, seed=1)
    first_epoch = list(sampler)
    sampler.mark_consumed(100)
    second_epoch = list(sampler)
    assert sorted(first_epoch) != first_epoch and second_epoch != first_epoch
    assert list(ResumableSampler(100, 5, 0, 2, shuffle=True, seed=1, consumed_samples=130)) == second_epoch[15:]


def steps_of(sampler, steps, count=lambda sampler, batch: sampler.global_batch):
    """Up to ``steps`` batches of this rank as a trainer takes them epoch after epoch, marking
    ``count(sampler, batch)`` global samples after each (the README's loop: ``global_batch``)."""
    taken = []
    while len(taken) < steps:
        for batch in DataLoader(range(sampler.dataset_length), batch_size=sampler.micro_batch_size, sampler=sampler):
            taken.append(batch.tolist())
            sampler.mark_consumed(count(sampler, batch))
            if len(taken) == steps:
                break
    return taken


def test_without_drop_last_the_short_last_batch_ends_the_epoch_and_resuming_in_epoch_2_is_exact():
    # 22 samples in global batches of 6 (3 per rank, 2 ranks): batches of 6, 6, 6 and a short one of 4
    # (2 per rank), every sample once per epoch; each step counts a whole global batch, as Megatron's
    # consumed_samples does, so an epoch counts 24
    options = dict(dataset_length=22, micro_batch_size=3, world_size=2, shuffle=True, seed=3, drop_last=False)
    ranks = [ResumableSampler(**options, rank=rank) for rank in range(2)]
    streams = [steps_of(sampler, 12) for sampler in ranks]  # three epochs
    for epoch in range(3):
        batches = [batch for stream in streams for batch in stream[4 * epoch:4 * epoch + 4]]
        assert sorted(index for batch in batches for index in batch) == list(range(22))
        assert [len(batch) for batch in streams[1][4 * epoch:4 * epoch + 4]] == [3, 3, 3, 2]
    assert streams[1][:4] != streams[1][4:8]  # reshuffled
    assert [sampler.consumed_samples for sampler in ranks] == [72, 72] and ranks[1].epoch == 3

    first_run = ResumableSampler(**options, rank=1)
    before = steps_of(first_run, 6)  # two steps into the second epoch
    checkpoint = first_run.state_dict()
    assert (checkpoint["consumed_samples"], checkpoint["epoch"]) == (36, 1)
    resumed = ResumableSampler(**options, rank=1)
    resumed.load_state_dict(checkpoint)
    assert before + steps_of(resumed, 6) == streams[1]
    # Megatron's counter (steps × global batch) resumes directly
    assert steps_of(ResumableSampler(**options, rank=1, consumed_samples=36), 6) == streams[1][6:]

    # a trainer that counts what each step held (4 for the short batch) gets the same stream
    held = ResumableSampler(**options, rank=1)
    assert steps_of(held, 12, lambda sampler, batch: 4 if len(batch) < 3 else sampler.global_batch) == streams[1]
    assert held.consumed_samples == 72


def test_without_drop_last_another_global_batch_resumes_only_within_the_first_epoch():
    # 22 samples: global batches of 4 count an epoch as 24, of 10 as 30; within the first epoch the
    # count is the samples themselves, whatever the batch
    options = dict(dataset_length=22, rank=0, world_size=2, drop_last=False)
    resumed = ResumableSampler(**options, micro_batch_size=5)
    resumed.load_state_dict(ResumableSampler(**options, micro_batch_size=2, consumed_samples=20).state_dict())
    assert list(resumed) == list(ResumableSampler(**options, micro_batch_size=5))[10:] == [20]
    later = ResumableSampler(**options, micro_batch_size=2, consumed_samples=24 + 4).state_dict()
    with pytest.raises(TokenmillError, match="global batches of 4 and 10 count different lengths of each epoch"):
        ResumableSampler(**options, micro_batch_size=5).load_state_dict(later)


@pytest.mark.parametrize("change, message", [
    (dict(seed=4), "seed is 3, this sampler's 4"),
    (dict(dataset_length=99), "dataset_length is 100"),
    (dict(micro_batch_size=7), "global batches of 8 and 14 drop different tails"),
    (dict(micro_batch_size=3), "stopped 16 samples into its epoch"),
])
def test_a_checkpoint_that_would_change_the_order_is_refused(change, message):
    options = dict(dataset_length=100, micro_batch_size=4, rank=0, world_size=2, shuffle=True, seed=3)
    checkpoint = ResumableSampler(**options, consumed_samples=16).state_dict()
    with pytest.raises(TokenmillError, match=message):
        ResumableSampler(**{**options, **change}).load_state_dict(checkpoint)


def test_a_sampler_that_cannot_fill_a_global_batch_is_refused():
    with pytest.raises(TokenmillError, match="do not fill one global batch of 8"):
        ResumableSampler(7, 4, 0, 2)
    with pytest.raises(TokenmillError, match="rank 2 of world size 2"):
        ResumableSampler(100, 4, 2, 2)


def test_the_readme_dataloader_snippet_runs_with_two_workers(tmp_path, monkeypatch):
    """The README's DataLoader block, as printed, over the demo's Megatron files."""
    import re

    from conftest import DEMO_JSONL, GPT2, GPT2_EOD, REPO, run_tokenmill

    readme = (REPO / "README.md").read_text()
    snippet = re.search(r"<!-- dataloader-snippet -->\n```python\n(.*?)```", readme, re.DOTALL).group(1)
    assert "num_workers=2" in snippet
    monkeypatch.chdir(tmp_path)
    for folder in ("data/packed", "data/megatron"):
        (tmp_path / folder).mkdir(parents=True)
    run_tokenmill("pack", DEMO_JSONL, "--tokenizer", GPT2, "--eod", GPT2_EOD, "-o", "data/packed/demo.pbin")
    run_tokenmill("to-megatron", "data/packed/demo.pbin", "-o", "data/megatron/demo_text_document")
    namespace = {}
    exec(compile(snippet, "README.md", "exec"), namespace)
    assert namespace["tokens"].shape == (8, 512) and namespace["tokens"].dtype == torch.int64
    assert namespace["resumed"].consumed_samples == 24 and namespace["max_seqlen"] <= 512
    # the resumed sampler goes on with the fourth batch of the uninterrupted order
    assert list(namespace["resumed"])[:8] == list(ResumableSampler(len(namespace["train"]), 8))[24:32]
