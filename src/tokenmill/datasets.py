"""PyTorch datasets over tokenmill's files.

* :class:`MemMapDataset` — a JSONL file through its raw index, tokenized on access: item *i* is
  the token ids of line *i* (no EOD appended), as Modalities' ``MemMapDataset`` returns them.
* :class:`PackedMemMapDatasetBase` — a ``.pbin``, one item per document (EOD included).
* :class:`PackedMemMapDatasetContinuous` — a ``.pbin`` read as one token stream cut into blocks of
  ``block_size`` tokens, exactly Modalities' blocks (spec modalities §5): with
  ``reuse_last_target`` consecutive blocks share one token, ``N = (T - B) // (B - 1) + 1`` and block
  *i* is tokens ``[i(B-1), i(B-1) + B)``; without it ``N = T // B`` and block *i* is
  ``[iB, (i+1)B)``. The tail that does not fill a block is dropped.
* :class:`PackedMemMapDatasetMegatron` — a ``.pbin`` as blocks of whole documents, never starting
  mid-document.
* :class:`Nanoset` (+ :class:`NanosetConfig`, :class:`NanosetBuilder`, :class:`BlendedNanoset`) — samples of a Megatron
  ``.bin/.idx`` through its cached GPTDataset indices, exactly as megatron-core returns them, plus
  document boundaries (``cu_seqlens``) from the index.

Items of the packed datasets are int64 numpy arrays (what ``F.cross_entropy`` takes as targets);
``compact=True`` gives Modalities' in-memory dtypes instead (1-byte tokens → uint8, 2 → int32,
4 → int64); pass ``sample_key`` to get ``{sample_key: array}``. ``tokenmill.loader`` has the collate
functions and a resumable distributed sampler for ``DataLoader``. Every item is a slice of a memory map: O(1) to open (the
document index is read once, ~0.4 s per million documents) and O(item length) to read.
"""

from __future__ import annotations

import itertools
import logging
import mmap
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from torch.utils.data import Dataset

from tokenmill.errors import TokenmillError
from tokenmill.identity import FileIdentity
from tokenmill.mmidx import MMapIndexedDataset
from tokenmill.pbin import PbinFile
from tokenmill.raw_index import read_index, scan_lines
from tokenmill.sample_index import build_gpt_cache, cache_file_names, load_npy
from tokenmill.text import TextSelector
from tokenmill.engine import Encoder
from tokenmill.proof import DEFAULT_CHECK_FRACTION, ProofSampler, encode_proven
from tokenmill.tokenizer import load_tokenizer

__all__ = ["MemMapDataset", "PackedMemMapDatasetBase", "PackedMemMapDatasetContinuous", "PackedMemMapDatasetMegatron",
           "NanosetConfig", "Nanoset", "NanosetBuilder", "BlendedNanoset", "ITEM_DTYPES"]

#: In-memory dtype of items per token width (Modalities' choice: room for signed arithmetic).
ITEM_DTYPES = {1: np.dtype(np.uint8), 2: np.dtype(np.int32), 4: np.dtype(np.int64)}


def _item_dtype(pbin: PbinFile, compact: bool) -> np.dtype:
    return ITEM_DTYPES[pbin.token_width] if compact else np.dtype(np.int64)


def _wrap(item: np.ndarray, sample_key: str | None):
    return item if sample_key is None else {sample_key: item}


