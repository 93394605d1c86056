"""Each config's plan, recorded under its name, so that several configs share one data folder.

A team runs several configs in one working folder (pretraining and SFT, one per corpus, ...). After each run,
``tokenmill prune`` writes ``data/plans/<name>.json`` (the config's ``name``, by default its file's stem): what
the plan makes (:meth:`tokenmill.plan.Plan.all_targets`) and the identity of each tokenizer folder it writes.
Then:

* ``prune`` keeps every path another config's record names, as if its own plan made it: a config's run never
  moves another's outputs, whichever ran last, and a file both make is shared;
* planning refuses, in one line naming both configs, a tokenizer folder (``data/megatron/tokenizers/<t>/``)
  that another config writes from another tokenizer file or EOD: each run would rewrite it, and a job would
  read whichever ran last.

A record is plain JSON, written atomically; deleting ``data/plans/<name>.json`` of a config no longer used
lets ``prune`` move what only it made. Cost: one read of each record per plan and per prune.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from tokenmill.errors import TokenmillError
from tokenmill.files.atomic import atomic_output
from tokenmill.plan.layout import PLANS_FOLDER
from tokenmill.plan.prune import drop_old_runs, move_stale, stale_paths

__all__ = ["PLANS_FOLDER", "PLAN_RECORD_FORMAT", "plan_record_path", "write_plan_record", "read_plan_records",
           "targets_of_other_plans", "tokenizer_folder_conflict", "prune_for_config"]

PLAN_RECORD_FORMAT = "tokenmill-plan/1"


def plan_record_path(name: str) -> str:
    """``data/plans/<name>.json``."""
    return f"{PLANS_FOLDER}/{name}.json"


def write_plan_record(name: str, targets: list[str], tokenizer_folders: dict[str, str],
                      root: str | os.PathLike = ".") -> Path:
    """Record what the plan ``name`` makes (module docstring), atomically; returns the record's path."""
    path = Path(root) / plan_record_path(name)
    path.parent.mkdir(parents=True, exist_ok=True)
    record = {"format": PLAN_RECORD_FORMAT, "name": name, "targets": sorted(set(targets)),
              "tokenizer_folders": dict(sorted(tokenizer_folders.items()))}
    with atomic_output(path) as temporary:
        temporary.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    return path


def read_plan_records(root: str | os.PathLike = ".") -> dict[str, dict]:
    """Every record in ``data/plans/`` by name.

    Raises:
        TokenmillError: a record that is not one (naming it: delete or fix it).
    """
    records = {}
    for path in sorted((Path(root) / PLANS_FOLDER).glob("*.json")):
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
            valid = record.get("format") == PLAN_RECORD_FORMAT and isinstance(record.get("targets"), list) and \
                isinstance(record.get("tokenizer_folders"), dict)
        except (OSError, ValueError, AttributeError):
            valid = False
        if not valid:
            raise TokenmillError(f"{path}: not a tokenmill plan record (delete it if no config uses it)")
        records[path.stem] = record
    return records


def targets_of_other_plans(name: str, root: str | os.PathLike = ".") -> list[str]:
    """The paths the records of every config but ``name`` make.

    Raises:
        TokenmillError: an unreadable record.
    """
    return [target for other, record in read_plan_records(root).items() if other != name
            for target in record["targets"]]


def tokenizer_folder_conflict(name: str, tokenizer_folders: dict[str, str],
                              root: str | os.PathLike = ".") -> str | None:
    """Why a tokenizer folder of plan ``name`` clashes with another config's (module docstring), or None.

    Raises:
        TokenmillError: an unreadable record.
    """
    for other, record in read_plan_records(root).items():
        if other == name:
            continue
        for folder, identity in tokenizer_folders.items():
            theirs = record["tokenizer_folders"].get(folder)
            if theirs is not None and theirs != identity:
                return (f"{folder} is written by config '{other}' ({plan_record_path(other)}) from {theirs}, and by "
                        f"this config '{name}' from {identity}; give one of the two tokenizers another name")
    return None


def prune_for_config(plan, name: str, keep_runs: int | None, dry_run: bool = False,
                     root: str | os.PathLike = ".") -> tuple[list[str], list[str]]:
    """``tokenmill prune`` for the config ``name`` whose :class:`~tokenmill.plan.Plan` is ``plan``: move what no
    config's plan makes (its own now, the others' as recorded) to ``data/stale/``, record its plan, and bound
    ``data/stale/`` to the moves of the last ``keep_runs`` runs (None: all). Returns ``(moved, deleted)``; with
    ``dry_run``, what would move and nothing done.

    Raises:
        TokenmillError: an unreadable record, a folder that cannot be listed, or a move that fails.
    """
    targets = plan.all_targets()
    kept = targets + targets_of_other_plans(name, root)
    if dry_run:
        return stale_paths(kept, root), []
    moved = move_stale(kept, root)
    write_plan_record(name, targets, plan.tokenizer_folder_identities(), root)
    return moved, drop_old_runs(keep_runs, root)
