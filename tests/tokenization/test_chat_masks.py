"""A rendered text's trained character spans made a token mask, three ways, one mask: off the ids' bytes (a
byte-level BPE's table), off pieces cut at the span ends, and off Hugging Face's character offsets. (Whole
conversations, against transformers' masks, are tests/tokenization/test_chat_template.py's.)"""

import numpy as np
import pytest

from conftest import REPO
from tokenmill.errors import TokenmillError
from tokenmill.tokenization.chat_masks import ByteTable, offsets_mask, piece_masks
from tokenmill.tokenization.engine import Encoder
from tokenmill.tokenization.tokenizer import load_tokenizer

# GPT-2's vocabulary is byte-level BPE: it has a byte table
GPT2 = load_tokenizer(REPO / "data/tokenizers/gpt2.tokenizer.json")
TEXTS = ["user: hi\nassistant: Hello there!<|endoftext|>", "q: 東京?\na: 🙂 yes", "no spans here"]
SPANS = [[(19, 45)], [(9, 15)], []]  # " Hello there!<|endoftext|>", " 🙂 yes": token boundaries (pieces join)


def hf_masks(texts, spans, by_prefix):
    return [offsets_mask(encoding.offsets, text_spans, len(text) if by_prefix else None, "c.jsonl:1", "t.jinja")
            for text, text_spans, encoding in zip(texts, spans, GPT2.tokenizer.encode_batch(texts,
                                                                                           add_special_tokens=False))]


def test_the_three_ways_give_one_mask():
    ids = [np.asarray(encoding.ids, dtype=np.int64)
           for encoding in GPT2.tokenizer.encode_batch(TEXTS, add_special_tokens=False)]
    by_offsets = hf_masks(TEXTS, SPANS, by_prefix=False)
    by_bytes = ByteTable.of(GPT2.tokenizer).masks(TEXTS, SPANS, [False] * len(TEXTS), ids)
    by_pieces = piece_masks(Encoder(GPT2, "hf"), TEXTS, SPANS, ids)
    for k, text in enumerate(TEXTS):
        assert by_bytes[k].tolist() == by_offsets[k].tolist() == by_pieces[k][1].tolist(), text
        assert by_pieces[k][0].tolist() == ids[k].tolist()
    trained = ids[0][by_offsets[0]]
    assert GPT2.tokenizer.decode(trained.tolist(), skip_special_tokens=False) == " Hello there!<|endoftext|>"
    assert not by_offsets[2].any()


def test_a_prefix_rule_span_that_ends_inside_a_token_is_refused_never_masked():
    text, spans = "assistant: Hello", [(11, 13)]  # "He": inside the token " Hello"
    with pytest.raises(TokenmillError, match=r"^c.jsonl:1: assistant span 0 \(characters 11-13\) of the chat "
                                             r"template t.jinja does not fall on token boundaries$"):
        hf_masks([text], [spans], by_prefix=True)
    ids = [np.asarray(GPT2.tokenizer.encode(text, add_special_tokens=False).ids, dtype=np.int64)]
    assert ByteTable.of(GPT2.tokenizer).masks([text], [spans], [True], ids) == [None]  # (offsets decide: refused)
    assert hf_masks([text], [spans], by_prefix=False)[0].tolist() == [False, False, False, True]  # a marked span


def test_ids_that_do_not_spell_the_text_leave_it_to_the_offsets():
    text = "hello"
    wrong = [np.asarray(GPT2.tokenizer.encode("hellO", add_special_tokens=False).ids, dtype=np.int64)]
    assert ByteTable.of(GPT2.tokenizer).masks([text], [[(0, 5)]], [False], wrong) == [None]
    assert piece_masks(Encoder(GPT2, "hf"), ["ab cd"], [[(2, 5)]], wrong) == [None]  # pieces that do not join
