"""The tree equals the plan: files of an earlier plan are moved out of the folders trainers read.

After an edit of the config (a ``shard_bytes`` change, a sequence length or format dropped, a dataset
renamed), the outputs the new plan no longer makes would stay beside the new ones: old shards next to
the merged file, a cache folder of a dropped length with a valid-looking ``megatron_args.txt``, which
Megatron loads without a word. So the workflow's last job moves every entry of the output folders
(:data:`OUTPUT_FOLDERS`) that the plan does not make and that is the workflow's (below) to the same
relative place under :data:`STALE_FOLDER` (:func:`~tokenmill.plan.layout.stale_path`: ``packed/b.shard3.pbin`` →
``stale/packed/b.shard3.pbin`` in the data folder), where no trainer and no glob over the Megatron folder finds it, and
records the move in :data:`MOVED_RECORD`. The workflow's inputs never lie in these folders
(:func:`tokenmill.plan` refuses them). An entry moved where an earlier move left one of the same name
gets the first free ``.1``, ``.2``... suffix, so nothing moved before is lost; folders emptied by the
move are removed (never a link).

What is the workflow's (everything else stays where it is, at any depth):

* a file whose name is one the workflow gives its outputs: it ends with one of :data:`OUTPUT_SUFFIXES`
  (``.pbin``, ``.meta.json``, ``.bin``, ``.idx``, datatrove's ``.ds*``, OLMo's ``.npy``/``.csv.gz``,
  ``.ok`` stamps, ``.html`` pages, the index caches' ``*-description.txt`` and
  ``*-tokenmill_fingerprint.json``) or is one of :data:`OUTPUT_NAMES` (``metadata.json``,
  ``megatron_args.txt``, ``sequences_per_dataset.json``, a tokenizer folder's two files, Snakemake's
  ``.snakemake_timestamp``);
* the temporary a writer fills before renaming, exactly as :func:`tokenmill.files.atomic.temporary_name`
  spells it, ``.<such a name>.tmp<pid>``, once process ``pid`` no longer runs. So a user's
  ``readme.txt``, ``notes.md`` or ``plan.tmp.txt`` stays;
* a folder the plan does not make, moved whole, when everything in it at any depth is the workflow's
  (an empty folder counts as the workflow's). A folder that holds anything else (a user's folder, or a
  workflow folder where a user left a file) stays; the workflow's files and folders in it are moved. A
  folder that cannot be listed stays too (what it holds is unknown); one on the plan's path is an error.

Links. An output folder, or a folder on the way to a planned path, may be a link (the Megatron folder on
a larger disk): it is followed, and the link itself is never renamed, removed or rmdir'ed. Any other
link is an entry like a file, judged by its own name and moved as a link; what it points to is never
read, moved or deleted. Folders are known by device and inode, so two spellings of one folder (two
output folders linked to one place) are listed once, with the planned names of both.

Moves. One ``os.replace`` per entry. An entry on another file system than the stale folder (``EXDEV``:
a linked output folder on another disk) is copied, then removed, file by file
(:mod:`tokenmill.plan.copy_across`). So the stale folder stays the one place for all of it (rather than a
stale folder per file system, which trainers' globs and the bound would have to find), at the cost of
one copy of what crosses. A failed move or copy (a full disk) stops with one line naming the path; what was
not copied is whole where it was, a folder copied in part is recorded, and the rest moves on the next run
(beside it, ``.1``). The temporary a killed prune left is removed when a later run lists that folder in the
stale folder.

Record. :data:`MOVED_RECORD` holds one JSON object per line, one line per move, oldest first::

    {"run": 4, "time": "2026-11-27T19:43:37Z", "from": "DATA/packed/b.shard3.pbin",
     "to": "DATA/stale/packed/b.shard3.pbin"}

(each on one line; ``DATA`` the data folder, :data:`~tokenmill.plan.layout.DATA_FOLDER`).

``run`` numbers the prune runs that moved something (1, 2, ...); names are JSON strings as
``json.dumps(..., ensure_ascii=False)`` writes them, readable UTF-8, with a newline or other control
character escaped (``\\n``), as are U+0085, U+2028 and U+2029 (so no line reader splits a record), and a
byte that is not UTF-8 written as Python's ``surrogateescape`` code point (``\\udcff`` for byte 0xFF):
``os.fsencode(json.loads(line)["from"])`` gives back the name's bytes. :func:`read_moves` parses the
record; lines of the format before this one (``FROM -> TO``) are read as run 0. The workflow's stamp
(:func:`last_run_stamp`) lists the paths the last run moved, one a line, each spelled as in the record
without the quotes (:func:`escaped`).

Bound. :func:`drop_old_runs` keeps the moves of the last ``keep_runs`` runs that moved something (the
config's ``keep_stale_runs``, default 3; ``null``/``all``: keep everything) and deletes the rest, oldest
run first: it deletes only paths its records name, only below ``<stale folder>/<output folder>/``, never
through a link inside the stale folder, never a path a kept record names or holds (a later move into an
earlier move's folder stays); a moved link is deleted as a link. Files a user put in the stale folder
are never deleted. The lines of the dropped runs leave the record (a path that could not be deleted, or
lies behind a link, keeps its line).

Algorithm and cost. The plan's paths and the folders on the way to them are grouped by the (device,
inode) of the folder that holds them: one ``stat`` per distinct folder of the plan. Each output folder
is walked top-down, one ``scandir`` per folder (links followed only on the plan's path): a planned entry
is kept, a folder on the plan's path is descended into, an unplanned folder is listed to its depth in
one ``scandir`` per folder, then judged children before parents, and the shallowest folders that are
all the workflow's move whole. Each move costs one rename (or one copy per file across file systems);
free ``.N`` names come from one ``scandir`` per target folder and a set; emptied folders are found by
counting each folder's entries (one ``rmdir`` per emptied folder). The bound reads the record once and
deletes each dropped path once. So a run is O(entries + moves) system calls (and an O(n log n) sort of
each folder's names): 20,000 stale files in one folder move in about a second (bench/RESULTS.md).
"""

