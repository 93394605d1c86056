"""Whole documents in blocks, and the formats' one EOD rule: an EOD appended after chosen documents."""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from tokenmill.formats.document_blocks import document_blocks, eod_appended

EOD = 9


def test_a_second_eod_after_the_documents_that_already_ended_with_one():
    # three documents [1 2 9] [3] [4 9]: the first and the last kept their own EOD in the .pbin (eod_in_text 0, 2)
    tokens, lengths = np.array([1, 2, 9, 3, 4, 9]), np.array([3, 1, 2])
    doubled, lengths_after, loss = eod_appended(tokens, lengths, np.array([0, 2]), EOD, flags=np.zeros(6, np.uint8))
    assert doubled.tolist() == [1, 2, 9, 9, 3, 4, 9, 9] and lengths_after.tolist() == [4, 1, 3]
    assert loss.tolist() == [0, 0, 0, 1, 0, 0, 0, 1]  # the appended EOD is trained
    assert lengths.tolist() == [3, 1, 2]  # the caller's arrays are left as they were


def test_pack_appends_where_a_mask_says_and_nothing_is_copied_for_no_document():
    tokens, lengths = np.array([1, 2, 3, 9]), np.array([2, 2])
    appended, lengths_after, _ = eod_appended(tokens, lengths, tokens[np.cumsum(lengths) - 1] != EOD, EOD)
    assert appended.tolist() == [1, 2, 9, 3, 9] and lengths_after.tolist() == [3, 2]
    same = eod_appended(tokens, lengths, np.array([], np.int64), EOD)
    assert same[0] is tokens and same[1] is lengths and same[2] is None


def test_blocks_never_split_a_document_and_a_long_one_has_a_block_of_its_own():
    ends = np.cumsum([3, 3, 10, 1])
    assert list(document_blocks(ends, block_tokens=5)) == [(0, 1, 0, 3), (1, 2, 3, 6), (2, 3, 6, 16), (3, 4, 16, 17)]
    assert list(document_blocks(ends, block_tokens=100)) == [(0, 4, 0, 17)]


@given(st.lists(st.lists(st.integers(0, EOD), min_size=1, max_size=6), min_size=1, max_size=20),
       st.integers(1, 30))
def test_appending_is_the_per_document_rule_and_blocks_cover_every_document_once(documents, block_tokens):
    tokens = np.array([token for document in documents for token in document])
    lengths = np.array([len(document) for document in documents])
    ended = np.array([document[-1] == EOD for document in documents])
    appended, lengths_after, _ = eod_appended(tokens, lengths, ended, EOD)
    expected = [token for document in documents for token in document + ([EOD] if document[-1] == EOD else [])]
    assert appended.tolist() == expected and lengths_after.sum() == len(expected)
    blocks = list(document_blocks(np.cumsum(lengths), block_tokens))
    assert [first for first, *_ in blocks] == [0, *(stop for _, stop, *_ in blocks[:-1])]
    assert blocks[-1][1] == len(documents) and blocks[-1][3] == len(tokens)
