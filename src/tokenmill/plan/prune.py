"""The tree equals the plan: files of an earlier plan are moved out of the folders trainers read.

After an edit of the config (a ``shard_bytes`` change, a sequence length or format dropped, a dataset
renamed), the outputs the new plan no longer makes would stay beside the new ones: old shards next to
the merged file, a cache folder of a dropped length with a valid-looking ``megatron_args.txt``, which
Megatron loads without a word. So the workflow's last job moves every entry of the output folders
(:data:`OUTPUT_FOLDERS`) that the plan does not make to the same relative place under
:data:`STALE_FOLDER` (``data/packed/b.shard3.pbin`` → ``data/stale/packed/b.shard3.pbin``), where no
trainer and no glob over ``data/megatron/`` finds it, and appends what it moved to
``data/stale/MOVED.txt``. Nothing is deleted: ``rm -r data/stale`` frees the space, ``mv`` brings a file
back. The workflow's inputs never lie in these folders (:func:`tokenmill.plan` refuses them), so a
user's own files are never moved.

Only what the workflow writes is moved: folders, and files named as its outputs are
(:data:`OUTPUT_SUFFIXES`: ``.pbin``, ``.bin``, ``.idx``, ``.ds``, ``.ok``, ``.html``...); any other file
in these folders is left where it is. An entry moved where an earlier move left one of the same name
gets the first free ``.1``, ``.2``... suffix, so nothing moved before is lost; folders emptied by the
move are removed.

Algorithm: the plan's files and cache folders are a set of paths; each output folder is walked
top-down, an entry that is planned is kept, a folder that holds planned paths is descended into, and
anything else of the workflow's is moved whole. Cost: one ``scandir`` per folder that holds planned
files, O(entries).
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["OUTPUT_FOLDERS", "OUTPUT_SUFFIXES", "STALE_FOLDER", "MOVED_RECORD", "LAST_RUN_STAMP", "stale_paths",
           "move_stale"]

# Where the workflow writes the files trainers and tools read (logs and benchmarks are not looked in).
OUTPUT_FOLDERS = ("data/index", "data/packed", "data/parts", "data/megatron", "data/datatrove", "data/olmo",
                  "data/cache", "data/sft", "data/verified", "data/report")
# The names the workflow's files end with (a .pbin's sidecar, Megatron's pair, datatrove's files, stamps,
# report pages, raw indexes and temporaries of killed writers).
OUTPUT_SUFFIXES = (".pbin", ".meta.json", ".bin", ".idx", ".ds", ".ds.index", ".ds.metadata", ".ds.loss", ".ok",
                   ".html")
STALE_FOLDER = "data/stale"
MOVED_RECORD = f"{STALE_FOLDER}/MOVED.txt"
LAST_RUN_STAMP = f"{STALE_FOLDER}/moved-last-run.txt"  # what the last prune moved (the workflow's stamp)


def stale_paths(planned: list[str], root: str | os.PathLike = ".") -> list[str]:
    """The entries of the output folders under ``root`` that are neither in ``planned`` nor hold a
    planned path, relative to ``root``, sorted (a stale folder is one entry)."""
    planned = {os.path.normpath(path) for path in planned}
    ancestors = {str(parent) for path in planned for parent in Path(path).parents}
    stale = []

    def walk(folder: str) -> None:
        try:
            entries = sorted(os.scandir(Path(root) / folder), key=lambda entry: entry.name)
        except FileNotFoundError:
            return
        for entry in entries:
            path = os.path.join(folder, entry.name)
            if path in planned:
                continue
            if path in ancestors and entry.is_dir(follow_symlinks=False):
                walk(path)
            elif entry.is_dir(follow_symlinks=False) or entry.name.endswith(OUTPUT_SUFFIXES) or \
                    ".tmp" in entry.name:
                stale.append(path)  # (another file, the user's own, stays where it is)

    for folder in OUTPUT_FOLDERS:
        walk(folder)
    return stale


def move_stale(planned: list[str], root: str | os.PathLike = ".") -> list[str]:
    """Move :func:`stale_paths` under :data:`STALE_FOLDER` (beside what an earlier move left at the same
    place, under the first free ``.N`` suffix), remove the folders that leaves empty, and append the
    moves to :data:`MOVED_RECORD`; return the paths moved.

    Raises:
        OSError: a move that fails (the ones before it are done and recorded).
    """
    root = Path(root)
    moved: list[tuple[str, str]] = []
    try:
        for path in stale_paths(planned, root):
            target = Path(STALE_FOLDER) / Path(path).relative_to("data")
            number = 0
            while (root / target).exists() or (root / target).is_symlink():  # an earlier move's: kept
                number += 1
                target = Path(STALE_FOLDER) / f"{Path(path).relative_to('data')}.{number}"
            (root / target).parent.mkdir(parents=True, exist_ok=True)
            os.replace(root / path, root / target)
            moved.append((path, str(target)))
            folder = Path(path).parent
            while folder != Path("data") and not any((root / folder).iterdir()):  # emptied by the move
                (root / folder).rmdir()
                folder = folder.parent
    finally:
        if moved:
            with open(root / MOVED_RECORD, "a", encoding="utf-8") as record:
                record.writelines(f"{path} -> {target}\n" for path, target in moved)
    return [path for path, _ in moved]
