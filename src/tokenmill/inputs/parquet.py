"""Reading a Parquet input as batches of JSON lines, so that it packs exactly as the same rows as JSONL.

A Parquet file (told apart by its magic bytes ``PAR1``, see :func:`tokenmill.inputs.jsonl.input_compression`)
is read one **row group** at a time, only the columns the text pattern needs: ``.text`` reads column
``text``, ``.meta.body`` the struct column ``meta``; any other jq pattern reads every column. Each row
becomes the JSON object of those columns (orjson, one line), and the lines travel to the pack workers
as a compressed input's lines do: a block of whole lines of about ``batch_bytes`` with its ``(n, 2)``
array of ``(offset, length)``. So every rule downstream is the JSONL one (the text selection, bad
lines, EOD, the engine's proof), and the ``.pbin`` equals the one packed from the same rows written
as JSONL. Rows are numbered from 1 through the whole file, as lines are, in errors, the sidecar's
skipped ``first_lines`` and ``inspect --doc``.

What the selection sees: a null is JSON null, a number a number; so each is a bad line, under
``on_bad_line``, naming its row. A value JSON has no type for (binary, decimal, duration) is seen as an
object ``{"unrepresentable": "<Python type>"}``: never text. Timestamps, dates and times are ISO strings,
as orjson writes them; nanosecond ones are read as microseconds where that loses nothing (pyarrow would
give pandas' objects where pandas is installed, and datetimes or an error where not), else (a top-level
column) as ISO strings with nine digits of fraction. A value Python cannot convert (invalid UTF-8 in a
string column, a date outside the years 1 to 9999, nanoseconds inside a struct or list) makes its row a
bad line whose reason names the column (:func:`tokenmill.inputs.text_selection.bad_row_line`): the chunk of rows is
converted whole, and only a chunk that fails is converted again row by row.

File errors, whatever ``on_bad_line`` says (each stops the job in one line naming the file): a column
(or struct field) that a path pattern such as ``.text`` or ``.meta.body`` needs and the file lacks, with
the file's columns and a ``text:`` to use instead; a truncated or corrupt file (no footer, a page that
does not decode, a row group shorter than its footer says). Any other jq pattern sees the file's rows
as they are (a key it lacks is null, as jq has it on JSON).

Shards: row groups are the unit of work for a big file, as byte ranges are for plain JSONL: ``pack
--row-groups START:END`` packs row groups ``[START, END)``, its rows numbered as in the whole file,
and merged shards equal one job. :func:`row_group_units` cuts a file into such ranges of about
``shard_bytes`` (compressed) from its footer alone.

Sidecar entry of a Parquet source: ``"format": "parquet"``, ``bytes`` and ``sha256`` of the whole file,
``row_groups`` (in the file) and ``rows`` (packed), and for a shard ``row_group_range`` and
``first_row``. A shard job hashes the whole file (in pack's hashing thread, ~1.8 GB/s; the file is
whole either way, unlike a byte range).

Cost: pyarrow's decompression and decoding of the needed columns (memory: one row group of them plus
one block of JSON), and per row a Python object and one ``orjson.dumps`` (~1 µs plus ~1 ns per byte),
then the workers' ``orjson.loads``. pyarrow (~40 MB) is imported only here, and only when a Parquet
input is read: ``pip install 'tokenmill[parquet]'``.
"""

from __future__ import annotations

import decimal
import json
import os
import re
from datetime import datetime, timedelta
from typing import Callable, Iterator

import numpy as np
import orjson

from tokenmill.errors import TokenmillError
from tokenmill.files.objects import ObjectFile
from tokenmill.files.source import Source, as_source
from tokenmill.inputs.text_selection import bad_row_line

__all__ = ["PARQUET_MAGIC", "open_parquet", "parse_row_groups", "columns_for", "refuse_missing_column",
           "row_group_bytes", "row_group_units", "parquet_source", "row_line_batches", "iter_rows"]

