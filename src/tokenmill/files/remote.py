"""The one interface every object scheme (``s3://``, ``gs://``, ``https://``, ``hf://``) implements, and what
they share.

A scheme module (:mod:`~tokenmill.files.s3`, :mod:`~tokenmill.files.gs`, :mod:`~tokenmill.files.https`,
:mod:`~tokenmill.files.hf`) has three functions, and :mod:`~tokenmill.files.objects` dispatches to them by the
URL's prefix:

* ``identity(url) -> ObjectIdentity``: the object's version now (a ``HEAD`` or the store's metadata call);
* ``expand(url) -> list[str]``: the URLs a URL names: itself, or for a glob the matching objects, sorted;
* ``open_range(identity, start, end) -> Body``: one request for bytes ``[start, end)`` of exactly that
  version, whose ``read(n)`` returns at most ``n`` bytes (``b""`` at its end) and raises ``ConnectionError``
  where the connection was lost, and ``close()``.

What is shared lives here: :class:`ObjectIdentity` (what the sidecar and the plan record of an object),
:func:`key_pattern` (``*`` within one ``/`` level, ``**`` across, ``?``, ``[...]``) and :func:`expand_glob`
(a glob over the names a listing gives), :class:`ObjectStream`
(a body read in reads of at most 8 MiB; a lost, short or too slow connection resumes with a request for
the rest, pinned to the same version, up to :data:`ATTEMPTS` times) and :class:`ObjectFile` (a seekable view,
each read a ranged request: Parquet reads its footer, then the column chunks it needs).

**Minimum rate.** A server that keeps a connection alive with a trickle (64 bytes every half second) never
trips :data:`READ_SECONDS`, which bounds one wait for a byte, not the pace. So a stream also measures each
connection's rate over windows of :data:`RATE_WINDOW_SECONDS` (bytes received since the window opened,
divided by the time since): a window that ends under :data:`MIN_BYTES_PER_SECOND` cuts the connection, which
hands over what it received and resumes with a request for the rest, as a lost one does; :data:`ATTEMPTS`
slow windows in a row (no window at the minimum between them) fail the read in one line naming the URL, the
byte it stands at, the rate seen and the minimum. The windows are fixed ones, opened with the connection and
again when one ends at the minimum, rather than a sliding one: one counter, no history kept, for a slowdown
that starts mid-window seen up to two windows late. Why a minute and not a rate per read: a stall shorter
than :data:`READ_SECONDS` (20 s) takes a third of a window, which the other 40 s make up at any pace over
15 kB/s; a slow start (a server's first bytes after a cold cache) is judged on its whole first minute, not
its first second. What it costs: a trickle is cut only after a minute and fails after :data:`ATTEMPTS`
minutes (of which nothing received is lost); and a link slow but honest, under 10 kB/s for a whole minute,
fails where it would have finished: at that pace a 1 GB file takes more than a day, so download it and give
the local file. The check needs the bytes as they arrive: a scheme's body that has ``read1(n)`` (at most
``n`` bytes, those that arrived: ``https://``), or whose ``read(n)`` returns early (``hf://``), is measured
as they come; the S3 and GCS clients read whole pieces, so there the rate is seen once per piece
(:data:`PIECE_BYTES`) and a trickle inside one piece is bounded only by the store.

Cost: the bytes asked for, once, streamed; memory bounded by one read whatever the object's size; a clock
read per arrival of bytes (one socket read).
"""

from __future__ import annotations

import io
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Protocol

from tokenmill.errors import TokenmillError

__all__ = ["ATTEMPTS", "MAX_RESUMES", "CONNECT_SECONDS", "READ_SECONDS", "MIN_BYTES_PER_SECOND",
           "RATE_WINDOW_SECONDS", "READ_BYTES", "PIECE_BYTES", "WILDCARDS",
           "ObjectIdentity", "Body", "bucket_and_key", "key_pattern", "expand_glob", "ObjectStream", "ObjectFile",
           "read_all"]

ATTEMPTS = 3
# A store that accepts the connection but sends nothing for this long is not answering: ATTEMPTS tries then
# take a minute, not the several of the clients' defaults.
CONNECT_SECONDS, READ_SECONDS = 5, 20
# A connection whose bytes come slower than this, over a window of that many seconds, is cut and resumed;
# ATTEMPTS such windows in a row fail the read (the module's docstring: why a minute, and what it costs).
MIN_BYTES_PER_SECOND, RATE_WINDOW_SECONDS = 10_000, 60.0
# Bytes per read of a stream: what a caller's read(n) asks for at most at once, and what a drop loses at most
# (fetched again). Not smaller: 1 MiB reads made a 256 MiB stream from a loopback S3 2.2x slower than 8 MiB
# (median 3.3 against 1.5 s: the clients' cost per read), and a drop is rare.
READ_BYTES = 8 << 20
PIECE_BYTES = READ_BYTES  # bytes per read of a response body (the tests make it small, to break mid-read)
MAX_RESUMES = 10 * ATTEMPTS  # drops in all that one stream survives, each one after some progress
WILDCARDS = re.compile(r"[*?\[]")


