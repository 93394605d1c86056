"""megatron/sample_pieces: the (sequence, offset, length) pieces that sample k of a GPTDataset cache is made of,
read through shuffle_index, sample_index and document_index as Megatron reads them, extra label token included."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenmill.megatron.gpt_indices import build_document_index, build_sample_index
from tokenmill.megatron.sample_pieces import sample_pieces


def test_a_sample_is_the_tail_of_its_first_sequence_the_middle_ones_whole_and_the_head_of_its_last():
    sizes = np.array([5, 3, 4, 6])
    document_index = np.array([2, 0, 3, 1])  # the shuffled order: 4 + 5 + 6 + 3 tokens
    sample_index = np.array([[0, 0], [1, 2], [2, 3]])  # two samples of 6 tokens, at tokens 0 and 6 (+1 extra)
    shuffle_index = np.array([1, 0])
    assert sample_pieces(document_index, sample_index, shuffle_index, sizes, 1) == [(2, 0, 4), (0, 0, 3)]
    assert sample_pieces(document_index, sample_index, shuffle_index, sizes, 0) == [(0, 2, 3), (3, 0, 4)]
    assert sample_pieces(document_index, sample_index, shuffle_index, sizes, -1, extra=0) == [(2, 0, 4), (0, 0, 2)]
    # within one sequence: the range between the two rows
    assert sample_pieces(np.array([1]), np.array([[0, 0], [0, 2], [0, 4]]), np.array([1, 0]), sizes, 0) == \
        [(1, 2, 3)]
    with pytest.raises(IndexError):
        sample_pieces(document_index, sample_index, shuffle_index, sizes, 2)


@settings(max_examples=60, deadline=None)
@given(sizes=st.lists(st.integers(1, 20), min_size=1, max_size=12), seq_length=st.integers(1, 16),
       epochs=st.integers(1, 3), seed=st.integers(0, 2**31), extra=st.sampled_from([0, 1]))
def test_every_sample_is_its_window_of_the_shuffled_token_stream(sizes, seq_length, epochs, seed, extra):
    sizes = np.array(sizes, dtype=np.int32)
    tokens_per_epoch = int(sizes.sum())
    if epochs * tokens_per_epoch - extra < seq_length:
        return  # not one whole sample
    random_state = np.random.RandomState(seed)
    document_index = build_document_index(np.arange(len(sizes)), epochs, random_state, False)
    sample_index = build_sample_index(sizes, document_index, seq_length, epochs, tokens_per_epoch, True, extra)
    shuffle_index = random_state.permutation(len(sample_index) - 1)
    # every token of the stream named by (sequence, offset)
    stream = [(int(sequence), offset) for sequence in document_index for offset in range(sizes[sequence])]
    for k in range(len(shuffle_index)):
        pieces = sample_pieces(document_index, sample_index, shuffle_index, sizes, k, extra)
        got = [(sequence, offset + i) for sequence, offset, length in pieces for i in range(length)]
        start = int(shuffle_index[k]) * seq_length
        assert got == stream[start:start + seq_length + extra]
