"""Each config's plan, recorded under its name, so that several configs share one data folder.

A team runs several configs in one working folder (pretraining and SFT, one per corpus, ...). When a run starts
(the Snakefile's ``onstart``, so that a run that fails still has its record) and again at its end, ``tokenmill
prune`` writes ``<name>.json`` in :data:`~tokenmill.plan.layout.PLANS_FOLDER` (the config's ``name``, by default its
file's stem): what the plan makes
(:meth:`tokenmill.plan.outputs.Outputs.all_targets`), the identity of each tokenizer folder it writes, and of each
output another config could make differently (:meth:`tokenmill.plan.commands.Commands.output_identities`: a digest of
its job's options and planned input paths). Then:

* ``prune`` keeps every path another config's record names, as if its own plan made it: a config's run never
  moves another's outputs, whichever ran last, and a file both make is shared;
* planning refuses, in one line naming both configs, a tokenizer folder
  (:func:`~tokenmill.plan.layout.hf_tokenizer_folder`) that another config writes from another tokenizer file or
  EOD: each run would rewrite it, and a job would read whichever ran last;
* planning refuses likewise an output (a build's ``.pbin``, a cache folder, ...) that another config makes
  from other inputs or options: two configs naming a dataset ``a`` each on its own files. An output both make
  from the same inputs and options is shared. A record of the older format ``tokenmill-plan/1`` has no output
  identities: nothing of it is refused.

A record is plain JSON, written atomically; deleting the record ``<name>.json`` of a config no longer used
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
           "targets_of_other_plans", "tokenizer_folder_conflict", "output_conflict", "record_plan",
           "prune_for_config"]

PLAN_RECORD_FORMAT = "tokenmill-plan/2"
READ_FORMATS = ("tokenmill-plan/1", PLAN_RECORD_FORMAT)  # /1: without "outputs"


def plan_record_path(name: str) -> str:
    """``<name>.json`` in :data:`~tokenmill.plan.layout.PLANS_FOLDER`."""
    return f"{PLANS_FOLDER}/{name}.json"


def write_plan_record(name: str, targets: list[str], tokenizer_folders: dict[str, str],
                      root: str | os.PathLike = ".", outputs: dict[str, str] | None = None) -> Path:
    """Record what the plan ``name`` makes (module docstring), atomically; returns the record's path.

    Raises:
        OSError: a record that cannot be written.
    """
    path = Path(root) / plan_record_path(name)
    path.parent.mkdir(parents=True, exist_ok=True)
    record = {"format": PLAN_RECORD_FORMAT, "name": name, "targets": sorted(set(targets)),
              "tokenizer_folders": dict(sorted(tokenizer_folders.items())),
              "outputs": dict(sorted((outputs or {}).items()))}
    with atomic_output(path) as temporary:
        temporary.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    return path


def read_plan_records(root: str | os.PathLike = ".") -> dict[str, dict]:
    """Every record in :data:`~tokenmill.plan.layout.PLANS_FOLDER` by name.

    Raises:
        TokenmillError: a record that is not one (naming it: delete or fix it).
    """
    records = {}
    for path in sorted((Path(root) / PLANS_FOLDER).glob("*.json")):
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
            valid = record.get("format") in READ_FORMATS and isinstance(record.get("targets"), list) and \
                isinstance(record.get("tokenizer_folders"), dict) and isinstance(record.setdefault("outputs", {}), dict)
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


def output_conflict(name: str, outputs: dict[str, str], root: str | os.PathLike = ".") -> str | None:
    """Why an output of plan ``name`` (:meth:`tokenmill.plan.commands.Commands.output_identities`) clashes with another
    config's: the first, by path, that another config's record makes from other inputs or options; or None.

    Raises:
        TokenmillError: an unreadable record.
    """
    for other, record in read_plan_records(root).items():
        if other == name:
            continue
        for path in sorted(outputs):
            theirs = record["outputs"].get(path)
            if theirs is not None and theirs != outputs[path]:
                return (f"{path} is made by config '{other}' ({plan_record_path(other)}) and by this config '{name}' "
                        f"from other inputs or options: each run would remake it, and a job would read whichever ran "
                        f"last; give the dataset (or blend, or SFT set) another name in one of the two")
    return None


def record_plan(plan, name: str, root: str | os.PathLike = ".") -> Path:
    """Record the plan ``plan`` of the config ``name`` (:func:`write_plan_record`): at the start of a run (the
    Snakefile's ``onstart``), so that a run that fails before its prune keeps its outputs from another's.

    Raises:
        OSError: a record that cannot be written.
    """
    return write_plan_record(name, plan.outputs.all_targets(), plan.commands.tokenizer_folder_identities(), root,
                             plan.commands.output_identities())


def prune_for_config(plan, name: str, keep_runs: int | None, dry_run: bool = False,
                     root: str | os.PathLike = ".") -> tuple[list[str], list[str]]:
    """``tokenmill prune`` for the config ``name`` whose :class:`~tokenmill.plan.Plan` is ``plan``: move what no
    config's plan makes (its own now, the others' as recorded) to the stale folder, record its plan, and bound
    the stale folder to the moves of the last ``keep_runs`` runs (None: all). Returns ``(moved, deleted)``; with
    ``dry_run``, what would move and nothing done.

    Raises:
        TokenmillError: an unreadable record, a folder that cannot be listed, or a move that fails.
    """
    targets = plan.outputs.all_targets()
    kept = targets + targets_of_other_plans(name, root)
    if dry_run:
        return stale_paths(kept, root), []
    moved = move_stale(kept, root)
    write_plan_record(name, targets, plan.commands.tokenizer_folder_identities(), root,
                      plan.commands.output_identities())
    return moved, drop_old_runs(keep_runs, root)
