"""Which tokens of a rendered conversation are trained: its trained character spans (from the chat template's
renders, :mod:`tokenmill.tokenization.chat_template`) made a mask over its token ids, three ways, the same mask each.

* Byte-level BPE (GPT-2, Llama 3, Qwen: no normalizer, offsets untrimmed; :class:`ByteTable`): the token boundaries
  are read off the ids themselves: each id's bytes (a table built once from the vocabulary), laid end to end, must
  spell the text's UTF-8 exactly (checked for every text, in C: ``_kernels.spell_tokens``, the GIL released); a
  span's byte range then gives its tokens by bisection, all spans of a batch at once, the same tokens as Hugging
  Face's character offsets give.
* Another tokenizer (:func:`piece_masks`): each text cut at its span ends and the pieces encoded alone, the mask read
  off their lengths where their ids join into the whole's.
* A text neither way resolves (an added token that strips spaces, a span end inside a character's bytes), or any text
  with the ``hf`` engine (:func:`offsets_mask`): Hugging Face ``tokenizers``' character offsets, walked as
  transformers' ``assistant_masks`` walks them.

For the prefix rule's spans (found by comparing renders, not marked by the template) each span's ends must also be
token boundaries: a text where they are not is refused (:func:`offsets_mask`), never masked wrongly.

Cost: the byte table, 0.2-0.5 s once for GPT-2's 50 k tokens; then O(tokens) per batch in numpy and C.
"""

from __future__ import annotations

import json

import numpy as np

from tokenmill import _kernels
from tokenmill.errors import TokenmillError
from tokenmill.tokenization.engine import Encoder

__all__ = ["ByteTable", "piece_masks", "offsets_mask"]


def offsets_mask(offsets: list[tuple[int, int]], spans: list[tuple[int, int]], length: int | None, where: str,
                 template_source: str) -> np.ndarray:
    """1 on every token overlapping a span (transformers' ``assistant_masks`` walk), from the tokens' character
    ``offsets``; for the prefix rule's spans (``length``: the text's, else None), each span's ends must also be token
    boundaries.

    Raises:
        TokenmillError: a prefix-rule span whose ends are not token boundaries, naming ``where`` (file and line),
            the span and ``template_source``.
    """
    offsets = np.asarray(offsets, dtype=np.int64).reshape(-1, 2)
    trained = np.zeros(len(offsets), dtype=bool)
    # transformers walks tokens and spans together; for ordered spans and offsets that is: a token is trained
    # where it ends after a span starts and starts before that span ends
    for start, end in spans:
        trained |= (offsets[:, 1] > start) & (offsets[:, 0] < end)
    if length is not None:
        starts, ends = np.append(offsets[:, 0], length), np.append(offsets[:, 1], 0)
        for turn, (start, end) in enumerate(spans):
            if start != end and not (np.any(starts == start) and np.any(ends == end)):
                raise TokenmillError(f"{where}: assistant span {turn} (characters {start}-{end}) of the "
                                     f"chat template {template_source} does not fall on token boundaries")
    return trained


