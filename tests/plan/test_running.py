"""The run alive in a working folder (tokenmill.plan.running): a second run says so in one line, a dry run goes on,
and a record its run left behind (killed) never blocks."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from conftest import PROFILE_NOTICE, run_snakemake, tool_env
from tokenmill.plan.running import RUN_RECORD, alive_line, alive_run, clear_running, mark_running


def hold_a_run(root, config: str = "config/config.yaml") -> subprocess.Popen:
    """Another process, alive until killed, recorded as the run of ``config`` in ``root`` (what ``onstart`` does)."""
    process = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from tokenmill.plan.running import mark_running; "
                               f"mark_running({config!r}); sys.stdout.write('ready\\n'); sys.stdout.flush(); "
                               "time.sleep(600)"], cwd=root, env=tool_env(), stdout=subprocess.PIPE, text=True)
    assert process.stdout.readline() == "ready\n"
    return process


def test_a_live_run_is_found_and_a_stale_or_own_record_is_not(tmp_path):
    assert alive_run(tmp_path) is None  # none
    process = hold_a_run(tmp_path, "pretrain.yaml")
    try:
        record = alive_run(tmp_path)
        assert record["pid"] == process.pid and record["config"] == "pretrain.yaml"
        assert alive_line(record) == (
            f"a run of pretrain.yaml is alive in this folder (pid {process.pid}, since {record['since']}): one run at "
            f"a time per folder, since two may write the same files; wait for it to end (a dry run, -n, or --report "
            f"still works meanwhile)")
        # the pid another process's now (its start differs from the recorded one): stale
        path = tmp_path / RUN_RECORD
        path.write_text(json.dumps({**record, "process_start": record["process_start"] - 1}))
        assert alive_run(tmp_path) is None
    finally:
        process.kill()
        process.wait()
    path.write_text(json.dumps(record))
    assert alive_run(tmp_path) is None  # killed: stale
    clear_running(tmp_path)
    assert path.exists()  # not this process's record: left for the next run's onstart to replace
    mark_running("mine.yaml", tmp_path)
    assert alive_run(tmp_path) is None  # this process's own
    clear_running(tmp_path)
    assert not path.exists()
    path.write_text("{not json")
    assert alive_run(tmp_path) is None


@pytest.mark.slow
def test_a_second_run_while_one_is_alive_says_so_in_one_line_and_never_suggests_unlock(built_demo):
    """Snakemake's lock held (its lock files) and the first run alive: one line naming its config, pid and start, for
    a run and for --unlock alike; a dry run goes on; once that run is gone (killed), its record blocks nothing."""
    locks = built_demo / ".snakemake/locks"
    locks.mkdir(parents=True, exist_ok=True)
    outputs = [str(path.relative_to(built_demo)) for path in (built_demo / "data").rglob("*") if path.is_file()]
    (locks / "0.output.lock").write_text("".join(f"{path}\n{built_demo / path}\n" for path in outputs))
    process = hold_a_run(built_demo)
    try:
        since = alive_run(built_demo)["since"]
        result = run_snakemake(built_demo, "--cores", "1", check=False)
        assert result.returncode == 1 and "unlock" not in result.stdout + result.stderr
        line = (f"tokenmill: error: a run of config/config.yaml is alive in this folder (pid {process.pid}, since "
                f"{since}): one run at a time per folder, since two may write the same files; wait for it to end (a "
                f"dry run, -n, or --report still works meanwhile)")
        assert (result.stdout + result.stderr).strip().splitlines() == [PROFILE_NOTICE, line]  # (Snakemake's first)
        unlock = run_snakemake(built_demo, "--unlock", check=False)  # would free the live run's files
        assert unlock.returncode == 1 and unlock.stderr.strip().splitlines()[-1] == line
        assert (locks / "0.output.lock").exists()
        dry = run_snakemake(built_demo, "-n")
        assert f"tokenmill: note: a run of config/config.yaml is alive in this folder (pid {process.pid}" in dry.stderr
    finally:
        process.kill()
        process.wait()
    (locks / "0.output.lock").unlink()  # (Snakemake's: a run that ends removes its own)
    assert run_snakemake(built_demo, "--cores", "1").returncode == 0
