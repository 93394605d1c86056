"""The run alive in a working folder, so that a second run says so in one line.

Snakemake refuses a second run whose files overlap a live run's with a multi-line error that suggests ``--unlock``,
which, while the first run is alive, would let two runs write the same files. So the workflow keeps its own small
record, :data:`RUN_RECORD`: the Snakefile's ``onstart`` (a real run, Snakemake's own lock held) writes the run's
process id, host, the process's start (Linux's ``/proc/<pid>/stat`` start ticks, so that a reused pid is not taken
for the run), the config's file(s) and the UTC time it started; ``onsuccess`` and ``onerror`` remove it. Planning
(``common.smk``, before Snakemake's lock check) calls :func:`alive_run`: a record of a live process on this host
stops the run with :func:`alive_line` (a command that runs no job, such as a dry run or ``--report``, goes on with
it as a note; ``--unlock``, which would free the live run's files, stops too). A record left by a killed run (its
process gone, or another process under its pid) is stale and ignored, and the next run's ``onstart`` replaces it. A
record from another host cannot be checked from here and is left to Snakemake's lock. One run at a time per working
folder, whatever the configs: that is the cost (two configs of one folder run in turn, never at once), and what
keeps each run's prune from judging the other's half-made files.

Format: one JSON object, ``{"pid": 4242, "host": "node1", "process_start": 123456, "config": "pretrain.yaml",
"since": "2026-12-08T01:20:03Z"}``, written atomically. Cost: one small read per planning.
"""

from __future__ import annotations

import json
import os
import socket
import time
from pathlib import Path

from tokenmill.files.atomic import atomic_output, process_running

__all__ = ["RUN_RECORD", "mark_running", "alive_run", "alive_line", "clear_running"]

RUN_RECORD = ".snakemake/tokenmill-run.json"


def _process_start(pid: int) -> int | None:
    """The start of process ``pid`` in clock ticks since boot (Linux), or None where unknown."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return int(stat.read().rsplit(b")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return None


def mark_running(config: str, root: str | os.PathLike = ".") -> Path:
    """Record this process as the run of ``config`` (its file(s), as a message names them) alive in ``root``.

    Raises:
        OSError: the record cannot be written.
    """
    path = Path(root) / RUN_RECORD
    path.parent.mkdir(parents=True, exist_ok=True)
    record = {"pid": os.getpid(), "host": socket.gethostname(), "process_start": _process_start(os.getpid()),
              "config": config, "since": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    with atomic_output(path) as temporary:
        temporary.write_text(json.dumps(record) + "\n", encoding="utf-8")
    return path


def alive_run(root: str | os.PathLike = ".") -> dict | None:
    """The record of the run alive in ``root`` other than this process, or None: none, unreadable, stale (its
    process gone, or its pid another process's now), this process's own, or of another host."""
    try:
        record = json.loads((Path(root) / RUN_RECORD).read_text(encoding="utf-8"))
        pid, host = int(record["pid"]), record["host"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if host != socket.gethostname() or pid == os.getpid() or not 0 < pid < 2**31 or not process_running(pid):
        return None
    recorded_start = record.get("process_start")
    if recorded_start is not None and _process_start(pid) not in (None, recorded_start):
        return None  # the pid is another process's now
    return record


def alive_line(record: dict) -> str:
    """The one line that stops a second run while ``record``'s run is alive."""
    return (f"a run of {record.get('config', '(config not recorded)')} is alive in this folder (pid {record['pid']}, "
            f"since {record.get('since', '(time not recorded)')}): one run at a time per folder, since two may write "
            f"the same files; wait for it to end (a dry run, -n, or --report still works meanwhile)")


def clear_running(root: str | os.PathLike = ".") -> None:
    """Remove the record of ``root``'s run if it is this process's (the run ends)."""
    path = Path(root) / RUN_RECORD
    try:
        if json.loads(path.read_text(encoding="utf-8")).get("pid") == os.getpid():
            path.unlink()
    except (OSError, ValueError, AttributeError):
        pass
