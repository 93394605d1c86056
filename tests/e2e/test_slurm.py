"""The demo built on a real (one-node) SLURM cluster through workflow/profiles/slurm.

Where a SLURM controller answers already, the test uses it. Otherwise it sets one up only when asked:
with TOKENMILL_TEST_SLURM=1 (which .ci/run sets), `.ci/slurm-local.sh start` installs Debian's
slurm-wlm and munge if they are missing (root and apt-get needed) and starts the daemons; the test
stops the ones it started. Without the variable, or where SLURM cannot be set up, the test is skipped
and says why (pytest -ra).

The executor plugin is the `slurm` extra, which `.[test]` leaves out: Snakemake imports every installed
executor plugin at each start, and this one imports pandas (as Snakemake then does for every rule's
params): 0.25 s of CPU on each of the suite's ~80 Snakemake runs. Where this interpreter lacks it, the
test installs it with pip into a venv layered over this one (this venv's packages, the plugin added).
Run it alone with:  TOKENMILL_TEST_SLURM=1 python -m pytest -ra tests/e2e/test_slurm.py
"""

from __future__ import annotations

import re
import subprocess

import pytest

from conftest import REPO, SNAKEMAKE, built_outputs, local_cluster, python_with_extra, tool_env

SCRIPT = REPO / ".ci" / "slurm-local.sh"
OPT_IN = "TOKENMILL_TEST_SLURM"  # the one switch that lets a test install system packages and start services


@pytest.fixture(scope="module")
def slurm_cluster():
    already_up = subprocess.run(["bash", "-c", "sinfo -h -o %t"], capture_output=True, text=True)
    with local_cluster(SCRIPT, OPT_IN, already_up.returncode == 0 and bool(already_up.stdout.strip()),
                       "slurm-wlm and munge"):
        yield


@pytest.fixture(scope="module")
def slurm_python(slurm_cluster, tmp_path_factory) -> str:
    """An interpreter with this one's packages and the `slurm` extra's (the plugin, its job step plugin, pandas)."""
    return python_with_extra("slurm", "snakemake_executor_plugin_slurm", tmp_path_factory.mktemp("slurm-venv"))


def test_demo_builds_through_sbatch_byte_identical_to_a_local_run(slurm_python, workflow_dir, shared_demo_build):
    # --cores 2 (SNAKEMAKE's): this node's CPUs, the most one job may ask for
    cluster = subprocess.run([slurm_python, *SNAKEMAKE[1:], "--profile", "workflow/profiles/slurm",
                              "--slurm-init-seconds-before-status-checks", "1", "--seconds-between-status-checks", "2"],
                             cwd=workflow_dir, capture_output=True, text=True, env=tool_env())
    assert cluster.returncode == 0, f"{cluster.stdout}\n{cluster.stderr}"
    output = cluster.stdout + cluster.stderr
    submitted = dict(re.findall(r"submitted with SLURM jobid (\d+) \(log: \S*/slurm_logs/rule_(\w+)/", output))
    planned = {"raw_index", "pack", "sample_index", "verify", "sft", "verify_sft", "report_dataset", "report_sft",
               "hf_tokenizer_folder"}
    assert set(submitted.values()) == planned and len(submitted) == 10, output
    for slurm_job in submitted:  # SLURM itself ran each one to completion
        state = subprocess.run(["scontrol", "show", "job", slurm_job], capture_output=True, text=True).stdout
        assert "JobState=COMPLETED" in state and "ExitCode=0:0" in state, state
    assert "every file of the config is built" in output and (workflow_dir / "data/verified/demo.ok").exists()

    cluster_files, local_files = built_outputs(workflow_dir), built_outputs(shared_demo_build)
    assert sorted(cluster_files) == sorted(local_files) and len(cluster_files) > 10
    assert [name for name in cluster_files if cluster_files[name] != local_files[name]] == []