PARQUET_MAGIC = b"PAR1"
_ROWS_PER_CHUNK = 1024  # rows turned into JSON at a time: small against a row group, large against a call
_PATH_PATTERN = re.compile(r"^\.([A-Za-z_][A-Za-z0-9_]*)(\.[A-Za-z_][A-Za-z0-9_]*)*$")
_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# Names of the column that usually holds the text, best first: the one a missing column's error suggests.
_TEXT_NAMES = ("text", "content", "body", "document", "raw_content", "contents", "markdown", "article", "code")
_COLUMNS_LISTED = 40  # in a missing column's error


def _parquet_module():
    """``pyarrow.parquet``, imported on first use.

    Raises:
        TokenmillError: pyarrow is not installed (one line saying how to install it).
    """
    try:
        import pyarrow.parquet
    except ImportError:
        raise TokenmillError("reading Parquet needs pyarrow: pip install 'tokenmill[parquet]'") from None
    return pyarrow.parquet


def _damaged(path: str | os.PathLike, exc: Exception) -> TokenmillError:
    reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return TokenmillError(f"{path}: not a readable Parquet file, truncated or corrupt ({reason}); "
                          f"no output was written")


def open_parquet(path: str | os.PathLike | Source):
    """The ``pyarrow.parquet.ParquetFile`` of ``path`` (a file, an object, or either resolved), its footer read.

    Raises:
        TokenmillError: no pyarrow, an unreadable file, or a truncated or corrupt footer (naming the file).
    """
    parquet = _parquet_module()
    import pyarrow

    source = as_source(path)
    path = source.name
    try:
        return parquet.ParquetFile(ObjectFile(source.identity) if source.is_url else path)
    except FileNotFoundError:
        raise TokenmillError(f"{path}: input file not found") from None
    except (pyarrow.ArrowException, OSError) as exc:
        raise _damaged(path, exc) from None


def parse_row_groups(text: str) -> tuple[int, int | None]:
    """``"START:END"`` → ``(start, end)``; an empty END (None) means the file's last row group.

    Raises:
        TokenmillError: not two non-negative integers with ``start <= end``.
    """
    start_text, colon, end_text = text.partition(":")
    try:
        start, end = int(start_text), (int(end_text) if end_text else None)
    except ValueError:
        start, end = -1, None
    if not colon or start < 0 or (end is not None and end < start):
        raise TokenmillError(f"row groups {text!r}: give START:END, row group numbers from 0, START <= END")
    return start, end


def columns_for(pattern: str) -> list[str] | None:
    """The top-level columns a text pattern reads: ``.text`` → ``["text"]``, ``.meta.body`` →
    ``["meta"]``; None (every column) for any other jq pattern."""
    match = _PATH_PATTERN.match(pattern)
    return [match.group(1)] if match else None


def _jq_path(prefix: str, name: str) -> str:
    """The jq path of field ``name`` under ``prefix``: ``.content``, ``.meta.body``, ``.["raw text"]``."""
    return f"{prefix}.{name}" if _KEY.match(name) else f"{prefix or '.'}[{json.dumps(name)}]"


def _string_paths(fields, prefix: str = "") -> list[str]:
    """The jq paths of the string columns among ``fields``, and of string fields of struct columns."""
    import pyarrow

    types, paths = pyarrow.types, []
    for field in fields:
        path = _jq_path(prefix, field.name)
        if types.is_string(field.type) or types.is_large_string(field.type) or \
                getattr(types, "is_string_view", lambda _: False)(field.type):
            paths.append(path)
        elif types.is_struct(field.type):
            paths += _string_paths([field.type.field(i) for i in range(field.type.num_fields)], path)
    return paths


def _text_advice(schema) -> str:
    """``use text: .content (or --jq .content)``: the string column most likely to hold the text."""
    paths = _string_paths(schema)
    if not paths:
        return "it has no string column to take the text from"

    def rank(path: str) -> tuple[int, int]:
        name = path.rsplit(".", 1)[-1].strip('[]"').lower()
        return (_TEXT_NAMES.index(name) if name in _TEXT_NAMES else len(_TEXT_NAMES), path.count(".") > 1)

    best, *others = sorted(paths, key=rank)
    advice = f"use text: {best} (or --jq {best})"
    return advice + (f", or another of its string columns: {', '.join(others[:5])}" if others else "")


