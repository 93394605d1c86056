"""The proof: what of every batch the fast engine must give Hugging Face's ids for, within a budget.

fastokens is proven equal to Hugging Face (HF) once and for all on a benchmark corpus, but a job's
text may hold what no benchmark did, so every job re-encodes part of its text with HF and stops (or
falls back to HF, ``on_mismatch: hf``) at the first difference: no differing id is ever written.

**Budget.** HF costs k times fastokens per byte, one thread each (``bench/pack_cost.py`` prints k):
45-82 for GPT-2 and ~50 for Tekken on the 100 MB benchmark corpus, 16-22 on emoji-dense text; and
fastokens' encode is ~40 % of a job's CPU (the rest: tokenizer loads, JSON parsing, hashing,
writes). Re-encoding a share s of the text costs s * k of the fast encode, so a proof under ~10 %
of the job's CPU with k up to ~80 allows s ~ 0.3 % (HF at ~0.24x the fast encode, ~5 % of the
job), the choice below taking the other ~5 %. Hence, per batch of texts:

* **Whole documents**, a share ``fraction`` of them (``check_fraction``, default
  :data:`DEFAULT_CHECK_FRACTION` = 0.2 %; a job under 32 MB checks at least :data:`JOB_FLOOR_BYTES`
  = 64 KiB of its input, :func:`job_check_fraction`): each document of at most
  :data:`WHOLE_DOCUMENT_CHARACTERS` (64 Ki) characters whose draw, a hash of its own content (its
  length and first 128 characters), falls under ``fraction``; never a function of its
  batch or of the worker count. Where the caller knows each document's ordinal (pack and
  ``preprocess-data``: its line in its input, under a key per input), the draw is a hash of that
  instead (:func:`ordinal_draws`), so that duplicate or templated documents are drawn independently:
  by content, a family of identical documents would be checked all together or not at all. The
  ids the fast engine wrote for them are compared with HF's as they are, so the flat batch and its
  lengths are proven too. Longer documents are checked
  through windows instead, so that no document costs more than 64 Ki characters of HF.
* **Excerpts** of the other documents, where engines are likeliest to differ: around an
  added-token string (special tokens in text), around a code point outside the BMP or a combining
  mark (Unicode table versions, UTF-16 surrogates), and a window of a document over 64 Ki
  characters (regex limits). Each is at most :data:`EXCERPT_CHARACTERS` (256) characters around
  its spot (plus the spot), :data:`LONG_WINDOW_CHARACTERS` (1 Ki) for a long document's window
  (at a place drawn from its hash), cut at a line break or else a space inside those bounds
  (pre-tokenizers split there, so the spot's tokens are those it has in its document), and
  encoded by both engines. One spot of each kind per document, its first. Excerpts share a budget
  per batch of ``max(fraction / 4, 0.05 %)`` of the batch's characters, at least 1 Ki characters
  (so a one-text batch of the on-access datasets proves its first spot): where the candidates fit,
  all are checked (ordinary text: 1-2 % of documents hold a spot, ~0.04 % of the characters);
  where they do not (emoji-dense text, where every document holds every kind), every document's
  first spot goes before any second, long documents' windows last, in the order of their draws,
  and each search stops once it has found the budget's worth. So the excerpts depend on the batch
  (cut by size, never by worker count).

So HF re-encodes ``fraction`` of the text plus at most ``max(fraction / 4, 0.05 %)``: ~0.25 % at
the default, on any text (0.19 % of the 100 MB benchmark corpus, 0.28 % of emoji-dense text).

**What it detects.** Each document of at most 64 Ki characters is checked whole with probability
``p = fraction``, independently of the others (the hash of its ordinal under the input's key
decides: duplicates too; where no ordinal is known, the hash of its content, which draws equal
documents together). A difference that
shows in d such documents is missed with probability ``(1 - p)^d``; it is caught with probability
>= 99.9 % once d >= ln(1000) / -ln(1 - p) (3,451 at p = 0.2 %). In a job of N documents of which
a share e is short enough, a difference in a share X >= (1 - e) + 3,451 / N of its documents is
caught with probability >= 99.9 %: 3.5 % of a 100,000-document job of short documents, 0.35 % of
a million. :func:`detection_statement` writes this for each job into the ``.pbin`` sidecar
(``engine.proof.detects``). Rare spots are not left to chance: where they fit the excerpt budget,
every document holding one has it checked.

Cost, per 100 MB of text (``bench/pack_cost.py``): the choice ~0.15-0.2 s, all C-level passes
over each batch (a ~1 µs hash per text; ``in`` per added token or first character; each text
holding one searched by one regex, mapped in C, until the budget, never joined: 1.8-2.6 CPU-s per GB
before, 1.1-1.8 after, ``bench/proof_choice.py``; the rare code points found by one C pass over the texts
that are not Latin-1, ``_kernels.first_risky_code_points``), HF on ~0.25 % of the text, and the comparison
(one array comparison when all agree).
"""

