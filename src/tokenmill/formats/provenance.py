"""Provenance: the input line each document of a ``.pbin`` came from, and the JSON values on that line.

A pack sidecar lists, per source, its first line (a shard's: numbered as in its whole file; a Parquet
file's first row), its lines and documents, and its skipped lines by reason with their line numbers.
Document ``k`` of a source is its ``k``-th line that was not skipped, so the lines of all its documents
follow from the sidecar alone, wherever every skipped line is listed (a sidecar keeps only the first
ones of a reason past :data:`tokenmill.formats.sidecar` 's limit; then no line is known). An SFT sidecar's
source lists every line that gave no document, skipped or dropped, as ``left_out`` ranges: its lines are
always known. An SFT sidecar of an older format (sft before /4) lists neither per source: its lines are known
only where nothing was skipped or dropped.

A field is named as a plain jq path: ``.id``, ``.meta.domain`` (a bare ``id`` is ``.id``). Its value on a
document's line is taken as it is for a string, as compact JSON otherwise with every number as the line wrote
it (``12345678901234567890123`` and ``1e2`` stay digits, never a float's ``1.2345678901234568e+22`` or
``100.0``), None where the line lacks it.

Cost: :func:`document_lines` O(lines of the source); :func:`document_line` O(ranges left out before the
document); :func:`tokens_per_source` O(documents);
:func:`field_values` one read of the source.
"""

from __future__ import annotations

import json

import numpy as np
import orjson

from tokenmill.errors import TokenmillError
from tokenmill.formats.sidecar import SourceRecord
from tokenmill.inputs.jsonl import iter_lines

__all__ = ["document_lines", "document_line", "tokens_per_source", "field_keys", "value_of", "field_values"]


def _left_out_ranges(source: SourceRecord) -> list[list[int]] | None:
    """The sorted ``[first, stop)`` line ranges of a source that gave no document: its ``left_out`` (SFT), else its
    skipped lines; None where the sidecar lists only the first of its skipped lines."""
    if "left_out" in source:
        return source["left_out"]
    skipped = source.get("skipped", {})
    if any(entry["count"] != len(entry["first_lines"]) for entry in skipped.values()):
        return None
    return [[number, number + 1] for number in sorted(n for entry in skipped.values() for n in entry["first_lines"])]


def document_lines(source: SourceRecord) -> list[int] | None:
    """The line (a Parquet file's row) of each document of a sidecar source, in order; None where the sidecar
    lists only the first of its skipped lines, so that which lines became documents is not known."""
    ranges = _left_out_ranges(source)
    if ranges is None:
        return None
    first = source.get("first_line", source.get("first_row", 1))
    count = source.get("lines", source.get("rows", 0))
    kept = np.ones(count, dtype=bool)
    for start, stop in ranges:
        kept[max(start - first, 0):max(stop - first, 0)] = False
    lines = (first + np.flatnonzero(kept)).tolist()
    return lines if len(lines) == source.get("documents") else None


def document_line(source: SourceRecord, document: int) -> int | None:
    """The line (a Parquet file's row) of document ``document`` (0-based, of this source); None where not known
    (:func:`document_lines`)."""
    ranges = _left_out_ranges(source)
    if ranges is None:
        return None
    line = source.get("first_line", source.get("first_row", 1)) + document
    for start, stop in ranges:  # each range at or before the line moves it past that range
        if start > line:
            break
        line += stop - start
    return line


def tokens_per_source(documents: list[int], doc_lengths: np.ndarray) -> np.ndarray | None:
    """Each source's tokens (EODs included), from its document count: its documents follow the previous
    sources' in the file; None where the counts do not add up to the file's documents."""
    counts = np.asarray(documents, dtype=np.int64)
    if counts.sum() != len(doc_lengths):
        return None
    totals = np.concatenate([[0], np.cumsum(doc_lengths, dtype=np.int64)])
    ends = np.cumsum(counts)
    return totals[ends] - totals[ends - counts]


def field_keys(field: str) -> tuple[str, ...]:
    """The keys of a plain jq path: ``.meta.domain`` → ``("meta", "domain")``.

    Raises:
        TokenmillError: not a plain path of object keys.
    """
    keys = tuple(field[1:].split(".") if field.startswith(".") else field.split("."))
    if not all(keys):
        raise TokenmillError(f"{field!r}: not a field path such as .id or .meta.domain")
    return keys


def value_of(line: bytes, keys: tuple[str, ...]) -> str | None:
    """The value at ``keys`` (:func:`field_keys`) of a JSON line; None where it lacks it or is no JSON."""
    try:
        value = orjson.loads(line)
        for key in keys:
            value = value.get(key)
    except (orjson.JSONDecodeError, AttributeError):
        return None
    if value is None or isinstance(value, str):
        return value
    if type(value) is int and value:  # orjson's ints are exact below 2**64 (past it a float; "-0" is 0)
        return str(value)
    value = json.loads(line, parse_int=_Number, parse_float=_Number)  # again, keeping each number's text
    for key in keys:
        value = value[key]
    return _compact_json(value)


class _Number(str):
    """A JSON number's text as the line wrote it."""


def _compact_json(value) -> str:
    """``value`` as compact JSON, each :class:`_Number` as written."""
    if isinstance(value, _Number):
        return str(value)
    if isinstance(value, dict):
        return "{" + ",".join(f"{_compact_json(key)}:{_compact_json(item)}" for key, item in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ",".join(map(_compact_json, value)) + "]"
    return orjson.dumps(value).decode()


def field_values(source: SourceRecord, lines: list[int], field: str, max_line_bytes: int = 1 << 62) -> list[str | None]:
    """The value of ``field`` on each of ``lines`` of a sidecar source (its documents' lines, from
    :func:`document_lines`), in that order.

    Raises:
        TokenmillError: a bad field path; the source cannot be read (naming it).
        OSError: the source cannot be opened.
    """
    keys = field_keys(field)
    values: list[str | None] = [None] * len(lines)
    position = {number: k for k, number in enumerate(lines)}
    for number, line in iter_lines(source["path"], source.get("byte_range"), max_line_bytes,
                                   source.get("row_group_range"), None):
        k = position.get(number)
        if k is not None:
            values[k] = value_of(line, keys)
    return values
