"""PyTorch datasets over tokenmill's files.

* :class:`MemMapDataset` — a JSONL file through its raw index, tokenized on access: item *i* is
  the token ids of line *i* (no EOD appended), as Modalities' ``MemMapDataset`` returns them.
* :class:`PackedMemMapDatasetBase` — a ``.pbin``, one item per document (EOD included).
* :class:`PackedMemMapDatasetContinuous` — a ``.pbin`` read as one token stream cut into blocks of
  ``block_size`` tokens, exactly Modalities' blocks (docs/algorithms.md §5): with
  ``reuse_last_target`` consecutive blocks share one token, ``N = (T - B) // (B - 1) + 1`` and block
  *i* is tokens ``[i(B-1), i(B-1) + B)``; without it ``N = T // B`` and block *i* is
  ``[iB, (i+1)B)``. The tail that does not fill a block is dropped.
* :class:`PackedMemMapDatasetMegatron` — a ``.pbin`` as blocks of whole documents, never starting
  mid-document.
* :class:`Nanoset` (+ :class:`NanosetConfig`, :class:`NanosetBuilder`, :class:`BlendedNanoset`,
  :class:`MappedIndices`) — samples of a Megatron ``.bin/.idx`` through its cached GPTDataset indices,
  exactly as megatron-core returns them, plus document boundaries (``cu_seqlens``) from the index.
  They live in :mod:`tokenmill.training.nanoset` and are re-exported here, so ``from tokenmill.training.datasets import
  Nanoset`` keeps working.

Items of the packed datasets are int64 numpy arrays (what ``F.cross_entropy`` takes as targets);
``compact=True`` gives Modalities' in-memory dtypes instead (1-byte tokens → uint8, 2 → int32,
4 → int64); pass ``sample_key`` to get ``{sample_key: array}``. ``tokenmill.training.loader`` has the collate
functions and a resumable distributed sampler for ``DataLoader``. Every item is a slice of a memory
map: O(1) to open (the document index is read once, ~0.4 s per million documents) and O(item
length) to read.
"""

from __future__ import annotations

import mmap
import os

import numpy as np
from torch.utils.data import Dataset

from tokenmill.errors import TokenmillError
from tokenmill.files.identity import FileIdentity
from tokenmill.formats.pbin import PbinFile
from tokenmill.inputs.raw_index import read_index, scan_lines
from tokenmill.inputs.text_selection import TextSelector
from tokenmill.tokenization.engine import Encoder, EncoderPickling
from tokenmill.tokenization.proof import DEFAULT_CHECK_FRACTION, ProofSampler, encode_proven
from tokenmill.tokenization.tokenizer import load_tokenizer
from tokenmill.training.nanoset import BlendedNanoset, MappedIndices, Nanoset, NanosetBuilder, NanosetConfig

__all__ = ["MemMapDataset", "PackedMemMapDatasetBase", "PackedMemMapDatasetContinuous", "PackedMemMapDatasetMegatron",
           "NanosetConfig", "Nanoset", "NanosetBuilder", "BlendedNanoset", "MappedIndices", "ITEM_DTYPES"]

#: In-memory dtype of items per token width (Modalities' choice: room for signed arithmetic).
ITEM_DTYPES = {1: np.dtype(np.uint8), 2: np.dtype(np.int32), 4: np.dtype(np.int64)}


def _item_dtype(pbin: PbinFile, compact: bool) -> np.dtype:
    return ITEM_DTYPES[pbin.token_width] if compact else np.dtype(np.int64)


def _wrap(item: np.ndarray, sample_key: str | None):
    return item if sample_key is None else {sample_key: item}


class MemMapDataset(EncoderPickling, Dataset):
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
            :class:`tokenmill.tokenization.engine.Encoder`); a fast engine is proven on ``check_fraction`` of
            the lines whole, and on an excerpt around an added-token string or a rare code point of
            every line holding one (see :mod:`tokenmill.tokenization.proof`).
        check_fraction: see :class:`tokenmill.tokenization.proof.ProofSampler`.

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


class PackedMemMapDatasetMegatron(Dataset):
    """A ``.pbin`` as blocks of whole documents: what Modalities' class of this name intends.

    Documents are packed greedily, in file order, into blocks of at most ``block_size`` tokens; a
    block always starts at a document start and never splits a document, so no sample begins
    mid-document (Modalities' 0.5.0 version returns shifted garbage; docs/algorithms.md §5). A document
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