def piece_masks(engine: Encoder, texts: list[str], spans: list[list[tuple[int, int]]],
                whole: list[np.ndarray]) -> list[tuple[np.ndarray, np.ndarray] | None]:
    """For a tokenizer without a byte table: each text cut at its span ends and the pieces encoded alone by
    ``engine``; where their ids join into the whole's (``whole``: each text's ids), ``(ids, trained)`` with the mask
    read off the pieces' lengths, else None."""
    pieces, cuts = [], []
    for text, text_spans in zip(texts, spans):
        ends = sorted({end for span in text_spans for end in span if 0 < end < len(text)})
        bounds = [0, *ends, len(text)]
        cuts.append(bounds)
        pieces += [text[start:end] for start, end in zip(bounds, bounds[1:])]
    piece_ids, lengths = engine.encode_batch(pieces, False) if pieces else (np.zeros(0), np.zeros(0))
    piece_ids = np.asarray(piece_ids, dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    results, piece = [], 0
    for text_spans, ids, bounds in zip(spans, whole, cuts):
        count = len(bounds) - 1
        joined = piece_ids[starts[piece]:starts[piece + count]]
        if not np.array_equal(joined, ids):
            results.append(None)
        else:
            trained = np.zeros(len(ids), dtype=bool)
            for k, (start, end) in enumerate(zip(bounds, bounds[1:])):
                if start != end and any(a <= start and end <= b for a, b in text_spans):
                    trained[starts[piece + k] - starts[piece]:starts[piece + k + 1] - starts[piece]] = True
            results.append((ids, trained))
        piece += count
    return results


def _byte_level_alphabet() -> dict[str, int]:
    """The byte each character of a byte-level BPE vocabulary stands for (GPT-2's table: printable Latin-1
    characters stand for themselves, the other bytes for U+0100 onwards in byte order)."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    others = [byte for byte in range(256) if byte not in printable]
    return {**{chr(byte): byte for byte in printable}, **{chr(256 + k): byte for k, byte in enumerate(others)}}


class ByteTable:
    """The bytes each token of a byte-level BPE tokenizer spells, so that a text's token boundaries are read off
    its ids: the cumulative byte lengths, wherever the tokens' bytes joined are exactly the text's UTF-8 (checked
    for every text; an added token that strips spaces, say, fails it and that text takes Hugging Face's offsets).

    Hugging Face's offsets are characters: a token overlaps a character span exactly where its bytes overlap the
    span's bytes (span ends are character boundaries), so the masks are those of its offsets; only tokenizers
    without a normalizer and whose post-processor leaves offsets untrimmed have a table.
    """

    def __init__(self, length: np.ndarray, flat: bytes):
        self.length = length  # bytes each id spells; -1: not a byte-level token
        self.start = np.concatenate([[0], np.cumsum(np.maximum(length, 0))[:-1]]).astype(np.int64)
        self.flat = np.frombuffer(flat, dtype=np.uint8)

    @classmethod
    def of(cls, tokenizer) -> ByteTable | None:
        """The table of a ``tokenizers.Tokenizer``, or None where it is not byte-level BPE as above (0.2-0.5 s
        for GPT-2's 50 k tokens, once: the vocabulary translated to bytes as one string)."""
        def state(component) -> dict:
            return json.loads(component.__getstate__()) if component is not None else {}

        pre, post = state(tokenizer.pre_tokenizer), state(tokenizer.post_processor)
        pre_types = [item.get("type") for item in pre.get("pretokenizers", [pre])]
        if (type(tokenizer.model).__name__ != "BPE" or tokenizer.normalizer is not None or "ByteLevel" not in pre_types
                or '"trim_offsets": true' in json.dumps(post)):
            return None
        alphabet = _byte_level_alphabet()
        tokens = [""] * tokenizer.get_vocab_size(with_added_tokens=True)
        length = np.full(len(tokens), -1, dtype=np.int64)
        for token, token_id in tokenizer.get_vocab(with_added_tokens=False).items():
            if token_id < len(tokens):
                tokens[token_id], length[token_id] = token, len(token)
        outside = set("".join(tokens)) - alphabet.keys()
        for token_id, token in enumerate(tokens):  # a vocabulary of byte-level characters has none of these
            if outside and not outside.isdisjoint(token):
                tokens[token_id], length[token_id] = "", -1
        flat = "".join(tokens).translate({ord(char): byte for char, byte in alphabet.items()}).encode("latin-1")
        positions = np.concatenate([[0], np.cumsum(np.maximum(length, 0))])  # where each id's bytes are in flat
        pieces, start = [], 0
        for token_id, added in sorted(tokenizer.get_added_tokens_decoder().items()):
            if token_id < len(tokens):  # its bytes replace whatever the vocabulary spelled
                pieces += [flat[start:positions[token_id]], added.content.encode("utf-8")]
                start = int(positions[token_id + 1])
                length[token_id] = len(pieces[-1])
        return cls(length, b"".join([*pieces, flat[start:]]))

    def masks(self, texts: list[str], spans: list[list[tuple[int, int]]], by_prefix: list[bool],
              ids: list[np.ndarray]) -> list[np.ndarray | None]:
        """Each text's mask (1 on a token whose bytes overlap a span), or None where its ids do not spell it or,
        for the prefix rule's spans, a span's end is not a token boundary (Hugging Face's offsets then decide).
        All texts at once: their tokens' byte ends laid end to end, each span found in them by bisection."""
        encoded = [text.encode("utf-8") for text in texts]
        sizes = np.array([len(each) for each in encoded], dtype=np.int64)
        counts = np.array([len(each) for each in ids], dtype=np.int64)
        flat_ids = np.concatenate(ids).astype(np.int64) if ids else np.zeros(0, dtype=np.int64)
        token_ends = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        text_ends = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        byte_ends = np.empty(len(flat_ids) + 1, dtype=np.int64)  # byte_ends[i]: bytes spelled before token i
        spelled = np.zeros(len(texts), dtype=np.uint8)
        _kernels.spell_tokens(flat_ids, self.length, self.start, self.flat,
                              np.frombuffer(b"".join(encoded), dtype=np.uint8), token_ends, text_ends, byte_ends,
                              spelled)
        spelled = spelled.astype(bool)
        bases = byte_ends[token_ends]  # where each text's tokens start: a spelled text's bytes lie from there
        firsts, stops, owners, checked = [], [], [], []
        for k in np.flatnonzero(spelled).tolist():
            text, base = texts[k], int(bases[k])
            for start, end in spans[k]:
                if not text.isascii():
                    start, end = len(text[:start].encode("utf-8")), len(text[:end].encode("utf-8"))
                firsts.append(base + start)
                stops.append(base + end)
                owners.append(k)
                checked.append(by_prefix[k] and start != end)
        starts, ends = np.asarray(firsts, dtype=np.int64), np.asarray(stops, dtype=np.int64)
        owners = np.asarray(owners, dtype=np.int64)
        first = np.searchsorted(byte_ends[1:], starts, side="right")  # the first token ending after the start
        stop = np.searchsorted(byte_ends[:-1], ends, side="left")  # the first token starting at the end or later
        # the prefix rule's spans begin and end on token boundaries (or at the text's end / start)
        on_bounds = (((starts == bases[owners] + sizes[owners])
                      | (byte_ends[np.minimum(first, len(byte_ends) - 1)] == starts))
                     & ((ends == bases[owners]) | (byte_ends[stop] == ends)))
        spelled[owners[np.asarray(checked, dtype=bool) & ~on_bounds]] = False
        marks = np.zeros(len(flat_ids) + 1, dtype=np.int64)
        np.add.at(marks, first, 1)
        np.add.at(marks, np.maximum(stop, first), -1)
        trained = np.cumsum(marks[:-1]) > 0
        masks: list[np.ndarray | None] = [None] * len(texts)
        for k in np.flatnonzero(spelled).tolist():
            masks[k] = trained[token_ends[k]:token_ends[k + 1]].copy()
        return masks
