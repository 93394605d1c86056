"""Each config's plan, recorded under its own identity, so that several configs share one data folder.

A team runs several configs in one working folder (pretraining and SFT, one per corpus, one per person, ...). A
config is known by its file's resolved path (links resolved; relative to the working folder where it lies inside
it, absolute otherwise; with several ``--configfile`` files, all of them in order): :func:`config_identity`. Two
``pretrain.yaml`` in two folders are two configs; two names of one file (a link) are one.
When a run starts (the Snakefile's ``onstart``, so that a run that fails still has its record) and again at its
end, ``tokenmill prune`` writes ``<label>-<digest>.json`` in :data:`~tokenmill.plan.layout.PLANS_FOLDER`: the label
is the config's ``name`` (by default its file's stem), for a person to read; the digest is the first 12 hex digits
of the SHA-256 of the resolved path(s), which the record holds too (``config``). The identity is the path alone: a
record of the same path under another label (``name`` edited) is replaced. The record holds what the plan makes
(:meth:`tokenmill.plan.outputs.Outputs.all_targets`, and a merged build's parts, kept or not), the identity of each
tokenizer folder it writes, and of each output another config could make differently
(:meth:`tokenmill.plan.commands.Commands.output_identities`: a digest of its job's options and planned input paths).
Then:

* ``prune`` keeps every path another config's record names, as if its own plan made it: it moves what no record
  names, its own earlier plans' outputs (and workflow files of a config that was never recorded). A config's run
  never moves another's outputs, whichever ran last, and a file both make is shared;
* planning refuses, in one line naming both configs' files, a tokenizer folder
  (:func:`~tokenmill.plan.layout.hf_tokenizer_folder`) that another config writes from another tokenizer file or
  EOD: each run would rewrite it, and a job would read whichever ran last;
* planning refuses likewise an output (a build's ``.pbin``, a cache folder, ...) that another config makes
  from other inputs or options: two configs naming a dataset ``a`` each on its own files. An output both make
  from the same inputs and options is shared. A record of the format ``tokenmill-plan/1`` has no output
  identities: nothing of it is refused;
* ``snakemake --report`` refuses, in one line, a report page that its config's plan makes but that another recipe
  made (:func:`page_conflict`). A page is not refused at planning: two configs that share a build but not its page's
  options (``sampling.seq_lengths``, ``on_bad_line``, ``best_fit``...) each remake it when they run in turn, one
  verify and one page per alternation (a loud, cheap cost: not a new name for every build's page). But the page
  written last was made for one of them, and ``--report`` would embed it under the other's name without a word.
  So each page records its recipe (:meth:`tokenmill.plan.commands.Commands.page_recipes`) in itself, each record
  the recipes of its config's pages (``pages``), and a page whose recipe is not this config's is named with the
  config(s) whose record made it.

Moving the working folder (data and configs together) changes no identity: paths inside it are relative. Moving
or renaming a config file, or keeping it outside the working folder and moving that, makes it another config: its
first run records a new plan beside the old record, whose outputs stay where they are as another config's (shared,
so nothing is rebuilt); deleting the old record lets ``prune`` move what only it made.

Records of the formats before ``tokenmill-plan/3`` were named by the config file's stem alone and say nothing of
its path: such a record is read as another config's (labelled by its stem), never as this config's own, since two
files of one stem were indistinguishable. So its outputs are kept and its output identities still refuse a
different recipe; :func:`older_records` lists them for planning to name, and deleting one, once its config has
run under this version, lets ``prune`` move what only it made. Cost: one read of each record per plan and per
prune.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from tokenmill.errors import TokenmillError
from tokenmill.files.atomic import atomic_output
from tokenmill.plan.layout import PLANS_FOLDER
from tokenmill.plan.prune import drop_old_runs, move_stale, stale_paths

__all__ = ["PLANS_FOLDER", "PLAN_RECORD_FORMAT", "DEFAULT_CONFIG_FILE", "ConfigIdentity", "config_identity",
           "plan_record_path", "write_plan_record", "read_plan_records", "older_records", "targets_of_other_plans",
           "tokenizer_folder_conflict", "output_conflict", "page_conflict", "record_plan", "prune_for_config"]

PLAN_RECORD_FORMAT = "tokenmill-plan/3"
READ_FORMATS = ("tokenmill-plan/1", "tokenmill-plan/2", PLAN_RECORD_FORMAT)  # /1: no "outputs"; /1, /2: no "config"
DEFAULT_CONFIG_FILE = "config/config.yaml"  # the Snakefile's, when no --configfile is given


class ConfigIdentity(NamedTuple):
    """A config as its plan is recorded: ``key``, the record's name (``<label>-<digest>``), and ``paths``, its
    file(s) resolved (module docstring)."""

    key: str
    paths: tuple[str, ...]

    @property
    def label(self) -> str:
        """The readable part of the key: the config's ``name``, else its file's stem."""
        return self.key.rpartition("-")[0]

    def described(self) -> str:
        """The config for a message: its file(s)."""
        return " + ".join(self.paths)


def config_identity(config_files: Sequence[str | os.PathLike], name: str | None = None,
                    root: str | os.PathLike = ".") -> ConfigIdentity:
    """The identity of the config read from ``config_files`` (none: :data:`DEFAULT_CONFIG_FILE`) in the working
    folder ``root``, labelled ``name`` (else the first file's stem, links resolved)."""
    files = [os.fspath(path) for path in config_files] or [DEFAULT_CONFIG_FILE]
    real_root = os.path.realpath(root)
    paths = []
    for file in files:
        real = os.path.realpath(os.path.join(real_root, file))
        relative = os.path.relpath(real, real_root)
        paths.append(real if relative == os.pardir or relative.startswith(os.pardir + os.sep) else relative)
    digest = hashlib.sha256("\n".join(paths).encode("utf-8", "surrogateescape")).hexdigest()[:12]
    label = re.sub(r"[^A-Za-z0-9_.-]", "_", name or Path(paths[0]).stem) or "config"
    return ConfigIdentity(f"{label}-{digest}", tuple(paths))


def plan_record_path(key: str) -> str:
    """``<key>.json`` in :data:`~tokenmill.plan.layout.PLANS_FOLDER`."""
    return f"{PLANS_FOLDER}/{key}.json"


def write_plan_record(identity: ConfigIdentity, targets: list[str], tokenizer_folders: dict[str, str],
                      root: str | os.PathLike = ".", outputs: dict[str, str] | None = None,
                      pages: dict[str, str] | None = None) -> Path:
    """Record what the config ``identity``'s plan makes (module docstring), atomically, replacing a record of the
    same path under another label; returns the record's path.

    Raises:
        OSError: a record that cannot be written.
        TokenmillError: an unreadable record.
    """
    path = Path(root) / plan_record_path(identity.key)
    path.parent.mkdir(parents=True, exist_ok=True)
    record = {"format": PLAN_RECORD_FORMAT, "name": identity.key, "config": list(identity.paths),
              "targets": sorted(set(targets)), "tokenizer_folders": dict(sorted(tokenizer_folders.items())),
              "outputs": dict(sorted((outputs or {}).items())), "pages": dict(sorted((pages or {}).items()))}
    with atomic_output(path) as temporary:
        temporary.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    for key, other in read_plan_records(root).items():
        if key != identity.key and _is_own(other, identity):  # the config's earlier label
            (Path(root) / plan_record_path(key)).unlink(missing_ok=True)
    return path


def read_plan_records(root: str | os.PathLike = ".") -> dict[str, dict]:
    """Every record in :data:`~tokenmill.plan.layout.PLANS_FOLDER` by key (its file's stem); one of a format
    before ``tokenmill-plan/3`` without ``config``.

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


def older_records(root: str | os.PathLike = ".") -> list[str]:
    """The records of a format before ``tokenmill-plan/3`` (named by a file stem; module docstring), by path.

    Raises:
        TokenmillError: an unreadable record.
    """
    return [plan_record_path(key) for key, record in read_plan_records(root).items() if "config" not in record]


def _is_own(record: dict, identity: ConfigIdentity) -> bool:
    """Whether ``record`` is the config ``identity``'s: by its path(s); an older record is no config's own."""
    return record.get("config") == list(identity.paths)


def _others(identity: ConfigIdentity, root: str | os.PathLike) -> list[tuple[str, dict]]:
    """The records of every config but ``identity``, each with the config it is, as a message names it."""
    return [(_described(key, record), record) for key, record in read_plan_records(root).items()
            if not _is_own(record, identity)]


def _described(key: str, record: dict) -> str:
    """A recorded config for a message: its file(s) and record, or an older record's stem."""
    if "config" in record:
        return f"config {' + '.join(record['config'])} ({plan_record_path(key)})"
    return (f"config '{key}' ({plan_record_path(key)}, a record of an older tokenmill by file stem: delete it once "
            f"that config has run again)")


def targets_of_other_plans(identity: ConfigIdentity, root: str | os.PathLike = ".") -> list[str]:
    """The paths the records of every config but ``identity`` make.

    Raises:
        TokenmillError: an unreadable record.
    """
    return [target for _, record in _others(identity, root) for target in record["targets"]]


def tokenizer_folder_conflict(identity: ConfigIdentity, tokenizer_folders: dict[str, str],
                              root: str | os.PathLike = ".") -> str | None:
    """Why a tokenizer folder of the config ``identity`` clashes with another config's (module docstring), or None.

    Raises:
        TokenmillError: an unreadable record.
    """
    for other, record in _others(identity, root):
        for folder, made_from in tokenizer_folders.items():
            theirs = record["tokenizer_folders"].get(folder)
            if theirs is not None and theirs != made_from:
                return (f"{folder} is written by {other} from {theirs}, and by this config {identity.described()} "
                        f"from {made_from}; give one of the two tokenizers another name")
    return None


def output_conflict(identity: ConfigIdentity, outputs: dict[str, str], root: str | os.PathLike = ".") -> str | None:
    """Why an output of the config ``identity`` (:meth:`tokenmill.plan.commands.Commands.output_identities`) clashes
    with another config's: the first, by path, that another config's record makes from other inputs or options; or
    None.

    Raises:
        TokenmillError: an unreadable record.
    """
    for other, record in _others(identity, root):
        for path in sorted(outputs):
            theirs = record["outputs"].get(path)
            if theirs is not None and theirs != outputs[path]:
                return (f"{path} is made by {other} and by this config {identity.described()} from other inputs or "
                        f"options: each run would remake it, and a job would read whichever ran last; give the "
                        f"dataset (or blend, or SFT set) another name in one of the two")
    return None


def page_conflict(identity: ConfigIdentity, recipes: dict[str, str], made: dict[str, str | None], run_command: str,
                  root: str | os.PathLike = ".") -> str | None:
    """Why ``snakemake --report`` must not embed a page of the config ``identity`` (module docstring): the first, by
    path, of its pages ``recipes`` (:meth:`tokenmill.plan.commands.Commands.page_recipes`) whose recipe as the page
    records it (``made``: None for a page recording none, an older tokenmill's) is another, named with the
    config(s) whose record made it, and ``run_command``, the run that remakes it; or None. A page not in ``made``
    (not built) is Snakemake's to name.

    Raises:
        TokenmillError: an unreadable record.
    """
    for page in sorted(set(recipes) & set(made)):
        recorded = made[page]
        if recorded == recipes[page]:
            continue
        if recorded is None:
            made_for = "an older tokenmill (it records no recipe)"
        else:
            makers = [f"this config's last run ({plan_record_path(key)})" if _is_own(record, identity)
                      else _described(key, record) for key, record in read_plan_records(root).items()
                      if record.get("pages", {}).get(page) == recorded]
            made_for = " and ".join(makers) or "options that no config's record names now"
        return (f"{page} was made for {made_for}, not for this config {identity.described()}'s options, and the "
                f"report would show it as this config's; run `{run_command}` first")
    return None


def record_plan(plan, identity: ConfigIdentity, root: str | os.PathLike = ".") -> Path:
    """Record the plan ``plan`` of the config ``identity`` (:func:`write_plan_record`): at the start of a run (the
    Snakefile's ``onstart``), so that a run that fails before its prune keeps its outputs from another's.

    Raises:
        OSError: a record that cannot be written.
        TokenmillError: an unreadable record.
    """
    # a merged build's parts too, kept or not (keep_parts): a run that failed before its merge keeps them from
    # another config's prune, so that its rerun packs none of them again
    parts = [path for build in plan.units.builds for path in plan.outputs.part_files(build)]
    return write_plan_record(identity, plan.outputs.all_targets() + parts, plan.commands.tokenizer_folder_identities(),
                             root, plan.commands.output_identities(), plan.commands.page_recipes())



def prune_for_config(plan, identity: ConfigIdentity, keep_runs: int | None, dry_run: bool = False,
                     root: str | os.PathLike = ".") -> tuple[list[str], list[str]]:
    """``tokenmill prune`` for the config ``identity`` whose :class:`~tokenmill.plan.Plan` is ``plan``: move what no
    config's plan makes (its own now, the others' as recorded) to the stale folder, record its plan, and bound
    the stale folder to the moves of the last ``keep_runs`` runs (None: all). Returns ``(moved, deleted)``; with
    ``dry_run``, what would move and nothing done.

    Raises:
        TokenmillError: an unreadable record, a folder that cannot be listed, or a move that fails.
    """
    kept = plan.outputs.all_targets() + targets_of_other_plans(identity, root)
    if dry_run:
        return stale_paths(kept, root), []
    moved = move_stale(kept, root)
    record_plan(plan, identity, root)
    return moved, drop_old_runs(keep_runs, root)
