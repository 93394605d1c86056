"""An input resolved once: a local file, or a URL pinned to one version of its object, as one value
(:class:`Source`) that knows its name, size, identity, compression and sidecar entry, and opens byte ranges of
exactly that version.

* **Name.** A local file's path as given; a URL's redacted name (:func:`tokenmill.files.urls.redact`: no user
  info, no presigned or secret query value), the only spelling of it that any output holds.
* **Identity.** A local file's :class:`~tokenmill.files.identity.FileIdentity` (device, inode, size,
  modification time), or an object's :class:`~tokenmill.files.remote.ObjectIdentity` (ETag, generation or Hub
  commit), pinned as it is resolved (:func:`tokenmill.files.objects.pin`): every read is of that version.
* **Compression** from the first bytes (:func:`compression_of`): gzip, zstd, xz, bzip2, zip, Parquet, or None
  for plain text.

Cost: one ``stat`` (a file) or one metadata request (an object), and one read of its first 8 bytes.
"""

from __future__ import annotations

import io
import os
from dataclasses import dataclass

from tokenmill.errors import TokenmillError
from tokenmill.files.identity import FileIdentity
from tokenmill.files.objects import open_object, pin, read_object_range
from tokenmill.files.remote import ObjectIdentity
from tokenmill.files.urls import is_url, remember

__all__ = ["Source", "compression_of"]

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

    @classmethod
    def resolve(cls, path: str | os.PathLike) -> Source:
        """The source ``path`` names: a local file as it is now, or an object pinned to its version now.

        Raises:
            TokenmillError: no such file or object, unreadable, no permission or no answer (naming it).
        """
        path = os.fspath(path)
        if is_url(path):
            identity = pin(path)
            return cls(remember(path), identity, compression_of(read_object_range(identity, 0, _HEAD_BYTES)))
        try:
            identity = FileIdentity.of(path)
            with open(path, "rb") as handle:
                head = handle.read(_HEAD_BYTES)
        except OSError as exc:
            raise TokenmillError(f"{path}: cannot read ({exc.strerror})") from None
        return cls(path, identity, compression_of(head))

    @property
    def is_url(self) -> bool:
        return isinstance(self.identity, ObjectIdentity)

    @property
    def size(self) -> int:
        return self.identity.size

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

    def sidecar_entry(self) -> dict:
        """What a sidecar records of the source as a whole: its name, size, compression and, for an object,
        its pinned version (no secret: the name is redacted, the version is the store's)."""
        return {"path": self.name, "bytes": self.size, **({"compression": self.compression} if self.compression
                                                          else {}),
                **({"object": self.identity.sidecar_entry()} if self.is_url else {})}


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
