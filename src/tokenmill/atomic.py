"""Atomic output files: write under a temporary name in the target folder, rename on success.

A killed or failing writer therefore never leaves a file under its final name that looks
finished, and never destroys what was already built there. Cost: one ``rename`` per file.
"""

from __future__ import annotations

import contextlib
import glob
import os
from pathlib import Path
from typing import Iterator

from tokenmill.errors import TokenmillError


def temporary_name(final_path: Path) -> Path:
    """The hidden temporary name next to ``final_path`` that a writer fills before renaming.

    It holds the pid so that two processes writing the same target never share a file. Temporaries
    of the same target left by writers that no longer run (killed ones) are removed first.
    """
    final_path = Path(final_path)
    prefix = f".{final_path.name}.tmp"
    for stale in final_path.parent.glob(f"{glob.escape(prefix)}*"):
        pid = stale.name[len(prefix):]
        if pid.isdigit() and not _running(int(pid)):
            stale.unlink(missing_ok=True)
    return final_path.with_name(f"{prefix}{os.getpid()}")


def _running(pid: int) -> bool:
    """Whether process ``pid`` exists and is not a zombie (a killed writer nobody reaped)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's live process
        return True
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except OSError:
        return True


@contextlib.contextmanager
def atomic_output(final_path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path to write; rename it to ``final_path`` when the block succeeds.

    On any exception the temporary file is removed and ``final_path`` is left untouched.
    """
    final_path = Path(final_path)
    tmp_path = temporary_name(final_path)
    try:
        yield tmp_path
        os.replace(tmp_path, final_path)
    except BaseException as exc:
        with contextlib.suppress(FileNotFoundError):
            tmp_path.unlink()
        if isinstance(exc, OSError) and exc.filename in (None, str(tmp_path)):
            raise TokenmillError(f"{final_path}: cannot write ({exc.strerror})") from None
        raise


class AtomicWriter:
    """Context-manager protocol of writers that fill temporaries and rename them when finished.

    Subclasses define ``output_name`` (for errors), ``finish()`` (write the rest, rename into place)
    and ``abort()`` (close and delete the temporaries). Leaving the block normally finishes; an
    exception, or a failure while finishing, aborts, so nothing half-written stays behind; an
    ``OSError`` (a full disk, a file-size limit) becomes a one-line error naming the output.
    """

    output_name: str

    def finish(self) -> None:
        raise NotImplementedError

    def abort(self) -> None:
        raise NotImplementedError

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is not None:
            self.abort()
            if isinstance(exc, OSError):
                raise TokenmillError(f"{self.output_name}: cannot write ({exc.strerror})") from None
            return
        try:
            self.finish()
        except BaseException as exc:
            self.abort()
            if isinstance(exc, OSError):  # a write while finishing (full disk): its filename is often None
                raise TokenmillError(f"{self.output_name}: cannot write ({exc.strerror})") from None
            raise
