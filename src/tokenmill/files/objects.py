"""Inputs by URL: objects in storage (``s3://``, ``gs://``), files on a web server (``https://``, ``http://``)
and files of a Hugging Face Hub dataset (``hf://datasets/...``), listed, identified and read as streams.

One interface for every scheme (:mod:`tokenmill.files.remote`): this module picks the scheme's module by the
URL's prefix (:mod:`~tokenmill.files.s3`, :mod:`~tokenmill.files.gs`, :mod:`~tokenmill.files.https`,
:mod:`~tokenmill.files.hf`), and keeps the version of each object a process reads.

* **Globs.** ``s3://`` and ``gs://`` keys and ``hf://`` paths may hold ``*``, ``?`` and ``[...]``; ``*``
  stays within one ``/`` level and ``**`` crosses levels; the matches are taken in sorted order. A web
  server has no listing: an ``https://`` URL names one file (its ``?`` is a query).
* **Identity.** An object is one version of its URL (:class:`~tokenmill.files.remote.ObjectIdentity`): size
  and ETag (S3, a web server, with its ``Last-Modified``), or the commit a Hub revision resolves to and the
  file's content id. A job pins each input as it starts (:func:`pin`) and reads only that version: an object
  replaced during a read stops that read with one line, and a replaced object is a stale input for
  ``verify`` and for the workflow's plan.
* **Streams.** :func:`open_object` reads an object, or a byte range of it, with one ranged request as a
  stream of 8 MiB reads: memory stays bounded, nothing is copied to local disk, and a connection lost
  mid-stream resumes where it stopped. :class:`ObjectFile` is a seekable view by ranged requests, for
  Parquet footers and row groups.
* **Failures.** Each is one :class:`~tokenmill.errors.TokenmillError` line naming the URL (and never a
  credential): no such object, no permission, a bad revision, a server that does not answer, a truncated
  object, or one that changed during the read.

Cost: one metadata request per input (a listing per glob), and the object's bytes once, streamed.
"""

from __future__ import annotations

import io
import os
from types import ModuleType

from tokenmill.errors import TokenmillError
from tokenmill.files import remote
from tokenmill.files.remote import ATTEMPTS, ObjectIdentity, ObjectStream, read_all

__all__ = ["SCHEMES", "ATTEMPTS", "is_url", "ObjectIdentity", "object_identity", "pin", "pinned_identity",
           "expand_url", "open_object", "ObjectFile", "read_object_range"]

SCHEMES = ("s3://", "gs://", "https://", "http://", "hf://")


def is_url(path: str | os.PathLike) -> bool:
    """Whether ``path`` names an object by URL (``s3://``, ``gs://``, ``https://``, ``http://``, ``hf://``)
    rather than a local file."""
    return isinstance(path, str) and path.startswith(SCHEMES)


def _scheme(url: str) -> ModuleType:
    """The module of the URL's scheme.

    Raises:
        TokenmillError: not a URL of a known scheme.
    """
    if url.startswith("s3://"):
        from tokenmill.files import s3
        return s3
    if url.startswith(("https://", "http://")):
        from tokenmill.files import https
        return https
    if url.startswith("hf://"):
        from tokenmill.files import hf
        return hf
    if url.startswith("gs://"):
        from tokenmill.files import gs
        return gs
    raise TokenmillError(f"{url}: not a URL tokenmill reads (give s3://, gs://, https://, http:// or hf://)")


def object_identity(url: str) -> ObjectIdentity:
    """The object's identity now (one metadata request).

    Raises:
        TokenmillError: no such object, no permission, no credentials, no answer.
    """
    return _scheme(url).identity(url)


# The version of each object this process reads: taken once (pin), so that every read of a job is of it.
_pinned: dict[str, ObjectIdentity] = {}


def pin(url: str) -> ObjectIdentity:
    """Take the object's identity now and read that version from here on (a job pins its inputs as it
    starts; an object replaced later is then found out instead of read half old, half new).

    Raises:
        TokenmillError: as :func:`object_identity`.
    """
    _pinned[url] = identity = object_identity(url)
    return identity


def pinned_identity(url: str) -> ObjectIdentity:
    """The version of ``url`` this process reads: pinned already, or pinned now.

    Raises:
        TokenmillError: as :func:`object_identity`.
    """
    return _pinned.get(url) or pin(url)


def expand_url(url: str) -> list[str]:
    """The object URLs a URL names: itself, or for a glob every matching object, sorted.

    Raises:
        TokenmillError: a glob that matches nothing, or a listing that fails (naming the URL).
    """
    return _scheme(url).expand(url)


def open_object(identity: ObjectIdentity, start: int = 0, end: int | None = None) -> io.RawIOBase:
    """A stream of bytes ``[start, end)`` of the object version ``identity`` (``end`` None: its end).

    Each read returns at most 8 MiB; a connection lost mid-stream resumes from where it stopped.

    Raises:
        TokenmillError: (on a read) the object changed, is gone, or ends early; no permission; no answer.
    """
    return ObjectStream(identity, start, identity.size if end is None else min(end, identity.size),
                        _scheme(identity.url).open_range)


def read_object_range(identity: ObjectIdentity, start: int, end: int) -> bytes:
    """Bytes ``[start, end)`` of the object version ``identity``, in one ranged request.

    Raises:
        TokenmillError: as :func:`open_object`.
    """
    return read_all(open_object(identity, start, end))


class ObjectFile(remote.ObjectFile):
    """A seekable, read-only file over one object version, each read a ranged request (Parquet reads
    its footer, then the column chunks it needs, by offset)."""

    def __init__(self, identity: ObjectIdentity):
        super().__init__(identity, _scheme(identity.url).open_range)
