"""Reading a JSONL input as batches of whole lines: plain files by byte range, compressed ones as a stream.

Two kinds of input, told apart by their first bytes (never by their names):

* **Plain JSONL** is read through its raw index (``raw_index``): a batch is an ``(n, 2)`` array of
  ``(byte_offset, byte_length)`` that a worker reads with one ``pread``, so the parent never touches
  the text. A **byte range** ``[start, end)`` of the file selects the lines that *start* inside it:
  ranges that tile the file give every line to exactly one range, cut only at line boundaries, and
  line numbers stay those of the whole file.
* **Compressed JSONL** (gzip — ``.jsonl.gz``, Dolma's ``.json.gz`` —, zstd, xz, bzip2) has no byte
  offsets to index: it is decompressed as a stream in this process, cut into blocks of whole lines
  of about ``batch_bytes`` decompressed bytes (one vectorised newline search per block), and the
  block travels to the worker with its line array (offsets relative to the block). Lines are
  numbered as in the decompressed text. Memory: one block plus the longest line; a line over
  ``max_line_bytes`` is skipped over without being kept (its length is still reported). The
  compressed bytes are hashed (sha256) as they are read, so the sidecar's hash costs no second pass.
  A truncated or corrupt archive raises, naming the file and how far it got: never a shorter output.
  Every file is read to its very end: concatenated streams (multi-member gzip, multi-frame zstd,
  several xz or bzip2 streams) are read whole, as ``zcat``/``xzcat``/``bzcat`` do; xz stream padding
  (null bytes, a multiple of four) is skipped as ``xz`` does, gzip's trailing null bytes as ``gzip``
  does; any other bytes after the last stream are refused (Python's own bz2 and lzma readers would
  drop them without a word, so those two formats are read stream by stream here).

An **object** (a URL of a scheme in :data:`tokenmill.files.urls.SCHEMES`; :mod:`tokenmill.files.objects`), plain or
compressed, is read like a compressed file: one streamed ``GET`` cut into blocks here, hashed as it is read
(a byte-range shard of a plain one: a ranged ``GET`` of the span its raw index gives, lines numbered from the
index).

Cost: plain batches are free here (the threads read); a compressed stream costs its decompression
(gzip ~300 MB/s of output per core, zstd ~1 GB/s) plus one pass of ``== b'\\n'`` over the text.
"""

from __future__ import annotations

import hashlib
import os
import sys
from typing import BinaryIO, Callable, Iterator

import numpy as np

from tokenmill.errors import TokenmillError
from tokenmill.files.identity import file_sha256
from tokenmill.files.source import Source, as_source

__all__ = ["READABLE_COMPRESSIONS", "input_compression", "lines_in_range", "parse_byte_range",
           "stream_line_batches", "iter_lines", "source_sha256"]

#: Compression formats read as streams; zip archives hold files, not a stream, and are refused.
READABLE_COMPRESSIONS = ("gzip", "zstd", "xz", "bzip2")


def input_compression(path: str | os.PathLike | Source) -> str | None:
    """The compression format of an input (from its magic bytes), ``"parquet"`` for a Parquet file
    (read as rows, :mod:`tokenmill.inputs.parquet`: like a compressed file, it has no raw index), or None for
    plain text.

    Raises:
        TokenmillError: unreadable, or a compression format that cannot be streamed (zip).
    """
    source = as_source(path)
    compression = source.compression
    if compression is not None and compression not in (*READABLE_COMPRESSIONS, "parquet"):
        raise TokenmillError(f"{source.name}: a {compression} archive; tokenmill reads plain JSONL or a "
                             f"{'/'.join(READABLE_COMPRESSIONS)}-compressed stream of it, or Parquet")
    return compression


def parse_byte_range(text: str) -> tuple[int, int]:
    """``"START:END"`` → ``(start, end)``; an empty END means the end of the file.

    Raises:
        TokenmillError: not two non-negative integers with ``start <= end``.
    """
    start_text, colon, end_text = text.partition(":")
    try:
        start, end = int(start_text), (int(end_text) if end_text else 1 << 62)
    except ValueError:
        start = end = -1
    if not colon or start < 0 or end < start:
        raise TokenmillError(f"byte range {text!r}: give START:END in bytes, 0 <= START <= END")
    return start, end


def lines_in_range(lines: np.ndarray, start: int, end: int) -> tuple[int, np.ndarray]:
    """The indexed lines that start in ``[start, end)``, and the 0-based number of the first of them."""
    first, stop = np.searchsorted(lines[:, 0], [start, end], side="left")
    return int(first), lines[first:stop]