from __future__ import annotations

import itertools
import math
import operator
import os
import re
import zlib
from dataclasses import dataclass, fields
from typing import NamedTuple

import numpy as np

from tokenmill._kernels import first_risky_code_points
from tokenmill.config import default
from tokenmill.errors import TokenmillError
from tokenmill.inputs.utf8_texts import Utf8Texts
from tokenmill.tokenization.engine import Encoder, split_flat
from tokenmill.tokenization.tokenizer import TokenizerInfo

__all__ = ["DEFAULT_CHECK_FRACTION", "JOB_FLOOR_BYTES", "WHOLE_DOCUMENT_CHARACTERS", "EXCERPT_CHARACTERS",
           "LONG_WINDOW_CHARACTERS", "input_key", "ordinal_draws", "job_check_fraction", "EngineMismatch", "Excerpt",
           "ProofChoice", "ProofSampler", "ProofSample", "ProofTally", "encode_proven",
           "detection_statement", "compare_ids", "first_difference"]

DEFAULT_CHECK_FRACTION: float = default("tokenizers.*.check_fraction")  # 0.002, the config's default
WHOLE_DOCUMENT_CHARACTERS = 1 << 16
EXCERPT_CHARACTERS = 256
LONG_WINDOW_CHARACTERS = 1024
# The excerpts' share of a batch's characters: at least this, or a quarter of the whole-document fraction.
_EXCERPT_SHARE = 0.0005
_EXCERPT_FLOOR_CHARACTERS = 1024
# A small job's whole-document sample: at least this many bytes of its input (see job_check_fraction).
JOB_FLOOR_BYTES = 64 << 10
_CONFIDENCE = 0.999

# Code points where encoders most often disagree: outside the BMP (emoji, rare CJK: UTF-16 surrogates in
# some implementations) and combining marks, U+0300-036F, 1AB0-1AFF, 1DC0-1DFF, 20D0-20FF and FE20-FE2F
# (Unicode table versions differ). tokenmill._kernels.first_risky_code_points finds each text's first in
# one C pass: CPython stores a str in 1, 2 or 4 bytes per code point, the fewest its largest code point
# allows, so a text of 1 byte each (French, German, ...) holds none and is not read, and one of 2 bytes
# each holds no code point outside the BMP.


class EngineMismatch(TokenmillError):
    """The fast engine gave other ids than HF for a text (the message names file, line and token)."""


class Excerpt(NamedTuple):
    """Characters ``[start, end)`` of text ``text`` of a batch, checked on their own, around ``why``."""

    text: int
    start: int
    end: int
    why: str


