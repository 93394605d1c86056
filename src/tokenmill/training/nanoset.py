"""Nanoset: Megatron GPTDataset samples of a ``.bin/.idx`` through its cached indices, with document boundaries.

* :class:`Nanoset` — the samples of one split exactly as megatron-core's ``GPTDataset.__getitem__``
  returns them (docs/algorithms.md §3), plus the boundaries of the documents in each sample (``cu_seqlens``),
  taken from the index rather than guessed from EOD tokens.
* :class:`NanosetConfig` — what a Nanoset reads and how it shapes samples (Megatron's flags).
* :class:`NanosetBuilder` — builds (or finds) the index caches (:func:`tokenmill.megatron.index_cache.build_gpt_cache`,
  :func:`tokenmill.megatron.blend.build_blend_cache`) and returns one Nanoset, or :class:`BlendedNanoset`, per split.
* :class:`BlendedNanoset` — Megatron's BlendedDataset over Nanosets.
* :class:`MappedIndices` — the cache ``.npy`` files a dataset's arrays are mapped from, so that a
  pickled dataset (a DataLoader worker's copy) re-maps them, checked unchanged, instead of carrying them.

A cache is found by its name, the md5 of its description, which holds the dataset path as the training
job spells it (``dataset_path``; default: ``prefix`` as given): the same files under another spelling
get a second cache built beside the first. :class:`NanosetBuilder` says so in one warning (logging,
this module's logger) when it builds a cache in a folder holding one of the same dataset under
another path (the same ``.idx`` fingerprint, or for a cache Megatron built, the same file name).

Which sequences and token ranges make a sample is :func:`tokenmill.megatron.sample_pieces.sample_pieces` (torch-free,
shared with ``tokenmill inspect``). ``tokenmill.training.datasets`` re-exports every name here, as before the
split. Cost: building is the cache's (see :mod:`tokenmill.megatron.gpt_indices`); an item is O(pieces) index
lookups and O(seq_length) to read and shape its tokens from the memory-mapped ``.bin``.
"""

from __future__ import annotations

import itertools
import json
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from torch.utils.data import Dataset

from tokenmill.errors import TokenmillError
from tokenmill.files.identity import FileIdentity
from tokenmill.formats.bin_idx import MMapIndexedDataset
from tokenmill.megatron.index_cache import (build_gpt_cache, cache_file_names, cache_fingerprint, dataset_fingerprint,
                                            load_npy)
from tokenmill.megatron.sample_pieces import sample_pieces

__all__ = ["MappedIndices", "NanosetConfig", "Nanoset", "NanosetBuilder", "BlendedNanoset"]


class MappedIndices:
    """The cache ``.npy`` files a dataset's index arrays are mapped from, and their identities.

    Args:
        files: array name → ``.npy`` path.
    """

    def __init__(self, files: dict[str, Path]):
        self.files = dict(files)
        self.identities = {key: FileIdentity.of(path) for key, path in self.files.items()}

    @classmethod
    def of_cache(cls, cache_dir: str | os.PathLike, description_text: str, split: str, keys: tuple[str, ...],
                 class_name: str) -> "MappedIndices":
        """The files :func:`tokenmill.megatron.index_cache.load_cache` maps for these arguments."""
        names = cache_file_names(description_text, split, class_name, tuple(f"{key}.npy" for key in keys))
        return cls({key: Path(cache_dir) / names[f"{key}.npy"] for key in keys})

    def load(self) -> dict[str, np.ndarray]:
        """Map every file again.

        Raises:
            TokenmillError: a file was rebuilt or changed since the dataset was made.
        """
        arrays = {}
        for key, path in self.files.items():
            self.identities[key].check(path)
            arrays[key] = load_npy(path)
        return arrays