from __future__ import annotations

import errno
import json
import os
import re
import stat
import time
from pathlib import Path
from typing import NamedTuple

from tokenmill.errors import TokenmillError
from tokenmill.files.atomic import atomic_output, discard, process_running
from tokenmill.plan.copy_across import copy_across, is_abandoned_copy
from tokenmill.plan.layout import OUTPUT_FOLDERS, STALE_FOLDER, stale_path

__all__ = ["OUTPUT_FOLDERS", "OUTPUT_SUFFIXES", "OUTPUT_NAMES", "STALE_FOLDER", "MOVED_RECORD", "last_run_stamp",
           "Move", "is_output_name", "escaped", "stale_paths", "move_stale", "read_moves", "drop_old_runs"]

# The endings of the workflow's file names: a .pbin and its sidecar, Megatron's pair, datatrove's files,
# OLMo-core's parts and label masks, stamps, report pages, the index caches' files (md5-named), a packed index's
# descriptions (tokenmill.best_fit.packed_index).
OUTPUT_SUFFIXES = (".pbin", ".meta.json", ".bin", ".idx", ".ds", ".ds.index", ".ds.metadata", ".ds.loss", ".ok",
                   ".html", ".npy", ".csv.gz", "-description.txt", "-tokenmill_fingerprint.json", "-description.json")
# Whole names the workflow gives files: OLMo's metadata.json, a cache folder's hand-off files, a Megatron
# tokenizer folder's files, an OLMo-core work dir's config fragment (tokenmill.best_fit.olmo_cache), and the stamp
# Snakemake writes in a directory() output.
OUTPUT_NAMES = frozenset({"metadata.json", "megatron_args.txt", "sequences_per_dataset.json", "tokenizer.json",
                          "tokenizer_config.json", "tokenmill-olmo-packing.yaml", ".snakemake_timestamp"})