@dataclass
class ProofChoice:
    """What :meth:`ProofSampler.choose` picked of a batch.

    Args:
        documents: indices of the texts checked whole, ascending.
        excerpts: the excerpts checked, by text then position.
        eligible: how many texts were short enough to be checked whole (the whole-document sample's
            population, for :func:`detection_statement`).
        characters: the batch's characters.
    """

    documents: list[int]
    excerpts: list[Excerpt]
    eligible: int
    characters: int


@dataclass
class ProofTally:
    """What a job's proof checked, summed over batches (``+``); recorded in sidecars.

    Args:
        texts: texts seen.
        eligible: of them, those short enough to be checked whole.
        documents: texts checked whole.
        excerpts: excerpts checked.
        excerpted: texts with an excerpt checked (and not checked whole).
        hf_bytes: UTF-8 bytes re-encoded with Hugging Face.
        hf_characters: characters re-encoded with Hugging Face.
        characters: characters of all texts seen.
    """

    texts: int = 0
    eligible: int = 0
    documents: int = 0
    excerpts: int = 0
    excerpted: int = 0
    hf_bytes: int = 0
    hf_characters: int = 0
    characters: int = 0

    def __add__(self, other: "ProofTally") -> "ProofTally":
        return ProofTally(*(getattr(self, name.name) + getattr(other, name.name) for name in fields(self)))

    @property
    def checked(self) -> int:
        """Texts checked whole or through an excerpt (a sidecar's ``checked_documents``)."""
        return self.documents + self.excerpted

    def sidecar_entry(self, fraction: float, unit: str = "documents") -> dict:
        """The sidecar's ``engine.proof``: counts, and what the sample can detect (of ``unit``: sft's
        texts are messages)."""
        return {"fraction": fraction, unit: self.documents, "excerpts": self.excerpts, "hf_bytes": self.hf_bytes,
                "hf_share": round(self.hf_characters / max(self.characters, 1), 6),
                "detects": detection_statement(fraction, self.texts, self.eligible, unit)}


def job_check_fraction(fraction: float, input_bytes: float) -> float:
    """The share of documents a job of ``input_bytes`` checks whole: ``fraction``, raised where
    that would be under :data:`JOB_FLOOR_BYTES` of its input (64 KiB: ~45 ms of Hugging Face, under
    5 % of the ~1 s that even a small job spends loading tokenizers), so that a small job's sample
    says something (a 1 MiB job: 6.25 % of its documents). 0 and 1 stay as they are."""
    if not 0 < fraction < 1 or input_bytes <= 0:
        return fraction
    return max(fraction, min(1.0, JOB_FLOOR_BYTES / input_bytes))


def detection_statement(fraction: float, documents: int, eligible: int, unit: str = "documents") -> str:
    """What a whole-document sample at rate ``fraction`` catches in a job of ``documents`` texts of
    which ``eligible`` could be checked whole (see the module docstring); ``unit`` names the texts."""
    if fraction >= 1:
        return f"every one of the {unit} is checked whole: any difference is caught"
    if fraction <= 0 or eligible <= 0:
        return "no whole-document sample (check_fraction 0): only excerpts around risky spots are checked"
    needed = math.ceil(math.log(1 - _CONFIDENCE) / math.log1p(-fraction))  # differing short documents
    share = (documents - eligible + needed) / documents
    if share > 1:
        caught = 1 - (1 - fraction) ** eligible
        return (f"a difference in all {unit} is caught with probability >= {math.floor(caught * 1000) / 10} % "
                f"(a job of {documents} {unit} is too small for 99.9 %, which takes {needed})")
    percent = math.ceil(share * 1000) / 10 if share >= 0.01 else math.ceil(share * 10000) / 100
    return (f"a difference in >= {percent} % of {unit} is caught with probability >= 99.9 % in a job of "
            f">= {documents} {unit}")


