"""A batch's texts as one UTF-8 buffer and offsets, for an engine that takes them so (gigatoken's awkward strings).

:meth:`Utf8Texts.from_json_lines` asks ``tokenmill._kernels.json_texts`` (a C parser, the GIL released) to
unescape one plain top-level key's string value of every line into one buffer: no Python object per line, and no
str for the engine to encode back to UTF-8. The parser is conservative: where it is not sure that orjson would
accept every line and give the same texts (see the grammar in ``_kernels.c``), it gives up on the batch (None) and
the caller reads it as before (:meth:`tokenmill.inputs.text_selection.TextSelector.select_lines`, then line by
line with each bad line's reason).

:class:`Utf8Texts` reads like a ``list[str]`` where a caller needs one (``len``, ``texts[i]`` decodes one text,
iteration, ``+`` a list of str), and gives what the proof's sampler reads of every text without a str each
(:meth:`Utf8Texts.code_point_facts`: code points, CPython's width, the first rare code point, in one C pass;
:meth:`Utf8Texts.holding`: which texts hold a string, by a byte search, which for valid UTF-8 finds exactly the
texts whose str holds it).

Cost per GB of JSONL (100 MB corpus, bench/RESULTS.md): the parse ~1.5 CPU-s against orjson's ~3.1-3.9 for the
same lines and their str objects; the facts ~0.5; a text decoded only where the proof takes it.
"""

from __future__ import annotations

import numpy as np

from tokenmill._kernels import json_texts, utf8_facts

__all__ = ["Utf8Texts"]


class Utf8Texts:
    """Texts ``i`` = ``data[offsets[i]:offsets[i + 1]]``, valid UTF-8 (never checked here: the makers are
    ``from_json_lines``, whose parser checked it, and ``from_strings``).

    Args:
        data: the texts' bytes back to back (uint8, or anything numpy reads as bytes).
        offsets: ``len + 1`` int64 offsets into ``data``, ascending, the first 0.
    """

    def __init__(self, data: np.ndarray, offsets: np.ndarray):
        self.data, self.offsets = np.frombuffer(data, np.uint8), np.asarray(offsets, np.int64)
        self._decoded: dict[int, str] = {}
        self._facts: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None

    @classmethod
    def from_json_lines(cls, block: bytes, starts: np.ndarray, lengths: np.ndarray, key: str) -> Utf8Texts | None:
        """The string values of ``key`` in the JSON objects ``block[starts[i]:starts[i] + lengths[i]]``, or None
        where the C parser is not sure of every line (the caller then parses them with orjson). Cost: one pass over
        the lines, the GIL released; a buffer as long as them."""
        starts, lengths = np.ascontiguousarray(starts, np.int64), np.ascontiguousarray(lengths, np.int64)
        out = np.empty(int(lengths.sum()) + 8, np.uint8)
        offsets = np.empty(len(starts) + 1, np.int64)
        if not len(starts) or not json_texts(block, starts, lengths, key.encode("ascii"), out, offsets):
            return None
        return cls(out[:int(offsets[-1])], offsets)

    @classmethod
    def from_strings(cls, texts: list[str]) -> Utf8Texts:
        """``texts`` encoded (Python's own UTF-8; for tests and small batches)."""
        encoded = [text.encode("utf-8") for text in texts]
        offsets = np.zeros(len(encoded) + 1, np.int64)
        np.cumsum(np.fromiter(map(len, encoded), np.int64, len(encoded)), out=offsets[1:])
        return cls(np.frombuffer(b"".join(encoded), np.uint8), offsets)

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def __getitem__(self, i: int) -> str:
        text = self._decoded.get(i)
        if text is None:
            if not -len(self) <= i < len(self):
                raise IndexError(i)
            i %= len(self)
            text = self._decoded[i] = str(self.data[self.offsets[i]:self.offsets[i + 1]], "utf-8")
        return text

    def __iter__(self):
        return map(self.__getitem__, range(len(self)))

    def __add__(self, more: list[str]) -> Utf8Texts:
        """These texts and then ``more`` (the proof's excerpts, encoded in the batch's own engine call)."""
        extra = Utf8Texts.from_strings(more)
        return Utf8Texts(np.concatenate([self.data, extra.data]),
                         np.concatenate([self.offsets, self.offsets[-1] + extra.offsets[1:]]))

    def strings(self) -> list[str]:
        """Every text as a str (for an engine that takes only those)."""
        return list(self)

    def code_point_facts(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(characters, first_risky, widths)`` per text: ``len`` of its str, the index of its first code point
        outside the BMP or in a combining-mark block (-1 for none), and the bytes per code point CPython stores
        its str in (1, 2 or 4): what ``map(len, texts)`` and ``_kernels.first_risky_code_points`` give for the
        strs. One C pass, kept."""
        if self._facts is None:
            count = len(self)
            facts = np.empty(count, np.int64), np.empty(count, np.int64), np.empty(count, np.uint8)
            utf8_facts(self.data, self.offsets, *facts)
            self._facts = facts
        return self._facts

    def holding(self, needle: str) -> np.ndarray:
        """A bool per text: whether ``needle in text`` (all True for ``""``). A byte search of its UTF-8 (UTF-8 is
        self-synchronising: a valid sequence occurs in another only at a character boundary), vectorised:
        each occurrence of its first byte, narrowed by its next bytes, then mapped to its text."""
        count = len(self)
        if not needle:
            return np.ones(count, bool)
        encoded = np.frombuffer(needle.encode("utf-8"), np.uint8)
        size = len(self.data) - len(encoded) + 1
        if size <= 0:
            return np.zeros(count, bool)
        places = np.flatnonzero(self.data[:size] == encoded[0])
        for k in range(1, len(encoded)):
            places = places[self.data[places + k] == encoded[k]]
        texts = np.searchsorted(self.offsets, places, side="right") - 1
        inside = places + len(encoded) <= self.offsets[texts + 1]  # not across two texts
        found = np.zeros(count, bool)
        found[texts[inside]] = True
        return found
