"""An input resolved once: a local file, or a URL pinned to one version of its object, as one value
(:class:`Source`) that knows its name, size, identity and compression, and opens byte ranges of exactly that
version; a sidecar records its name and, for an object, its identity's entry.

* **Name.** A local file's path as given; a URL's redacted name (:func:`tokenmill.files.urls.redact`: no user
  info, no presigned or secret query value), the only spelling of it that any output holds.
* **Identity.** A local file's :class:`~tokenmill.files.identity.FileIdentity` (device, inode, size,
  modification time), or an object's :class:`~tokenmill.files.remote.ObjectIdentity` (ETag, generation or Hub
  commit), pinned as it is resolved (:func:`tokenmill.files.objects.pin`): every read is of that version.
* **Compression** from the first bytes (:func:`compression_of`): gzip, zstd, xz, bzip2, zip, Parquet, or None
  for plain text.

A job resolves its inputs once as it starts (:func:`resolve_inputs`: globs of URLs listed, outputs that are inputs
and inputs named twice refused) and every layer reads the values' attributes: no module outside
:mod:`tokenmill.files` asks a path for its scheme. Where only a path is at hand (a config's entry, a sidecar's
``path``), :func:`expand`, :func:`local_paths`, :func:`is_missing_file` and :func:`input_key` answer from here.

Cost: one ``stat`` (a file) or one metadata request (an object), and one read of its first 8 bytes.
"""

from __future__ import annotations

import glob
import io
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from tokenmill.errors import TokenmillError
from tokenmill.files.identity import FileIdentity, named_twice, refuse_inputs_as_outputs
from tokenmill.files.objects import expand_url, open_object, pin, pinned_identity, read_object_range
from tokenmill.files.remote import ObjectIdentity
from tokenmill.files.urls import is_url, refuse_shared_names, remember

__all__ = ["Source", "compression_of", "as_source", "resolve_inputs", "expand", "local_paths", "is_missing_file",
           "input_key"]

# Leading bytes of the compressed formats corpora ship in (Dolma and RedPajama use gzip and zstd), and
# of Parquet (Hugging Face datasets, FineWeb), which is read as a stream of rows, as they are.
_COMPRESSION_MAGIC = {b"\x1f\x8b": "gzip", b"\x28\xb5\x2f\xfd": "zstd", b"\xfd7zXZ\x00": "xz",
                      b"BZh": "bzip2", b"PK\x03\x04": "zip", b"PAR1": "parquet"}
_HEAD_BYTES = 8


def compression_of(head: bytes) -> str | None:
    """The compression format (or ``"parquet"``) whose magic bytes ``head`` starts with, or None."""
    return next((name for magic, name in _COMPRESSION_MAGIC.items() if head.startswith(magic)), None)


@dataclass(frozen=True)
class Source:
    """One input, resolved once (see the module's docstring): ``name`` is what outputs say of it."""

    name: str
    identity: FileIdentity | ObjectIdentity
    compression: str | None
    is_url: bool = field(init=False)  # an object by URL, pinned; else a local file
    size: int = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "is_url", isinstance(self.identity, ObjectIdentity))
        object.__setattr__(self, "size", self.identity.size)

    @classmethod
    def resolve(cls, path: str | os.PathLike, repin: bool = True) -> Source:
        """The source ``path`` names: a local file as it is now, or an object pinned to its version now
        (``repin`` False: to the version this process pinned already, if it did).

        Raises:
            TokenmillError: no such file or object, unreadable, no permission or no answer (naming it).
        """
        path = os.fspath(path)
        if is_url(path):
            identity = pin(path) if repin else pinned_identity(path)
            return cls(remember(path), identity, compression_of(read_object_range(identity, 0, _HEAD_BYTES)))
        try:
            identity = FileIdentity.of(path)
            with open(path, "rb") as handle:
                head = handle.read(_HEAD_BYTES)
        except OSError as exc:
            raise TokenmillError(f"{path}: cannot read ({exc.strerror})") from None
        return cls(path, identity, compression_of(head))

    def open(self, start: int = 0, end: int | None = None) -> io.RawIOBase:
        """A stream of bytes ``[start, end)`` (``end`` None: to the end) of exactly this version.

        Raises:
            TokenmillError: (on a read) an object that changed or ends early; a file replaced since resolved.
        """
        end = self.size if end is None else min(end, self.size)
        if self.is_url:
            return open_object(self.identity, start, end)
        handle = open(self.name, "rb", buffering=0)
        self.identity.check(self.name, handle.fileno())
        handle.seek(start)
        return _Limited(handle, end - start)