# tokenmill.files.atomic.temporary_name: ".<final name>.tmp<pid>"
_TEMPORARY = re.compile(r"\.(.+)\.tmp([0-9]+)", re.DOTALL)
MOVED_RECORD = f"{STALE_FOLDER}/MOVED.txt"


def last_run_stamp(key: str) -> str:
    """The workflow's prune stamp of the config whose record is ``key``
    (:class:`tokenmill.plan.records.ConfigIdentity`): what its last prune moved; one per config, so that configs
    run in turn in one folder do not rerun each other's prune."""
    return f"{STALE_FOLDER}/moved-last-run.{key}.txt"

# Characters that some line readers (str.splitlines) take as line ends and JSON leaves as they are.
_LINE_BREAKS = {"\x85": "\\u0085", "\u2028": "\\u2028", "\u2029": "\\u2029"}


class Move(NamedTuple):
    """One line of :data:`MOVED_RECORD`: the prune run (0: a line of the earlier ``FROM -> TO`` format),
    its UTC time, and the paths, relative to the workflow folder (``target`` empty where unknown)."""

    run: int
    time: str
    source: str
    target: str


def is_output_name(name: str) -> bool:
    """Whether a file called ``name`` is named like one of the workflow's outputs, or like the temporary
    of one (``.<name>.tmp<pid>``, whatever the process)."""
    match = _TEMPORARY.fullmatch(name)
    if match:
        name = match[1]
    return name in OUTPUT_NAMES or name.endswith(OUTPUT_SUFFIXES)


def _is_ours(name: str) -> bool:
    """An entry that prune may move: named like an output, or a temporary of one whose writer is gone
    (a writer still running, a pack started by hand, keeps its file)."""
    match = _TEMPORARY.fullmatch(name)
    if match:
        pid = int(match[2])
        return is_output_name(name) and not (0 < pid < 2**31 and process_running(pid))
    return is_output_name(name)


def escaped(path: str) -> str:
    """``path`` as a JSON string spells it, without the quotes: itself for a plain name; a control
    character, U+0085, U+2028 or U+2029 escaped, a byte that is not UTF-8 (``surrogateescape``) as
    ``\\udcXX``; ``json.loads(f'"{escaped(path)}"') == path``."""
    return _readable(json.dumps(path, ensure_ascii=False)[1:-1])


def _readable(text: str) -> str:
    """JSON text (from ``ensure_ascii=False``) with the line breaks JSON leaves and the lone surrogates of
    undecodable bytes escaped: valid UTF-8 on one line, and the same JSON value."""
    for char, escape in _LINE_BREAKS.items():
        text = text.replace(char, escape)
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


# ---- What the output folders hold beyond the plan --------------------------------------------------


class _Listing(NamedTuple):
    stale: list[str]  # the entries to move, in walk order
    entries: dict[str, int]  # each folder walked on the plan's path: its number of entries
    parents: dict[str, str]  # such a folder → the one it was reached from


def _folder_key(path: Path) -> tuple[int, int] | None:
    """(device, inode) of the folder at ``path``, links followed; None where there is no folder."""
    try:
        info = os.stat(path)
    except (OSError, ValueError):  # missing, unreachable, a name the system cannot take
        return None
    return (info.st_dev, info.st_ino) if stat.S_ISDIR(info.st_mode) else None


def _names_by_folder(paths: set[str], root: Path) -> dict[tuple[int, int], set[str]]:
    """The names of ``paths`` grouped by the folder that holds them, a folder known by (device, inode):
    two spellings of one folder share their names. One ``stat`` per distinct folder."""
    by_parent: dict[str, set[str]] = {}
    for path in paths:
        parent, name = os.path.split(path)
        by_parent.setdefault(parent, set()).add(name)
    by_key: dict[tuple[int, int], set[str]] = {}
    for parent, names in by_parent.items():
        key = _folder_key(root / parent)
        if key is not None:
            by_key.setdefault(key, set()).update(names)
    return by_key


