"""Inputs by URL: objects in storage (``s3://``, ``gs://``), files on a web server (``https://``, ``http://``)
and files of a Hugging Face Hub dataset (``hf://datasets/...``), listed, identified and read as streams.

One interface for every scheme (:mod:`tokenmill.files.remote`): this module picks the scheme's module by the
URL's prefix in the one table of schemes (:data:`tokenmill.files.urls.SCHEMES`: :mod:`~tokenmill.files.s3`,
:mod:`~tokenmill.files.gs`, :mod:`~tokenmill.files.https`, :mod:`~tokenmill.files.hf`), and keeps the version of
each object a process reads.

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
* **Names.** Every URL is known by its redacted name (:func:`tokenmill.files.urls.redact`), the identity's
  ``url`` too; only a scheme's request takes the full URL (:func:`tokenmill.files.urls.full_url`). A job pins an
  input to the version its plan saw where told to (:func:`expect`).
* **Failures.** Each is one :class:`~tokenmill.errors.TokenmillError` line naming the URL by its name (never a
  credential): no such object, no permission, a bad revision, a server that does not answer, a truncated
  object, or one that changed during the read.

Cost: one metadata request per input (a listing per glob), and the object's bytes once, streamed.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import re
from collections.abc import Iterator
from dataclasses import replace
from types import ModuleType

from tokenmill.errors import TokenmillError
from tokenmill.files import remote
from tokenmill.files.remote import ATTEMPTS, ObjectIdentity, ObjectStream, read_all
from tokenmill.files.urls import full_url, is_url, redact_text, remember, scheme_of

__all__ = ["ATTEMPTS", "is_url", "ObjectIdentity", "object_identity", "pin", "expect", "pinned_identity",
           "expand_url", "open_object", "ObjectFile", "read_object_range"]


def _scheme(url: str) -> ModuleType:
    """The module of the URL's scheme.

    Raises:
        TokenmillError: not a URL of a known scheme.
    """
    return importlib.import_module(f"tokenmill.files.{scheme_of(url).module}")


@contextlib.contextmanager
def _redacted() -> Iterator[None]:
    """A scheme's error, its URLs redacted: the last guard, should a message name a full URL."""
    try:
        yield
    except TokenmillError as exc:
        raise TokenmillError(redact_text(str(exc))) from None


def object_identity(url: str) -> ObjectIdentity:
    """The object's identity now (one metadata request), named by the URL's name
    (:func:`tokenmill.files.urls.redact`).

    Raises:
        TokenmillError: no such object, no permission, no credentials, no answer.
    """
    name = remember(url)
    with _redacted():
        return _scheme(name).identity(name)


# The version of each object this process reads: taken once (pin), so that every read of a job is of it; and the
# versions the workflow's plan pinned (expect), which its jobs read. By full URL: two URLs of one name (a presigned
# URL signed again) are two requests.
_pinned: dict[str, ObjectIdentity] = {}
_expected: dict[str, str] = {}
_REVISION = re.compile(r"(?:^| )revision (\S+)$")


def expect(url: str, tag: str) -> None:
    """Read the version of ``url`` whose :attr:`~tokenmill.files.remote.ObjectIdentity.tag` is ``tag`` (what
    the plan pinned): a Hub file at the commit the tag names, whatever its branch says now; any other object
    as it is, refused when it is no longer that version."""
    _expected[full_url(remember(url))] = tag


def pin(url: str) -> ObjectIdentity:
    """Take the object's identity now and read that version from here on (a job pins its inputs as it
    starts; an object replaced later is then found out instead of read half old, half new).

    Raises:
        TokenmillError: as :func:`object_identity`; an object that is no longer the version expected.
    """
    name = remember(url)
    tag = _expected.get(full_url(name))
    revision = _REVISION.search(tag) if tag else None
    if revision is not None:  # a Hub file: at the plan's commit, which its branch may have left since
        with _redacted():
            identity = replace(_scheme(name).identity(_scheme(name).at_revision(name, revision[1])), url=name)
    else:
        identity = object_identity(name)
    if tag is not None and identity.tag != tag:
        raise TokenmillError(f"{name}: changed since the workflow planned it (then {tag}; now {identity.tag}); "
                             f"nothing was written, run the workflow again to plan the new version")
    _pinned[full_url(name)] = identity
    return identity


def pinned_identity(url: str) -> ObjectIdentity:
    """The version of ``url`` this process reads: pinned already, or pinned now.

    Raises:
        TokenmillError: as :func:`pin`.
    """
    return _pinned.get(full_url(remember(url))) or pin(url)


def expand_url(url: str) -> list[str]:
    """The object URLs a URL names: itself, or for a glob every matching object, sorted.

    Raises:
        TokenmillError: a glob that matches nothing, or a listing that fails (naming the URL).
    """
    name = remember(url)
    with _redacted():
        return [remember(match) for match in _scheme(name).expand(name)]


def open_object(identity: ObjectIdentity, start: int = 0, end: int | None = None) -> io.RawIOBase:
    """A stream of bytes ``[start, end)`` of the object version ``identity`` (``end`` None: its end).

    Each read returns at most 8 MiB; a connection lost mid-stream resumes from where it stopped.

    Raises:
        TokenmillError: (on a read) the object changed, is gone, or ends early; no permission; no answer.
    """
    return ObjectStream(identity, start, identity.size if end is None else min(end, identity.size),
                        _open_range(identity.url))


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
        super().__init__(identity, _open_range(identity.url))


def _open_range(url: str) -> remote.OpenRange:
    """The scheme's ``open_range``, its errors redacted."""
    scheme = _scheme(url)

    def open_range(identity: ObjectIdentity, start: int, end: int) -> remote.Body:
        with _redacted():
            return scheme.open_range(identity, start, end)

    return open_range