def as_source(path: str | os.PathLike | Source) -> Source:
    """``path`` resolved (:meth:`Source.resolve`; an object at the version this process pinned, if it did), or
    the source itself where it is one already: what a layer takes that a job may hand its resolved input.

    Raises:
        TokenmillError: as :meth:`Source.resolve`.
    """
    return path if isinstance(path, Source) else Source.resolve(path, repin=False)


def expand(patterns: Iterable[str | os.PathLike], local_globs: bool = False) -> list[str]:
    """Each URL's objects (a glob's matches, sorted; :func:`tokenmill.files.objects.expand_url`), in order; a local
    path as given, or with ``local_globs`` a local glob's matches, sorted, where no file has its name (a name may
    hold ``[``, ``*`` or ``?``).

    Raises:
        TokenmillError: a URL glob matching nothing, a listing that fails (naming the URL).
    """
    def matches(pattern: str) -> list[str]:
        if is_url(pattern):
            return expand_url(pattern)
        if local_globs and not os.path.exists(pattern) and glob.has_magic(pattern):
            return sorted(glob.glob(pattern))
        return [pattern]

    return [match for pattern in map(os.fspath, patterns) for match in matches(pattern)]


def local_paths(paths: Iterable[str | os.PathLike]) -> list[str]:
    """The entries of ``paths`` that name local files (not URLs), as given: what Snakemake sees of a job's inputs,
    and what an output must not be."""
    return [path for path in paths if not is_url(path)]


def is_missing_file(path: str | os.PathLike) -> bool:
    """Whether ``path`` is a local path that names no file (a URL: False, its object is looked up as it is
    resolved)."""
    return not is_url(path) and not os.path.isfile(path)


def input_key(path: str | os.PathLike) -> tuple:
    """What tells two inputs apart without resolving them: a local file's ``(device, inode)`` (however it is
    spelled or linked), else its normalised path; a URL's name (a full URL given, with its secrets, is then what
    that name is read from)."""
    if is_url(path):
        return (remember(path),)
    try:
        stat = os.stat(path)
        return stat.st_dev, stat.st_ino
    except OSError:
        return (os.path.normpath(path),)


def resolve_inputs(patterns: Sequence[str | os.PathLike], outputs: Sequence[str | os.PathLike],
                   also_read: Sequence[str | os.PathLike] = (), twice_hint: str | None = None) -> list[Source]:
    """A job's inputs resolved once as it starts, in order: URL globs listed (:func:`expand`), each input
    resolved once however often it is named (:meth:`Source.resolve`), after the outputs are found to be none of
    them nor of ``also_read`` (its tokenizer, its indexes).

    Args:
        patterns: the inputs as given (files, URLs, URL globs).
        outputs: every file the job writes.
        also_read: other files the job reads, that no output may be.
        twice_hint: how to pack a file once per mention; None: a file named twice is packed twice, as asked.

    Raises:
        TokenmillError: two URLs of one redacted name, an output that is an input, a local input that is not
            a file, an input that cannot be resolved, a file named twice (with ``twice_hint``).
    """
    refuse_shared_names(list(map(os.fspath, patterns)))  # before redacted names stand for them
    paths = expand(patterns)
    refuse_inputs_as_outputs(outputs, local_paths([*paths, *map(os.fspath, also_read)]))
    if (missing := next((path for path in paths if is_missing_file(path)), None)) is not None:
        raise TokenmillError(f"{missing}: input file not found")
    resolved = {path: Source.resolve(path) for path in dict.fromkeys(paths)}
    if twice_hint is not None and (twice := named_twice(paths, {path: source.identity
                                                               for path, source in resolved.items()})) is not None:
        raise TokenmillError(f"{twice[0]}: is the input {twice[1]} again and would be packed twice ({twice_hint})")
    return [resolved[path] for path in paths]


class _Limited(io.RawIOBase):
    """A local file's next ``left`` bytes."""

    def __init__(self, handle: io.RawIOBase, left: int):
        super().__init__()
        self._handle, self._left = handle, left

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        count = self._handle.readinto(memoryview(buffer)[:max(0, min(len(buffer), self._left))])
        self._left -= count
        return count

    def close(self) -> None:
        self._handle.close()
        super().close()