def _scan(folder: Path, shown: str) -> list[os.DirEntry]:
    """The entries of ``folder``, sorted by name (so that moves and records come in one order).

    Raises:
        TokenmillError: the folder cannot be listed.
    """
    try:
        with os.scandir(folder) as entries:
            return sorted(entries, key=lambda entry: entry.name)
    except OSError as exc:
        raise TokenmillError(f"{escaped(shown)}: cannot list this folder ({exc.strerror}); prune moved nothing "
                             f"from it") from None


def _walk(planned: list[str], root: Path) -> _Listing:
    """The entries to move (see the module docstring) and the counts that tell emptied folders."""
    planned_set = {os.path.normpath(path) for path in planned}
    through = {str(parent) for path in planned_set for parent in Path(path).parents if str(parent) != "."}
    planned_names = _names_by_folder(planned_set, root)
    through_names = _names_by_folder(through, root)
    # every folder on the plan's path holds a planned path or a folder on the way to one: never moved whole
    protected = planned_names.keys() | through_names.keys()
    listing = _Listing([], {}, {})
    seen: set[tuple[int, int]] = set()

    def walk(folder: str, parent: str | None) -> None:  # depth: that of the plan's paths
        key = _folder_key(root / folder)
        if key is None or key in seen:  # missing, or listed already under another spelling
            return
        seen.add(key)
        entries = _scan(root / folder, folder)
        listing.entries[folder] = len(entries)
        if parent is not None:
            listing.parents[folder] = parent
        for entry in entries:
            path = os.path.join(folder, entry.name)
            if entry.name in planned_names.get(key, ()):
                continue
            if entry.name in through_names.get(key, ()) and entry.is_dir():  # a link too: the plan writes through it
                walk(path, folder)
            elif entry.is_dir(follow_symlinks=False):
                listing.stale.extend(_workflow_entries(root, path, protected))
            elif _is_ours(entry.name):
                listing.stale.append(path)  # (another file, the user's own, stays where it is)

    for folder in OUTPUT_FOLDERS:
        walk(folder, None)
    return listing


def _workflow_entries(root: Path, top: str, protected: set[tuple[int, int]]) -> list[str]:
    """What to move of the unplanned folder ``top``: itself when everything below it is the workflow's,
    else the workflow's files and such folders in it, at any depth. Links are never followed; a folder
    of the plan reached another way (``protected``) is nobody's to move. Iterative: any depth."""
    order: list[str] = []  # the real folders below top, in pre-order
    files: dict[str, list[str]] = {}  # folder → its entries of the workflow's (files, links)
    subfolders: dict[str, list[str]] = {}
    whole: dict[str, bool] = {}  # folder → holds nothing but the workflow's files (its own level)
    stack = [top]
    while stack:
        folder = stack.pop()
        order.append(folder)
        ours, below, only_ours = [], [], True
        try:
            entries = _scan(root / folder, folder)
        except TokenmillError:  # a folder nobody may list: what it holds is unknown, so it stays
            entries, only_ours = [], False
        for entry in entries:
            path = os.path.join(folder, entry.name)
            if entry.is_dir(follow_symlinks=False):
                if _folder_key(Path(entry.path)) in protected:
                    only_ours = False
                else:
                    below.append(path)
            elif _is_ours(entry.name):
                ours.append(path)
            else:
                only_ours = False
        files[folder], subfolders[folder], whole[folder] = ours, below, only_ours
        stack.extend(reversed(below))
    for folder in reversed(order):  # children before parents
        whole[folder] = whole[folder] and all(whole[sub] for sub in subfolders[folder])
    moves, stack = [], [top]
    while stack:  # the shallowest whole folders, and the workflow's files of the others
        folder = stack.pop()
        if whole[folder]:
            moves.append(folder)
            continue
        moves += files[folder]
        stack.extend(reversed(subfolders[folder]))
    return moves


