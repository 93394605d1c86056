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
(a body read in reads of at most 8 MiB; a lost or short connection resumes with a request for the rest,
pinned to the same version, up to :data:`ATTEMPTS` times) and :class:`ObjectFile` (a seekable view, each read
a ranged request: Parquet reads its footer, then the column chunks it needs).

Cost: the bytes asked for, once, streamed; memory bounded by one read whatever the object's size.
"""

from __future__ import annotations

import io
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Protocol

from tokenmill.errors import TokenmillError

__all__ = ["ATTEMPTS", "MAX_RESUMES", "CONNECT_SECONDS", "READ_SECONDS", "READ_BYTES", "PIECE_BYTES", "WILDCARDS",
           "ObjectIdentity", "Body", "bucket_and_key", "key_pattern", "expand_glob", "ObjectStream", "ObjectFile",
           "read_all"]

ATTEMPTS = 3
# A store that accepts the connection but sends nothing for this long is not answering: ATTEMPTS tries then
# take a minute, not the several of the clients' defaults.
CONNECT_SECONDS, READ_SECONDS = 5, 20
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

    A connection lost mid-stream (reset, stalled past the read timeout, or a body cut short) resumes from the
    last byte handed over, with a request for the rest pinned to the same version; what a read had received
    before the drop is handed over first. The stream fails, as truncated, after :data:`ATTEMPTS` drops in a row
    that bring no byte, or after :data:`MAX_RESUMES` drops in all (tests/fault_proxy.py makes each fault)."""

    def __init__(self, identity: ObjectIdentity, start: int, end: int, open_range: OpenRange):
        super().__init__()
        self.identity, self.position, self.end = identity, start, end
        self._open_range = open_range
        self._body: Body | None = None
        self._failures = 0  # drops in a row with no byte gained
        self._resumes = 0  # drops in all

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        wanted = self.end - self.position if size is None or size < 0 else min(size, self.end - self.position)
        wanted = min(wanted, READ_BYTES)
        pieces, got = [], 0
        while got < wanted:
            if self._body is None:
                self._body = self._open_range(self.identity, self.position, self.end)
            try:
                data = self._body.read(min(wanted - got, PIECE_BYTES))
            except (OSError, ValueError):  # ConnectionError; ValueError: a body already closed
                data = None
            if data:
                pieces.append(data)
                got += len(data)
                self.position += len(data)
                self._failures = 0
                continue
            # The connection ended early: resume with the rest, pinned; what this read has is returned first.
            self._body.close()
            self._body = None
            self._failures += 1
            self._resumes += 1
            if self._failures >= ATTEMPTS:
                raise TokenmillError(f"{self.identity.url}: truncated: the stream stopped at byte {self.position} "
                                     f"of {self.end} ({ATTEMPTS} attempts); nothing was written")
            if self._resumes > MAX_RESUMES:
                raise TokenmillError(f"{self.identity.url}: the connection dropped {self._resumes} times before byte "
                                     f"{self.position} of {self.end}; nothing was written")
            if pieces:
                break
        return b"".join(pieces)

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
