"""tokenization/sentencepiece_model: a SentencePiece .model read without the library (pieces, scores, kinds, the
trainer and normalizer settings), its EOS as eos_id() finds it, and a Llama-style BPE model written as a
tokenizer.json that encodes exactly as SentencePiece does; any other model refused with the reason."""

import io
import json

import pytest
import sentencepiece
from hypothesis import given, settings
from hypothesis import strategies as st
from tokenizers import Tokenizer

from conftest import DATA, MIXED_JSONL, train_sentencepiece
from tokenmill.tokenization.sentencepiece_model import (MODEL_BPE, PIECE_CONTROL, PIECE_NORMAL, PIECE_UNKNOWN,
                                                        bpe_tokenizer_json, conversion_refusal, eos_piece,
                                                        literal_pieces, read_model)

MISTRAL = DATA / "mistral-v1.tokenizer.model"


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A small byte-fallback BPE model, the library's processor of it, and tokenmill's tokenizer.json of it."""
    content = train_sentencepiece(tmp_path_factory.mktemp("sp") / "sp.model")
    pieces, model_settings = read_model(content)
    processor = sentencepiece.SentencePieceProcessor(model_proto=content)
    return pieces, model_settings, processor, Tokenizer.from_str(bpe_tokenizer_json(pieces, True))


def test_the_pieces_scores_kinds_and_settings_are_the_library_s(trained):
    pieces, model_settings, processor, _ = trained
    assert len(pieces) == processor.get_piece_size()
    for index, (piece, score, kind) in enumerate(pieces):
        assert piece == processor.id_to_piece(index) and score == pytest.approx(processor.get_score(index))
        assert (kind == PIECE_CONTROL) == processor.is_control(index)
        assert (kind == PIECE_UNKNOWN) == processor.is_unknown(index)
    assert model_settings["model_type"] == MODEL_BPE and model_settings["byte_fallback"]
    assert model_settings["normalizer"] == "identity" and conversion_refusal(pieces, model_settings) is None
    assert eos_piece(pieces, model_settings) == "</s>" == processor.id_to_piece(processor.eos_id())
    assert {"<s>", "</s>", "<unk>", "<0x41>"} <= set(literal_pieces(pieces))
    assert not {piece for piece, _, kind in pieces if kind == PIECE_NORMAL} & set(literal_pieces(pieces))


def test_the_tokenizer_json_encodes_the_corpus_as_sentencepiece_does(trained):
    *_, processor, tokenizer = trained
    texts = [json.loads(line)["text"] for line in MIXED_JSONL.read_text(encoding="utf-8").splitlines()]
    texts += ["a </s> b <s> <unk> <0x41>", "  two spaces, a tab\tand ünïcödé 🙂", ""]
    for text in texts:
        assert tokenizer.encode(text, add_special_tokens=False).ids == processor.encode(text), text


@settings(max_examples=60, deadline=None)
@given(text=st.text(max_size=40))
def test_any_text_encodes_as_sentencepiece_does(trained, text):
    *_, processor, tokenizer = trained
    assert tokenizer.encode(text, add_special_tokens=False).ids == processor.encode(text)


def test_mistral_s_model_is_read_and_other_kinds_of_model_are_refused_with_the_reason(tmp_path):
    pieces, model_settings = read_model(MISTRAL.read_bytes())
    assert len(pieces) == 32000 and conversion_refusal(pieces, model_settings) is None
    model = io.BytesIO()
    sentencepiece.SentencePieceTrainer.train(sentence_iterator=iter(MIXED_JSONL.read_text().splitlines()),
                                             model_writer=model, vocab_size=300, model_type="unigram",
                                             hard_vocab_limit=False, minloglevel=2)
    unigram = read_model(model.getvalue())
    assert conversion_refusal(*unigram) == "it is not a BPE model (Unigram, word or char models are not supported yet)"
    no_eos = read_model(train_sentencepiece(tmp_path / "e.model", eos_id=-1))
    assert eos_piece(*no_eos) is None
    assert conversion_refusal(pieces, {**model_settings, "normalizer": "nmt_nfkc"}) == \
        "its normalizer is 'nmt_nfkc', not identity"
    assert conversion_refusal(pieces, {**model_settings, "treat_whitespace_as_suffix": True}) == \
        "it puts whitespace at the end of pieces (treat_whitespace_as_suffix)"