def stale_paths(planned: list[str], root: str | os.PathLike = ".") -> list[str]:
    """The entries of the output folders under ``root`` that the plan (``planned``, paths relative to
    ``root``) does not make and that are the workflow's (module docstring), relative to ``root``, in walk
    order: output folders in :data:`OUTPUT_FOLDERS` order, names sorted, a stale folder one entry.

    Raises:
        TokenmillError: a folder that cannot be listed.
    """
    return _walk(planned, Path(root)).stale


# ---- Moving them -----------------------------------------------------------------------------------


class _Targets:
    """Free names under :data:`STALE_FOLDER`: each target folder is listed once and its names kept in a
    set (a linear probe of the ``.N`` suffixes costs no system call)."""

    def __init__(self, root: Path):
        self.root = root
        self.names: dict[str, set[str]] = {}

    def free(self, path: str) -> str:
        """The first free place under the stale folder for ``path`` (in an output folder), taken from now on.

        Raises:
            TokenmillError: the target folder cannot be made or listed.
        """
        folder, name = os.path.split(stale_path(path))  # path: in an output folder
        names = self._names(folder)
        candidate, number = name, 0
        while candidate in names:  # an earlier move's: kept
            number += 1
            candidate = f"{name}.{number}"
        names.add(candidate)
        return os.path.join(folder, candidate)

    def _names(self, folder: str) -> set[str]:
        if folder not in self.names:
            try:
                os.makedirs(self.root / folder, exist_ok=True)
            except OSError as exc:
                raise TokenmillError(f"{escaped(folder)}: cannot make this folder for the files of an earlier plan "
                                     f"({exc.strerror}); nothing more was moved") from None
            names = set()
            for entry in _scan(self.root / folder, folder):
                if is_abandoned_copy(entry.name):
                    discard(None, Path(entry.path))  # a copy that a killed prune left half-made
                else:
                    names.add(entry.name)
            self.names[folder] = names
        return self.names[folder]


def _move(root: Path, path: str, target: str) -> None:
    """Rename ``path`` to ``target``; across file systems, copy then remove
    (:func:`~tokenmill.plan.copy_across.copy_across`).

    Raises:
        TokenmillError: the move or copy fails.
    """
    try:
        os.replace(root / path, root / target)
        return
    except OSError as exc:
        if exc.errno != errno.EXDEV:
            raise TokenmillError(f"{escaped(path)}: cannot move it to {escaped(target)} ({exc.strerror}); it stays "
                                 f"where it is") from None
    try:
        copy_across(root / path, root / target)
    except OSError as exc:
        raise TokenmillError(f"{escaped(path)}: cannot copy it to {escaped(target)} on the other file system "
                             f"({exc.strerror}); what was not copied stays where it is") from None


def _remove_emptied(root: Path, listing: _Listing, moved_from: set[str]) -> None:
    """Remove the folders on the plan's path that the moves emptied (and so their parents, in turn);
    never a link, never a folder a planned path or anything else is still in. One ``rmdir`` each."""
    for folder in sorted(moved_from, key=lambda folder: -folder.count(os.sep)):
        while folder in listing.entries and listing.entries[folder] == 0:
            listing.entries[folder] = -1  # (tried once)
            if os.path.islink(root / folder):  # a linked output folder: the link stays, and so its parents
                break
            try:
                os.rmdir(root / folder)
            except OSError:  # something appeared meanwhile: it stays
                break
            folder = listing.parents.get(folder)
            if folder is None:
                break
            listing.entries[folder] -= 1


def _append_records(root: Path, moves: list[Move]) -> None:
    """Append ``moves`` to :data:`MOVED_RECORD`, one JSON line each (after a line a kill left unended).

    Raises:
        TokenmillError: the record cannot be written.
    """
    try:
        with open(root / MOVED_RECORD, "a+b") as record:
            if record.tell():
                record.seek(-1, os.SEEK_END)
                if record.read(1) != b"\n":
                    record.write(b"\n")
            record.write("".join(f"{_record_line(move)}\n" for move in moves).encode("utf-8"))
    except OSError as exc:
        raise TokenmillError(f"{MOVED_RECORD}: cannot record the {len(moves)} move(s) of this run ({exc.strerror}); "
                             f"they are done") from None