@dataclass(frozen=True)
class NanosetConfig:
    """What a Nanoset reads and how it shapes samples (Megatron's GPTDatasetConfig, in short).

    Args:
        prefix: the Megatron dataset (``PREFIX.bin/.idx``).
        cache_dir: the index cache folder (built there if missing).
        seq_length, seed, split: as Megatron's flags.
        tokenizer_identifiers: the training tokenizer's ``unique_identifiers`` (hashed into names).
        num_samples: per split, a sample count or None for one epoch.
        dataset_path: the prefix as the training job spells it in ``--data-path`` (default ``prefix``):
            Megatron hashes it into the cache names, so a cache folder built by the workflow for
            ``sampling.megatron_path_prefix`` + name is found only under that same spelling.
        add_extra_token: samples of seq_length + 1 tokens (Megatron's default).
        eod_id: the end-of-document id, for ``eod_mask_loss`` and ``reset_position_ids``.
        pad_id: fills a partial last sample; its positions are masked from the loss (Megatron: -1).
        eod_mask_loss: zero the loss where the input token is EOD.
        reset_position_ids: restart positions after each EOD.
    """

    prefix: str
    cache_dir: str
    seq_length: int
    seed: int
    tokenizer_identifiers: dict
    split: str = "969,30,1"
    num_samples: dict = field(default_factory=dict)
    dataset_path: str | None = None
    add_extra_token: bool = True
    eod_id: int | None = None
    pad_id: int = -1
    eod_mask_loss: bool = False
    reset_position_ids: bool = False


class Nanoset(Dataset):
    """Samples of one split exactly as megatron-core's ``GPTDataset.__getitem__`` makes them (docs/algorithms.md §3).

    Item ``i`` is a dict of torch tensors: ``tokens`` and ``labels`` (int64, ``seq_length``),
    ``loss_mask`` (float32), ``position_ids`` (int64), and ``cu_seqlens`` (int32): the boundaries of
    the sample's pieces of different sequences, taken from the index rather than guessed from EOD
    tokens, so attention can stay inside each document with any tokenizer.

    Args:
        dataset: the indexed dataset.
        indices: ``document_index``, ``sample_index``, ``shuffle_index`` arrays.
        config: see :class:`NanosetConfig`.
        index_files: the ``.npy`` files the arrays are mapped from, if they are: a pickled Nanoset
            (a DataLoader worker's copy) then re-maps them instead of carrying the arrays.
    """

    def __init__(self, dataset: MMapIndexedDataset, indices: dict[str, np.ndarray], config: NanosetConfig,
                 index_files: MappedIndices | None = None):
        self.dataset = dataset
        self.document_index = indices["document_index"]
        self.sample_index = indices["sample_index"]
        self.shuffle_index = indices["shuffle_index"]
        self.config = config
        self.extra = 1 if config.add_extra_token else 0
        self._mapped_indices = index_files

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        if self._mapped_indices is not None:
            for key in self._mapped_indices.files:
                del state[key]
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        if self._mapped_indices is not None:
            self.__dict__.update(self._mapped_indices.load())

    def __len__(self) -> int:
        return len(self.shuffle_index)

    def pieces(self, i: int) -> list[tuple[int, int, int]]:
        """The (sequence id, offset, length) pieces that sample ``i`` is made of, extra token included.

        Raises:
            IndexError: ``i`` outside the split's samples.
        """
        return sample_pieces(self.document_index, self.sample_index, self.shuffle_index, self.dataset.sizes, i,
                             self.extra)

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        config, extra = self.config, self.extra
        pieces = self.pieces(i)
        text = np.concatenate([self.dataset.get(sequence, offset, length) for sequence, offset, length in pieces])
        text = text.astype(np.int64)
        piece_lengths = [length for _, _, length in pieces]
        if len(text) < config.seq_length + extra:  # only a partial last sample is short: pad it
            piece_lengths.append(config.seq_length - len(text))
            text = np.concatenate([text, np.full(config.seq_length + extra - len(text), config.pad_id, np.int64)])
        else:
            piece_lengths[-1] -= extra  # the extra token is a label only
        if extra:
            tokens, labels = text[:-1].copy(), text[1:].copy()
        else:
            tokens, labels = text, np.append(text[1:], config.pad_id)

        loss_mask = np.ones(config.seq_length, dtype=np.float32)
        if config.eod_mask_loss and config.eod_id is not None:
            loss_mask[tokens == config.eod_id] = 0.0
        loss_mask[labels == config.pad_id] = 0.0
        tokens[tokens == config.pad_id] = 0
        labels[labels == config.pad_id] = 0

        position_ids = np.arange(config.seq_length, dtype=np.int64)
        if config.reset_position_ids and config.eod_id is not None:
            # restart at 0 on the token after each EOD; the EOD keeps its document's position
            starts = np.flatnonzero(tokens[:-1] == config.eod_id) + 1
            segment_start = np.zeros(config.seq_length, dtype=np.int64)
            segment_start[starts] = starts
            position_ids -= np.maximum.accumulate(segment_start)
        cu_seqlens = np.array([0, *itertools.accumulate(n for n in piece_lengths if n > 0)], dtype=np.int32)
        cu_seqlens[-1] = config.seq_length
        return {"tokens": torch.from_numpy(tokens), "labels": torch.from_numpy(labels),
                "loss_mask": torch.from_numpy(loss_mask), "position_ids": torch.from_numpy(position_ids),
                "cu_seqlens": torch.from_numpy(cu_seqlens)}


