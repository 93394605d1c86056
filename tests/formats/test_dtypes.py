"""formats/dtypes: the one table of token dtypes by vocabulary size — Megatron's .bin uint16 below 65,500 (else
int32), datatrove's .ds and OLMo-core's files uint16 up to 65,536 ids — and the formats' writers take it."""

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from tokenmill.formats.datatrove import token_size_for
from tokenmill.formats.dtypes import MEGATRON_UINT16_BELOW, UINT16_VOCAB_LIMIT, megatron_dtype_name
from tokenmill.formats.bin_idx import optimal_dtype
from tokenmill.formats.olmo import olmo_dtype


def test_a_vocabulary_of_65500_to_65536_tokens_is_uint16_in_ds_and_olmo_but_int32_in_a_bin():
    assert (MEGATRON_UINT16_BELOW, UINT16_VOCAB_LIMIT) == (65500, 65536)
    rows = {vocab: (megatron_dtype_name(vocab), optimal_dtype(vocab), token_size_for(vocab), olmo_dtype(vocab))
            for vocab in (50257, 65499, 65500, 65536, 65537, 131072)}
    assert rows == {50257: ("uint16", np.uint16, 2, np.dtype("<u2")), 65499: ("uint16", np.uint16, 2, np.dtype("<u2")),
                    65500: ("int32", np.int32, 2, np.dtype("<u2")), 65536: ("int32", np.int32, 2, np.dtype("<u2")),
                    65537: ("int32", np.int32, 4, np.dtype("<u4")), 131072: ("int32", np.int32, 4, np.dtype("<u4"))}


@given(vocab_size=st.integers(1, 1 << 31))
def test_every_format_s_dtype_holds_the_largest_id_of_its_vocabulary(vocab_size):
    largest = vocab_size - 1
    assert largest <= np.iinfo(optimal_dtype(vocab_size)).max
    assert largest <= np.iinfo(olmo_dtype(vocab_size)).max
    assert largest < 1 << (8 * token_size_for(vocab_size))
    assert optimal_dtype(vocab_size) == np.dtype(megatron_dtype_name(vocab_size))
