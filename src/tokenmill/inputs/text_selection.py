"""Select the text of one JSONL line with a jq pattern, classifying every way a line can be bad.

Every line must be exactly one JSON value: orjson parses it first (strict JSON and UTF-8, ~500
MB/s), so a second value on the line (files concatenated without a final newline), trailing
garbage, NaN or a lone surrogate is a bad line, whatever the pattern. A plain ``.key`` pattern is
then answered from the parsed object; any other pattern is compiled once with the ``jq`` package
and must give exactly one output (a second output would be dropped silently otherwise). Patterns
are data: they are compiled by jq, never evaluated as Python.

A Parquet row that cannot become JSON (a value Python cannot convert) travels as a line made by
:func:`bad_row_line`, which is never JSON: its reason is the line's bad-line reason.
"""

from __future__ import annotations

import os
import re

import orjson

from tokenmill.errors import TokenmillError
from tokenmill.files.objects import is_url, pinned_identity, read_object_range

__all__ = ["TextSelector", "bad_row_line", "compression_of", "describe_json_error", "refuse_compressed"]

_NO_OUTPUT = object()
_PLAIN_KEY = re.compile(r"^\.([A-Za-z_][A-Za-z0-9_]*)$")
_BOM = b"\xef\xbb\xbf"
# Leading bytes of the compressed formats corpora ship in (Dolma and RedPajama use gzip and zstd), and
# of Parquet (Hugging Face datasets, FineWeb), which is read as a stream of rows, as they are.
_COMPRESSION_MAGIC = {b"\x1f\x8b": "gzip", b"\x28\xb5\x2f\xfd": "zstd", b"\xfd7zXZ\x00": "xz",
                      b"BZh": "bzip2", b"PK\x03\x04": "zip", b"PAR1": "parquet"}
# Starts the line of a row that could not be made JSON: a NUL byte, which no JSON text starts with.
_BAD_ROW = b"\x00tokenmill: bad row\x00"


def bad_row_line(reason: str) -> bytes:
    """The line standing for a row that has no JSON (a Parquet value Python cannot convert):
    :meth:`TextSelector.select` gives ``reason`` for it, so it is a bad line like any other."""
    return _BAD_ROW + reason.encode("utf-8")


def compression_of(head: bytes) -> str | None:
    """The compression format (or ``"parquet"``) whose magic bytes ``head`` starts with, or None."""
    return next((name for magic, name in _COMPRESSION_MAGIC.items() if head.startswith(magic)), None)


def _described(compression: str) -> str:
    """``gzip-compressed data``, or ``a Parquet file``."""
    return "a Parquet file" if compression == "parquet" else f"{compression}-compressed data"


def head_bytes(path: str | os.PathLike, count: int = 8) -> bytes:
    """The first ``count`` bytes of a file, or of an object (``s3://``, :mod:`tokenmill.files.objects`).

    Raises:
        TokenmillError: unreadable (naming it).
    """
    if is_url(path):
        return read_object_range(pinned_identity(path), 0, count)
    try:
        with open(path, "rb") as handle:
            return handle.read(count)
    except OSError as exc:
        raise TokenmillError(f"{path}: cannot read ({exc.strerror})") from None


def refuse_compressed(path: str | os.PathLike) -> None:
    """Stop at once on a compressed file given where plain JSONL is needed.

    Raises:
        TokenmillError: the file starts with the magic bytes of a compression format.
    """
    compression = compression_of(head_bytes(path))
    if compression:
        raise TokenmillError(f"{path}: {_described(compression)}: a raw index (byte offsets, as Modalities' "
                             f"MemMapDataset reads them) exists only for plain JSONL; `tokenmill pack` reads "
                             f"the file directly{'' if compression == 'parquet' else ', or decompress it first'}")


def describe_json_error(line: bytes, error: orjson.JSONDecodeError) -> str:
    """Why orjson refused ``line``, in words a user can act on."""
    compression = compression_of(line)
    if compression:
        return f"looks like {_described(compression)}, not JSON: " + (
            "give the file itself as an input" if compression == "parquet" else "decompress the file first")
    if line.startswith(_BOM):
        return "starts with a UTF-8 byte-order mark (BOM), which JSON Lines forbid: remove it"
    try:
        line.decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"invalid UTF-8 at byte {exc.start} of the line"
    if "surrogate" in error.msg:
        return f"invalid JSON: a lone UTF-16 surrogate escape near byte {error.pos} is not Unicode text"
    if line[error.pos:error.pos + 8].lstrip(b"-").startswith((b"NaN", b"Infinity")):
        return f"invalid JSON: NaN/Infinity at byte {error.pos} is not a JSON number"
    if error.msg == "unexpected content after document":
        return f"invalid JSON: a second value or trailing characters at byte {error.pos}"
    return f"invalid JSON ({error.msg} at byte {error.pos})"


class TextSelector:
    """Extracts the text string of a JSON line, or says why it cannot.

    Args:
        pattern: jq pattern, e.g. ``.text`` or ``.meta.body``.

    Raises:
        TokenmillError: the pattern is not valid jq.
    """

    def __init__(self, pattern: str):
        self.pattern = pattern
        plain = _PLAIN_KEY.match(pattern)
        self.key = plain.group(1) if plain else None
        self.program = None
        if self.key is None:
            import jq  # only needed for non-trivial patterns

            try:
                self.program = jq.compile(pattern)
            except ValueError as exc:
                raise TokenmillError(f"text pattern {pattern!r} is not valid jq "
                                     f"({str(exc).splitlines()[0]})") from None

    def select(self, line: bytes) -> tuple[str | None, str | None]:
        """``(text, None)`` for a good line, ``(None, reason)`` for a bad one."""
        if not line.strip():
            return None, "blank line"
        try:
            record = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            if line.startswith(_BAD_ROW):
                return None, line[len(_BAD_ROW):].decode("utf-8", "replace")
            return None, describe_json_error(line, exc)
        if self.key is not None:
            if not isinstance(record, dict):
                return None, f"not a JSON object (a {type(record).__name__})"
            if self.key not in record:
                return None, f"no key {self.key!r}"
            text = record[self.key]
        else:
            text, reason = self._run_jq(line)
            if reason is not None:
                return None, reason
        if not isinstance(text, str):
            return None, f"text is not a string (a {type(text).__name__})"
        if not text:
            return None, "empty text"
        return text, None

    def _run_jq(self, line: bytes) -> tuple[object, str | None]:
        """The one output of the pattern on a line that is known to be one JSON value."""
        outputs = iter(self.program.input_text(line.decode("utf-8")))
        try:
            text = next(outputs, None)
            if text is None:
                return None, f"jq pattern {self.pattern!r} gave no text"
            if next(outputs, _NO_OUTPUT) is not _NO_OUTPUT:
                return None, f"jq pattern {self.pattern!r} gave more than one value; it must select one text"
        except ValueError as exc:
            return None, f"jq error: {str(exc).splitlines()[0]}"
        return text, None