def _record_line(move: Move) -> str:
    return _readable(json.dumps({"run": move.run, "time": move.time, "from": move.source, "to": move.target},
                                ensure_ascii=False))


def move_stale(planned: list[str], root: str | os.PathLike = ".") -> list[str]:
    """Move :func:`stale_paths` under :data:`STALE_FOLDER` (beside what an earlier move left at the same
    place, under the first free ``.N`` suffix), remove the folders that leaves empty, and append the
    moves to :data:`MOVED_RECORD` as one run; return the paths moved.

    Raises:
        TokenmillError: a folder that cannot be listed, or a move that fails (the ones before it are
            done and recorded; a folder copied in part across file systems is recorded too).
    """
    root = Path(root)
    listing = _walk(planned, root)
    if not listing.stale:
        return []
    run = max((move.run for move in read_moves(root)), default=0) + 1
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    targets = _Targets(root)
    moved: list[Move] = []
    try:
        for path in listing.stale:
            target = targets.free(path)
            try:
                _move(root, path, target)
            except TokenmillError:
                if os.path.lexists(root / target):  # a folder copied in part: what arrived is recorded
                    moved.append(Move(run, now, path, target))
                raise
            moved.append(Move(run, now, path, target))
            folder = os.path.dirname(path)
            if folder in listing.entries:
                listing.entries[folder] -= 1
    finally:
        if moved:
            _append_records(root, moved)
            _remove_emptied(root, listing, {os.path.dirname(move.source) for move in moved})
    return [move.source for move in moved]


# ---- The record, and the bound on the stale folder --------------------------------------------------


def _record_lines(root: Path) -> list[tuple[Move, str]]:
    """Each line of :data:`MOVED_RECORD` (an empty list when there is none), parsed, with its text."""
    try:
        text = (root / MOVED_RECORD).read_text(encoding="utf-8", errors="surrogateescape")
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise TokenmillError(f"{MOVED_RECORD}: cannot read it ({exc.strerror})") from None
    lines = []
    for line in text.split("\n"):  # never str.splitlines: a name may hold U+2028 and others
        if line:
            lines.append((_parse(line), line))
    return lines


def _parse(line: str) -> Move:
    """A record line; a line of the earlier ``FROM -> TO`` format is run 0, one that is neither (cut short
    by a kill) run 0 with no target."""
    if line.startswith("{"):
        try:
            fields = json.loads(line)
            return Move(int(fields["run"]), str(fields["time"]), str(fields["from"]), str(fields["to"]))
        except (ValueError, KeyError, TypeError):
            return Move(0, "", line, "")
    source, separator, target = line.rpartition(f" -> {STALE_FOLDER}/")
    return Move(0, "", source, f"{STALE_FOLDER}/{target}") if separator else Move(0, "", line, "")


def read_moves(root: str | os.PathLike = ".") -> list[Move]:
    """The moves :data:`MOVED_RECORD` under ``root`` lists, oldest first (module docstring, "Record").

    Raises:
        TokenmillError: the record exists but cannot be read.
    """
    return [move for move, _ in _record_lines(Path(root))]


def _deletable(target: str) -> bool:
    """Whether a recorded target is a path prune may delete: below ``<stale folder>/<output folder>/``, with no
    ``..`` (a record edited by hand, or from elsewhere, never reaches another place)."""
    parts = Path(target).parts
    output_names = {os.path.basename(folder) for folder in OUTPUT_FOLDERS}
    return (len(parts) >= 4 and parts[:2] == ("data", "stale") and parts[2] in output_names
            and ".." not in parts and os.path.normpath(target) == target)


def _delete(root: Path, target: str, kept: set[str], holding_kept: set[str]) -> None:
    """Delete the recorded ``target`` (a link as a link), except what the kept records name inside it."""
    path = root / target
    if path.is_symlink() or not path.is_dir():
        path.unlink(missing_ok=True)
    elif target not in holding_kept:
        _remove_tree(path)
    else:  # a later, kept move lies inside: delete around it (depth: that of the kept paths)
        for entry in _scan(path, target):
            child = os.path.join(target, entry.name)
            if child not in kept:
                _delete(root, child, kept, holding_kept)


