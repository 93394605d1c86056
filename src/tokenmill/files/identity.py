"""File identity: which file a path names, so that nothing is overwritten or read by mistake.

Two uses:

* :func:`named_twice` — an input list naming one file twice (a path and a link to it included: the same
  ``(device, inode)``; an object: the same pinned version), which ``pack``, ``tokens-in`` and the plan
  refuse rather than read its bytes twice.
* :func:`refuse_inputs_as_outputs` — every verb checks, before it writes anything, that none of
  its outputs *is* one of its inputs: the same path after resolving links, or the same
  ``(device, inode)`` (a hard link). ``tokenmill pack x.jsonl -o x.jsonl`` would otherwise replace
  the corpus by its tokens.
* :class:`FileIdentity` — ``(device, inode, size, mtime_ns)`` of a file a reader opened. A reader
  that must re-open a file later (a DataLoader worker unpickling a dataset, a lazily opened JSONL)
  compares the identity and refuses a file that was rebuilt or edited since, instead of mixing the
  old index with the new bytes.

* :func:`file_sha256` — the sha256 of a file or of a byte range of it, recorded in sidecars so that
  a rebuild or ``verify`` can tell that an input is still the file that was packed.

Cost: one ``stat`` per path; a hash reads the file once (8 MiB blocks, ~1 GB/s).
"""

from __future__ import annotations

import hashlib
import os
import threading
from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence

from tokenmill.errors import TokenmillError
from tokenmill.files.objects import is_url, open_object, pinned_identity

__all__ = ["FileIdentity", "named_twice", "refuse_inputs_as_outputs", "file_sha256"]


@dataclass(frozen=True)
class FileIdentity:
    """What tells one version of a file from another: device, inode, size and modification time."""

    device: int
    inode: int
    size: int
    mtime_ns: int

    @classmethod
    def of(cls, file: str | os.PathLike | int) -> "FileIdentity":
        """The identity of a path or an open file descriptor.

        Raises:
            OSError: the file cannot be found.
        """
        stat = os.fstat(file) if isinstance(file, int) else os.stat(file)
        return cls(stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns)

    def check(self, path: str | os.PathLike, fd: int | None = None) -> None:
        """Make sure ``path`` (or the descriptor ``fd`` opened from it) is still this file.

        Raises:
            TokenmillError: the file was replaced, resized or modified since it was first opened.
        """
        try:
            now = FileIdentity.of(path if fd is None else fd)
        except OSError as exc:
            raise TokenmillError(f"{path}: cannot read ({exc.strerror})") from None
        self.require_same(now, path)

    def require_same(self, now: "FileIdentity", path: str | os.PathLike) -> None:
        """Make sure ``now``, the identity ``path`` has now, is this one.

        Raises:
            TokenmillError: the file was replaced, resized or modified since it was first opened.
        """
        if now != self:
            change = "replaced" if (now.device, now.inode) != (self.device, self.inode) else "modified"
            raise TokenmillError(f"{path}: {change} since it was opened ({self.size} → {now.size} bytes); "
                                 f"open it again to read the new version")


def named_twice(paths: Sequence[str], identities: Mapping[str, object]) -> tuple[str, str] | None:
    """The first of ``paths`` that names the file an earlier one names, and that earlier one; None where each
    names its own. ``identities`` maps each path to its :class:`FileIdentity` (the same ``(device, inode)``
    is the same file, whatever links lead to it) or to an object's pinned identity (compared whole)."""
    first: dict[object, str] = {}  # a file's (device, inode), or an object's identity → the first path naming it
    for path in paths:
        identity = identities[path]
        key = (identity.device, identity.inode) if isinstance(identity, FileIdentity) else identity
        if key in first:
            return path, first[key]
        first[key] = path
    return None


def refuse_inputs_as_outputs(outputs: Iterable[str | os.PathLike], inputs: Iterable[str | os.PathLike]) -> None:
    """Refuse to write any of ``outputs`` that is one of ``inputs`` (through links too).

    Raises:
        TokenmillError: naming the output and the input it would overwrite.
    """
    known = []
    for path in inputs:
        try:
            stat = os.stat(path)
            known.append((path, os.path.realpath(path), (stat.st_dev, stat.st_ino)))
        except OSError:
            known.append((path, os.path.realpath(path), None))
    for output in outputs:
        real = os.path.realpath(output)
        try:
            stat = os.stat(output)
            inode = (stat.st_dev, stat.st_ino)
        except OSError:
            inode = None
        for path, input_real, input_inode in known:
            if real == input_real or (inode is not None and inode == input_inode):
                raise TokenmillError(f"{output}: is the input {path}; refusing to overwrite an input "
                                     f"(choose another output path)")


def file_sha256(path: str | os.PathLike, start: int = 0, end: int | None = None,
                stop: threading.Event | None = None) -> str | None:
    """Hex sha256 of a file or object (or of its bytes ``[start, end)``), read in 8 MiB blocks; None if
    ``stop`` was set before the end (a job stopping does not wait for a 10 GB hash).

    Raises:
        OSError: the file cannot be read.
        TokenmillError: the object cannot be read, or changed (:mod:`tokenmill.files.objects`).
    """
    digest = hashlib.sha256()
    if is_url(path):
        handle = open_object(pinned_identity(path), start, end)
    else:
        handle = open(path, "rb")
        handle.seek(start)
    with handle:
        remaining = (1 << 62) if end is None else end - start
        while remaining > 0 and (block := handle.read(min(8 << 20, remaining))):
            if stop is not None and stop.is_set():
                return None
            digest.update(block)
            remaining -= len(block)
    return digest.hexdigest()
