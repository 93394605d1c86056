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


def test_a_report_never_embeds_the_page_another_configs_run_made(built_demo):
    """The demo config (seq_lengths 512 and 2048) and bob/seq.yaml, the same at 256: dataset demo's .pbin and Megatron
    files are shared (one recipe) and its caches lie apart, but data/report/demo.html is one page of two recipes.
    Each run remakes it (and the verify stamp): a loud, cheap cost. After bob's run, `--report` of the demo config
    embedded bob's page (seq256 named, seq512 never) without a word; it refuses in one line naming the page, bob's
    config and the run to do first. Once that run has remade the page, the report is made, and bob's refuses."""
    demo = yaml.safe_load((built_demo / "config/config.yaml").read_text())
    (built_demo / "bob").mkdir()
    (built_demo / "bob/seq.yaml").write_text(yaml.safe_dump({**demo, "sampling": {**demo["sampling"],
                                                                                   "seq_lengths": [256]}}))
    shared = {path: digest for path, digest in tree_digests(built_demo).items()
              if path.startswith(("data/packed/demo.", "data/megatron/demo_"))}
    run_snakemake(built_demo, "--configfile", "bob/seq.yaml")
    assert len(shared) == 4 and shared.items() <= tree_digests(built_demo).items()
    assert "seq256_seed1234" in (built_demo / "data/report/demo.html").read_text()
    refused = run_snakemake(built_demo, "--report", "report.html", check=False)
    assert refused.returncode == 1 and not (built_demo / "report.html").exists()
    bob_record = next((built_demo / "data/plans").glob("seq-*.json")).name
    assert refused.stderr.strip().splitlines()[-1] == (
        f"tokenmill: error: config/config.yaml: data/report/demo.html was made for config bob/seq.yaml (data/plans/"
        f"{bob_record}), not for this config config/config.yaml's options, and the report would show it as this "
        f"config's; run `snakemake` first")
    assert refused.stderr.count("tokenmill: error") == 1
    run_snakemake(built_demo)
    page = (built_demo / "data/report/demo.html").read_text()
    assert "seq512_seed1234" in page and "seq256_seed1234" not in page
    run_snakemake(built_demo, "--report", "report.html")
    assert (built_demo / "report.html").stat().st_size > 0
    theirs = run_snakemake(built_demo, "--configfile", "bob/seq.yaml", "--report", "bobrep.html", check=False)
    assert theirs.returncode == 1 and not (built_demo / "bobrep.html").exists()
    assert theirs.stderr.strip().splitlines()[-1].startswith(
        f"tokenmill: error: {built_demo / 'bob/seq.yaml'}: data/report/demo.html was made for config "
        f"config/config.yaml (data/plans/")
    assert theirs.stderr.strip().splitlines()[-1].endswith("run `snakemake --configfile bob/seq.yaml` first")