class MemMapDataset(Dataset):
    """Lines of a JSONL file, tokenized on access.

    Args:
        jsonl: the JSONL file.
        tokenizer: path of a Hugging Face ``tokenizer.json``.
        index: its raw index (scanned now if None).
        jq_pattern: selects the text of a line.
        add_special_tokens: the tokenizer's own BOS/EOS (Hugging Face default: True).
        sample_key: return ``{sample_key: ids}`` instead of ``ids``.
        engine: ``hf`` (default: one line at a time, where a fast engine's 0.7-2.2 s load per
            DataLoader worker would not pay), ``auto`` or ``fastokens`` (see
            :class:`tokenmill.engine.Encoder`); a fast engine is proven on ``check_fraction`` of
            the lines whole, and on an excerpt around an added-token string or a rare code point of
            every line holding one (see :mod:`tokenmill.proof`).
        check_fraction: see :class:`tokenmill.proof.ProofSampler`.

    Raises:
        TokenmillError: unreadable files; on access, a line with no usable text (names the line),
            or one on which the fast engine disagrees with HF.
    """

    def __init__(self, jsonl: str | os.PathLike, tokenizer: str | os.PathLike, index: str | os.PathLike | None = None,
                 jq_pattern: str = ".text", add_special_tokens: bool = True, sample_key: str | None = None,
                 engine: str = "hf", check_fraction: float = DEFAULT_CHECK_FRACTION):
        self.path = str(jsonl)
        try:
            self.identity = FileIdentity.of(jsonl)  # the version of the file that the lines describe
        except OSError as exc:
            raise TokenmillError(f"{jsonl}: cannot read ({exc.strerror})") from None
        self.lines = read_index(index, jsonl) if index is not None else scan_lines(jsonl)
        self.info = load_tokenizer(tokenizer)
        self.tokenizer = self.info.tokenizer  # the Hugging Face tokenizer, as before engines came
        self.encoder = Encoder(self.info, engine, fall_back=True)
        self.sampler = ProofSampler(self.info.added_tokens(), check_fraction)
        self.selector = TextSelector(jq_pattern)
        self.add_special_tokens = add_special_tokens
        self.sample_key = sample_key
        self._mapped: mmap.mmap | None = None

    def __len__(self) -> int:
        return len(self.lines)

    def __getitem__(self, i: int):
        if self._mapped is None:  # opened lazily so that the dataset pickles into DataLoader workers
            with open(self.path, "rb") as handle:
                self.identity.check(self.path, handle.fileno())  # an edited file would shift every line
                self._mapped = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
        offset, length = (int(x) for x in self.lines[i])
        text, reason = self.selector.select(self._mapped[offset:offset + length])
        if reason is not None:
            raise TokenmillError(f"{self.path}:{range(len(self))[i] + 1}: {reason}")
        (ids,), _ = encode_proven(self.encoder, [text], self.add_special_tokens, self.sampler,
                                  [f"{self.path}:{range(len(self))[i] + 1}"])
        return _wrap(ids, self.sample_key)

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_mapped"] = None
        state["encoder"] = self.encoder.engine_asked  # fastokens does not pickle: each worker loads its own
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self.encoder = Encoder(self.info, state["encoder"], fall_back=True)


class PackedMemMapDatasetBase(Dataset):
    """One item per document of a ``.pbin`` (either layout).

    Args:
        pbin: the packed file.
        sample_key: return ``{sample_key: tokens}`` instead of ``tokens``.
        compact: Modalities' item dtypes instead of int64 (see the module docstring).

    Raises:
        TokenmillError: the file is not a readable ``.pbin``.
    """

    def __init__(self, pbin: str | os.PathLike, sample_key: str | None = None, compact: bool = False):
        self.pbin = PbinFile(pbin)
        self.item_dtype = _item_dtype(self.pbin, compact)
        self.sample_key = sample_key

    def __len__(self) -> int:
        return self.pbin.num_documents

    def __getitem__(self, i: int):
        return _wrap(self.pbin.document(range(len(self))[i]).astype(self.item_dtype), self.sample_key)


class PackedMemMapDatasetContinuous(Dataset):
    """A ``.pbin`` as one token stream cut into fixed blocks (see module docstring).

    Args:
        pbin: the packed file.
        block_size: tokens per block, ≥ 2 and ≤ the file's tokens.
        reuse_last_target: consecutive blocks overlap by one token (so every token is a target).
        sample_key: return ``{sample_key: block}`` instead of ``block``.
        compact: Modalities' item dtypes instead of int64 (see the module docstring).

    Raises:
        TokenmillError: not a ``.pbin``, or ``block_size`` outside ``[2, tokens]``.
    """

    def __init__(self, pbin: str | os.PathLike, block_size: int, reuse_last_target: bool = True,
                 sample_key: str | None = None, compact: bool = False):
        self.pbin = PbinFile(pbin)
        total_tokens = self.pbin.num_tokens
        if block_size < 2:
            raise TokenmillError(f"{pbin}: block_size must be at least 2, not {block_size}")
        if block_size > total_tokens:
            raise TokenmillError(f"{pbin}: block_size {block_size} exceeds the file's {total_tokens} tokens")
        self.block_size = block_size
        self.stride = block_size - 1 if reuse_last_target else block_size
        self.num_blocks = (total_tokens - block_size) // self.stride + 1
        self.item_dtype = _item_dtype(self.pbin, compact)
        self.sample_key = sample_key

    def __len__(self) -> int:
        return self.num_blocks

    def __getitem__(self, i: int):
        start = range(self.num_blocks)[i] * self.stride
        return _wrap(self.pbin.tokens[start:start + self.block_size].astype(self.item_dtype), self.sample_key)


