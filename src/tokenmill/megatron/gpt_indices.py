"""Megatron GPTDataset indices: the split of a dataset and each split's document, sample and shuffle index.

The arrays and dtypes equal megatron-core 0.19's ``GPTDataset`` for the same inputs
(docs/algorithms.md §1–§2); :mod:`tokenmill.megatron.index_cache` writes them as the cache files Megatron reads.

Worked example (megatron-core's own output): sizes ``[20, 50, 60, 30, 100, 5]``, seq 30, extra
token 1, one epoch, document_index ``[0..5]``. Sample k covers tokens ``[30k, 30k + 31)`` of the
sequences concatenated in document_index order; row k = (position in document_index, offset) of
token ``30k``::

    sample_index = [(0,0), (1,10), (1,40), (2,20), (2,50), (3,20), (4,20), (4,50), (4,80)]

(8 samples = (265 − 1) // 30; sample 3 is tokens 20..59 of sequence 2 plus 0 of sequence 3.)

Algorithm and cost, per split:

1. ``split``: ``"969,30,1"`` → weights normalised in float64 → book-ends ``[(0, .969), ...]`` →
   sequence ranges ``[round(start·N), round(end·N))`` with Python's banker's rounding.
2. epochs E: the smallest E with ``E·T ≥ num_samples·seq + extra`` (T = tokens per epoch).
3. document_index: the split's sequence ids repeated E times, int32, one ``RandomState(seed)``
   shuffle over all epochs — or, when the final epoch is "separate" (fewer than 80 % of an epoch's
   samples are needed from it), a shuffle of the first E−1 epochs then one of the last.
4. sample_index: sample k starts at token ``k·seq`` of the stream; Megatron's walk over the
   document_index, in C (``_kernels.c``): O(E·n + samples), ~3 ms for 1e8 tokens × 4 epochs.
5. shuffle_index: ``arange(n)`` shuffled (uint32, or int64 past 2**32−2), in two parts when the final
   epoch is separate. The same RandomState continues from step 3.

Memory is that of the arrays themselves (~4 bytes per sequence per epoch + 12 bytes per sample).
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass

import numpy as np

from tokenmill import _kernels
from tokenmill.errors import TokenmillError

__all__ = ["EmptySplit", "SPLIT_NAMES", "parse_split", "normalise", "split_matrix", "split_ranges", "num_epochs",
           "GPTIndexSpec", "GPTIndices", "build_gpt_indices", "build_document_index", "build_sample_index",
           "build_shuffle_index", "check_sampling", "num_samples_for_epochs", "MAX_SEED", "MAX_SEQ_LENGTH"]

SPLIT_NAMES = ("train", "valid", "test")
_SEPARATE_FINAL_EPOCH_THRESHOLD = 0.80


class EmptySplit(TokenmillError):
    """A split with no tokens, on which Megatron would loop forever: its name and its number of sequences, so that a
    blend names the split and the dataset's weight (:func:`tokenmill.megatron.blend.build_blend_cache`)."""

    def __init__(self, message: str, split_name: str, sequences: int):
        super().__init__(message)
        self.split_name, self.sequences = split_name, sequences

    def __reduce__(self):
        return EmptySplit, (str(self), self.split_name, self.sequences)


# ---------------------------------------------------------------------------------------------
# Splits (docs/algorithms.md §1)

def parse_split(split: str) -> list[float]:
    """``"969,30,1"`` → normalised float64 weights ``[0.969, 0.03, 0.001]``.

    Every ``[.0-9]+`` in the string is a weight (so ``"80/10/10"`` works), right-padded to three.

    Raises:
        TokenmillError: more than three weights, a non-number, or all weights zero.
    """
    try:
        weights = [float(match) for match in re.findall(r"[.0-9]+", split)]
    except ValueError:
        weights = []
    if not weights:
        raise TokenmillError(f"split {split!r}: not a list of numbers")
    if len(weights) > len(SPLIT_NAMES):
        raise TokenmillError(f"split {split!r}: at most {len(SPLIT_NAMES)} weights (train, valid, test)")
    weights += [0.0] * (len(SPLIT_NAMES) - len(weights))
    if not sum(weights) > 0:
        raise TokenmillError(f"split {split!r}: the weights add up to zero")
    return normalise(weights)


def normalise(weights: list[float]) -> list[float]:
    """Weights divided by their float64 sum, as Python floats (Megatron's ``normalize``)."""
    weights = np.array(weights, dtype=np.float64)
    return (weights / np.sum(weights)).tolist()


def split_matrix(weights: list[float]) -> list[tuple[float, float] | None]:
    """Book-ends of each split as Megatron computes them (running Python sum from the int 0)."""
    ends = [0]
    for weight in weights:
        ends.append(ends[-1] + weight)
    return [(start, end) if end > start else None for start, end in zip(ends[:-1], ends[1:])]