def _listed(names: list[str]) -> str:
    shown = ", ".join(names[:_COLUMNS_LISTED])
    return shown + (f", ... ({len(names)} in all)" if len(names) > _COLUMNS_LISTED else "")


def refuse_missing_column(path: str | os.PathLike, pattern: str, schema) -> None:
    """Stop on a column (or struct field) that a path pattern (``.text``, ``.meta.body``) needs and the
    file lacks, or holds no text (an integer, binary or all-null column): every row would be a bad line,
    so ``on_bad_line: skip`` would drop the whole file.

    Args:
        path: the file, for the message.
        pattern: the text pattern; only a path pattern is checked (any other jq pattern may do without a key).
        schema: the file's Arrow schema.

    Raises:
        TokenmillError: naming the file, the missing column, the file's columns and a ``text:`` to use.
    """
    import pyarrow

    if not _PATH_PATTERN.match(pattern):
        return
    column, *keys = pattern[1:].split(".")
    if column not in schema.names:
        raise TokenmillError(f"{path}: no column {column!r} for the text pattern {pattern}; its columns: "
                             f"{_listed(schema.names)}; {_text_advice(schema)}")
    arrow_type, held = schema.field(schema.names.index(column)).type, column
    for key in keys:
        if not pyarrow.types.is_struct(arrow_type):  # a map, a JSON string...: seen row by row
            return
        fields = [arrow_type.field(i).name for i in range(arrow_type.num_fields)]
        if key not in fields:
            raise TokenmillError(f"{path}: column {held!r} has no field {key!r} for the text pattern {pattern}; "
                                 f"its fields: {_listed(fields)}; {_text_advice(schema)}")
        arrow_type, held = arrow_type.field(fields.index(key)).type, f"{held}.{key}"
    if pyarrow.types.is_dictionary(arrow_type):
        arrow_type = arrow_type.value_type
    types = pyarrow.types
    if not (types.is_string(arrow_type) or types.is_large_string(arrow_type)
            or getattr(types, "is_string_view", lambda _: False)(arrow_type)
            or (types.is_temporal(arrow_type) and not types.is_duration(arrow_type))):  # read as ISO strings
        # every row's text would be a bad line: refused for the file, like a missing column
        raise TokenmillError(f"{path}: column {held!r} holds {arrow_type}, not text, for the text pattern {pattern}; "
                             f"{_text_advice(schema)}")


def row_group_bytes(metadata) -> list[int]:
    """Compressed bytes of each row group (the sum of its column chunks), from a file's footer."""
    return [sum(group.column(j).total_compressed_size for j in range(group.num_columns))
            for group in map(metadata.row_group, range(metadata.num_row_groups))]


def row_group_units(path: str | os.PathLike, shard_bytes: int) -> tuple[list[tuple[int, int]], list[int]]:
    """Cut a Parquet file into runs of whole row groups of at most ``shard_bytes`` compressed bytes
    each (a larger row group is a run of its own), reading only its footer.

    Returns:
        ``([(start, end), ...], compressed bytes of each row group)``.

    Raises:
        TokenmillError: no pyarrow, or an unreadable, truncated or corrupt file.
    """
    sizes = row_group_bytes(open_parquet(path).metadata)
    units: list[tuple[int, int]] = []
    start, held = 0, 0
    for group, size in enumerate(sizes):
        if group > start and held + size > shard_bytes:
            units.append((start, group))
            start, held = group, 0
        held += size
    if sizes:
        units.append((start, len(sizes)))
    return units, sizes


