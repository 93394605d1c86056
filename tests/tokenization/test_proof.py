"""tokenization/proof: which documents and excerpts Hugging Face re-encodes to prove a fast engine's ids — a
deterministic sample (keyed draws per line, a floor of 64 KiB per job), every risky spot (added-token strings,
rare code points, windows of long documents) cut into short excerpts within the budget, and the detection
statement the sidecar keeps."""

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import DATA, GPT2, GPT2_EOD, TEKKEN
from tokenmill.inputs.utf8_texts import Utf8Texts
from tokenmill.pack.pretraining import PackSettings, pack
from tokenmill.tokenization.families import TokenizerSpec
from tokenmill.tokenization.proof import (DEFAULT_CHECK_FRACTION, EXCERPT_CHARACTERS, LONG_WINDOW_CHARACTERS,
                                          WHOLE_DOCUMENT_CHARACTERS, ProofSample, ProofSampler, detection_statement,
                                          ordinal_draws)
from tokenmill.tokenization.tokenizer import load_tokenizer


def test_the_proof_sample_is_deterministic_and_checks_every_risky_spot_that_fits_its_budget():
    sampler = ProofSampler(["<|endoftext|>", "</s>"], fraction=0.25)
    texts = [f"plain document number {i}" for i in range(400)] + [
        "has </s> inside", "x" * (1 << 17), "first line\ncafe\u0301 au lait\nlast line", "🙂 and 🙃\nplain\n🙂"]
    choice = sampler.choose(texts)
    assert choice == sampler.choose(list(texts))  # the same batch, the same choice, whichever process asks
    whole = set(choice.documents)
    assert 60 < len(whole - {400, 402, 403}) < 140  # about a quarter of the documents, drawn
    assert 401 not in whole and choice.eligible == 403  # over 64 Ki characters: never whole, a window instead
    excerpted = {excerpt.text: excerpt for excerpt in choice.excerpts}
    assert set(excerpted) == {400, 401, 402, 403} - whole  # every risky text not checked whole, once
    whys = {400: "an added-token string", 401: "a window of a long document", 402: "a rare code point",
            403: "a rare code point"}
    for i, excerpt in excerpted.items():
        assert excerpt.why == whys[i]
        assert excerpt.end - excerpt.start <= (LONG_WINDOW_CHARACTERS if i == 401 else EXCERPT_CHARACTERS + 5)
    assert sampler.choose(texts[:400]).excerpts == []  # nothing risky, nothing excerpted
    assert ProofSampler([], 1.0).choose(texts).documents == list(range(404))


def test_the_first_risky_code_point_of_each_text_is_found_by_one_c_pass():
    from tokenmill._kernels import first_risky_code_points

    texts = ["plain ascii", "café, naïve: Latin-1 only", "cafe\u0301", "Ωμέγα then e\u20d7", "🙂 first",
             "Ω then 🙂", "\U0001F642", "", "ё\ufe20"]
    positions, widths = np.empty(len(texts), np.int64), np.empty(len(texts), np.uint8)
    first_risky_code_points(texts, positions, widths)
    assert positions.tolist() == [-1, -1, 4, 12, 0, 7, 0, -1, 1]
    assert widths.tolist() == [1, 1, 2, 2, 4, 4, 4, 1, 2]

    # the same as the regex it replaced, on random text mixing every range and its neighbours
    risky = re.compile("[\U00010000-\U0010FFFF\u0300-\u036F\u1AB0-\u1AFF\u1DC0-\u1DFF\u20D0-\u20FF\uFE20-\uFE2F]")
    edges = [0x2FF, 0x300, 0x36F, 0x370, 0x1AAF, 0x1AB0, 0x1AFF, 0x1B00, 0x1DBF, 0x1DC0, 0x1DFF, 0x1E00, 0x20CF,
             0x20D0, 0x20FF, 0x2100, 0xFE1F, 0xFE20, 0xFE2F, 0xFE30, 0xFFFF, 0x10000, 0x10FFFF, 0x41, 0xE9]
    generator = np.random.default_rng(7)
    texts = ["".join(map(chr, generator.choice(edges, generator.integers(0, 12)))) for _ in range(3000)]
    positions, widths = np.empty(len(texts), np.int64), np.empty(len(texts), np.uint8)
    first_risky_code_points(texts, positions, widths)
    assert positions.tolist() == [match.start() if (match := risky.search(text)) else -1 for text in texts]
    with pytest.raises(TypeError, match=r"texts\[1\] is not a str"):
        first_risky_code_points(["a", b"b"], positions, widths)
    with pytest.raises(ValueError, match="one item per text"):
        first_risky_code_points(texts, positions[:2], widths)


