"""Feeding tokenmill's datasets to a ``DataLoader``: collate functions and a resumable distributed sampler.

**Collate functions** (``collate_fn=``):

* :func:`collate_samples` — Nanoset / BlendedNanoset items (fixed ``seq_length``): ``tokens``,
  ``labels``, ``loss_mask``, ``position_ids`` stacked to ``[B, S]``; ``cu_seqlens`` — each item's
  document boundaries — flattened over the batch as flash-attention's varlen kernels take them
  (int32, ``[0, ..., B·S]``, item *b*'s boundaries shifted by *b·S*) with ``max_seqlen`` (an int),
  or, with ``flatten=False``, padded to ``[B, P]`` by repeating ``S`` with ``num_cu_seqlens`` ``[B]``.
  BlendedNanoset's ``dataset_id`` becomes a ``[B]`` tensor.
* :func:`collate_documents` — variable-length token arrays (``PackedMemMapDatasetBase``/``Megatron``,
  ``MemMapDataset``; fixed ones too): ``input_ids`` ``[B, L]`` padded with ``pad_id``,
  ``attention_mask`` and ``lengths``, plus ``cu_seqlens``/``max_seqlen`` of the unpadded documents.

**Sampler** :class:`ResumableSampler` — the order of sample indices for one data-parallel rank, as
Megatron's pretraining sampler lays it out: a global batch is ``micro_batch_size × world_size``
consecutive samples of the epoch's order, rank *r* takes micro-batch *r* of it. The order of epoch
*e* is ``range(N)`` or, shuffled, a permutation drawn from ``numpy.random.default_rng([seed, e])``.
With ``drop_last`` the samples after the last whole global batch are left out of that epoch (every
rank gets as many batches); without it the epoch ends with a short global batch. The trainer counts
progress in *global* samples, as Megatron's ``consumed_samples``: :meth:`ResumableSampler.mark_consumed`
after each step, ``state_dict()`` in the checkpoint, ``load_state_dict()`` on restart — the sampler
then starts exactly at the next sample (O(1): the epoch's order is recomputed, nothing is iterated
over). It runs in the loader's main process, so the number of DataLoader workers never changes the
stream.

The count is of global-batch *slots*, so that every step adds ``global_batch`` whatever it held
(Megatron adds ``global_batch_size`` per step): an epoch counts ``ceil(N / global_batch)`` whole
global batches, its short last batch (``drop_last=False``) as a full one. Marking only what that
short batch held ends the epoch all the same. Epoch *e*'s batch *k* thus starts at ``consumed_samples
= e × epoch_slots + k × global_batch``.

Cost: collating is O(batch tokens); a sampler holds one epoch's order (8 bytes per sample) and
computes it once per epoch (a permutation of N).
"""

from __future__ import annotations

from typing import Iterator

import numpy as np
import torch
from torch.utils.data import Sampler

from tokenmill.errors import TokenmillError

__all__ = ["collate_samples", "collate_documents", "ResumableSampler"]


def _flat_cu_seqlens(per_item: list[np.ndarray], offsets: np.ndarray) -> tuple[torch.Tensor, int]:
    """Boundaries of every item, shifted by the item's start in the flattened batch, as one vector."""
    shifted = [np.asarray(bounds[1:], dtype=np.int64) + offset for bounds, offset in zip(per_item, offsets)]
    flat = np.concatenate([[0], *shifted]).astype(np.int32)
    max_seqlen = int(np.diff(flat).max()) if len(flat) > 1 else 0
    return torch.from_numpy(flat), max_seqlen


def collate_samples(items: list[dict], flatten: bool = True) -> dict:
    """Batch Nanoset/BlendedNanoset items (see the module docstring).

    Raises:
        TokenmillError: items of different sequence lengths.
    """
    seq_lengths = {len(item["tokens"]) for item in items}
    if len(seq_lengths) != 1:
        raise TokenmillError(f"collate_samples: items of different lengths {sorted(seq_lengths)}; "
                             f"use collate_documents for variable-length items")
    batch = {key: torch.stack([item[key] for item in items])
             for key in ("tokens", "labels", "loss_mask", "position_ids") if key in items[0]}
    seq_length = seq_lengths.pop()
    bounds = [item["cu_seqlens"].numpy() for item in items]
    if flatten:
        batch["cu_seqlens"], batch["max_seqlen"] = _flat_cu_seqlens(bounds, np.arange(len(items)) * seq_length)
    else:
        width = max(map(len, bounds))
        padded = np.full((len(items), width), seq_length, dtype=np.int32)
        for row, item_bounds in enumerate(bounds):
            padded[row, :len(item_bounds)] = item_bounds
        batch["cu_seqlens"] = torch.from_numpy(padded)
        batch["num_cu_seqlens"] = torch.tensor([len(item_bounds) for item_bounds in bounds], dtype=torch.int32)
        batch["max_seqlen"] = int(max(np.diff(item_bounds).max() for item_bounds in bounds))
    if "dataset_id" in items[0]:
        batch["dataset_id"] = torch.tensor([item["dataset_id"] for item in items], dtype=torch.int64)
    return batch