def _resolved_range(path: str | os.PathLike, metadata, row_groups: tuple[int, int | None] | None) -> tuple[int, int]:
    """``row_groups`` with END filled in, checked against the file.

    Raises:
        TokenmillError: a range beyond the file's row groups.
    """
    total = metadata.num_row_groups
    start, end = row_groups or (0, total)
    end = total if end is None else end
    if end > total:
        raise TokenmillError(f"{path}: row groups {start}:{end} asked, the file has {total} (0:{total})")
    return start, end


def parquet_source(source: Source, row_groups: tuple[int, int | None] | None,
                   hash_file: Callable[[str, int, int], object]) -> dict:
    """The sidecar entry of a Parquet input, before packing (documents and skipped rows come later).

    Args:
        source: the file or object, resolved as the job began (hashed up to its size then).
        row_groups: ``(start, end)`` for a shard, else None.
        hash_file: ``hash_file(path, 0, size)`` gives the ``sha256`` (a value or a future of one).

    Raises:
        TokenmillError: no pyarrow; an unreadable, truncated or corrupt file; a range beyond it.
    """
    path, size = source.name, source.size
    metadata = open_parquet(source).metadata
    start, end = _resolved_range(path, metadata, row_groups)
    counts = [metadata.row_group(group).num_rows for group in range(metadata.num_row_groups)]
    entry = {"path": path, "format": "parquet", "bytes": size, "row_groups": metadata.num_row_groups,
             "rows": sum(counts[start:end]), "sha256": hash_file(path, 0, size)}
    if row_groups is not None:
        entry.update(row_group_range=[start, end], first_row=sum(counts[:start]) + 1)
    return entry


def _json_value(value) -> dict:
    """What orjson cannot write (binary, decimal, duration): an object, so that it is never taken for text."""
    kind = next((base for base in (bytes, decimal.Decimal, timedelta) if isinstance(value, base)), type(value))
    return {"unrepresentable": kind.__name__}


class _Inexact(ValueError):
    """Nanoseconds where :func:`_records` cannot write them (inside a struct or list)."""


def _conversion_errors() -> tuple[type[Exception], ...]:
    """What converting a value to Python and JSON raises on a value it cannot take (UnicodeDecodeError
    and pyarrow's ArrowInvalid are ValueErrors, a date past 9999 an OverflowError, orjson's a TypeError)."""
    import pyarrow

    return pyarrow.ArrowException, ValueError, ArithmeticError, TypeError


def _microsecond_type(arrow_type):
    """``arrow_type`` with its nanosecond timestamps, durations and times in microseconds (inside
    structs and lists too), or None where it has none."""
    import pyarrow

    types = pyarrow.types
    if getattr(arrow_type, "unit", None) == "ns":
        return (pyarrow.timestamp("us", arrow_type.tz) if types.is_timestamp(arrow_type) else
                pyarrow.duration("us") if types.is_duration(arrow_type) else pyarrow.time64("us"))
    if types.is_struct(arrow_type):
        fields = [arrow_type.field(i) for i in range(arrow_type.num_fields)]
        inner = [_microsecond_type(field.type) for field in fields]
        if any(inner):
            return pyarrow.struct([field.with_type(new or field.type) for field, new in zip(fields, inner)])
    elif types.is_list(arrow_type) or types.is_large_list(arrow_type):
        inner = _microsecond_type(arrow_type.value_type)
        if inner is not None:
            make = pyarrow.list_ if types.is_list(arrow_type) else pyarrow.large_list
            return make(arrow_type.value_field.with_type(inner))
    return None


def _with_nanoseconds(moment: datetime, nanoseconds: int) -> str:
    """``moment`` (to the microsecond) as orjson writes it, with nine digits of fraction."""
    whole = orjson.dumps(moment.replace(microsecond=0)).decode()[1:-1]  # 2024-01-31T12:00:00[+00:00]
    return f"{whole[:19]}.{moment.microsecond:06d}{nanoseconds:03d}{whole[19:]}"


