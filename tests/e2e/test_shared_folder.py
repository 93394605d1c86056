"""A team's folder never loses a build (DESIGN §5d): configs share one working folder and data folder, each known
by its file's resolved path; no run moves or rebuilds another config's outputs, and configs that differ only in
formats rerun nothing when run in turn."""

from __future__ import annotations

import hashlib
import shutil

import pytest
import yaml

from conftest import planned_jobs, run_snakemake

pytestmark = pytest.mark.slow


def tree_digests(root) -> dict[str, str]:
    """The SHA-256 of every file under data/ but the stale folder, the plan records and the verify stamps (their
    timings), by path."""
    return {str(path.relative_to(root)): hashlib.sha256(path.read_bytes()).hexdigest()
            for path in sorted((root / "data").rglob("*")) if path.is_file()
            and not {"stale", "plans", "verified"} & set(path.relative_to(root / "data").parts[:1])}


def test_two_configs_of_one_file_name_in_two_folders_leave_each_others_outputs_in_place(built_demo):
    """pretrain/pretrain.yaml (the demo's pretraining and SFT) and colleague/pretrain.yaml (SFT only, as in the
    issue): by file stem the colleague's record replaced the first's and its prune moved the first's 39 outputs to
    data/stale/. Run in turn, each leaves the other's tree as it was, byte for byte; a third pretrain.yaml whose
    dataset of the same name reads another file is refused at planning, naming both configs' files."""
    shutil.rmtree(built_demo / "data/plans")  # the demo build's records: the two configs below are the folder's own
    demo = yaml.safe_load((built_demo / "config/config.yaml").read_text())
    for folder, config in (("pretrain", demo), ("colleague", {"tokenizers": demo["tokenizers"], "sft": demo["sft"]})):
        (built_demo / folder).mkdir()
        (built_demo / folder / "pretrain.yaml").write_text(yaml.safe_dump(config))
    run_snakemake(built_demo, "--configfile", "pretrain/pretrain.yaml", "--forcerun", "prune")
    before = tree_digests(built_demo)
    assert any(path.startswith("data/megatron/") for path in before) and any(
        path.startswith("data/packed/") for path in before)
    run_snakemake(built_demo, "--configfile", "colleague/pretrain.yaml")
    assert tree_digests(built_demo) == before
    assert planned_jobs(built_demo, "--configfile", "pretrain/pretrain.yaml") == set()
    run_snakemake(built_demo, "--configfile", "pretrain/pretrain.yaml", "--forcerun", "prune")
    assert tree_digests(built_demo) == before
    assert not [path for path in (built_demo / "data/stale").rglob("*") if path.is_file()
                and not path.name.startswith("moved-last-run")]
    (built_demo / "other").mkdir()
    (built_demo / "other/demo.jsonl").write_text('{"text": "another file"}\n')
    other = {**demo, "datasets": {"demo": {**demo["datasets"]["demo"], "inputs": ["other/demo.jsonl"]}}}
    (built_demo / "other/pretrain.yaml").write_text(yaml.safe_dump(other))
    refused = run_snakemake(built_demo, "--configfile", "other/pretrain.yaml", "-n", check=False)
    assert refused.returncode == 1
    line = refused.stderr.strip().splitlines()[-1]
    assert line.startswith(f"tokenmill: error: {built_demo / 'other/pretrain.yaml'}: data/") and (
        " is made by config pretrain/pretrain.yaml (data/plans/pretrain-") in line
    assert line.endswith("and by this config other/pretrain.yaml from other inputs or options: each run would remake "
                         "it, and a job would read whichever ran last; give the dataset (or blend, or SFT set) another "
                         "name in one of the two")


def test_configs_that_differ_only_in_formats_rerun_nothing_when_run_in_turn(built_demo):
    """The demo config, and a copy that adds datatrove to its dataset and olmo to its SFT set (converted from the
    pair, never tokenized again): each config's verify stamp and report page
    are its own (data/verified/demo+datatrove+megatron+pbin.ok, data/report/demo+datatrove+megatron+pbin.html), so a
    dry run of either after the other plans nothing (verify reran and the report page flipped on every
    alternation)."""
    demo = yaml.safe_load((built_demo / "config/config.yaml").read_text())
    more = {**demo, "datasets": {name: {**dataset, "formats": ["pbin", "megatron", "datatrove"]}
                                 for name, dataset in demo["datasets"].items()},
            "sft": {name: {**sft, "formats": ["pbin", "olmo"]} for name, sft in demo["sft"].items()}}
    (built_demo / "more.yaml").write_text(yaml.safe_dump(more))
    sft_pair = {path: digest for path, digest in tree_digests(built_demo).items() if path.startswith("data/sft/")}
    jobs = planned_jobs(built_demo, "--configfile", "more.yaml")
    assert "sft" not in jobs and "sft_olmo" in jobs, jobs  # the pair is kept: olmo is a conversion
    run_snakemake(built_demo, "--configfile", "more.yaml")
    assert sft_pair.items() <= tree_digests(built_demo).items()
    before = tree_digests(built_demo)
    for _ in range(2):
        for configfile in ("config/config.yaml", "more.yaml"):
            assert planned_jobs(built_demo, "--configfile", configfile) == set(), configfile
    run_snakemake(built_demo, "--configfile", "config/config.yaml")
    assert tree_digests(built_demo) == before