class _HashingReader:
    """A raw file whose bytes feed a sha256 as the decompressor reads them."""

    def __init__(self, handle: BinaryIO, size: int, on_read: Callable[[int], None] | None = None):
        self.handle, self.size, self.digest, self.bytes_read, self.on_read = handle, size, hashlib.sha256(), 0, on_read

    def read(self, size: int = -1) -> bytes:
        data = self.handle.read(size)
        self.digest.update(data)
        self.bytes_read += len(data)
        if self.on_read is not None:
            self.on_read(len(data))
        return data

    def readinto(self, buffer) -> int:  # zstd and lzma readers use readinto where offered
        data = self.read(len(buffer))
        buffer[:len(data)] = data
        return len(data)

    def readable(self) -> bool:
        return True

    def close(self) -> None:
        pass

    def __enter__(self) -> _HashingReader:
        return self

    def __exit__(self, *exc_info) -> None:
        pass


class _NotAStream(Exception):
    """Bytes after a compressed stream that are not another stream (nor, for xz, its padding)."""


class _ConcatenatedStreams:
    """The decompressed bytes of every stream in ``raw``, read to its very end (xz and bzip2).

    ``lzma.LZMAFile`` and ``bz2.BZ2File`` read concatenated streams but stop quietly at the first
    bytes that do not decode (``LZMAFile`` even at the second stream after xz stream padding): the
    rest of the file would be lost without a word. Here each stream gets a fresh decompressor; after
    its end the next bytes must be another stream's magic, xz stream padding (null bytes, a multiple
    of four, as ``xz -t`` accepts), or the end of the file. Cost: the decompression, plus one copy
    of each output piece into the returned block.
    """

    _CHUNK = 1 << 20  # compressed bytes per read: the progress callback's granularity

    def __init__(self, raw: _HashingReader, compression: str):
        if compression == "xz":
            import lzma

            self._new = lambda: lzma.LZMADecompressor(format=lzma.FORMAT_XZ)
            self._magic, self._pads, self._a_stream = b"\xfd7zXZ\x00", True, "an xz stream"
            #: what the decompressors raise on a damaged stream (and EOFError: on a truncated one)
            self.errors: tuple[type[Exception], ...] = (EOFError, OSError, lzma.LZMAError)
        else:
            import bz2

            self._new, self._magic, self._pads, self._a_stream = bz2.BZ2Decompressor, b"BZh", False, "a bzip2 stream"
            self.errors = (EOFError, OSError)
        self._raw, self._compression = raw, compression
        self._decompressor = self._new()
        self._input = b""  # compressed bytes read but not yet given to a decompressor
        self._position = 0  # compressed bytes given to decompressors or skipped as padding
        self._decompressed = 0
        self._done = False

    def read(self, size: int = -1) -> bytes:
        """Up to ``size`` decompressed bytes (all that is left for -1); ``b""`` only at the end.

        Raises:
            EOFError: the file ends inside a stream.
            _NotAStream: bytes after a stream that are not another one, or bad xz padding.
            OSError, lzma.LZMAError: a corrupt stream.
        """
        pieces, wanted = [], size if size >= 0 else 1 << 62
        while wanted > 0 and not self._done:
            if self._decompressor.eof:
                self._next_stream()
                continue
            if self._decompressor.needs_input:
                data, self._input = self._input or self._raw.read(self._CHUNK), b""
                if not data:
                    raise EOFError("the file ends inside a stream")
                self._position += len(data)
            else:
                data = b""
            piece = self._decompressor.decompress(data, min(wanted, 1 << 30))
            pieces.append(piece)
            wanted -= len(piece)
        out = b"".join(pieces)
        self._decompressed += len(out)
        return out

    def _next_stream(self) -> None:
        """After a stream's end: skip xz padding, then start the next stream or mark the end.

        Raises:
            _NotAStream: what follows is neither a stream, padding, nor the end of the file.
        """
        unused = self._decompressor.unused_data
        end = self._position - len(unused)  # the offset just after the finished stream
        rest, self._input = unused + self._input, b""
        padding = 0
        while self._pads:
            stripped = rest.lstrip(b"\0")
            padding += len(rest) - len(stripped)
            rest = stripped
            if rest:
                break
            rest = self._raw.read(self._CHUNK)
            if not rest:
                break
        while len(rest) < len(self._magic):
            more = self._raw.read(self._CHUNK)
            if not more:
                break
            rest += more
        if not rest or rest.startswith(self._magic):
            if padding % 4:
                raise _NotAStream(f"xz stream padding at byte {end} is {padding} null bytes, not a multiple "
                                  f"of 4 (corrupt)")
            self._position = end + padding
            self._input, self._done = rest, not rest
            self._decompressor = self._new()
            return
        trailing = self._raw.size - end
        raise _NotAStream(f"{self._compression} data ends at byte {end}, followed by {trailing} bytes that are not "
                          f"{self._a_stream}")

    def tell(self) -> int:
        """Decompressed bytes returned so far."""
        return self._decompressed

    def close(self) -> None:
        pass

    def __enter__(self) -> _ConcatenatedStreams:
        return self

    def __exit__(self, *exc_info) -> None:
        pass