class NanosetBuilder:
    """Builds (or finds) the index caches of every split and returns one :class:`Nanoset` per split.

    Args:
        config: see :class:`NanosetConfig`.
    """

    def __init__(self, config: NanosetConfig):
        self.config = config

    def build_blend(self, prefixes: list[str], weights: list[float] | None,
                    dataset_paths: list[str] | None = None) -> dict[str, "BlendedNanoset"]:
        """One :class:`BlendedNanoset` per split over ``prefixes`` (``config.prefix`` is not used).

        Raises:
            TokenmillError: as :func:`tokenmill.megatron.blend.build_blend_cache`.
        """
        from tokenmill.megatron.blend import build_blend_cache

        config = self.config
        results = build_blend_cache(prefixes, weights, config.cache_dir, config.seq_length, config.seed, config.split,
                                    config.num_samples, config.tokenizer_identifiers,
                                    extra=1 if config.add_extra_token else 0, dataset_paths=dataset_paths)
        blends = {}
        for split, result in results.items():
            parts = [_nanoset(MMapIndexedDataset(prefix), config, part["description"], split)
                     for prefix, part in zip(prefixes, result["parts"])]
            files = MappedIndices.of_cache(config.cache_dir, result["description"], split,
                                           ("dataset_index", "dataset_sample_index"), "BlendedDataset")
            arrays = files.load()
            blends[split] = BlendedNanoset(parts, arrays["dataset_index"], arrays["dataset_sample_index"], files)
        return blends

    def build(self) -> dict[str, Nanoset]:
        """``{"train": Nanoset, "valid": ..., "test": ...}`` for the splits with a non-zero weight.

        Raises:
            TokenmillError: unreadable dataset, bad split, or a split without tokens.
        """
        config = self.config
        results = build_gpt_cache(config.prefix, config.cache_dir, config.seq_length, config.seed, config.split,
                                  config.num_samples, config.tokenizer_identifiers,
                                  extra=1 if config.add_extra_token else 0, dataset_path=config.dataset_path)
        for split, result in results.items():
            if result["state"] == "rebuilt":
                logging.getLogger(__name__).warning("%s: the %s index cache had been built for another version "
                                                    "of %s; rebuilt it", config.cache_dir, split, config.prefix)
        dataset = MMapIndexedDataset(config.prefix)
        _warn_of_another_spelling(config, dataset, results)
        return {split: _nanoset(dataset, config, result["description"], split) for split, result in results.items()}


