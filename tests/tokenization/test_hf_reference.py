"""tokenization/hf_reference: Hugging Face's own batch encoding, the reference ids a fast engine is proven
against: every text's ids back to back (int64) and the count per text."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from tokenizers import Tokenizer

from conftest import GPT2
from tokenmill.tokenization.hf_reference import encode_batch_hf

TOKENIZER = Tokenizer.from_file(str(GPT2))


def test_a_batch_is_the_ids_of_each_text_back_to_back_with_their_lengths():
    ids, lengths = encode_batch_hf(TOKENIZER, ["Hello world", "", "<|endoftext|> again"], False)
    assert ids.dtype == lengths.dtype == np.int64
    assert lengths.tolist() == [2, 0, 2]
    assert ids.tolist() == [15496, 995, 50256, 757]  # the special-token string is its id


@settings(max_examples=40, deadline=None)
@given(texts=st.lists(st.text(max_size=60), max_size=8), special=st.booleans())
def test_the_batch_equals_encoding_each_text_alone(texts, special):
    ids, lengths = encode_batch_hf(TOKENIZER, texts, special)
    each = [TOKENIZER.encode(text, add_special_tokens=special).ids for text in texts]
    assert lengths.tolist() == [len(one) for one in each]
    assert ids.tolist() == [token for one in each for token in one]
