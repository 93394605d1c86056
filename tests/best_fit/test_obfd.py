"""Best-fit packing (tokenmill.best_fit.obfd): worked examples of OBFD, then properties on random lengths."""

from __future__ import annotations

import numpy as np
import pytest

from tokenmill.errors import TokenmillError
from tokenmill.best_fit.obfd import cut_long_documents, pack_best_fit


def samples_of(packed) -> list[list[int]]:
    """Each sample's documents, by their length."""
    return [packed.sorted_lengths[packed.documents_by_sample[first:stop]].tolist()
            for first, stop in zip(packed.sample_offsets[:-1], packed.sample_offsets[1:])]


def test_each_document_goes_where_the_least_room_still_holds_it():
    """Capacity 8, lengths 5 4 3 3 2 1 1 (already longest first): 5 opens bin 0 (room 3); 4 fits nowhere but a
    new bin 1 (room 4); 3 takes bin 0's room 3 exactly; the next 3 takes bin 1 (room 1); 2 fits no open bin:
    bin 2 (room 6); the 1s take the least room that holds them: bin 1's 1, then bin 2's 6."""
    ends = np.cumsum([5, 4, 3, 3, 2, 1, 1])
    packed = pack_best_fit(ends - [5, 4, 3, 3, 2, 1, 1], ends, 8)
    assert samples_of(packed) == [[5, 3], [4, 3, 1], [2, 1]]
    assert packed.sample_lengths().tolist() == [8, 8, 3]


def test_among_bins_with_equal_room_the_first_to_reach_it_is_filled():
    """Three documents of 6 open bins 0, 1, 2, each with room 2, in that order; the 2s fill them in that order."""
    lengths = np.array([6, 6, 6, 2, 2])
    packed = pack_best_fit(np.zeros(5, np.int64), lengths, 8)
    assert packed.documents_by_sample.tolist() == [0, 3, 1, 4, 2]


def test_a_bin_opened_later_but_first_at_a_room_is_filled_first():
    """The tie rule is a queue per room (OLMo-core's deque per capacity), not the first opened. Capacity 16,
    lengths 12 10 5 3 1: 12 opens bin 0 (room 4); 10 opens bin 1 (room 6); 5 fits only bin 1 (room 1: bin 1
    is first at room 1); 3 takes bin 0 (room 4 -> 1: second at room 1); 1 takes bin 1, the first at room 1,
    though bin 0 was opened first."""
    lengths = np.array([12, 10, 5, 3, 1])
    packed = pack_best_fit(np.zeros(5, np.int64), lengths, 16)
    assert samples_of(packed) == [[12, 3], [10, 5, 1]]


def test_equal_lengths_keep_their_order_with_the_stable_sort():
    lengths = np.array([3, 7, 3, 7, 3])
    starts = np.arange(5) * 10
    packed = pack_best_fit(starts, starts + lengths, 10)
    assert packed.order.tolist() == [1, 3, 0, 2, 4]
    assert packed.sorted_lengths.tolist() == [7, 7, 3, 3, 3]


def test_long_documents_are_truncated_or_fragmented():
    starts, ends = np.array([0, 10, 35]), np.array([10, 35, 36])
    assert [part.tolist() for part in cut_long_documents(starts, ends, 8, "truncate")] == [
        [0, 10, 35], [8, 18, 36], [0, 1, 2]]
    assert [part.tolist() for part in cut_long_documents(starts, ends, 8, "fragment")] == [
        [0, 8, 10, 18, 26, 34, 35], [8, 10, 18, 26, 34, 35, 36], [0, 0, 1, 1, 1, 1, 2]]
    with pytest.raises(TokenmillError, match="long-document strategy 'drop': one of truncate, fragment"):
        cut_long_documents(starts, ends, 8, "drop")


def test_documents_that_do_not_fit_are_refused():
    with pytest.raises(TokenmillError, match="document 1: 9 tokens, not 1..8; cut long documents first"):
        pack_best_fit(np.array([0, 3]), np.array([3, 12]), 8)


def test_a_length_whose_tree_does_not_fit_in_memory_is_refused_in_one_line(monkeypatch):
    """The kernel's memory grows with the length (--seq-length 2147483648 ended in a MemoryError traceback)."""
    from tokenmill.best_fit import obfd

    def out_of_memory(*_):
        raise MemoryError

    monkeypatch.setattr(obfd._kernels, "best_fit_bins", out_of_memory)
    with pytest.raises(TokenmillError, match=r"^sequence length 2,147,483,647: best fit needs ~64.0 GiB for a "
                                             r"length this long \(memory in proportion to it\), more than this "
                                             r"machine gives$"):
        pack_best_fit(np.array([0, 3]), np.array([3, 12]), 2**31 - 1)


@pytest.mark.parametrize("seed", range(5))
def test_every_document_is_in_one_sample_and_no_sample_overflows(seed):
    rng = np.random.default_rng(seed)
    capacity = int(rng.choice([16, 100, 2048]))
    lengths = rng.integers(1, capacity + 1, 5_000) // rng.integers(1, 8, 5_000) + 1
    lengths = np.minimum(lengths, capacity)
    ends = np.cumsum(lengths)
    packed = pack_best_fit(ends - lengths, ends, capacity)
    assert sorted(packed.documents_by_sample.tolist()) == list(range(len(lengths)))
    assert sorted(packed.order.tolist()) == list(range(len(lengths)))
    sample_lengths = packed.sample_lengths()
    assert sample_lengths.max() <= capacity and sample_lengths.sum() == lengths.sum()
    # a sample was opened by a document that no earlier sample had room for, and rooms only shrink
    rooms = capacity - sample_lengths
    opening = packed.sorted_lengths[packed.documents_by_sample[packed.sample_offsets[:-1]]]
    assert (np.maximum.accumulate(rooms)[:-1] < opening[1:]).all()