def test_an_excerpt_is_cut_at_a_line_break_or_a_space_around_its_spot():
    sampler = ProofSampler(["<|endoftext|>"], fraction=0.0)
    line = "word " * 40
    text = "\n".join([line, line, f"{line}the spot <|endoftext|> here {line}", line, line])
    (excerpt,) = sampler.choose([text]).excerpts
    piece = text[excerpt.start:excerpt.end]
    assert "<|endoftext|>" in piece and len(piece) <= EXCERPT_CHARACTERS + len("<|endoftext|>")
    assert piece.startswith(" word") and piece.endswith("word")  # cut at spaces, inside the line
    dense = "🙂" * 5000  # no break to cut at: cut at the bound
    (excerpt,) = sampler.choose([dense]).excerpts
    assert excerpt.end - excerpt.start <= EXCERPT_CHARACTERS + 1


@pytest.mark.parametrize("added_tokens", [
    load_tokenizer(TEKKEN).added_tokens(),  # 1,000 tokens starting with 2 characters: a regex for each
    ["<a>", "[b]", "{c}", "(d)", "|e|", "~f~", "<", "<ab"],  # one-character and prefix tokens too
    ["<a>", "[b]", "{c}", "(d)", "|e|", "~f~", "!g", "#h", "%i", "&j"],  # 10 first characters: one trie regex
], ids=["tekken", "six-first-characters", "ten-first-characters"])
def test_every_text_holding_an_added_token_string_is_proven_whatever_its_first_character(added_tokens):
    sampler = ProofSampler(added_tokens, fraction=0.0)
    assert sampler.choose(["a [ b and c [d e { f ( g | h ~ i ! # % &", "no brackets at all"]).excerpts == []
    for token in added_tokens:  # one text per batch: each within the budget's floor
        (excerpt,) = sampler.choose([f"x {token} y"]).excerpts
        assert token in f"x {token} y"[excerpt.start:excerpt.end] and excerpt.why == "an added-token string"


def adversarial_words(count: int, seed: int = 7) -> list[str]:
    """Documents made of emoji, combining marks, CJK outside the BMP and special-token strings in
    every line (bench/make_adversarial.py in small): every document holds every risky kind."""
    import random

    rng = random.Random(seed)
    words = ["🙂", "👩‍👩‍👧‍👦", "🇫🇷", "cafe\u0301", "a\u0334\u0326\u030d", "\U00020000字", "привет", "東京",
             "<|endoftext|>", "</s>", "[INST]", "the", "word"]
    return ["\n".join(" ".join(rng.choices(words, k=rng.randint(8, 30))) for _ in range(rng.randint(1, 40)))
            for _ in range(count)]


@pytest.mark.parametrize("tokenizer", [GPT2, TEKKEN], ids=["gpt2", "tekken"])
def test_the_proof_stays_within_its_budget_on_text_where_every_document_is_risky(tokenizer):
    texts = adversarial_words(3000)
    sampler = ProofSampler(load_tokenizer(tokenizer).added_tokens(), fraction=DEFAULT_CHECK_FRACTION)
    choice = sampler.choose(texts)
    excerpt_characters = sum(excerpt.end - excerpt.start for excerpt in choice.excerpts)
    assert excerpt_characters <= sampler.excerpt_share * choice.characters
    assert all(excerpt.end - excerpt.start <= EXCERPT_CHARACTERS + len("<|endoftext|>") for excerpt in choice.excerpts)
    # one spot of each kind per text, each text's first before any second: the budget is spread over many texts
    assert len({excerpt.text for excerpt in choice.excerpts}) >= max(20, len(choice.excerpts) - 5)
    assert {excerpt.why for excerpt in choice.excerpts} == {"an added-token string", "a rare code point"}
    whole_characters = sum(len(texts[i]) for i in choice.documents)
    assert 1 <= len(choice.documents) <= 20  # 0.2 % of 3,000 documents: 6 expected
    # Hugging Face re-encodes under 1 % of the text (the rule before: every such document whole, all of it)
    assert (whole_characters + excerpt_characters) / choice.characters < 0.01


def test_ordinal_draws_are_uniform_and_depend_on_the_key():
    draws = ordinal_draws(np.arange(1, 200_001), key=12345)
    assert abs(float((draws < 2**32 * 0.002).mean()) - 0.002) < 0.0005
    assert not np.array_equal(draws, ordinal_draws(np.arange(1, 200_001), key=54321))
    assert np.array_equal(draws[:10], ordinal_draws(np.arange(1, 11), key=12345))