def split_ranges(matrix: list[tuple[float, float] | None], num_sequences: int) -> list[np.ndarray | None]:
    """The sequence ids of each split: ``arange(round(start·N), round(end·N))`` as int32."""
    ranges = []
    for bookends in matrix:
        if bookends is None:
            ranges.append(None)
            continue
        begin = int(round(bookends[0] * float(num_sequences)))
        end = int(round(bookends[1] * float(num_sequences)))
        ranges.append(np.arange(begin, end, dtype=np.int32))
    return ranges


# ---------------------------------------------------------------------------------------------
# Index arrays (docs/algorithms.md §2)

def num_epochs(tokens_per_epoch: int, num_samples: int | None, seq_length: int, extra: int) -> int:
    """Smallest E ≥ 1 with ``E·T ≥ num_samples·seq + extra`` (1 when num_samples is None)."""
    if num_samples is None:
        return 1
    requested = num_samples * seq_length + extra
    return max(1, -(-requested // tokens_per_epoch))


def build_document_index(documents: np.ndarray, epochs: int, random_state: np.random.RandomState,
                         separate_final_epoch: bool) -> np.ndarray:
    """``documents`` repeated ``epochs`` times (int32), shuffled as one array or as E−1 + 1."""
    if not separate_final_epoch or epochs == 1:
        document_index = np.tile(documents.astype(np.int32), epochs)
        random_state.shuffle(document_index)
        return document_index
    first = build_document_index(documents, epochs - 1, random_state, False)
    last = build_document_index(documents, 1, random_state, False)
    return np.concatenate((first, last))


def build_sample_index(sizes: np.ndarray, document_index: np.ndarray, seq_length: int, epochs: int,
                       tokens_per_epoch: int, drop_last_partial_sequence: bool, extra: int) -> np.ndarray:
    """Where each sample starts and ends: ``(n + 1, 2)`` rows of (position in document_index, offset).

    Sample k covers tokens ``[k·seq, k·seq + seq + extra)`` of the documents concatenated in
    document_index order, so row k lies at token ``p = k·seq``: in the first document whose end
    reaches ``p + extra`` (Megatron's loop walks there from the previous row, skipping empty
    sequences), at offset ``p`` minus that document's start. With ``extra = 0`` a sample that ends
    exactly on a document end therefore gives the next row ``offset == size`` of that document.
    When the last partial sample is kept, its end row is the last document at ``size − extra``.
    The count without drop-last is computed in float32, as Megatron's C++ helper does.

    Returns:
        int32 rows, or int64 when a position or size exceeds 2**31 − 1 (Megatron's choice).

    Raises:
        TokenmillError: a row with a negative offset, which megatron-core refuses to build.
    """
    total = epochs * tokens_per_epoch - extra
    if drop_last_partial_sequence:
        num_samples = total // seq_length
    else:
        num_samples = int(math.ceil(np.float32(total) / np.float32(seq_length)))
    wide = max(len(document_index), int(sizes.max()) if len(sizes) else 0) > np.iinfo(np.int32).max
    rows = np.empty((num_samples + 1, 2), dtype=np.int64 if wide else np.int32)
    _kernels.sample_index(np.ascontiguousarray(sizes, dtype=np.int32),
                          np.ascontiguousarray(document_index, dtype=np.int32), seq_length, num_samples, extra, rows)
    if len(rows) and rows[:, 1].min() < 0:
        # Keeping a partial last sample whose document index ends on an empty sequence puts its end row
        # at offset -extra; megatron-core's build_sample_idx asserts offsets >= 0 and builds nothing.
        row = int(np.argmax(rows[:, 1] < 0))
        raise TokenmillError(f"sample index row {row} would have offset {int(rows[row, 1])} (the partial last sample "
                             f"ends on an empty sequence); megatron-core refuses such an index, so tokenmill does too: "
                             f"drop the partial validation sample or remove empty sequences")
    return rows


def build_shuffle_index(num_samples: int, total_size: int, random_state: np.random.RandomState) -> np.ndarray:
    """``arange(num_samples)`` shuffled, then ``arange(num_samples, total_size)`` shuffled after it."""
    dtype = np.int64 if total_size >= np.iinfo(np.uint32).max - 1 else np.uint32
    first = np.arange(num_samples, dtype=dtype)
    random_state.shuffle(first)
    if num_samples == total_size:
        return first
    last = np.arange(num_samples, total_size, dtype=dtype)
    random_state.shuffle(last)
    return np.concatenate((first, last))


@dataclass(frozen=True)
class GPTIndexSpec:
    """Everything that determines one split's indices.

    Args:
        seq_length: tokens per sample (plus ``extra``).
        seed: ``random_seed`` of the RandomState.
        num_samples: requested samples, or None for one epoch.
        split_name: ``train``, ``valid`` or ``test`` (valid may keep its last partial sample).
        extra: 1 with ``add_extra_token_to_sequence`` (Megatron's default), else 0.
        drop_last_partial_validation_sequence: Megatron's default True.
    """

    seq_length: int
    seed: int
    num_samples: int | None
    split_name: str = "train"
    extra: int = 1
    drop_last_partial_validation_sequence: bool = True


@dataclass
class GPTIndices:
    """The three arrays of one split."""

    document_index: np.ndarray
    sample_index: np.ndarray
    shuffle_index: np.ndarray


def build_gpt_indices(sizes: np.ndarray, indices: np.ndarray, spec: GPTIndexSpec, where: str = "") -> GPTIndices:
    """Build one split's document, sample and shuffle index exactly as megatron-core does.

    Args:
        sizes: tokens per sequence of the whole dataset (the ``.idx`` sequence lengths).
        indices: the split's sequence ids (see :func:`split_ranges`).
        spec: see :class:`GPTIndexSpec`.
        where: names the dataset and split in errors.

    Raises:
        EmptySplit: the split has no tokens (Megatron loops forever on it).
    """
    sizes = np.asarray(sizes)
    tokens_per_epoch = int(np.sum(sizes[indices], dtype=np.int64))
    if tokens_per_epoch == 0:
        raise EmptySplit(f"{where}: the {spec.split_name} split has {len(indices)} sequences and no tokens; "
                         f"change the split or add data (Megatron would loop forever here)", spec.split_name,
                         len(indices))
    epochs = num_epochs(tokens_per_epoch, spec.num_samples, spec.seq_length, spec.extra)
    separate_final_epoch = False
    if epochs > 1:
        samples_sans_final = ((epochs - 1) * tokens_per_epoch - spec.extra) // spec.seq_length
        samples_from_final = spec.num_samples - samples_sans_final
        samples_per_epoch = (tokens_per_epoch - spec.extra) // spec.seq_length
        if not 0 <= samples_from_final <= samples_per_epoch + 1:  # Megatron asserts this
            raise TokenmillError(f"{where}: inconsistent epoch arithmetic for {spec.num_samples} samples")
        separate_final_epoch = samples_from_final < int(_SEPARATE_FINAL_EPOCH_THRESHOLD * samples_per_epoch)

    random_state = np.random.RandomState(spec.seed)
    document_index = build_document_index(indices, epochs, random_state, separate_final_epoch)
    drop_last = spec.split_name != "valid" or spec.drop_last_partial_validation_sequence
    sample_index = build_sample_index(sizes, document_index, spec.seq_length, epochs, tokens_per_epoch,
                                      drop_last, spec.extra)
    num_samples = len(sample_index) - 1  # 0 when one epoch holds less than a sample, as in Megatron
    shuffle_index = build_shuffle_index(samples_sans_final if separate_final_epoch else num_samples,
                                        num_samples, random_state)
    return GPTIndices(document_index, sample_index, shuffle_index)


MAX_SEED = 2**32 - 1  # numpy's RandomState, which Megatron seeds with --seed
MAX_SEQ_LENGTH = 2**31 - 1  # sample_index rows hold token offsets in int32


def check_sampling(seq_length: int, seed: int) -> None:
    """Refuse a sequence length or seed that Megatron's index building cannot take (its C++
    ``build_sample_idx`` aborts the process on a sequence length of 1).

    Raises:
        TokenmillError: ``seq_length`` outside ``[2, 2**31 - 1]`` or ``seed`` outside ``[0, 2**32 - 1]``.
    """
    if not 2 <= seq_length <= MAX_SEQ_LENGTH:
        raise TokenmillError(f"sequence length must be 2 to {MAX_SEQ_LENGTH}, not {seq_length}")
    if not 0 <= seed <= MAX_SEED:
        raise TokenmillError(f"seed must be 0 to {MAX_SEED} (numpy's RandomState, as Megatron seeds it), not {seed}")


def num_samples_for_epochs(prefix: str | os.PathLike, split: str, epochs: int, seq_length: int,
                           extra: int) -> dict[str, int | None]:
    """Sample counts that make every split exactly ``epochs`` epochs long.

    One epoch is Megatron's ``num_samples=None``; E > 1 asks for the samples of E whole epochs,
    ``(E·T − extra) // seq``, which Megatron turns back into E epochs.

    Raises:
        TokenmillError: ``epochs`` < 1.
    """
    from tokenmill.formats.bin_idx import MMapIndexedDataset

    if epochs < 1:
        raise TokenmillError(f"epochs must be at least 1, not {epochs}")
    check_sampling(seq_length, 0)
    if epochs == 1:
        return {name: None for name in SPLIT_NAMES}
    sizes = MMapIndexedDataset(prefix).sizes
    ranges = split_ranges(split_matrix(parse_split(split)), len(sizes))
    return {name: None if indices is None else (epochs * int(np.sum(sizes[indices], dtype=np.int64)) - extra)
            // seq_length for name, indices in zip(SPLIT_NAMES, ranges)}