class ProofSampler:
    """Chooses, deterministically, what of a batch the fast engine must prove equal to HF (see the
    module docstring for the rule, its budget and what it detects).

    Every step is a C-level pass over the batch (``map``, numpy, a regex mapped over the texts
    holding an added token's first character, a step of a Python loop each) plus Python work per
    spot found, never per other text: a corpus of a million
    tweets costs what one of a thousand long documents does per byte.

    Args:
        added_tokens: the tokenizer's added-token strings.
        fraction: the share of documents checked whole, in ``[0, 1]``; 1 checks every document whole
            (pack raises it for a small job: :func:`job_check_fraction`).

    Raises:
        TokenmillError: a fraction outside ``[0, 1]``.
    """

    def __init__(self, added_tokens: list[str], fraction: float):
        if not 0 <= fraction <= 1:
            raise TokenmillError(f"check fraction must lie in [0, 1], not {fraction}")
        self.fraction = fraction
        self.excerpt_share = max(_EXCERPT_SHARE, fraction / 4)
        self._limit = np.uint32(min(int(fraction * (1 << 32)), (1 << 32) - 1))
        self._added_patterns = _added_token_patterns(added_tokens)

    def choose(self, texts: list[str] | Utf8Texts, ordinals: np.ndarray | None = None, key: int = 0) -> ProofChoice:
        """The documents and excerpts of ``texts`` to check.

        ``texts`` may be a list of str or one UTF-8 buffer (:class:`~tokenmill.inputs.utf8_texts.Utf8Texts`), which
        gives the same choice: its code points counted and its rare code points found by one C pass over the
        bytes, the added tokens found by a byte search, and only the texts the search or the choice takes decoded.

        Each document is checked whole with probability ``fraction``, decided by a hash of its
        ordinal under ``key`` (:func:`ordinal_draws`), or without ordinals of its own content,
        whatever its batch; the excerpts share the batch's budget (batches are cut by size, never by
        worker count, so they do not depend on the number of workers).
        """
        count = len(texts)
        if isinstance(texts, Utf8Texts):
            lengths = texts.code_point_facts()[0]
        else:
            lengths = np.fromiter(map(len, texts), np.int64, count)
        characters = int(lengths.sum())
        if self.fraction >= 1:
            return ProofChoice(list(range(count)), [], count, characters)
        draws = _content_hashes(texts) if ordinals is None else ordinal_draws(ordinals, key)
        short = lengths <= WHOLE_DOCUMENT_CHARACTERS
        whole = short & (draws < self._limit)
        budget = max(self.excerpt_share * characters, _EXCERPT_FLOOR_CHARACTERS)
        candidates = self._candidates(texts, lengths, draws, whole, budget)
        if sum(end - start for _, _, _, start, end, _ in candidates) > budget:
            chosen = []
            for candidate in sorted(candidates):  # each text's first candidate before any second, by draw
                if candidate[4] - candidate[3] <= budget:
                    chosen.append(candidate)
                    budget -= candidate[4] - candidate[3]
            candidates = chosen
        excerpts = sorted(Excerpt(i, start, end, why) for _, _, i, start, end, why in candidates)
        return ProofChoice(np.flatnonzero(whole).tolist(), excerpts, int(short.sum()), characters)

    def _candidates(self, texts: list[str] | Utf8Texts, lengths: np.ndarray, draws: np.ndarray, whole: np.ndarray,
                    budget: float) -> list[tuple]:
        """``(rank, draw, i, start, end, why)`` of the risky spots of the texts not checked whole:
        at most one of each kind per text (its first), ``rank`` counting a text's spots. Each kind
        stops collecting at ``budget`` characters, scanning from a text drawn from the batch."""
        spots: dict[int, list[tuple[int, int, str]]] = {}
        others = np.flatnonzero(~whole)
        if not len(others):
            return []
        start_at = int(np.argmin(draws[others]))  # where each scan starts, so that no part of a batch is favoured
        holding = set()
        for needle, pattern in self._added_patterns:  # `needle in text` for each text: a memchr (or find) in C
            if isinstance(texts, Utf8Texts):  # a byte search of the buffer (the same texts)
                within = others[texts.holding(needle)[others]]
            else:
                within = others[np.fromiter(map(operator.contains, map(texts.__getitem__, others.tolist()),
                                                itertools.repeat(needle)), bool, len(others))]
            within = within[[int(i) not in holding for i in within.tolist()]] if holding else within
            if len(within):
                self._scan(texts, within, start_at % len(within), pattern, "an added-token string", budget, spots)
                holding.update(within.tolist())
        # Rare code points: each text's first, found by one C pass over the texts not stored one byte per
        # code point (those hold none). Texts of two bytes each (only combining marks) are taken apart from
        # those of four, each group from its own drawn start, as the budget is spent in each.
        if isinstance(texts, Utf8Texts):
            _, first_spots, widths = texts.code_point_facts()
        else:
            first_spots = np.empty(len(texts), np.int64)
            widths = np.empty(len(texts), np.uint8)
            first_risky_code_points(texts, first_spots, widths)
        for width in (2, 4):
            chosen = others[widths[others] == width]
            if len(chosen):
                self._take_first_spots(texts, chosen, int(np.argmin(draws[chosen])), first_spots, budget, spots)
        candidates = [(rank, int(draws[i]), i, start, end, why)
                      for i, found in spots.items() for rank, (start, end, why) in enumerate(found)]
        # A long document's window samples ordinary text: after every text's risky spots (rank 2).
        for i in np.flatnonzero(lengths > WHOLE_DOCUMENT_CHARACTERS).tolist():
            origin = int(draws[i]) % int(lengths[i])
            candidates.append((2, int(draws[i]), i, *_excerpt(texts[i], origin, origin, LONG_WINDOW_CHARACTERS,
                                                                 "a window of a long document")))
        return candidates

    @staticmethod
    def _scan(texts: list[str] | Utf8Texts, chosen: np.ndarray, start_at: int, pattern: re.Pattern, why: str,
              budget: float, spots: dict) -> None:
        """Add to ``spots`` an excerpt around the first match of ``pattern`` in each of texts
        ``chosen`` (from number ``start_at`` on, then from the first), until ``budget`` characters
        of excerpts: one regex search per text, mapped in C, stopping at the budget. (Searching the
        texts joined found the same spots but paid for the join, ~0.5 CPU-s per GB, and searched a
        text of one byte per code point as four where any text joined was wide.)"""
        order = np.concatenate([chosen[start_at:], chosen[:start_at]]).tolist()
        collected = 0.0
        for i, match in zip(order, map(pattern.search, map(texts.__getitem__, order))):
            if collected >= budget:
                break
            if match is not None:
                excerpt = _excerpt(texts[i], match.start(), match.end(), EXCERPT_CHARACTERS, why)
                spots.setdefault(i, []).append(excerpt)
                collected += excerpt[1] - excerpt[0]

    @staticmethod
    def _take_first_spots(texts: list[str] | Utf8Texts, chosen: np.ndarray, start_at: int, first_spots: np.ndarray,
                          budget: float, spots: dict) -> None:
        """Add to ``spots`` an excerpt around the rare code point at ``first_spots[i]`` of each of texts
        ``chosen`` that holds one (from number ``start_at`` on, then from the first), until ``budget``
        characters of excerpts: one per text, found by ``first_risky_code_points``."""
        order = np.concatenate([chosen[start_at:], chosen[:start_at]])
        collected = 0.0
        for i in order[first_spots[order] >= 0].tolist():
            if collected >= budget:
                break
            spot = int(first_spots[i])
            excerpt = _excerpt(texts[i], spot, spot + 1, EXCERPT_CHARACTERS, "a rare code point")
            spots.setdefault(i, []).append(excerpt)
            collected += excerpt[1] - excerpt[0]