def _records(batch, casts: dict[int, object]) -> list[dict]:
    """The rows of a record batch as Python dicts, the same whatever is installed beside pyarrow.

    Args:
        batch: the rows.
        casts: column number → its type with nanoseconds as microseconds (:func:`_microsecond_type`).

    Raises:
        ValueError, OverflowError, TypeError, pyarrow.ArrowException: a value Python cannot convert
            (see :func:`_conversion_errors`).
    """
    import pyarrow

    if not casts:
        return batch.to_pylist()
    columns, exact = list(batch.columns), {}
    for number, arrow_type in casts.items():
        try:
            columns[number] = columns[number].cast(arrow_type)  # safe: raises where nanoseconds would be lost
        except pyarrow.ArrowInvalid:
            if not pyarrow.types.is_timestamp(arrow_type):
                raise _Inexact("a time with nanoseconds inside a struct or list, which tokenmill writes "
                               "to the microsecond only") from None
            exact[batch.schema.names[number]] = columns[number].cast(pyarrow.int64()).to_pylist()
            columns[number] = columns[number].cast(arrow_type, safe=False)
    records = pyarrow.RecordBatch.from_arrays(columns, names=batch.schema.names).to_pylist()
    for name, values in exact.items():
        for record, value in zip(records, values):
            if value is not None and value % 1000:
                record[name] = _with_nanoseconds(record[name], value % 1000)
    return records


def _problem(exc: Exception, arrow_type) -> str:
    """Why a value of ``arrow_type`` could not be converted, in words (the same for every such value, so
    that skipped rows are counted together)."""
    message = str(exc).splitlines()[0] if str(exc) else ""
    if isinstance(exc, UnicodeDecodeError):
        return "invalid UTF-8 in a string value"
    if isinstance(exc, _Inexact):
        return message
    if (isinstance(exc, OverflowError) and "date" in message) or re.match(r"year -?\d+ is out of range", message):
        return "a date or time outside the years 1 to 9999 that Python's datetime holds"
    return f"a {arrow_type} value that Python cannot convert ({type(exc).__name__}: {message})"


def _json_lines(batch, casts: dict[int, object]) -> list[bytes]:
    """A record batch's rows as JSON lines; a row with a value Python cannot convert as a
    :func:`tokenmill.inputs.text_selection.bad_row_line` naming the column. The batch is converted whole; only one
    that fails is converted again row by row, and a failing row column by column."""
    import pyarrow

    errors = _conversion_errors()
    try:
        return [orjson.dumps(record, default=_json_value) for record in _records(batch, casts)]
    except errors:
        pass
    lines = []
    for number in range(batch.num_rows):
        row = batch.slice(number, 1)
        try:
            lines.append(orjson.dumps(_records(row, casts)[0], default=_json_value))
            continue
        except errors:
            pass
        for column, field in enumerate(row.schema):
            try:
                orjson.dumps(_records(pyarrow.RecordBatch.from_arrays([row.column(column)], names=[field.name]),
                                      {0: casts[column]} if column in casts else {}), default=_json_value)
            except errors as exc:
                lines.append(bad_row_line(f"column {field.name!r}: {_problem(exc, field.type)}"))
                break
        else:  # each column converts alone: never seen, but the row is still not dropped silently
            lines.append(bad_row_line("a row that Python cannot convert"))
    return lines


