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

import importlib.util
import os
import re
import subprocess
import sys
import sysconfig
import tomllib
from pathlib import Path

import pytest

from conftest import REPO, SNAKEMAKE, tool_env

SCRIPT = REPO / ".ci" / "slurm-local.sh"
OPT_IN = "TOKENMILL_TEST_SLURM"  # the one switch that lets a test install system packages and start services


@pytest.fixture(scope="module")
def slurm_cluster():
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


@pytest.fixture(scope="module")
def slurm_python(slurm_cluster, tmp_path_factory) -> str:
    """An interpreter with this one's packages and the `slurm` extra's: this one where it has them, else a
    venv whose .pth adds this venv's site-packages, with the extra's requirements installed by pip (which
    counts what it sees there as installed, and adds only the plugin, its job step plugin and pandas)."""
    if importlib.util.find_spec("snakemake_executor_plugin_slurm") is not None:
        return sys.executable
    venv = tmp_path_factory.mktemp("slurm-venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site_packages = next((venv / "lib").glob("python*/site-packages"))
    (site_packages / "tokenmill-test-venv.pth").write_text(
        f"import site; site.addsitedir({sysconfig.get_path('purelib')!r})\n")  # .pth files there run too
    extra = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]["slurm"]
    python = str(venv / "bin" / "python")
    installed = subprocess.run([sys.executable, "-m", "pip", "--python", python, "install", "-q",
                                *(requirement for requirement in extra if not requirement.startswith("tokenmill"))],
                               capture_output=True, text=True)
    assert installed.returncode == 0, installed.stderr
    return python


def _built_files(workdir: Path) -> dict[str, bytes]:
    """Every output under data/ (the verify stamps excepted: they hold timings), by relative path."""
    built = {}
    for folder in ("index", "packed", "megatron", "cache", "sft", "report"):
        for path in sorted((workdir / "data" / folder).rglob("*")):
            if path.is_file():
                built[str(path.relative_to(workdir))] = path.read_bytes()
    return built


def test_demo_builds_through_sbatch_byte_identical_to_a_local_run(slurm_python, workflow_dir, shared_demo_build):
    # --cores 2 (SNAKEMAKE's): this node's CPUs, the most one job may ask for
    cluster = subprocess.run([slurm_python, *SNAKEMAKE[1:], "--profile", "workflow/profiles/slurm",
                              "--slurm-init-seconds-before-status-checks", "1", "--seconds-between-status-checks", "2"],
                             cwd=workflow_dir, capture_output=True, text=True, env=tool_env())
    assert cluster.returncode == 0, f"{cluster.stdout}\n{cluster.stderr}"
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