@dataclass(frozen=True)
class ObjectIdentity:
    """One version of an object: what tells it from another written under the same URL.

    ``etag`` is the store's ETag (S3, a web server; ``""`` where a server gives none) or, on the Hub, the
    file's content id (its LFS sha256, else its git blob id); ``version_id`` an S3 version; ``last_modified``
    a web server's ``Last-Modified``; ``revision`` the Hub commit a branch or tag was resolved to."""

    url: str
    size: int
    etag: str
    version_id: str | None = None
    last_modified: str | None = None
    revision: str | None = None

    def sidecar_entry(self) -> dict:
        """The sidecar's ``object`` of an input read from storage."""
        entry = {"etag": self.etag, "version_id": self.version_id, "size": self.size}
        if self.last_modified is not None:
            entry["last_modified"] = self.last_modified
        if self.revision is not None:
            entry["revision"] = self.revision
        return entry

    @property
    def tag(self) -> str:
        """What the plan compares (with the size) to tell a changed object: the ETag, with the
        ``Last-Modified`` and the Hub revision where there are (a moved branch is a changed input)."""
        return " ".join([self.etag or "none", *([f"Last-Modified {self.last_modified}"] if self.last_modified else []),
                         *([f"revision {self.revision}"] if self.revision else [])])


class Body(Protocol):
    """One response's bytes, as a scheme's ``open_range`` returns them."""

    def read(self, size: int) -> bytes: ...

    def close(self) -> None: ...


def bucket_and_key(url: str, scheme: str) -> tuple[str, str]:
    """``SCHEME://bucket/key`` → ``(bucket, key)`` (``scheme``: ``"s3"``, ``"gs"``).

    Raises:
        TokenmillError: no bucket or no key.
    """
    bucket, _, key = url[len(scheme) + 3:].partition("/")
    if not url.startswith(f"{scheme}://") or not bucket or not key:
        raise TokenmillError(f"{url}: not an object URL; give {scheme}://BUCKET/KEY")
    return bucket, key


def key_pattern(pattern: str) -> re.Pattern:
    """A glob over keys: ``*`` and ``?`` within one ``/`` level, ``**`` across levels, ``[...]`` a class."""
    parts, position = [], 0
    for match in re.finditer(r"\*\*|\*|\?|\[[^\]]*\]", pattern):
        parts.append(re.escape(pattern[position:match.start()]))
        token = match.group()
        parts.append(".*" if token == "**" else "[^/]*" if token == "*" else "[^/]" if token == "?"
                     else "[" + token[1:-1].replace("\\", "\\\\").replace("!", "^", 1 if token[1:2] == "!" else 0)
                     + "]")
        position = match.end()
    parts.append(re.escape(pattern[position:]))
    return re.compile("".join(parts))


def expand_glob(url: str, path: str, list_names: Callable[[str], Iterable[str]], kind: str = "object") -> list[str]:
    """``[url]`` where ``path`` (the part of ``url`` a glob may be in: a key, a path in a repository) holds no
    wildcard; else the URLs of the names ``list_names(prefix)`` gives (every name below the prefix before the
    first wildcard) that match ``path``'s glob, sorted.

    Raises:
        TokenmillError: a glob that matches nothing; what ``list_names`` raises.
    """
    wildcard = WILDCARDS.search(path)
    if wildcard is None:
        return [url]
    pattern = key_pattern(path)
    names = sorted(name for name in list_names(path[:wildcard.start()]) if pattern.fullmatch(name))
    if not names:
        raise TokenmillError(f"{url}: matches no {kind}")
    return [url[:len(url) - len(path)] + name for name in names]


OpenRange = Callable[[ObjectIdentity, int, int], Body]


