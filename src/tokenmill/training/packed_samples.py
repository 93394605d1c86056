"""PackedSamples: the best-fit samples of a Megatron ``.bin/.idx`` through its packed index, as fixed-length items.

Item ``k`` is sample ``k`` of the split's packed index (:mod:`tokenmill.best_fit.packed_index`): its pieces
back to back, then ``pad_id`` up to ``sequence_length``, as a dict of tensors shaped like a Nanoset item, so
:func:`tokenmill.training.loader.collate_samples` and :class:`tokenmill.training.loader.ResumableSampler` take
it unchanged:

* ``tokens``: the ``L`` ids (padding as 0); ``labels``: each token's successor in the sample, the last real
  token's and the padding's 0;
* ``loss_mask``: 1.0, but 0.0 where the label is padding (the last real token and the padding) and, with
  ``eod_mask_loss``, where the token is the EOD;
* ``position_ids``: restarting at 0 at each piece (document or fragment) and at the padding;
* ``cu_seqlens``: int32 boundaries of the pieces, then the padding as one more segment, ending at ``L`` (what
  flash-attention's varlen kernels and Megatron's inter-document masking take).

:class:`PackedBlend` serves a packed blend (:mod:`tokenmill.best_fit.packed_blend`) the same way: item ``s`` is
packed sample ``dataset_sample_index[s]`` of dataset ``dataset_index[s]``, with its ``dataset_id`` (as
:class:`tokenmill.training.nanoset.BlendedNanoset`'s items).

Cost: opening maps the ``.bin/.idx`` and the index files and checks that the ``.idx`` is the one packed; an
item is O(pieces) lookups and O(L) to read its tokens.
"""

from __future__ import annotations

import os

import numpy as np
import torch
from torch.utils.data import Dataset

from tokenmill.errors import TokenmillError
from tokenmill.formats.bin_idx import MMapIndexedDataset
from tokenmill.megatron.index_cache import dataset_fingerprint
from tokenmill.best_fit.packed_blend import dataset_folder, load_packed_blend
from tokenmill.best_fit.packed_index import document_token_ranges, load_packed_index

__all__ = ["PackedSamples", "PackedBlend"]


class PackedSamples(Dataset):
    """One split's best-fit samples (module docstring).

    Args:
        prefix: the Megatron dataset (``PREFIX.bin/.idx``) the index was built from.
        cache_dir: the folder holding its packed index.
        split_name: ``train``, ``valid`` or ``test``.
        strategy: the long-document strategy it was built with.
        eod_id: the EOD id, for ``eod_mask_loss``.
        pad_id: fills each sample up to its length (its positions are masked).
        eod_mask_loss: zero the loss where the token is the EOD.

    Raises:
        TokenmillError: no packed index, or one built from another ``.idx``.
    """

    def __init__(self, prefix: str | os.PathLike, cache_dir: str | os.PathLike, split_name: str = "train",
                 strategy: str = "truncate", eod_id: int | None = None, pad_id: int = 0, eod_mask_loss: bool = False):
        self.dataset = MMapIndexedDataset(prefix)
        self.description, self.pieces, self.sample_offsets = load_packed_index(cache_dir, strategy, split_name)
        if self.description.get("fingerprint") != dataset_fingerprint(self.dataset):
            raise TokenmillError(f"{cache_dir}: its {split_name} packed index was built from another "
                                 f"{self.dataset.idx_path}; build it again")
        self.sequence_length = int(self.description["sequence_length"])
        self.token_starts = document_token_ranges(self.dataset)[0]
        self.eod_id, self.pad_id, self.eod_mask_loss = eod_id, pad_id, eod_mask_loss

    def __len__(self) -> int:
        return len(self.sample_offsets) - 1

    def __getitem__(self, k: int) -> dict[str, torch.Tensor]:
        if not 0 <= k < len(self):
            raise IndexError(f"sample {k} of {len(self)}")
        length = self.sequence_length
        pieces = self.pieces[self.sample_offsets[k]:self.sample_offsets[k + 1]]
        starts = self.token_starts[pieces[:, 0]] + pieces[:, 1]
        tokens = np.full(length, self.pad_id, dtype=np.int64)
        used = int(pieces[:, 2].sum())
        tokens[:used] = np.concatenate([self.dataset.tokens_at(int(start), int(count))
                                        for start, count in zip(starts, pieces[:, 2])])
        labels = np.append(tokens[1:], self.pad_id)
        loss_mask = np.ones(length, dtype=np.float32)
        loss_mask[max(used - 1, 0):] = 0.0
        if self.eod_mask_loss and self.eod_id is not None:
            loss_mask[tokens == self.eod_id] = 0.0
        tokens[used:] = 0
        labels[max(used - 1, 0):] = 0
        bounds = np.concatenate([[0], np.cumsum(pieces[:, 2])]).astype(np.int64)
        position_ids = np.arange(length, dtype=np.int64) - np.repeat(bounds, np.diff(np.append(bounds, length)))
        cu_seqlens = np.append(bounds, length) if used < length else bounds
        return {"tokens": torch.from_numpy(tokens), "labels": torch.from_numpy(labels),
                "loss_mask": torch.from_numpy(loss_mask), "position_ids": torch.from_numpy(position_ids),
                "cu_seqlens": torch.from_numpy(cu_seqlens.astype(np.int32))}


class PackedBlend(Dataset):
    """One split of a packed blend (module docstring).

    Args:
        cache_dir: the packed blend's folder (``tokenmill best-fit --blend``).
        split_name: ``train``, ``valid`` or ``test``.
        strategy: the long-document strategy it was built with.
        prefixes: the blended Megatron datasets, in the blend's order; default: as its description names them
            (paths relative to the folder the blend was built from).
        eod_id, pad_id, eod_mask_loss: as :class:`PackedSamples`.

    Raises:
        TokenmillError: no packed blend, another number of prefixes, or a dataset's index built from another
            ``.idx``.
    """

    def __init__(self, cache_dir: str | os.PathLike, split_name: str = "train", strategy: str = "truncate",
                 prefixes: list[str | os.PathLike] | None = None, eod_id: int | None = None, pad_id: int = 0,
                 eod_mask_loss: bool = False):
        self.description, self.dataset_index, self.dataset_sample_index = load_packed_blend(cache_dir, strategy,
                                                                                            split_name)
        named = [each["dataset"] for each in self.description["datasets"]]
        if prefixes is not None and len(prefixes) != len(named):
            raise TokenmillError(f"{cache_dir}: a blend of {len(named)} datasets, given {len(prefixes)} prefixes")
        self.datasets = [PackedSamples(prefix, dataset_folder(cache_dir, i), split_name, strategy, eod_id=eod_id,
                                       pad_id=pad_id, eod_mask_loss=eod_mask_loss)
                         if each["packed_samples"] else None
                         for i, (prefix, each) in enumerate(zip(prefixes or named, self.description["datasets"]))]

    def __len__(self) -> int:
        return len(self.dataset_index)

    def __getitem__(self, s: int) -> dict[str, torch.Tensor]:
        if not 0 <= s < len(self):
            raise IndexError(f"blend sample {s} of {len(self)}")
        dataset_id = int(self.dataset_index[s])
        return {"dataset_id": dataset_id, **self.datasets[dataset_id][int(self.dataset_sample_index[s])]}