def _mix(values: np.ndarray) -> np.ndarray:
    """SplitMix64's finaliser on uint64 values, in place: every bit of the result depends on every bit
    of the value; the top 32 bits are the draw."""
    values *= np.uint64(0x9E3779B97F4A7C15)
    values ^= values >> np.uint64(30)
    values *= np.uint64(0xBF58476D1CE4E5B9)
    values ^= values >> np.uint64(27)
    values *= np.uint64(0x94D049BB133111EB)
    values ^= values >> np.uint64(31)
    return (values >> np.uint64(32)).astype(np.uint32)


def input_key(path: str) -> int:
    """The key of one input's draws: the CRC-32 of its file name (not its folder, so that a job gives
    the same choice, and the same sidecar, whichever way its path is spelled)."""
    return zlib.crc32(os.path.basename(path).encode("utf-8", "surrogateescape"))


def ordinal_draws(ordinals: np.ndarray, key: int) -> np.ndarray:
    """A uniform 32-bit draw per document from its ordinal (its line in its input) under ``key``
    (:func:`input_key`): ``key * 2**32 + ordinal``, mixed. Documents are drawn independently of their
    content. Cost: a few numpy passes over the ordinals."""
    return _mix((np.uint64(key) << np.uint64(32)) + np.asarray(ordinals, dtype=np.uint64))


