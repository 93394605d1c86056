"""A copy to another file system, atomic per file: how prune moves an entry that ``os.replace`` cannot
(``EXDEV``: a linked output folder on another disk) into the stale folder.

Each file is copied to ``.<name>.prune-copy<pid>`` in its target folder (mode and times kept), fsync'ed, renamed
to its name, and only then removed where it was; a link is made anew (never followed); a folder is created in the
target and the source folder removed once emptied, deepest first. A failed copy (a full disk) removes its
temporary and raises: what was not copied is whole where it was. The temporary a killed copy left is known by
its name and its process (:func:`is_abandoned_copy`). Cost: one copy and one fsync of every byte that crosses.
"""

from __future__ import annotations

import errno
import os
import re
import shutil
import stat
from pathlib import Path

from tokenmill.files.atomic import discard, process_running

__all__ = ["copy_across", "is_abandoned_copy"]

# A copy across file systems on its way into the stale folder (only prune names files so, only there).
_COPY_TEMPORARY = re.compile(r"\..+\.prune-copy([0-9]+)", re.DOTALL)


def is_abandoned_copy(name: str) -> bool:
    """Whether ``name`` is the temporary of a copy whose process no longer runs (a killed prune's)."""
    match = _COPY_TEMPORARY.fullmatch(name)
    return bool(match) and not (0 < int(match[1]) < 2**31 and process_running(int(match[1])))


def copy_across(source: Path, target: Path) -> None:
    """``source`` (a file, a link, or a folder: never followed) to ``target`` on another file system,
    atomically per file; folders are created as met, and once filled get their mode and times and the
    emptied source folders are removed, deepest first.

    Raises:
        OSError: a copy, a folder or a removal fails (the file under way is whole where it was).
    """
    if not stat.S_ISDIR(os.lstat(source).st_mode):
        _copy_file(source, target)
        return
    folders: list[tuple[Path, Path]] = []
    stack = [(source, target)]
    while stack:
        folder, copy = stack.pop()
        os.mkdir(copy)
        folders.append((folder, copy))
        with os.scandir(folder) as entries:
            for entry in list(entries):
                if entry.is_dir(follow_symlinks=False):
                    stack.append((Path(entry.path), copy / entry.name))
                else:
                    _copy_file(Path(entry.path), copy / entry.name)
    for folder, copy in reversed(folders):
        _copy_mode_and_times(os.stat(folder), copy)
        os.rmdir(folder)


def _copy_file(source: Path, target: Path) -> None:
    """Copy a file or link to ``target`` (on another file system) through a temporary in its folder,
    fsync'ed and renamed, then remove ``source``."""
    temporary = target.with_name(f".{target.name}.prune-copy{os.getpid()}")
    info = os.lstat(source)
    try:
        if stat.S_ISLNK(info.st_mode):
            os.symlink(os.readlink(source), temporary)
        elif stat.S_ISREG(info.st_mode):
            shutil.copyfile(source, temporary)
            _copy_mode_and_times(info, temporary)  # (not copystat: extended attributes may be refused)
            descriptor = os.open(temporary, os.O_RDONLY)
            try:
                os.fsync(descriptor)  # on disk before the only other copy goes
            finally:
                os.close(descriptor)
        else:
            raise OSError(errno.EINVAL, "not a file, link or folder")
        os.replace(temporary, target)
    except BaseException:
        discard(None, temporary)
        raise
    os.unlink(source)


def _copy_mode_and_times(info: os.stat_result, path: Path) -> None:
    os.chmod(path, stat.S_IMODE(info.st_mode))
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns))