def _remove_tree(path: Path) -> None:
    """Delete the folder ``path`` and all it holds, a link as a link (never followed). Iterative, so any
    depth (``shutil.rmtree`` recurses, and stops past ~1,000 levels)."""
    folders = []
    stack = [str(path)]
    while stack:
        folder = stack.pop()
        folders.append(folder)
        with os.scandir(folder) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    stack.append(entry.path)
                else:
                    os.unlink(entry.path)
    for folder in reversed(folders):  # (pre-order reversed: each folder after all below it)
        os.rmdir(folder)


def drop_old_runs(keep_runs: int | None, root: str | os.PathLike = ".") -> list[str]:
    """Keep the moves of the last ``keep_runs`` runs in :data:`MOVED_RECORD` and delete the others' files
    from :data:`STALE_FOLDER`, oldest first (module docstring, "Bound"); ``None`` keeps everything.
    Rewrites the record without the deleted moves; returns the paths deleted.

    Raises:
        TokenmillError: ``keep_runs`` below 1, the record cannot be read or written, or a path cannot be
            deleted (the others are; its record stays).
    """
    if keep_runs is None:
        return []
    if keep_runs < 1:
        raise TokenmillError(f"keep_stale_runs: {keep_runs}: keep at least 1 run (rm -r {STALE_FOLDER} frees "
                             f"everything)")
    root = Path(root)
    lines = _record_lines(root)
    runs = sorted({move.run for move, _ in lines})
    if len(runs) <= keep_runs:
        return []
    kept_runs = set(runs[-keep_runs:])
    kept = {os.path.normpath(move.target) for move, _ in lines if move.run in kept_runs and move.target}
    holding_kept = {str(parent) for path in kept for parent in Path(path).parents}
    stale_real = os.path.realpath(root / STALE_FOLDER)
    deleted, failures, remaining = [], [], []
    for move, line in lines:
        if move.run in kept_runs:
            remaining.append(line)
            continue
        target = move.target
        if not target or not _deletable(target) or target in kept or \
                any(str(parent) in kept for parent in Path(target).parents):
            continue  # nothing of prune's to delete, or what a kept move holds: the line goes
        if os.path.commonpath([os.path.realpath(root / os.path.dirname(target)), stale_real]) != stale_real:
            remaining.append(line)  # reached through a link out of the stale folder: never deleted
            continue
        try:
            _delete(root, target, kept, holding_kept)
            deleted.append(target)
        except (OSError, TokenmillError) as exc:
            remaining.append(line)
            failures.append(f"{escaped(target)} ({getattr(exc, 'strerror', None) or exc})")
    with atomic_output(root / MOVED_RECORD) as temporary:
        temporary.write_text("".join(f"{line}\n" for line in remaining), encoding="utf-8",
                             errors="surrogateescape")
    _remove_emptied_stale(root, deleted)
    if failures:
        raise TokenmillError(f"{STALE_FOLDER}: cannot delete {failures[0]}" +
                             (f" and {len(failures) - 1} other path(s)" if len(failures) > 1 else "") +
                             "; its record stays, the next run tries again")
    return deleted


def _remove_emptied_stale(root: Path, deleted: list[str]) -> None:
    """Remove the folders of ``<stale folder>/<output folder>/...`` that the deletions emptied, deepest first,
    one ``rmdir`` each (it fails, and so leaves, a folder that still holds anything; never a link)."""
    folders = {str(parent) for path in deleted for parent in Path(path).parents
               if len(parent.parts) > len(Path(STALE_FOLDER).parts)}
    for folder in sorted(folders, key=lambda folder: -folder.count(os.sep)):
        if not os.path.islink(root / folder):
            try:
                os.rmdir(root / folder)
            except OSError:
                pass