def _content_hashes(texts: list[str] | Utf8Texts) -> np.ndarray:
    """A uniform 32-bit draw per text from a hash of its content: CRC-32 of its length and its first
    128 characters (O(1) per text, ~1 µs; a CRC of all of it costs ~0.1 s per 100 MB, adding the
    last 128 characters 50 %), mixed by SplitMix64's finaliser so that every bit of the draw depends
    on every bit of the CRC. Texts equal in length and start get the same draw, which costs little
    randomness."""
    crc32 = zlib.crc32
    return _mix(np.fromiter((crc32(text[:128].encode("utf-8", "surrogatepass"), len(text) & 0xFFFFFFFF)
                             for text in texts), np.uint64, len(texts)))


def _excerpt(text: str, start: int, end: int, characters: int, why: str) -> tuple[int, int, str]:
    """``(start, end, why)`` of at most ``characters`` (plus the spot) around ``text[start:end]``,
    its edges moved inwards to a line break, else a space, where one lies between edge and spot."""
    half = characters // 2
    low, high = max(0, start - half), min(len(text), end + half)
    if low > 0:
        cut = text.find("\n", low, start)
        if cut >= 0:
            low = cut + 1
        else:
            cut = text.find(" ", low, start)
            low = cut if cut >= 0 else low  # the space stays, as it opens the next word's token
    if high < len(text):
        cut = text.rfind("\n", end, high)
        if cut < 0:
            cut = text.rfind(" ", end, high)
        high = cut if cut >= 0 else high
    return low, high, why


