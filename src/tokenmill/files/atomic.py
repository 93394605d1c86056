"""Atomic output files: write under a temporary name in the target folder, rename on success.

A killed or failing writer therefore never leaves a file under its final name that looks
finished, and never destroys what was already built there. A write that fails (a full disk, a
file-size limit), at any ``write``, ``flush``, ``fsync`` or ``close``, ends in one line naming the
final output (:func:`write_error`), and the temporaries are removed even when closing them fails
again (:func:`discard`). Cost: one ``rename`` per file.
"""

from __future__ import annotations

import contextlib
import glob
import os
from pathlib import Path
from typing import IO, Iterator

from tokenmill.errors import TokenmillError


def temporary_name(final_path: Path) -> Path:
    """The hidden temporary name next to ``final_path`` that a writer fills before renaming.

    It holds the pid so that two processes writing the same target never share a file. Temporaries
    of the same target left by writers that no longer run (killed ones) are removed first. The
    target's folder is created here, when a writer starts: every verb creates its output's folder,
    and a run refused before writing leaves none.
    """
    final_path = Path(final_path)
    final_path.parent.mkdir(parents=True, exist_ok=True)
    prefix = f".{final_path.name}.tmp"
    for stale in final_path.parent.glob(f"{glob.escape(prefix)}*"):
        pid = stale.name[len(prefix):]
        if pid.isdigit() and not process_running(int(pid)):
            stale.unlink(missing_ok=True)
    temporary = final_path.with_name(f"{prefix}{os.getpid()}")
    _TEMPORARIES.add(temporary)
    return temporary


# Every temporary this process named: a signal that lands between a writer's creating its file and the
# `with` that would remove it (a few statements, but a loaded machine can pause a process right there)
# must not leave it behind; the CLI removes what is left of them when it is interrupted.
_TEMPORARIES: set[Path] = set()


def remove_temporaries() -> None:
    """Delete every temporary of this process that still exists (after an interruption: none is
    being renamed into place any more), never raising."""
    discard(None, *_TEMPORARIES)
    _TEMPORARIES.clear()


def process_running(pid: int) -> bool:
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


def write_error(final_path: str | os.PathLike, exc: OSError) -> TokenmillError:
    """The one-line error for a failed write of ``final_path`` (the final name, never a temporary:
    the user knows the one, not the other)."""
    return TokenmillError(f"{final_path}: cannot write ({exc.strerror or exc}); nothing was written")


def discard(handle: IO | None, *paths: Path | None) -> None:
    """Close ``handle`` and delete ``paths`` (None entries are skipped), never raising.

    Used when a write already failed: closing a buffered file flushes it, which on a full disk
    fails again (the descriptor is closed all the same), and that second error must neither hide
    the first nor keep the temporaries from being deleted.
    """
    if handle is not None:
        with contextlib.suppress(OSError):
            handle.close()
    for path in paths:
        if path is not None:
            with contextlib.suppress(OSError):
                Path(path).unlink(missing_ok=True)


@contextlib.contextmanager
def atomic_output(final_path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path to write; rename it to ``final_path`` when the block succeeds.

    On any exception the temporary file is removed and ``final_path`` is left untouched.

    Raises:
        TokenmillError: an ``OSError`` writing the temporary or renaming it (naming ``final_path``);
            other exceptions pass through unchanged.
    """
    final_path = Path(final_path)
    tmp_path = temporary_name(final_path)
    try:
        yield tmp_path
        os.replace(tmp_path, final_path)
    except BaseException as exc:
        discard(None, tmp_path)
        if isinstance(exc, OSError) and exc.filename in (None, str(tmp_path)):
            raise write_error(final_path, exc) from None
        raise


class AtomicWriter:
    """Context-manager protocol of writers that fill temporaries and rename them when finished.

    Subclasses define ``output_name`` (for errors), ``finish()`` (write the rest, rename into place)
    and ``abort()`` (close and delete the temporaries with :func:`discard`: it must never raise, as
    it runs while another error is on its way out). Leaving the block normally finishes; an
    exception, or a failure while finishing, aborts, so nothing half-written stays behind; an
    ``OSError`` of the writer (a full disk, a file-size limit: no file name, or one of ours) becomes
    a one-line error naming the output (:func:`write_error`).
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
            # an OSError naming another file (an input that vanished) is not a failed write
            if isinstance(exc, OSError) and exc.filename is None:
                raise write_error(self.output_name, exc) from None
            return
        try:
            self.finish()
        except BaseException as failure:
            self.abort()
            if isinstance(failure, OSError):  # a write, flush, fsync or rename of ours while finishing
                raise write_error(self.output_name, failure) from None
            raise


def write_if_changed(path: str | os.PathLike, content: str | bytes) -> Path:
    """Write ``content`` (text as UTF-8) to ``path`` atomically, unless the file holds exactly that already
    (a found cache, an unchanged hand-off file, keeps its bytes and its mtime); returns the path.

    Raises:
        OSError: the file cannot be read or written.
    """
    path = Path(path)
    data = content.encode("utf-8") if isinstance(content, str) else content
    if path.is_file() and path.read_bytes() == data:
        return path
    with atomic_output(path) as temporary:
        temporary.write_bytes(data)
    return path