def _row_chunks(path: str | os.PathLike | Source, pattern: str, row_groups: tuple[int, int | None] | None,
                on_read: Callable[[int], None] | None = None) -> Iterator[tuple[int, list[bytes]]]:
    """``(1-based number of the first row, its rows as JSON lines)`` in chunks, row group by row group.

    Raises:
        TokenmillError: no pyarrow, a column the pattern needs is missing, a truncated or corrupt file,
            a row group shorter than its footer says.
    """
    import pyarrow

    source = as_source(path)
    path, handle = source.name, open_parquet(source)
    metadata = handle.metadata
    start, end = _resolved_range(path, metadata, row_groups)
    refuse_missing_column(path, pattern, handle.schema_arrow)
    columns = columns_for(pattern)
    sizes = row_group_bytes(metadata)
    row = sum(metadata.row_group(group).num_rows for group in range(start)) + 1
    for group in range(start, end):
        try:
            table = handle.read_row_group(group, columns=columns)
        except (pyarrow.ArrowException, OSError) as exc:
            raise _damaged(path, exc) from None
        expected = metadata.row_group(group).num_rows
        if table.num_rows != expected:
            raise _damaged(path, ValueError(f"row group {group} holds {table.num_rows} rows, its footer says "
                                            f"{expected}"))
        if on_read is not None:
            on_read(sizes[group])
        if not table.num_columns:  # a file without columns: every row is an empty object
            for first in range(0, expected, _ROWS_PER_CHUNK):
                yield row + first, [b"{}"] * min(_ROWS_PER_CHUNK, expected - first)
        else:
            casts = {number: cast for number, cast in enumerate(map(_microsecond_type, table.schema.types)) if cast}
            first = row
            for batch in table.to_batches(max_chunksize=_ROWS_PER_CHUNK):
                yield first, _json_lines(batch, casts)
                first += batch.num_rows
        row += expected


def row_line_batches(source: dict, pattern: str, batch_bytes: int, max_line_bytes: int,
                     on_read: Callable[[int], None] | None = None) -> Iterator[tuple[int, np.ndarray, bytes]]:
    """A Parquet source's rows (:func:`parquet_source`) as batches of JSON lines, like
    :func:`tokenmill.inputs.jsonl.stream_line_batches`.

    Args:
        source: the sidecar entry; its ``row_group_range`` is packed, else the whole file.
        pattern: the text pattern (picks the columns read).
        batch_bytes: about this many bytes of JSON lines per batch.
        max_line_bytes: a longer row is yielded with its length and offset -1, none of its bytes, so
            that the worker reports it as a bad line.
        on_read: called with the compressed bytes of each row group read (for progress).

    Yields:
        ``(1-based number of the first row, (n, 2) offsets/lengths relative to the block, block)``.

    Raises:
        TokenmillError: no pyarrow, a truncated or corrupt file.
    """
    first_row, lines = None, []
    held = 0
    for row, chunk in _row_chunks(source["path"], pattern, source.get("row_group_range"), on_read):
        if first_row is None:
            first_row = row
        lines += chunk
        held += sum(map(len, chunk))
        if held >= batch_bytes:
            yield first_row, *_block(lines, max_line_bytes)
            first_row, lines, held = None, [], 0
    if lines:
        yield first_row, *_block(lines, max_line_bytes)


def _block(lines: list[bytes], max_line_bytes: int) -> tuple[np.ndarray, bytes]:
    """Lines joined by ``\\n``, and their ``(offset, length)``; a line over ``max_line_bytes`` keeps its
    length with offset -1 and is left out of the block."""
    lengths = np.fromiter(map(len, lines), dtype=np.int64, count=len(lines))
    kept = lengths <= max_line_bytes
    spans = np.where(kept, lengths + 1, 0)
    offsets = np.where(kept, np.cumsum(spans) - spans, -1)
    block = b"\n".join(line for line, keep in zip(lines, kept.tolist()) if keep)
    return np.stack([offsets, lengths], axis=1), block


def iter_rows(path: str | os.PathLike | Source, pattern: str, row_groups: tuple[int, int | None] | None = None,
              max_line_bytes: int = 1 << 62) -> Iterator[tuple[int, bytes]]:
    """Every row (of ``row_groups``) as ``(1-based row number, JSON line)``; a line over
    ``max_line_bytes`` as ``b""``, as :func:`tokenmill.inputs.jsonl.iter_lines` gives lines.

    Raises:
        TokenmillError: no pyarrow, a truncated or corrupt file.
    """
    for row, chunk in _row_chunks(path, pattern, row_groups):
        for number, line in enumerate(chunk, start=row):
            yield number, line if len(line) <= max_line_bytes else b""