def test_the_detection_statement_is_the_probability_of_missing_every_differing_document():
    # (1 - p)^d <= 0.001: d >= 3,451 documents at p = 0.2 %
    assert detection_statement(0.002, 100_000, 100_000) == (
        "a difference in >= 3.5 % of documents is caught with probability >= 99.9 % in a job of >= 100000 documents")
    assert (1 - 0.002) ** 3451 <= 0.001 < (1 - 0.002) ** 3450
    # documents too long to be checked whole are counted as missed
    assert "in >= 13.5 % of documents" in detection_statement(0.002, 100_000, 90_000)
    assert detection_statement(0.002, 1000, 1000).startswith("a difference in all documents is caught with "
                                                             "probability >= 86.4 %")
    assert detection_statement(1.0, 10, 10).startswith("every one of the documents is checked whole")


def test_a_small_job_checks_at_least_64_kib_whole_and_the_sidecar_keeps_the_fraction_asked(tmp_path):
    from tokenmill.tokenization.proof import JOB_FLOOR_BYTES, job_check_fraction

    assert job_check_fraction(0.002, 100e6) == 0.002
    assert job_check_fraction(0.002, 2 << 20) == JOB_FLOOR_BYTES / (2 << 20)  # 3.1 % of a 2 MiB job
    assert job_check_fraction(0.0, 2 << 20) == 0.0 and job_check_fraction(1.0, 10) == 1.0  # none and all stay
    lines = (DATA.parent.parent / "data/raw/demo.jsonl").read_bytes().splitlines(keepends=True)[:1500]
    source = tmp_path / "x.jsonl"
    source.write_bytes(b"".join(lines))
    meta = pack([str(source)], str(tmp_path / "x.pbin"), PackSettings(str(GPT2), eod=GPT2_EOD),
                log=lambda message: None)
    engine = meta["engine"]
    assert engine["check_fraction"] == 0.002  # as asked
    assert engine["proof"]["fraction"] == pytest.approx(JOB_FLOOR_BYTES / source.stat().st_size)
    assert 0.02 < engine["proof"]["documents"] / meta["documents"] < 0.08  # ~4 % of 1,500 documents, not 0.2 %


class _JoinedSearch(ProofSampler):
    """The added-token search as it was before issue 45 (round c): the texts joined by a character no token holds
    and searched as one string, one spot per text, until the budget. Kept only here, to prove that searching each
    text on its own chooses the same."""

    def __init__(self, added_tokens: list[str], fraction: float):
        super().__init__(added_tokens, fraction)
        self._separator = next(character for character in "\x00\x01\x02\x03\ufffe\uffff"
                               if not any(character in token for token in added_tokens))

    def _scan(self, texts, chosen, start_at, pattern, why, budget, spots):
        from tokenmill.tokenization.proof import _excerpt

        order = np.concatenate([chosen[start_at:], chosen[:start_at]])
        picked = [texts[i] for i in order.tolist()]
        joined = self._separator.join(picked)
        starts = np.zeros(len(order) + 1, np.int64)
        np.cumsum(np.fromiter(map(len, picked), np.int64, len(picked)) + 1, out=starts[1:])
        collected, position = 0.0, 0
        while collected < budget:
            match = pattern.search(joined, position)
            if match is None:
                break
            number = int(np.searchsorted(starts, match.start(), side="right")) - 1
            offset = int(starts[number])
            excerpt = _excerpt(picked[number], match.start() - offset, match.end() - offset, EXCERPT_CHARACTERS, why)
            spots.setdefault(int(order[number]), []).append(excerpt)
            collected += excerpt[1] - excerpt[0]
            position = int(starts[number + 1])


_ADDED_TOKEN_SETS = {
    "gpt2": ["<|endoftext|>"],
    "sentencepiece": lambda: load_tokenizer(TokenizerSpec(str(DATA / "mistral-v1.tokenizer.model"),
                                                         "SentencePieceTokenizer")).added_tokens(),
    "tekken": lambda: load_tokenizer(TEKKEN).added_tokens(),
    "many first characters": [f"{first}tok{i}{last}"
                              for i, (first, last) in enumerate(zip("<[{(|@#$%^&", ">]})|@#$%^&"))],
    "nested": ["<s>", "<s>x", "</s>", "[INST]", "[/INST]", "<", "ab"],
}
_LOADED: dict[str, list[str]] = {}
_FRAGMENTS = ["<s>", "</s>", "<unk>", "<0x0A>", "<0xFF>", "<|endoftext|>", "<|endoftext", "[INST]", "[/INST]",
              "<SPECIAL_20>", "<SPECIAL_999>", "[TOOL_CALLS]", "<tok3>", "{tok2}", "<s>x", "ab", "<", "[", "<<", "[[",
              "\n", " ", "plain words ", "x" * 300, "caf\u00e9", "e\u0301", "\U0001f642", "\ud800", "\x00", "\uffff"]