def _warn_of_another_spelling(config: NanosetConfig, dataset: MMapIndexedDataset, results: dict) -> None:
    """One warning when caches were just built beside caches of the same dataset under another dataset path,
    or under the same path for another tokenizer: the folder's caches were made for the training job's
    spelling and tokenizer flags, which this config did not give."""
    dataset_path = str(config.prefix) if config.dataset_path is None else config.dataset_path
    built = [split for split, result in results.items() if result["state"] == "built"]
    other_paths: set[str] = set()
    other_tokenizers: set[str] = set()
    asked_tokenizer = json.dumps(config.tokenizer_identifiers)
    for split in built:
        own = results[split]["files"]["description.txt"]
        for description_path in Path(config.cache_dir).glob(f"*-GPTDataset-{split}-description.txt"):
            if description_path.name == own:
                continue
            try:
                text = description_path.read_text(encoding="utf-8")
                described = json.loads(text)
                other, tokenizer = described.get("dataset_path"), json.dumps(described.get("tokenizer"))
                fingerprint = cache_fingerprint(config.cache_dir, text, split)
            except (OSError, ValueError, AttributeError, TokenmillError):  # not a cache of ours to judge
                continue
            if not isinstance(other, str):
                continue
            same = (fingerprint == dataset_fingerprint(dataset) if fingerprint is not None
                    else Path(other).name == Path(dataset_path).name)  # built by Megatron: no fingerprint
            if same and other != dataset_path:
                other_paths.add(other)
            elif same and tokenizer != asked_tokenizer:
                other_tokenizers.add(tokenizer)
    if other_paths:
        found = " and ".join(map(repr, sorted(other_paths)))
        logging.getLogger(__name__).warning(
            "%s: its caches of %s were built for dataset path %s, not %r as given, so a second set was built "
            "beside them (%s); pass dataset_path=%s to NanosetConfig, the path as the training job spells it in "
            "--data-path (Megatron hashes it into the cache names), to use them", config.cache_dir, config.prefix,
            found, dataset_path, ", ".join(built), repr(sorted(other_paths)[0]))
    if other_tokenizers:
        logging.getLogger(__name__).warning(
            "%s: its caches of %s were built for the tokenizer identifiers %s, not %s as given, so a second set "
            "was built beside them (%s); pass tokenizer_identifiers=job_tokenizer_identifiers(VERSION, FLAGS) "
            "(tokenmill.megatron.job_tokenizer) with the tokenizer flags of the folder's megatron_args.txt to use "
            "them", config.cache_dir, config.prefix, " and ".join(sorted(other_tokenizers)), asked_tokenizer,
            ", ".join(built))


def _nanoset(dataset: MMapIndexedDataset, config: NanosetConfig, description_text: str, split: str) -> Nanoset:
    """The Nanoset of one split over its cached GPTDataset indices, mapped once from their files."""
    files = MappedIndices.of_cache(config.cache_dir, description_text, split,
                                   ("document_index", "sample_index", "shuffle_index"), "GPTDataset")
    return Nanoset(dataset, files.load(), config, files)


class BlendedNanoset(Dataset):
    """Megatron's BlendedDataset: blend sample ``s`` is sample ``dataset_sample_index[s]`` of dataset
    ``dataset_index[s]``, returned with its ``dataset_id``.

    Args:
        datasets: the blended datasets.
        dataset_index: int16 dataset per blend sample.
        dataset_sample_index: int64 sample of that dataset.
        index_files: the ``.npy`` files of the two arrays, if mapped (see :class:`Nanoset`).
    """

    def __init__(self, datasets: list[Nanoset], dataset_index: np.ndarray, dataset_sample_index: np.ndarray,
                 index_files: MappedIndices | None = None):
        self.datasets = datasets
        self.dataset_index = dataset_index
        self.dataset_sample_index = dataset_sample_index
        self._mapped_indices = index_files

    __getstate__ = Nanoset.__getstate__
    __setstate__ = Nanoset.__setstate__

    def __len__(self) -> int:
        return len(self.dataset_index)

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        dataset_id = int(self.dataset_index[i])
        return {"dataset_id": dataset_id, **self.datasets[dataset_id][int(self.dataset_sample_index[i])]}
