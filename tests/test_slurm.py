"""The demo built on a real (one-node) SLURM cluster through workflow/profiles/slurm.

Where a SLURM controller answers already, the test uses it. Otherwise it sets one up only when asked:
with TOKENMILL_TEST_SLURM=1 (which .ci/run sets), `.ci/slurm-local.sh start` installs Debian's
slurm-wlm and munge if they are missing (root and apt-get needed) and starts the daemons; the test
stops the ones it started. Without the variable, where SLURM cannot be set up, or where the executor
plugin is not installed, the test is skipped and says why (pytest -ra).
Run it alone with:  TOKENMILL_TEST_SLURM=1 python -m pytest -ra tests/test_slurm.py
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
from pathlib import Path

import pytest

from conftest import REPO, run_snakemake

SCRIPT = REPO / ".ci" / "slurm-local.sh"
OPT_IN = "TOKENMILL_TEST_SLURM"  # the one switch that lets a test install system packages and start services


@pytest.fixture(scope="module")
def slurm_cluster():
    if importlib.util.find_spec("snakemake_executor_plugin_slurm") is None:
        pytest.skip("snakemake-executor-plugin-slurm is not installed (pip install -e '.[slurm]')")
    already_up = subprocess.run(["bash", "-c", "sinfo -h -o %t"], capture_output=True, text=True)
    if (already_up.returncode != 0 or not already_up.stdout.strip()) and os.environ.get(OPT_IN) != "1":
        pytest.skip(f"no SLURM controller answers, and setting one up installs slurm-wlm and munge and starts "
                    f"their daemons: set {OPT_IN}=1 to allow it")
    started = subprocess.run(["bash", str(SCRIPT), "start"], capture_output=True, text=True)
    if started.returncode == 3:
        pytest.skip(f"no SLURM here: {started.stderr.strip()}")
    assert started.returncode == 0, started.stderr
    yield
    if already_up.returncode != 0 or not already_up.stdout.strip():  # stop only what this test started
        subprocess.run(["bash", str(SCRIPT), "stop"], check=True, capture_output=True)


def _built_files(workdir: Path) -> dict[str, bytes]:
    """Every output under data/ (the verify stamps excepted: they hold timings), by relative path."""
    built = {}
    for folder in ("index", "packed", "megatron", "cache", "sft", "report"):
        for path in sorted((workdir / "data" / folder).rglob("*")):
            if path.is_file():
                built[str(path.relative_to(workdir))] = path.read_bytes()
    return built


def test_demo_builds_through_sbatch_byte_identical_to_a_local_run(slurm_cluster, workflow_dir, shared_demo_build):
    # run_snakemake passes --cores 2: this node's CPUs, the most one job may ask for
    cluster = run_snakemake(workflow_dir, "--profile", "workflow/profiles/slurm",
                            "--slurm-init-seconds-before-status-checks", "1", "--seconds-between-status-checks", "2",
                            slurm=True)
    output = cluster.stdout + cluster.stderr
    submitted = dict(re.findall(r"submitted with SLURM jobid (\d+) \(log: \S*/slurm_logs/rule_(\w+)/", output))
    planned = {"raw_index", "pack", "sample_index", "verify", "sft", "verify_sft", "report_dataset",
               "hf_tokenizer_folder"}
    assert set(submitted.values()) == planned and len(submitted) == 9, output
    for slurm_job in submitted:  # SLURM itself ran each one to completion
        state = subprocess.run(["scontrol", "show", "job", slurm_job], capture_output=True, text=True).stdout
        assert "JobState=COMPLETED" in state and "ExitCode=0:0" in state, state
    assert "every file of the config is built" in output and (workflow_dir / "data/verified/demo.ok").exists()

    cluster_files, local_files = _built_files(workflow_dir), _built_files(shared_demo_build)
    assert sorted(cluster_files) == sorted(local_files) and len(cluster_files) > 10
    assert [name for name in cluster_files if cluster_files[name] != local_files[name]] == []
