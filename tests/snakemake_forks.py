"""Snakemake runs as forks of one process that has imported Snakemake and its plugins already: the tests' cheap
`python -m snakemake` (tests/conftest.py's ``run_snakemake`` starts one of these per xdist worker).

A Snakemake start spends ~1.5 CPU-s importing itself and every installed plugin (sqlmodel, the GCS and S3
clients) before it reads the Snakefile; the slow tests run it ~100 times. This process does those imports
once, then for each request forks a child that is that start from there on: its own process with the request's
working directory, environment, argv, stdin from /dev/null and stdout/stderr into the request's files, which
runs ``snakemake.cli.main`` and exits with its status (atexit handlers included), as ``python -m snakemake``
would. Only Snakemake is imported here (not tokenmill, nor what reads the environment at import, such as
huggingface_hub), so that the Snakefile's imports and the environment they see are each run's own. (tokenmill's
planner imported here too saves its 0.1 CPU-s of imports a run, and each fork of the larger process then costs
as much more: twelve `-n` runs of the demo, 8.6 CPU-s either way.)
What a child shares with its siblings: the modules imported here, and the hash seed of str (one per process,
fixed at this one's start; ``random`` reseeds in each child).

Protocol, one JSON line each way on stdin/stdout: ``{"args", "cwd", "env", "stdout", "stderr"}`` in, the
child's exit code out (negative: killed by that signal). With ``"group": true`` in the request, the child leads a
process group of its own (set by both sides before either goes on: no moment where a kill of the group misses
it) and its pid comes out first, on a line of its own, so that a test may kill the run and its jobs at once, as
``start_new_session`` lets it kill a ``python -m snakemake``. EOF on stdin ends it.

Cost: a fork (~0.1 s on gVisor) instead of ~1.5 CPU-s of imports; a -n of the demo 0.8 CPU-s instead of 1.9.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys


def serve() -> None:
    sys.path[0] = os.getcwd()  # not this file's folder (tests/): what `python -m snakemake` puts first
    import snakemake.cli
    from snakemake_interface_executor_plugins.registry import ExecutorPluginRegistry
    from snakemake_interface_logger_plugins.registry import LoggerPluginRegistry
    from snakemake_interface_report_plugins.registry import ReportPluginRegistry
    from snakemake_interface_scheduler_plugins.registry import SchedulerPluginRegistry
    from snakemake_interface_storage_plugins.registry import StoragePluginRegistry

    main_file = importlib.util.find_spec("snakemake.__main__").origin  # the file `python -m snakemake` runs
    for registry in (ExecutorPluginRegistry, StoragePluginRegistry, LoggerPluginRegistry, ReportPluginRegistry,
                     SchedulerPluginRegistry):
        registry()  # each a singleton that imports every installed plugin of its kind
    requests, replies = os.fdopen(os.dup(0), "r"), os.fdopen(os.dup(1), "w")
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0), os.dup2(null, 1)  # nothing of this process's own on the protocol's pipes
    for line in requests:
        request = json.loads(line)
        sys.stdout.flush(), sys.stderr.flush()
        child = os.fork()
        if child == 0:
            requests.close(), replies.close()
            if request.get("group"):
                os.setpgid(0, 0)
            _become_snakemake(request, snakemake.cli.main, main_file)  # never returns
        if request.get("group"):
            _own_group(child)
            replies.write(f"{child}\n")
            replies.flush()
        _, status = os.waitpid(child, 0)
        replies.write(f"{os.waitstatus_to_exitcode(status)}\n")
        replies.flush()


def _own_group(child: int) -> None:
    try:
        os.setpgid(child, child)
    except (PermissionError, ProcessLookupError):
        pass  # the child has ended already, and its group with it


def _become_snakemake(request: dict, main, main_file: str) -> None:
    for fd, path, flags in ((1, request["stdout"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC),
                            (2, request["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC)):
        opened = os.open(path, flags, 0o644)
        os.dup2(opened, fd)
        os.close(opened)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    sys.path[0] = request["cwd"]  # as `python -m` sets it: the working directory (PYTHONPATH's entries follow)
    sys.argv = [main_file, *request["args"]]
    main()  # parses sys.argv; raises SystemExit: the interpreter exits with its code, atexit handlers run
    raise SystemExit(0)


if __name__ == "__main__":
    serve()