class ObjectStream(io.RawIOBase):
    """The bytes ``[start, end)`` of one object version, streamed through a scheme's ``open_range``.

    A connection lost mid-stream (reset, stalled past the read timeout, a body cut short, or slower than
    :data:`MIN_BYTES_PER_SECOND` over a window) resumes from the last byte handed over, with a request for the
    rest pinned to the same version; what a read had received before the drop is handed over first. The stream
    fails, as truncated, after :data:`ATTEMPTS` drops in a row that bring no byte, as too slow after
    :data:`ATTEMPTS` slow windows in a row, or after :data:`MAX_RESUMES` drops in all (tests/fault_proxy.py
    makes each fault)."""

    def __init__(self, identity: ObjectIdentity, start: int, end: int, open_range: OpenRange):
        super().__init__()
        self.identity, self.position, self.end = identity, start, end
        self._open_range = open_range
        self._body: Body | None = None
        self._failures = 0  # drops in a row with no byte gained
        self._slow = 0  # windows under the minimum rate in a row
        self._resumes = 0  # drops in all
        self._window_start, self._window_bytes = 0.0, 0  # the connection's rate window: its start, bytes since
        self._too_slow: tuple[float, float] | None = None  # (bytes/s, seconds) of a window under the minimum

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        wanted = self.end - self.position if size is None or size < 0 else min(size, self.end - self.position)
        wanted = min(wanted, READ_BYTES)
        pieces, got = [], 0
        while got < wanted:
            if self._body is None:
                self._body = self._open_range(self.identity, self.position, self.end)
                self._window_start, self._window_bytes = time.monotonic(), 0
            try:
                parts = self._read_piece(min(wanted - got, PIECE_BYTES))
            except (OSError, ValueError):  # ConnectionError; ValueError: a body already closed
                parts = []
            if parts:
                pieces += parts
                received = sum(map(len, parts))
                got += received
                self.position += received
                self._failures = 0
                if self._too_slow is None:
                    continue
            # The connection ended early or too slowly: resume with the rest, pinned; what this read has is
            # returned first.
            self._drop()
            if pieces:
                break
        return b"".join(pieces)

    def _read_piece(self, size: int) -> list[bytes]:
        """At most ``size`` bytes of the body (fewer at its end, or where its window ended too slow), as the
        arrivals that brought them (joined once, by :meth:`read`: a copy less), each measured against the
        minimum rate; what was received of a piece is lost with the connection where the body raises.

        Raises:
            OSError, ValueError: the connection was lost (or the body closed).
        """
        read1 = getattr(self._body, "read1", None)
        if read1 is None:  # a body that gives whole pieces: measured per piece
            data = self._body.read(size)
            self._measure(len(data))
            return [data] if data else []
        parts, got = [], 0
        while got < size and self._too_slow is None and (data := read1(size - got)):
            parts.append(data)
            got += len(data)
            self._measure(len(data))
        return parts

    def _measure(self, received: int) -> None:
        """Count ``received`` bytes in the connection's window; where the window has run its length, judge it:
        under :data:`MIN_BYTES_PER_SECOND`, the connection is to be cut (``_too_slow``), else a new window opens."""
        self._window_bytes += received
        now = time.monotonic()
        seconds = now - self._window_start
        if received == 0 or seconds < RATE_WINDOW_SECONDS:
            return
        rate = self._window_bytes / seconds
        if rate < MIN_BYTES_PER_SECOND:
            self._too_slow = rate, seconds
        else:
            self._window_start, self._window_bytes, self._slow = now, 0, 0

    def _drop(self) -> None:
        """Close the connection and count the drop (as slow where its window ended under the minimum rate).

        Raises:
            TokenmillError: the stream gives up: no byte in :data:`ATTEMPTS` drops in a row, :data:`ATTEMPTS`
                slow windows in a row, or more than :data:`MAX_RESUMES` drops in all.
        """
        self._body.close()
        self._body = None
        self._resumes += 1
        if self._too_slow is not None:
            (rate, seconds), self._too_slow = self._too_slow, None
            self._slow += 1
            if self._slow >= ATTEMPTS:
                raise TokenmillError(f"{self.identity.url}: too slow: {rate:,.0f} bytes/s over the last "
                                     f"{seconds:.1f} s at byte {self.position} of {self.end}, under the minimum "
                                     f"of {MIN_BYTES_PER_SECOND:,} bytes/s ({ATTEMPTS} attempts); nothing was written")
        else:
            self._failures += 1
            if self._failures >= ATTEMPTS:
                raise TokenmillError(f"{self.identity.url}: truncated: the stream stopped at byte {self.position} "
                                     f"of {self.end} ({ATTEMPTS} attempts); nothing was written")
        if self._resumes > MAX_RESUMES:
            raise TokenmillError(f"{self.identity.url}: the connection dropped {self._resumes} times before byte "
                                 f"{self.position} of {self.end}; nothing was written")

    def readinto(self, buffer) -> int:
        data = self.read(len(buffer))
        buffer[:len(data)] = data
        return len(data)

    def close(self) -> None:
        if self._body is not None:
            self._body.close()
            self._body = None
        super().close()


def read_all(stream: io.RawIOBase) -> bytes:
    """Every byte left in ``stream``, then closes it."""
    with stream:
        chunks = []
        while chunk := stream.read():
            chunks.append(chunk)
    return b"".join(chunks)


class ObjectFile(io.RawIOBase):
    """A seekable, read-only file over one object version, each read a ranged request through a scheme's
    ``open_range`` (Parquet reads its footer, then the column chunks it needs, by offset)."""

    def __init__(self, identity: ObjectIdentity, open_range: OpenRange):
        super().__init__()
        self.identity, self._position, self._open_range = identity, 0, open_range

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._position

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._position, io.SEEK_END: self.identity.size}[whence]
        self._position = max(0, base + offset)
        return self._position

    def size(self) -> int:
        return self.identity.size

    def read(self, size: int = -1) -> bytes:
        end = self.identity.size if size is None or size < 0 else min(self._position + size, self.identity.size)
        if end <= self._position:
            return b""
        data = read_all(ObjectStream(self.identity, self._position, end, self._open_range))
        self._position += len(data)
        return data

    def readinto(self, buffer) -> int:
        data = self.read(len(buffer))
        buffer[:len(data)] = data
        return len(data)