def collate_documents(items: list, pad_id: int = 0, sample_key: str | None = None) -> dict:
    """Batch token arrays of any lengths (see the module docstring); ``sample_key`` reads dict items."""
    documents = [np.asarray(item[sample_key] if sample_key is not None else item) for item in items]
    lengths = np.array([len(document) for document in documents], dtype=np.int64)
    width = int(lengths.max()) if len(lengths) else 0
    input_ids = np.full((len(documents), width), pad_id, dtype=np.int64)
    attention_mask = np.zeros((len(documents), width), dtype=np.int64)
    for row, document in enumerate(documents):
        input_ids[row, :len(document)] = document
        attention_mask[row, :len(document)] = 1
    cu_seqlens, max_seqlen = _flat_cu_seqlens([np.array([0, n]) for n in lengths],
                                              np.concatenate([[0], np.cumsum(lengths)[:-1]]))
    return {"input_ids": torch.from_numpy(input_ids), "attention_mask": torch.from_numpy(attention_mask),
            "lengths": torch.from_numpy(lengths), "cu_seqlens": cu_seqlens, "max_seqlen": max_seqlen}


class ResumableSampler(Sampler):
    """Sample indices for one data-parallel rank, resumable at any global sample (module docstring).

    Args:
        dataset_length: samples in the dataset (``len(dataset)``).
        micro_batch_size: samples per rank per step (the DataLoader's ``batch_size``).
        rank: this data-parallel rank, ``0 <= rank < world_size``.
        world_size: data-parallel ranks.
        shuffle: a new permutation every epoch (Nanoset samples are already shuffled: False keeps
            Megatron's order).
        seed: the permutations' seed.
        drop_last: leave out the samples after an epoch's last whole global batch (True), or give
            the last global batch short (False; then ranks may get different counts, and that
            batch still counts as ``global_batch`` consumed samples: see the module docstring).
        consumed_samples: global samples already consumed (e.g. from a Megatron checkpoint), short
            last batches counted whole.

    Attributes:
        samples_per_epoch: the samples an epoch yields over all ranks.
        epoch_slots: what an epoch adds to ``consumed_samples``: ``samples_per_epoch`` rounded up to
            whole global batches.

    Raises:
        TokenmillError: a rank outside the world, sizes < 1, or a dataset smaller than a global batch
            with ``drop_last``.
    """

    def __init__(self, dataset_length: int, micro_batch_size: int = 1, rank: int = 0, world_size: int = 1,
                 shuffle: bool = False, seed: int = 0, drop_last: bool = True, consumed_samples: int = 0):
        if world_size < 1 or micro_batch_size < 1 or not 0 <= rank < world_size:
            raise TokenmillError(f"sampler: rank {rank} of world size {world_size} with micro-batch "
                                 f"{micro_batch_size} is not a valid data-parallel layout")
        self.dataset_length, self.micro_batch_size = dataset_length, micro_batch_size
        self.rank, self.world_size = rank, world_size
        self.shuffle, self.seed, self.drop_last = shuffle, seed, drop_last
        self.global_batch = micro_batch_size * world_size
        self.samples_per_epoch = (dataset_length // self.global_batch * self.global_batch if drop_last
                                  else dataset_length)
        if self.samples_per_epoch == 0:
            raise TokenmillError(f"sampler: {dataset_length} samples do not fill one global batch of "
                                 f"{self.global_batch}")
        self.epoch_slots = _epoch_slots(dataset_length, self.global_batch, drop_last)
        self.consumed_samples = consumed_samples
        self._order_epoch, self._order = None, None

    @property
    def epoch(self) -> int:
        return self.consumed_samples // self.epoch_slots

    def _epoch_order(self, epoch: int) -> np.ndarray:
        if self._order_epoch != epoch:
            self._order = (np.random.default_rng([self.seed, epoch]).permutation(self.dataset_length)
                           if self.shuffle else np.arange(self.dataset_length))
            self._order_epoch = epoch
        return self._order

    def __iter__(self) -> Iterator[int]:
        """This rank's indices from the next unconsumed global batch to the end of its epoch.

        Raises:
            TokenmillError: ``consumed_samples`` is not at the start of a global batch.
        """
        epoch, position = divmod(self.consumed_samples, self.epoch_slots)
        if position % self.global_batch:
            raise TokenmillError(f"sampler: {self.consumed_samples} consumed samples is not a whole number of "
                                 f"global batches of {self.global_batch} into epoch {epoch}")
        order = self._epoch_order(epoch)
        for start in range(position, self.samples_per_epoch, self.global_batch):
            batch = order[start:min(start + self.global_batch, self.samples_per_epoch)]
            share = -(-len(batch) // self.world_size) if len(batch) < self.global_batch else self.micro_batch_size
            yield from batch[self.rank * share:(self.rank + 1) * share].tolist()

    def __len__(self) -> int:
        position = self.consumed_samples % self.epoch_slots
        remaining = self.samples_per_epoch - position
        whole, rest = divmod(remaining, self.global_batch)
        share = -(-rest // self.world_size)
        return whole * self.micro_batch_size + max(0, min(share, rest - self.rank * share))

    def mark_consumed(self, global_samples: int) -> None:
        """Count a training step's samples over all ranks: ``global_batch`` for every step, the
        epoch's short last one included, or (for that one) the samples it held; a count that reaches
        the end of the epoch's samples moves to the next epoch's start."""
        epoch, position = divmod(self.consumed_samples, self.epoch_slots)
        position += global_samples
        if self.samples_per_epoch <= position < self.epoch_slots:  # what a short last batch held
            position = self.epoch_slots
        self.consumed_samples = epoch * self.epoch_slots + position

    def state_dict(self) -> dict:
        return {"consumed_samples": self.consumed_samples, "epoch": self.epoch, "seed": self.seed,
                "shuffle": self.shuffle, "drop_last": self.drop_last, "dataset_length": self.dataset_length,
                "global_batch": self.global_batch}

    def load_state_dict(self, state: dict) -> None:
        """Resume where ``state`` (from :meth:`state_dict`) stopped.

        Another world size or micro-batch is fine as long as epochs keep their length (with
        ``drop_last=False``: in the first epoch, or where both round an epoch up to the same number
        of samples) and the new global batch divides the position reached in the epoch.

        Raises:
            TokenmillError: another dataset length, seed, shuffle or drop_last (the order would differ),
                another epoch length, or a position that is not a whole number of this sampler's
                global batches.
        """
        for key in ("dataset_length", "seed", "shuffle", "drop_last"):
            if state[key] != getattr(self, key):
                raise TokenmillError(f"sampler: the checkpoint's {key} is {state[key]!r}, this sampler's "
                                     f"{getattr(self, key)!r}: resuming would give another order")
        old_batch = state["global_batch"]
        old_slots = _epoch_slots(self.dataset_length, old_batch, self.drop_last)
        # drop_last: the epochs hold other samples; else only the count of a finished epoch differs
        if old_slots != self.epoch_slots and (self.drop_last or state["consumed_samples"] >= old_slots):
            differ = "drop different tails from" if self.drop_last else "count different lengths of"
            raise TokenmillError(f"sampler: global batches of {old_batch} and {self.global_batch} {differ} each "
                                 f"epoch; resume with a global batch of {old_batch}")
        position = state["consumed_samples"] % self.epoch_slots
        if position % self.global_batch:
            raise TokenmillError(f"sampler: the checkpoint stopped {position} samples into its epoch, not a whole "
                                 f"number of global batches of {self.global_batch}")
        self.consumed_samples = state["consumed_samples"]


def _epoch_slots(dataset_length: int, global_batch: int, drop_last: bool) -> int:
    """What one epoch adds to ``consumed_samples``: its whole global batches (``drop_last``), or all
    of them with the short last one counted whole."""
    whole, rest = divmod(dataset_length, global_batch)
    return (whole + (rest > 0 and not drop_last)) * global_batch
