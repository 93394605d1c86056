"""PyTorch datasets over tokenmill's files.

* :class:`MemMapDataset` — a JSONL file through its raw index, tokenized on access: item *i* is
  the token ids of line *i* (no EOD appended), as Modalities' ``MemMapDataset`` returns them.
* :class:`PackedMemMapDatasetBase` — a ``.pbin``, one item per document (EOD included).
* :class:`PackedMemMapDatasetContinuous` — a ``.pbin`` read as one token stream cut into blocks of
  ``block_size`` tokens, exactly Modalities' blocks (spec modalities §5): with
  ``reuse_last_target`` consecutive blocks share one token, ``N = (T - B) // (B - 1) + 1`` and block
  *i* is tokens ``[i(B-1), i(B-1) + B)``; without it ``N = T // B`` and block *i* is
  ``[iB, (i+1)B)``. The tail that does not fill a block is dropped.

Items are numpy arrays in Modalities' in-memory dtypes (1-byte tokens → uint8, 2 → int32,
4 → int64) so that ``torch.as_tensor`` works on them directly; pass ``sample_key`` to get
``{sample_key: array}`` instead. Every item is a slice of a memory map: O(1) to open (the
document index is read once, ~0.4 s per million documents) and O(item length) to read.
"""

from __future__ import annotations

import mmap
import os

import numpy as np
from torch.utils.data import Dataset

from tokenmill.errors import TokenmillError
from tokenmill.pbin import PbinFile
from tokenmill.raw_index import read_index, scan_lines
from tokenmill.text import TextSelector
from tokenmill.tokenizer import load_tokenizer

__all__ = ["MemMapDataset", "PackedMemMapDatasetBase", "PackedMemMapDatasetContinuous", "ITEM_DTYPES"]

#: In-memory dtype of items per token width (Modalities' choice: room for signed arithmetic).
ITEM_DTYPES = {1: np.dtype(np.uint8), 2: np.dtype(np.int32), 4: np.dtype(np.int64)}


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

    Raises:
        TokenmillError: unreadable files; on access, a line with no usable text (names the line).
    """

    def __init__(self, jsonl: str | os.PathLike, tokenizer: str | os.PathLike, index: str | os.PathLike | None = None,
                 jq_pattern: str = ".text", add_special_tokens: bool = True, sample_key: str | None = None):
        self.path = str(jsonl)
        self.lines = read_index(index, jsonl) if index is not None else scan_lines(jsonl)
        self.tokenizer = load_tokenizer(tokenizer).tokenizer
        self.selector = TextSelector(jq_pattern)
        self.add_special_tokens = add_special_tokens
        self.sample_key = sample_key
        self._mapped: mmap.mmap | None = None

    def __len__(self) -> int:
        return len(self.lines)

    def __getitem__(self, i: int):
        if self._mapped is None:  # opened lazily so that the dataset pickles into DataLoader workers
            with open(self.path, "rb") as handle:
                self._mapped = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
        offset, length = (int(x) for x in self.lines[i])
        text, reason = self.selector.select(self._mapped[offset:offset + length])
        if reason is not None:
            raise TokenmillError(f"{self.path}:{range(len(self))[i] + 1}: {reason}")
        ids = self.tokenizer.encode(text, add_special_tokens=self.add_special_tokens).ids
        return _wrap(np.array(ids, dtype=np.int64), self.sample_key)

    def __getstate__(self):
        state = dict(self.__dict__)
        state["_mapped"] = None
        return state


class PackedMemMapDatasetBase(Dataset):
    """One item per document of a ``.pbin`` (either layout).

    Args:
        pbin: the packed file.
        sample_key: return ``{sample_key: tokens}`` instead of ``tokens``.

    Raises:
        TokenmillError: the file is not a readable ``.pbin``.
    """

    def __init__(self, pbin: str | os.PathLike, sample_key: str | None = None):
        self.pbin = PbinFile(pbin)
        self.item_dtype = ITEM_DTYPES[self.pbin.token_width]
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

    Raises:
        TokenmillError: not a ``.pbin``, or ``block_size`` outside ``[2, tokens]``.
    """

    def __init__(self, pbin: str | os.PathLike, block_size: int, reuse_last_target: bool = True,
                 sample_key: str | None = None):
        self.pbin = PbinFile(pbin)
        total_tokens = self.pbin.num_tokens
        if block_size < 2:
            raise TokenmillError(f"{pbin}: block_size must be at least 2, not {block_size}")
        if block_size > total_tokens:
            raise TokenmillError(f"{pbin}: block_size {block_size} exceeds the file's {total_tokens} tokens")
        self.block_size = block_size
        self.stride = block_size - 1 if reuse_last_target else block_size
        self.num_blocks = (total_tokens - block_size) // self.stride + 1
        self.item_dtype = ITEM_DTYPES[self.pbin.token_width]
        self.sample_key = sample_key

    def __len__(self) -> int:
        return self.num_blocks

    def __getitem__(self, i: int):
        start = range(self.num_blocks)[i] * self.stride
        return _wrap(self.pbin.tokens[start:start + self.block_size].astype(self.item_dtype), self.sample_key)
