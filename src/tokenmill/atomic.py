"""Atomic output files: write under a temporary name in the target folder, rename on success.

A killed or failing writer therefore never leaves a file under its final name that looks
finished, and never destroys what was already built there. Cost: one ``rename`` per file.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Iterator


def temporary_name(final_path: Path) -> Path:
    """The hidden temporary name next to ``final_path`` that a writer fills before renaming.

    It holds the pid so that two processes writing the same target never share a file.
    """
    return final_path.with_name(f".{final_path.name}.tmp{os.getpid()}")


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
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp_path.unlink()
        raise