def _decompressor(compression: str, raw: _HashingReader) -> tuple[BinaryIO, tuple[type[Exception], ...]]:
    """A reader of ``raw``'s decompressed bytes, and the exceptions that mean a damaged archive.
    (The modules are imported here: a job over plain files does not pay for them.)"""
    if compression == "gzip":
        import gzip
        import zlib

        # GzipFile reads members to the end; bytes after one that are not a member raise
        # (null bytes excepted, as gzip(1) allows them)
        return gzip.GzipFile(fileobj=raw, mode="rb"), (EOFError, OSError, zlib.error)
    if compression == "zstd":
        if sys.version_info >= (3, 14):
            from compression import zstd
        else:  # the same API, backported
            from backports import zstd

        # ZstdFile reads frames to the end; bytes that are not a frame raise
        return zstd.ZstdFile(raw, mode="rb"), (EOFError, OSError, zstd.ZstdError)
    streams = _ConcatenatedStreams(raw, compression)
    return streams, streams.errors  # type: ignore[return-value]


def stream_line_batches(path: str | os.PathLike | Source, compression: str | None, batch_bytes: int,
                        max_line_bytes: int, digest_out: dict | None = None,
                        on_read: Callable[[int], None] | None = None, byte_span: tuple[int, int] | None = None,
                        first_line: int = 1
                        ) -> Iterator[tuple[int, np.ndarray, bytes]]:
    """Read ``path`` as a stream, decompressing it, and yield its lines in batches of whole lines.

    Args:
        path: a compressed JSONL file, or an object URL (:mod:`tokenmill.files.objects`) of JSONL, compressed
            or not, read with one streamed ``GET``; or either resolved (:class:`tokenmill.files.source.Source`).
        compression: its format (:func:`input_compression`); None for plain JSONL.
        batch_bytes: about this many decompressed bytes per batch.
        max_line_bytes: a longer line is yielded with its true length but none of its bytes (offset
            -1), so that the worker reports it as a bad line without it ever being held.
        digest_out: filled at the end with ``sha256`` and ``bytes`` of what was read (as stored).
        on_read: called with the number of stored bytes of every read (for progress).
        byte_span: ``(start, end)``: read only these bytes of a plain object (a shard's lines, found
            by its raw index), with one ranged ``GET``.
        first_line: the number of the span's first line.

    Yields:
        ``(1-based number of the first line, (n, 2) offsets/lengths relative to the block, block)``.

    Raises:
        TokenmillError: a truncated or corrupt archive, or an unreadable file or object (naming it).
    """
    decompressed = 0
    source = as_source(path)
    path, handle = source.name, source.open(*(byte_span or (0, None)))
    raw = _HashingReader(handle, source.size, on_read)
    stream, damaged = _decompressor(compression, raw) if compression else (raw, ())
    try:
        with handle, stream:
            yield from _line_batches(stream, batch_bytes, max_line_bytes, first_line)
            decompressed = stream.tell() if compression else raw.bytes_read
            raw.read()  # anything after the end-of-stream marker still counts in the hash
    except _NotAStream as exc:
        raise TokenmillError(f"{path}: {exc}; no output was written") from None
    except damaged as exc:
        reason = "truncated (it ends before its end-of-stream marker)" if isinstance(exc, EOFError) else \
            f"corrupt ({exc})"
        raise TokenmillError(f"{path}: {compression} archive is {reason}; no output was written") from None
    if digest_out is not None:
        digest_out.update(sha256=raw.digest.hexdigest(), bytes=raw.bytes_read, decompressed_bytes=decompressed)