@dataclass
class ProofSample:
    """What of a batch the fast engine must match, with Hugging Face's ids for it.

    Built from the texts alone (:meth:`of`), so it can be computed ahead of the fast encoder.

    Args:
        choice: what the sampler picked.
        reference: HF's ``(ids, lengths)`` of the documents checked whole.
        excerpt_texts: the excerpts' strings.
        excerpt_reference: HF's ``(ids, lengths)`` of those, or None without excerpts.
        hf_bytes: UTF-8 bytes given to HF.
        hf_characters: characters given to HF.
    """

    choice: ProofChoice
    reference: tuple[np.ndarray, np.ndarray]
    excerpt_texts: list[str]
    excerpt_reference: tuple[np.ndarray, np.ndarray] | None
    hf_bytes: int
    hf_characters: int
    reference_library: str = "tokenizers"

    @classmethod
    def of(cls, texts: list[str] | Utf8Texts, sampler: ProofSampler, info: TokenizerInfo, add_special_tokens: bool,
           ordinals: np.ndarray | None = None, key: int = 0) -> "ProofSample":
        """The sampler's choice of ``texts`` (by their ``ordinals`` under ``key``, see
        :meth:`ProofSampler.choose`), encoded with the tokenizer's reference library (HF for a
        ``tokenizer.json``, ``sentencepiece`` or ``tiktoken`` for Megatron's types of them)."""
        choice = sampler.choose(texts, ordinals, key)
        documents = [texts[i] for i in choice.documents]
        excerpts = [texts[excerpt.text][excerpt.start:excerpt.end] for excerpt in choice.excerpts]
        ids, lengths = info.encode_reference(documents + excerpts, add_special_tokens)  # one call for both
        split = int(lengths[:len(documents)].sum())
        reference = ids[:split], lengths[:len(documents)]
        excerpt_reference = (ids[split:], lengths[len(documents):]) if excerpts else None
        hf_bytes = sum(len(text.encode("utf-8", "surrogatepass")) for text in documents + excerpts)
        return cls(choice, reference, excerpts, excerpt_reference, hf_bytes, sum(map(len, documents + excerpts)),
                   info.reference_library)

    def check(self, encoder: Encoder, tokens: np.ndarray, lengths: np.ndarray, locations: list[str],
              add_special_tokens: bool, excerpt_ids: tuple[np.ndarray, np.ndarray] | None = None) -> ProofTally:
        """Compare the fast engine's flat ids of the whole batch (and its encoding of the excerpts:
        ``excerpt_ids``, where the caller encoded them with the batch in one call, else encoded here)
        with the reference.

        Raises:
            EngineMismatch: naming ``locations[i]``, the first differing token and, for an excerpt,
                its characters.
        """
        choice, names = self.choice, (encoder.name, self.reference_library)
        compare_ids([locations[i] for i in choice.documents], split_flat(tokens, lengths, choice.documents),
                    split_flat(*self.reference), "", *names)
        if choice.excerpts:
            fast = excerpt_ids if excerpt_ids is not None else encoder.encode_batch(self.excerpt_texts,
                                                                                     add_special_tokens)
            compare_ids([locations[excerpt.text] for excerpt in choice.excerpts], split_flat(*fast),
                        split_flat(*self.excerpt_reference),
                        [f" of an excerpt (characters {excerpt.start}-{excerpt.end}) around {excerpt.why}"
                         for excerpt in choice.excerpts], *names)
        return ProofTally(texts=len(lengths), eligible=choice.eligible, documents=len(choice.documents),
                          excerpts=len(choice.excerpts), excerpted=len({excerpt.text for excerpt in choice.excerpts}),
                          hf_bytes=self.hf_bytes, hf_characters=self.hf_characters, characters=choice.characters)


def encode_proven(encoder: Encoder, texts: list[str], add_special_tokens: bool, sampler: ProofSampler,
                  locations: list[str]) -> tuple[list[np.ndarray], ProofTally]:
    """Each text's ids (int64) from ``encoder``, with a fast engine's proof sample re-encoded by HF
    and compared (for callers that encode in this process: sft, the on-access datasets).

    Args:
        encoder: the engine.
        texts: what to encode.
        add_special_tokens: let the post-processor add its ids.
        sampler: chooses the texts and excerpts to prove; unused with the HF engine.
        locations: ``file:line`` of each text, for the error.

    Returns:
        (ids per text, what was checked against HF: nothing with the HF engine).

    Raises:
        EngineMismatch: ``file:line: fast encoder disagrees with the tokenizer at token K``.
        FastEngineUnavailable: see :meth:`Encoder.encode_batch`.
    """
    tokens, lengths = encoder.encode_batch(texts, add_special_tokens)
    ids = [chunk.astype(np.int64) for chunk in split_flat(tokens, lengths)]
    if encoder.name == "hf":
        return ids, ProofTally()
    proof = ProofSample.of(texts, sampler, encoder.info, add_special_tokens)
    return ids, proof.check(encoder, tokens, lengths, locations, add_special_tokens)


