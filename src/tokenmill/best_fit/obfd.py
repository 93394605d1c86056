"""Optimized Best-Fit Decreasing (OBFD; Ding et al., "Fewer Truncations Improve Language Modeling", ICML 2024,
App. B): documents into bins of ``capacity`` tokens, each kept whole.

Algorithm: documents longer than the capacity are first cut (``truncate``: the first ``capacity`` tokens, the
rest dropped; ``fragment``: pieces of ``capacity`` tokens and a last shorter one). The pieces are sorted by
length, longest first; each goes into the open bin with the least room that still holds it, else into a new
bin. Among bins with that same room, it takes the one that came to that room first: a queue per room, which a
bin joins at its back when a piece leaves it that room (so a bin opened later but brought to that room earlier
goes first). That is OLMo-core's rule (its ``InstancePacker``: a deque per capacity) and not "the first
opened". The bins, in the order they were opened, are the samples; a sample's documents in the order they
went in.

Sort order: ``sort="stable"`` breaks ties by position (the same order on every numpy and CPU);
``sort="numpy"`` is ``np.argsort(-lengths)`` with numpy's default kind, whose order of equal lengths is
numpy's own, as OLMo-core's packer has it (:mod:`tokenmill.best_fit.olmo_cache` reproduces its files).

Cost: the sort O(N log N), the packing O(N log capacity) in C (``_kernels.best_fit_bins``: a max segment tree
over the rooms 1..capacity and a FIFO queue of bins per room), then one stable argsort of the bin numbers.
Memory: ~40 bytes per document plus 32 to 48 bytes per unit of capacity (the tree over the next power of two,
and the queues): 10 M documents in ~0.4 GiB; a capacity of 2**31 - 1 needs ~64 GiB, refused in one line where
the machine has less.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from tokenmill import _kernels
from tokenmill.errors import TokenmillError

__all__ = ["LONG_DOCUMENT_STRATEGIES", "SORTS", "BestFit", "cut_long_documents", "pack_best_fit"]

LONG_DOCUMENT_STRATEGIES = ("truncate", "fragment")
SORTS = ("stable", "numpy")


@dataclass
class BestFit:
    """Documents packed into samples.

    Attributes:
        order: each packed piece's index in the pieces given, in sorted order (longest first): piece ``i`` of
            the samples below is given piece ``order[i]``.
        sample_offsets: ``documents_by_sample[sample_offsets[k]:sample_offsets[k + 1]]`` are sample k's pieces
            (int64, one more than the samples).
        documents_by_sample: the pieces (sorted-order numbers) of every sample, sample after sample.
        sorted_lengths: each piece's tokens, in sorted order.
        capacity: tokens per sample.
    """

    order: np.ndarray
    sample_offsets: np.ndarray
    documents_by_sample: np.ndarray
    sorted_lengths: np.ndarray
    capacity: int

    @property
    def num_samples(self) -> int:
        return len(self.sample_offsets) - 1

    def sample_lengths(self) -> np.ndarray:
        """Tokens of each sample before padding."""
        totals = np.zeros(len(self.documents_by_sample) + 1, dtype=np.int64)
        np.cumsum(self.sorted_lengths[self.documents_by_sample], out=totals[1:])
        return totals[self.sample_offsets[1:]] - totals[self.sample_offsets[:-1]]


def cut_long_documents(starts: np.ndarray, ends: np.ndarray, capacity: int,
                       strategy: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The documents ``[starts, ends)`` with those longer than ``capacity`` cut by ``strategy``: the pieces'
    starts and ends, and the document each piece is of (an index into ``starts``).

    ``truncate`` keeps a long document's first ``capacity`` tokens; ``fragment`` splits it into pieces of
    ``capacity`` tokens and one shorter last piece, in place of the document. Vectorised: O(pieces).

    Raises:
        TokenmillError: an unknown strategy.
    """
    if strategy not in LONG_DOCUMENT_STRATEGIES:
        raise TokenmillError(f"long-document strategy {strategy!r}: one of {', '.join(LONG_DOCUMENT_STRATEGIES)}")
    starts, ends = np.asarray(starts, np.int64), np.asarray(ends, np.int64)
    if strategy == "truncate":
        return starts, np.minimum(ends, starts + capacity), np.arange(len(starts), dtype=np.int64)
    pieces = np.maximum((ends - starts + capacity - 1) // capacity, 1)
    owners = np.repeat(np.arange(len(starts), dtype=np.int64), pieces)
    piece_starts = starts[owners] + capacity * (np.arange(len(owners)) - (np.cumsum(pieces) - pieces)[owners])
    return piece_starts, np.minimum(piece_starts + capacity, ends[owners]), owners


def pack_best_fit(starts: np.ndarray, ends: np.ndarray, capacity: int, sort: str = "stable") -> BestFit:
    """Pack documents ``[starts, ends)`` of at most ``capacity`` tokens each into samples (module docstring).

    Raises:
        TokenmillError: a capacity under 1, an unknown sort, or an empty or too long document.
    """
    if capacity < 1:
        raise TokenmillError(f"sequence length {capacity}: must be positive")
    if sort not in SORTS:
        raise TokenmillError(f"sort {sort!r}: one of {', '.join(SORTS)}")
    starts, ends = np.asarray(starts, np.int64), np.asarray(ends, np.int64)
    lengths = ends - starts
    bad = np.flatnonzero((lengths < 1) | (lengths > capacity))
    if len(bad):
        raise TokenmillError(f"document {int(bad[0])}: {int(lengths[bad[0]])} tokens, not 1..{capacity}; cut long "
                             f"documents first")
    order = np.argsort(-lengths, kind="stable") if sort == "stable" else np.argsort(-1 * lengths)
    sorted_lengths = lengths[order]
    del lengths  # (10 M documents: each array of them is 80 MB)
    bins = np.empty(len(order), dtype=np.int64)
    try:
        num_bins = _kernels.best_fit_bins(sorted_lengths, capacity, bins)
    except MemoryError:
        needed = 16 * (1 << (capacity - 1).bit_length()) + 16 * (capacity + 1)  # the tree and the queues
        raise TokenmillError(f"sequence length {capacity:,}: best fit needs ~{needed / 2**30:,.1f} GiB for a length "
                             f"this long (memory in proportion to it), more than this machine gives") from None
    sample_offsets = np.concatenate([[0], np.cumsum(np.bincount(bins, minlength=num_bins))]).astype(np.int64)
    documents_by_sample = np.argsort(bins, kind="stable")  # within a bin, in the order they went in
    return BestFit(order, sample_offsets, documents_by_sample, sorted_lengths, capacity)