# ---------------------------------------------------------------------------------------------
# Megatron-style samples over an indexed dataset and its cached indices (Nanoset)

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
        """The files :func:`tokenmill.sample_index.load_cache` maps for these arguments."""
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
        dataset_path: the prefix as the training job spells it (default ``prefix``).
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
    """Samples of one split exactly as megatron-core's ``GPTDataset.__getitem__`` makes them (spec §3.7).

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
        """The (sequence id, offset, length) pieces that sample ``i`` is made of, extra token included."""
        sample = int(self.shuffle_index[range(len(self))[i]])
        (first, first_offset), (last, last_offset) = self.sample_index[sample], self.sample_index[sample + 1]
        first, first_offset, last, last_offset = int(first), int(first_offset), int(last), int(last_offset)
        sizes = self.dataset.sizes
        if first == last:
            sequence = int(self.document_index[first])
            return [(sequence, first_offset, last_offset + self.extra - first_offset)]
        sequences = self.document_index[first:last + 1].tolist()
        pieces = [(sequences[0], first_offset, int(sizes[sequences[0]]) - first_offset)]
        pieces += [(sequence, 0, int(sizes[sequence])) for sequence in sequences[1:-1]]
        pieces.append((sequences[-1], 0, last_offset + self.extra))
        return pieces

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
            TokenmillError: as :func:`tokenmill.blend.build_blend_cache`.
        """
        from tokenmill.blend import build_blend_cache

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
        return {split: _nanoset(dataset, config, result["description"], split) for split, result in results.items()}


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


class PackedMemMapDatasetMegatron(Dataset):
    """A ``.pbin`` as blocks of whole documents: what Modalities' class of this name intends.

    Documents are packed greedily, in file order, into blocks of at most ``block_size`` tokens; a
    block always starts at a document start and never splits a document, so no sample begins
    mid-document (Modalities' 0.5.0 version returns shifted garbage; spec modalities §5). A document
    longer than ``block_size`` forms a block of its own, cut to ``block_size`` tokens (counted in
    ``truncated_documents``). Items have their block's length (≤ ``block_size``): pad in the collator.
    The blocks are found at init with one ``searchsorted`` per block, O(blocks · log documents).

    Args:
        pbin: the packed file.
        block_size: the most tokens per block.
        sample_key: return ``{sample_key: block}`` instead of ``block``.
        compact: Modalities' item dtypes instead of int64 (see the module docstring).

    Raises:
        TokenmillError: not a ``.pbin``, or ``block_size`` < 1.
    """

    def __init__(self, pbin: str | os.PathLike, block_size: int, sample_key: str | None = None,
                 compact: bool = False):
        if block_size < 1:
            raise TokenmillError(f"{pbin}: block_size must be at least 1, not {block_size}")
        self.pbin = PbinFile(pbin)
        self.block_size = block_size
        self.sample_key = sample_key
        self.item_dtype = _item_dtype(self.pbin, compact)
        doc_ends = self.pbin.doc_offsets + self.pbin.doc_lengths
        starts, lengths, truncated, doc = [], [], 0, 0
        while doc < self.pbin.num_documents:
            start = int(self.pbin.doc_offsets[doc])
            # the last document that still ends within block_size tokens of this block's start
            last = int(np.searchsorted(doc_ends, start + block_size, side="right")) - 1
            if last < doc:  # one document longer than a block: cut it
                last, end, truncated = doc, start + block_size, truncated + 1
            else:
                end = int(doc_ends[last])
            starts.append(start)
            lengths.append(end - start)
            doc = last + 1
        self.block_offsets = np.array(starts, dtype=np.int64)
        self.block_lengths = np.array(lengths, dtype=np.int64)
        self.truncated_documents = truncated

    def __len__(self) -> int:
        return len(self.block_offsets)

    def __getitem__(self, i: int):
        i = range(len(self))[i]
        start = int(self.block_offsets[i])
        return _wrap(self.pbin.tokens[start:start + int(self.block_lengths[i])].astype(self.item_dtype),
                     self.sample_key)