def _line_batches(stream: BinaryIO, batch_bytes: int, max_line_bytes: int, first_line: int = 1):
    """Cut a byte stream into batches of whole lines (see :func:`stream_line_batches`)."""
    pending = b""  # bytes of the current, unfinished line(s)
    oversized = -1  # > -1: bytes seen of a line over max_line_bytes that is being skipped
    next_line = first_line
    at_end = False
    while not at_end:
        chunk = stream.read(batch_bytes)
        at_end = not chunk
        if oversized >= 0:
            newline = chunk.find(b"\n")
            if newline < 0 and not at_end:
                oversized += len(chunk)
                continue
            oversized += len(chunk) if newline < 0 else newline
            yield next_line, np.array([[-1, oversized]], dtype=np.int64), b""
            next_line, oversized = next_line + 1, -1
            chunk = b"" if newline < 0 else chunk[newline + 1:]
            if at_end:
                break
        block = pending + chunk
        line_ends = np.flatnonzero(np.frombuffer(block, dtype=np.uint8) == 10)
        if at_end and block and (not len(line_ends) or line_ends[-1] != len(block) - 1):
            line_ends = np.append(line_ends, len(block))  # a last line without its newline
        if len(line_ends):
            line_starts = np.concatenate([[0], line_ends[:-1] + 1])
            lines = np.stack([line_starts, line_ends - line_starts], axis=1).astype(np.int64)
            complete = int(line_ends[-1]) + 1
            yield next_line, lines, block[:complete] if complete <= len(block) else block
            next_line += len(lines)
            pending = block[complete:]
        else:
            pending = block
        if len(pending) > max_line_bytes:
            oversized, pending = len(pending), b""


def iter_lines(path: str | os.PathLike, byte_range: tuple[int, int] | None = None,
               max_line_bytes: int = 1 << 62, row_groups: tuple[int, int] | None = None,
               text: str | None = None) -> Iterator[tuple[int, bytes]]:
    """Every line of a plain or compressed JSONL file as ``(1-based line number, bytes without \\n)``;
    of a Parquet file, every row as a JSON line (see :mod:`tokenmill.inputs.parquet`).

    Args:
        path: the file.
        byte_range: for a plain file, only the lines starting in ``[start, end)`` (numbered as in
            the whole file).
        max_line_bytes: longer lines are given as ``b""`` (never held whole).
        row_groups: for a Parquet file, only the rows of row groups ``[start, end)`` (numbered as in
            the whole file).
        text: for a Parquet file, the text pattern, whose columns alone are read (None: every column).

    Raises:
        TokenmillError: unreadable, a byte range of a compressed file, a truncated or corrupt archive.
    """
    source = as_source(path)
    compression = input_compression(source)
    if compression == "parquet" and byte_range is None:
        from tokenmill.inputs.parquet import iter_rows

        yield from iter_rows(source, text or ".", row_groups, max_line_bytes)
        return
    if source.is_url and byte_range is not None:
        raise TokenmillError(f"{source.name}: a byte range of an object is read through its raw index (tokenmill "
                             f"pack --index)")
    if compression is not None or source.is_url:
        if byte_range is not None:
            raise TokenmillError(f"{source.name}: a byte range needs a plain JSONL file, not {compression} data")
        for first_line, lines, block in stream_line_batches(source, compression, 4 << 20, max_line_bytes):
            for number, (offset, length) in enumerate(lines.tolist(), start=first_line):
                yield number, b"" if offset < 0 or length > max_line_bytes else block[offset:offset + length]
        return
    start, end = byte_range or (0, 1 << 62)
    with open(path, "rb") as handle:
        number, position = 1, 0
        while position < end and (line := handle.readline(max_line_bytes + 1)):
            length = len(line)
            too_long = not line.endswith(b"\n") and length > max_line_bytes
            while too_long and (rest := handle.readline(4 << 20)):  # skipped a piece at a time, never held whole
                length += len(rest)
                if rest.endswith(b"\n"):
                    break
            if position >= start:
                yield number, b"" if too_long else line.rstrip(b"\n")
            number, position = number + 1, position + length


def source_sha256(source: dict) -> str:
    """The sha256 of what a ``.pbin`` sidecar source entry was packed from: the whole file (as
    stored, compressed or not), or the span of its ``byte_range``.

    Raises:
        OSError: the file cannot be read.
    """
    return file_sha256(source["path"], *source.get("byte_range", (0, None)))