# Above this many distinct first characters, one `in` pass per character would cost more than the
# trie regex's own scan.
_MOST_FIRST_CHARACTERS = 8


def _added_token_patterns(added_tokens: list[str]) -> list[tuple[str, re.Pattern]]:
    """``(needle, regex)`` pairs that together find any of ``added_tokens`` in a text, the regex
    searched only where ``needle in text``.

    Python's regex engine tests a pattern opening with an alternation at every position (0.74 s per
    100 MB with Tekken's 1,000 tokens), but skips ahead to a pattern's literal first character on
    its own. So the tokens are grouped by first character, each group a literal followed by its
    suffixes' trie, behind an ``in`` test (a memchr) for that character: 0.15 s for Tekken's two
    groups; a group of one token is tested by ``in`` on the token itself (GPT-2's ``<|endoftext|>``:
    code is full of ``<``, never of it). With many first characters, one trie regex (needle ``""``:
    always searched).
    """
    tokens = [token for token in added_tokens if token]
    if not tokens:
        return []
    groups: dict[str, list[str]] = {}
    for token in tokens:
        groups.setdefault(token[0], []).append(token[1:])
    if len(groups) > _MOST_FIRST_CHARACTERS:
        return [("", re.compile(_alternation(tokens)))]
    return [(first + suffixes[0] if len(suffixes) == 1 else first,
             re.compile(re.escape(first) + _alternation(suffixes))) for first, suffixes in sorted(groups.items())]


def _alternation(words: list[str]) -> str:
    """A regex matching any of ``words``, as a trie (one branch per distinct next character), so a
    thousand special tokens cost one character test per position instead of a thousand."""
    trie: dict = {}
    for word in words:
        node = trie
        for character in word:
            node = node.setdefault(character, {})
        node[""] = {}

    def pattern(node: dict) -> str:
        branches = [re.escape(character) + pattern(child) for character, child in sorted(node.items()) if character]
        if not branches:
            return ""
        body = branches[0] if len(branches) == 1 else f"(?:{'|'.join(branches)})"
        return f"(?:{body})?" if "" in node else body

    return pattern(trie)


def compare_ids(locations: list[str], fast: list[np.ndarray], reference: list[np.ndarray],
                what: str | list[str], engine: str = "fastokens", reference_library: str = "tokenizers") -> None:
    """Raise at the first pair of id arrays that differ; the message names the two ids by ``engine`` and
    ``reference_library`` (``tokenizers`` is said "Hugging Face").

    Raises:
        EngineMismatch: ``LOCATION: fast encoder disagrees with the tokenizer at token K`` + ``what``
            (one string for all, or one per pair).
    """
    if [len(ids) for ids in fast] == [len(ids) for ids in reference] and \
            (not fast or np.array_equal(np.concatenate(fast), np.concatenate(reference))):
        return  # all equal, found in one pass; else look for the first difference text by text
    for number, (location, ids, expected) in enumerate(zip(locations, fast, reference)):
        position = first_difference(ids, expected)
        if position is not None:
            got = int(ids[position]) if position < len(ids) else "end"
            wanted = int(expected[position]) if position < len(expected) else "end"
            raise EngineMismatch(f"{location}: fast encoder disagrees with the tokenizer at token "
                                 f"{position}{what if isinstance(what, str) else what[number]} "
                                 f"({engine} {got}, {_LIBRARY_NAMES.get(reference_library, reference_library)} "
                                 f"{wanted})")


_LIBRARY_NAMES = {"tokenizers": "Hugging Face"}


def first_difference(ids: np.ndarray, reference: np.ndarray) -> int | None:
    """The first token position where ``ids`` and ``reference`` differ (length included), or None."""
    common = min(len(ids), len(reference))
    differing = np.flatnonzero(ids[:common].astype(np.int64) != reference[:common].astype(np.int64))
    if len(differing):
        return int(differing[0])
    return None if len(ids) == len(reference) else common
