"""The demo built on a real (one-host) Grid Engine through workflow/profiles/sge.

Where a Grid Engine with the queue all.q and the parallel environment smp answers already, the test uses it.
Otherwise it sets one up only when asked: with TOKENMILL_TEST_SGE=1 (which .ci/run sets), `.ci/sge-local.sh
start` installs Debian's gridengine-master, -exec and -client if they are missing (root and apt-get needed),
configures this host as the whole cluster and starts sge_qmaster and sge_execd; the test stops the ones it
started. Without the variable, or where Grid Engine cannot be set up, the test is skipped and says why.

The executor is snakemake-executor-plugin-cluster-generic (the `sge` extra) with qsub, qstat and qacct; the
extra is installed with pip into a venv layered over this one where this interpreter lacks it (as the SLURM
test does). Run it alone with:  TOKENMILL_TEST_SGE=1 python -m pytest -ra tests/e2e/test_sge.py
"""

from __future__ import annotations

import os
import re
import subprocess

import pytest

from conftest import REPO, SNAKEMAKE, built_outputs, local_cluster, python_with_extra, tool_env

SCRIPT = REPO / ".ci" / "sge-local.sh"
OPT_IN = "TOKENMILL_TEST_SGE"  # lets this test install system packages and start daemons


def _answers() -> bool:
    """Whether a Grid Engine answers, with the queue and parallel environment that the profile names."""
    try:
        return all(subprocess.run(["qconf", *query], capture_output=True, timeout=30).returncode == 0
                   for query in (["-sq", "all.q"], ["-sp", "smp"]))
    except (OSError, subprocess.TimeoutExpired):
        return False


@pytest.fixture(scope="module")
def sge_cluster():
    with local_cluster(SCRIPT, OPT_IN, _answers(), "Debian's gridengine-master, -exec and -client"):
        yield


@pytest.fixture(scope="module")
def sge_python(sge_cluster, tmp_path_factory) -> str:
    """An interpreter with this one's packages and the `sge` extra's (the cluster-generic executor plugin)."""
    return python_with_extra("sge", "snakemake_executor_plugin_cluster_generic", tmp_path_factory.mktemp("sge-venv"))


def test_demo_builds_through_qsub_byte_identical_to_a_local_run(sge_python, workflow_dir, shared_demo_build):
    # --cores 2 (SNAKEMAKE's): this host's slots, the most one job may ask for
    env = tool_env()
    env["PATH"] = os.pathsep.join([os.path.dirname(sge_python), env["PATH"]])  # qsub -V: the job's PATH
    cluster = subprocess.run([sge_python, *SNAKEMAKE[1:], "--profile", "workflow/profiles/sge",
                              "--seconds-between-status-checks", "2"],
                             cwd=workflow_dir, capture_output=True, text=True, env=env)
    assert cluster.returncode == 0, f"{cluster.stdout}\n{cluster.stderr}"
    output = cluster.stdout + cluster.stderr
    submitted = re.findall(r"Submitted job \d+ with external jobid '(\d+)'", output)
    rules = {job_id: rule for rule, job_id in (re.fullmatch(r"smk\.(\w+)\.o(\d+)", log.name).groups()
                                               for log in (workflow_dir / "logs" / "sge").iterdir())}
    planned = {"raw_index", "pack", "sample_index", "verify", "sft", "verify_sft", "report_dataset", "report_sft",
               "hf_tokenizer_folder"}
    assert len(submitted) == 10 and sorted(rules) == sorted(submitted) and set(rules.values()) == planned, output
    for job_id in submitted:  # Grid Engine ran each one, to exit status 0
        accounting = subprocess.run(["qacct", "-j", job_id], capture_output=True, text=True).stdout
        assert re.search(r"^failed\s+0\s*$", accounting, re.M) and re.search(r"^exit_status\s+0\s*$", accounting,
                                                                            re.M), accounting
    assert "every file of the config is built" in output and (workflow_dir / "data/verified/demo.ok").exists()

    cluster_files, local_files = built_outputs(workflow_dir), built_outputs(shared_demo_build)
    assert sorted(cluster_files) == sorted(local_files) and len(cluster_files) > 10
    assert [name for name in cluster_files if cluster_files[name] != local_files[name]] == []