def _added_tokens(name: str) -> list[str]:
    if name not in _LOADED:
        tokens = _ADDED_TOKEN_SETS[name]
        _LOADED[name] = tokens() if callable(tokens) else tokens
    return _LOADED[name]


@settings(max_examples=150, deadline=None)
@given(name=st.sampled_from(sorted(_ADDED_TOKEN_SETS)), fraction=st.sampled_from([0.0, 0.002, 0.25]),
       with_ordinals=st.booleans(),
       texts=st.lists(st.one_of(st.lists(st.sampled_from(_FRAGMENTS), max_size=40).map("".join), st.text(max_size=30)),
                      max_size=60))
def test_searching_each_text_alone_chooses_what_searching_them_joined_chose(name, fraction, with_ordinals, texts):
    added = _added_tokens(name)
    ordinals = np.arange(len(texts)) if with_ordinals else None
    assert (ProofSampler(added, fraction).choose(texts, ordinals, 5)
            == _JoinedSearch(added, fraction).choose(texts, ordinals, 5))


def test_a_batch_whose_spots_overrun_the_budget_gets_the_same_choice_from_either_search():
    texts = [("plain text " * (i % 7)) + ["<s>", "[INST]", "</s> then <unk>", "\U0001f642", "e\u0301", ""][i % 6]
             + ("<" * (i % 3)) + f" tail {i}" for i in range(300)]
    choice = ProofSampler(_added_tokens("tekken"), 0.002).choose(texts, np.arange(300), 11)
    assert choice == _JoinedSearch(_added_tokens("tekken"), 0.002).choose(texts, np.arange(300), 11)
    assert len(choice.excerpts) > 10 and {excerpt.why for excerpt in choice.excerpts} >= {
        "an added-token string", "a rare code point"}


def _utf8(text: str) -> str:
    """``text`` without lone surrogates (which no UTF-8 buffer, and no JSON text orjson reads, holds)."""
    return text.encode("utf-8", "replace").decode("utf-8")


@settings(max_examples=150, deadline=None)
@given(name=st.sampled_from(sorted(_ADDED_TOKEN_SETS)), fraction=st.sampled_from([0.0, 0.002, 0.25, 1.0]),
       with_ordinals=st.booleans(),
       texts=st.lists(st.one_of(st.lists(st.sampled_from(_FRAGMENTS), max_size=40).map("".join), st.text(max_size=30),
                                st.just("x" * (WHOLE_DOCUMENT_CHARACTERS + 5) + "\U0001f642")).map(_utf8),
                      max_size=60))
def test_the_choice_of_texts_in_one_utf8_buffer_is_the_choice_of_their_strs(name, fraction, with_ordinals, texts):
    """The bytes form (character counts and rare code points from the C pass over UTF-8, added tokens by a byte
    search, only the texts taken decoded) chooses the same documents and excerpts as the str form."""
    added = _added_tokens(name)
    ordinals = np.arange(len(texts)) if with_ordinals else None
    sampler = ProofSampler(added, fraction)
    assert sampler.choose(Utf8Texts.from_strings(texts), ordinals, 5) == sampler.choose(texts, ordinals, 5)


def test_a_proof_sample_of_a_utf8_buffer_is_the_sample_of_its_strs():
    info = load_tokenizer(GPT2, GPT2_EOD)
    texts = [("plain text " * (i % 7)) + ["<|endoftext|>", "caf\u00e9", "\U0001f642 and e\u0301", "x"][i % 4]
             + f" tail {i}" for i in range(400)]
    sampler = ProofSampler(info.added_tokens(), 0.01)
    mine = ProofSample.of(Utf8Texts.from_strings(texts), sampler, info, False, np.arange(400), 3)
    theirs = ProofSample.of(texts, sampler, info, False, np.arange(400), 3)
    assert mine.choice == theirs.choice and mine.excerpt_texts == theirs.excerpt_texts
    assert (mine.hf_bytes, mine.hf_characters) == (theirs.hf_bytes, theirs.hf_characters)
    assert all(np.array_equal(a, b) for a, b in zip(mine.reference, theirs.reference))
    assert len(mine.choice.excerpts) > 5
