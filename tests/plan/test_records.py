"""Configs that share a working folder (tokenmill.plan.records): each plan recorded under its config's identity (its
file's resolved path), prune keeping
what another config's record names, a tokenizer folder two configs would write differently refused."""

from __future__ import annotations

import json
import shutil

import pytest
import yaml

from conftest import GPT2, planned_jobs, run_snakemake, run_tokenmill
from tokenmill.config import validate_config
from tokenmill.errors import TokenmillError
from tokenmill.plan import Plan
from tokenmill.plan.records import (ConfigIdentity, config_identity, older_records, output_conflict, page_conflict,
                                    plan_record_path, prune_for_config, read_plan_records, record_plan,
                                    targets_of_other_plans, tokenizer_folder_conflict, write_plan_record)

GPT2_FOLDER = "data/megatron/tokenizers/gpt2"


def identity(root, file: str, name: str | None = None) -> ConfigIdentity:
    """The identity of the config ``file`` in the working folder ``root`` (the file need not exist)."""
    return config_identity([file], name, root)


def test_a_config_is_known_by_its_resolved_path_not_its_stem(tmp_path):
    (tmp_path / "team/colleague").mkdir(parents=True)
    (tmp_path / "team/pretrain.yaml").write_text("{}")
    (tmp_path / "team/colleague/pretrain.yaml").write_text("{}")
    (tmp_path / "team/link.yaml").symlink_to("pretrain.yaml")
    mine, theirs = identity(tmp_path / "team", "pretrain.yaml"), identity(tmp_path / "team", "colleague/pretrain.yaml")
    assert mine.paths == ("pretrain.yaml",) and theirs.paths == ("colleague/pretrain.yaml",)
    assert mine.key != theirs.key and mine.key.startswith("pretrain-") and theirs.label == "pretrain"
    # one file by any of its names: a link, an absolute path, ./
    for spelling in ("link.yaml", str(tmp_path / "team/pretrain.yaml"), "./pretrain.yaml"):
        assert identity(tmp_path / "team", spelling) == mine, spelling
    # the working folder moved, configs and data together: the same identity
    (tmp_path / "team").rename(tmp_path / "moved")
    assert identity(tmp_path / "moved", "pretrain.yaml") == mine
    # a file outside the working folder: its absolute path; the config's name labels the record, no more
    outside = identity(tmp_path / "moved", "../elsewhere.yaml", name="pre")
    assert outside.paths == (str(tmp_path / "elsewhere.yaml"),) and outside.label == "pre"
    labelled = identity(tmp_path / "moved", "pretrain.yaml", name="pre")
    assert labelled.paths == mine.paths and labelled.key == f"pre-{mine.key.rpartition('-')[2]}"
    assert config_identity([], None, tmp_path).paths == ("config/config.yaml",)


def test_a_record_holds_the_plans_targets_config_and_tokenizer_folders(tmp_path):
    pre, sft = identity(tmp_path, "pre.yaml"), identity(tmp_path, "sft.yaml")
    write_plan_record(pre, ["data/packed/a.pbin", "data/index/a.idx", "data/packed/a.pbin"],
                      {GPT2_FOLDER: "gpt2.json with EOD '<|endoftext|>'"}, tmp_path)
    write_plan_record(sft, ["data/sft/chat.pbin"], {}, tmp_path)
    assert json.loads((tmp_path / plan_record_path(pre.key)).read_text()) == {
        "format": "tokenmill-plan/3", "name": pre.key, "config": ["pre.yaml"],
        "targets": ["data/index/a.idx", "data/packed/a.pbin"],
        "tokenizer_folders": {GPT2_FOLDER: "gpt2.json with EOD '<|endoftext|>'"}, "outputs": {}, "pages": {}}
    assert targets_of_other_plans(sft, tmp_path) == ["data/index/a.idx", "data/packed/a.pbin"]
    assert targets_of_other_plans(pre, tmp_path) == ["data/sft/chat.pbin"]
    assert sorted(read_plan_records(tmp_path)) == sorted([pre.key, sft.key])
    # the config's name edited: the same config, its record replaced
    write_plan_record(identity(tmp_path, "pre.yaml", name="renamed"), ["data/packed/a.pbin"], {}, tmp_path)
    assert sorted(read_plan_records(tmp_path)) == sorted([identity(tmp_path, "pre.yaml", "renamed").key, sft.key])


def test_a_tokenizer_folder_written_differently_by_another_config_is_named(tmp_path):
    pre, sft = identity(tmp_path, "pre.yaml"), identity(tmp_path, "sft/pre.yaml")
    write_plan_record(pre, [], {GPT2_FOLDER: "gpt2.json with EOD '<|endoftext|>'"}, tmp_path)
    assert tokenizer_folder_conflict(pre, {GPT2_FOLDER: "gpt2.json with EOD 'Ċ'"}, tmp_path) is None  # its own
    assert tokenizer_folder_conflict(sft, {GPT2_FOLDER: "gpt2.json with EOD '<|endoftext|>'"}, tmp_path) is None
    assert tokenizer_folder_conflict(sft, {GPT2_FOLDER: "gpt2.json with EOD 'Ċ'"}, tmp_path) == (
        f"{GPT2_FOLDER} is written by config pre.yaml (data/plans/{pre.key}.json) from gpt2.json with EOD "
        f"'<|endoftext|>', and by this config sft/pre.yaml from gpt2.json with EOD 'Ċ'; give one of the two "
        f"tokenizers another name")


def test_a_record_that_is_not_one_is_refused_by_name(tmp_path):
    (tmp_path / "data/plans").mkdir(parents=True)
    (tmp_path / "data/plans/x.json").write_text("[]")
    with pytest.raises(TokenmillError, match=r"data/plans/x.json: not a tokenmill plan record \(delete it if no "
                                             r"config uses it\)"):
        targets_of_other_plans(identity(tmp_path, "y.yaml"), tmp_path)


def test_prune_keeps_what_another_config_makes_and_dry_run_moves_nothing(tmp_path, monkeypatch):
    shutil.copy(GPT2, tmp_path / "gpt2.json")
    monkeypatch.chdir(tmp_path)
    config = {"tokenizers": {"gpt2": {"path": "gpt2.json", "eod": "<|endoftext|>"}},
              "datasets": {"a": {"inputs": ["a.jsonl"], "tokenizer": "gpt2"}}}
    (tmp_path / "a.jsonl").write_text('{"text": "x"}\n')
    (tmp_path / "mine.yaml").write_text(yaml.safe_dump(config))
    for path in ("data/packed/a.pbin", "data/packed/b.pbin", "data/packed/old.pbin"):
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text("x")
    write_plan_record(identity(tmp_path, "theirs.yaml"), ["data/packed/b.pbin"], {}, tmp_path)
    mine = identity(tmp_path, "mine.yaml")
    dry = run_tokenmill("prune", "--config", "mine.yaml", "--dry-run", cwd=tmp_path)
    assert dry.stdout == "data/packed/old.pbin\n" and (tmp_path / "data/packed/old.pbin").exists()
    assert not (tmp_path / plan_record_path(mine.key)).exists()
    run_tokenmill("prune", "--config", "mine.yaml", cwd=tmp_path)
    assert sorted(path.name for path in (tmp_path / "data/packed").iterdir()) == ["a.pbin", "b.pbin"]
    planned = Plan(validate_config(config, "x")).outputs.all_targets()
    assert read_plan_records(tmp_path)[mine.key]["targets"] == sorted(planned)


def tiny_plan(folder, inputs: list[str], name: str = "a", **dataset) -> Plan:
    """The plan of a config with a dataset ``name`` on ``inputs`` (files made in ``folder``, the working
    directory)."""
    if not (folder / "gpt2.json").exists():
        shutil.copy(GPT2, folder / "gpt2.json")
    for path in inputs:
        (folder / path).parent.mkdir(parents=True, exist_ok=True)
        (folder / path).write_text('{"text": "x"}\n')
    config = {"tokenizers": {"gpt2": {"path": "gpt2.json", "eod": "<|endoftext|>"}},
              "datasets": {name: {"inputs": inputs, "tokenizer": "gpt2", **dataset}}}
    return Plan(validate_config(config, "x"))


def test_a_colleagues_config_of_the_same_file_name_leaves_the_first_ones_outputs_in_place(tmp_path, monkeypatch):
    """pretrain.yaml and colleague/pretrain.yaml in one folder: two configs, two records; the colleague's prune keeps
    every output of the first (by stem, its record replaced the first's and its prune moved them all)."""
    monkeypatch.chdir(tmp_path)
    mine, theirs = identity(tmp_path, "pretrain.yaml"), identity(tmp_path, "colleague/pretrain.yaml")
    pretrain = tiny_plan(tmp_path, ["a.jsonl"])
    record_plan(pretrain, mine, tmp_path)
    for path in pretrain.outputs.all_targets():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text("built")
    moved, _ = prune_for_config(tiny_plan(tmp_path, ["colleague/b.jsonl"], name="b"), theirs, None, root=tmp_path)
    assert moved == [] and all((tmp_path / path).exists() for path in pretrain.outputs.all_targets())
    assert sorted(read_plan_records(tmp_path)) == sorted([mine.key, theirs.key])
    # the first config's own earlier plan (dataset a renamed c): what only it made moves, once no record names it
    moved, _ = prune_for_config(tiny_plan(tmp_path, ["a.jsonl"], name="c"), mine, None, root=tmp_path)
    assert "data/packed/a.pbin" in moved and not (tmp_path / "data/packed/b.pbin").exists()


def test_the_parts_of_a_merge_that_failed_survive_another_configs_prune_kept_or_not(tmp_path, monkeypatch):
    """A dataset of two files packed apart then merged, parts not kept (keep_parts: false, Snakemake's temp files):
    its run failed before the merge. Its parts are in its record, so another config's prune leaves them, and its
    rerun packs neither file again."""
    monkeypatch.chdir(tmp_path)
    shutil.copy(GPT2, tmp_path / "gpt2.json")
    for name in ("x1.jsonl", "x2.jsonl"):
        (tmp_path / name).write_text('{"text": "x"}\n')
    config = {"tokenizers": {"gpt2": {"path": "gpt2.json", "eod": "<|endoftext|>"}}, "keep_parts": False,
              "datasets": {"x": {"inputs": ["x1.jsonl", "x2.jsonl"], "tokenizer": "gpt2", "group_bytes": 1}}}
    merged = Plan(validate_config(config, "x"))
    parts = merged.outputs.part_files("x")
    assert "data/parts/x.part0.pbin" in parts and not set(parts) & set(merged.outputs.all_targets())
    record_plan(merged, identity(tmp_path, "merged.yaml"), tmp_path)
    for path in parts:
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text("packed")
    moved, _ = prune_for_config(tiny_plan(tmp_path, ["a.jsonl"]), identity(tmp_path, "pre.yaml"), None, root=tmp_path)
    assert moved == [] and all((tmp_path / path).exists() for path in parts)


def test_an_output_another_config_makes_from_other_inputs_is_named_and_a_shared_one_is_not(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    pre, pre2 = identity(tmp_path, "pre.yaml"), identity(tmp_path, "other/pre.yaml")
    record_plan(tiny_plan(tmp_path, ["a.jsonl"]), pre, tmp_path)
    outputs = read_plan_records(tmp_path)[pre.key]["outputs"]
    assert {"data/index/a.idx", "data/packed/a.pbin", "data/megatron/a_text_document.bin"} <= set(outputs)
    assert not any(path.startswith(("data/verified", "data/reports")) for path in outputs)  # cheap to redo
    # the same dataset, inputs and options (input times aside): shared, as is the config's own record
    (tmp_path / "a.jsonl").write_text('{"text": "a newer, longer line"}\n')
    assert output_conflict(pre2, tiny_plan(tmp_path, ["a.jsonl"]).commands.output_identities(), tmp_path) is None
    assert output_conflict(pre, tiny_plan(tmp_path, ["b.jsonl"]).commands.output_identities(), tmp_path) is None
    assert output_conflict(pre2, tiny_plan(tmp_path, ["b.jsonl"]).commands.output_identities(), tmp_path) == (
        f"data/index/a.idx is made by config pre.yaml (data/plans/{pre.key}.json) and by this config other/pre.yaml "
        f"from other inputs or options: each run would remake it, and a job would read whichever ran last; give the "
        f"dataset (or blend, or SFT set) another name in one of the two")
    other_options = tiny_plan(tmp_path, ["a.jsonl"], max_line_bytes=1000).commands.output_identities()
    assert output_conflict(pre2, other_options, tmp_path).startswith("data/megatron/a_text_document.bin is made ")
    assert other_options["data/index/a.idx"] == outputs["data/index/a.idx"]  # the raw index is still the same


def test_a_record_of_an_older_format_is_another_configs_kept_and_named(tmp_path):
    """A record by file stem (tokenmill-plan/1 and /2) is no config's own, whatever its stem: its outputs are kept,
    its output identities refuse another recipe, and planning names it to delete."""
    (tmp_path / "data/plans").mkdir(parents=True)
    (tmp_path / "data/plans/pre.json").write_text(json.dumps(
        {"format": "tokenmill-plan/1", "name": "pre", "targets": ["data/packed/a.pbin"], "tokenizer_folders": {}}))
    (tmp_path / "data/plans/sft.json").write_text(json.dumps(
        {"format": "tokenmill-plan/2", "name": "sft", "targets": ["data/sft/s.pbin"], "tokenizer_folders": {},
         "outputs": {"data/sft/s.pbin": "0123"}}))
    pre = identity(tmp_path, "pre.yaml")
    assert read_plan_records(tmp_path)["pre"]["outputs"] == {}
    assert targets_of_other_plans(pre, tmp_path) == ["data/packed/a.pbin", "data/sft/s.pbin"]
    assert output_conflict(pre, {"data/packed/a.pbin": "0123"}, tmp_path) is None
    assert output_conflict(identity(tmp_path, "sft.yaml"), {"data/sft/s.pbin": "4567"}, tmp_path) == (
        "data/sft/s.pbin is made by config 'sft' (data/plans/sft.json, a record of an older tokenmill by file stem: "
        "delete it once that config has run again) and by this config sft.yaml from other inputs or options: each "
        "run would remake it, and a job would read whichever ran last; give the dataset (or blend, or SFT set) "
        "another name in one of the two")
    assert older_records(tmp_path) == ["data/plans/pre.json", "data/plans/sft.json"]
    write_plan_record(pre, [], {}, tmp_path)  # a new record leaves the older one where it is
    assert older_records(tmp_path) == ["data/plans/pre.json", "data/plans/sft.json"]


def test_the_outputs_of_a_run_that_failed_before_its_prune_survive_another_configs_prune(tmp_path, monkeypatch):
    """A run records its plan when it starts (the Snakefile's onstart): its raw index, made before its pack failed,
    is another config's, never moved by that config's prune."""
    monkeypatch.chdir(tmp_path)
    bad = tiny_plan(tmp_path, ["bad.jsonl"], name="bad", on_bad_line="error")
    record_plan(bad, identity(tmp_path, "bad.yaml"), tmp_path)  # what onstart does, before any job
    (tmp_path / "data/index").mkdir(parents=True)
    (tmp_path / "data/index/bad.idx").write_text("x")
    (tmp_path / "data/index/old.idx").write_text("x")
    moved, _ = prune_for_config(tiny_plan(tmp_path, ["a.jsonl"]), identity(tmp_path, "pre.yaml"), None, root=tmp_path)
    assert moved == ["data/index/old.idx"] and (tmp_path / "data/index/bad.idx").exists()


def test_a_config_needs_a_dataset_or_an_sft_set():
    with pytest.raises(TokenmillError, match="^my.yaml: datasets: a config needs at least one dataset or sft set$"):
        validate_config({"tokenizers": {"gpt2": {"path": "gpt2.json"}}}, "my.yaml")


def planning_refusal(folder, configfile: str, config: dict) -> str:
    """The last line of a dry run of ``config`` (written to ``configfile`` in ``folder``), which must fail."""
    (folder / configfile).write_text(yaml.safe_dump(config))
    result = run_snakemake(folder, "--configfile", configfile, "-n", check=False)
    assert result.returncode == 1
    return result.stderr.strip().splitlines()[-1]


@pytest.mark.slow
def test_two_configs_in_one_folder_leave_each_other_alone(built_demo):
    """The demo config (pretraining and SFT) and an SFT-only config, run in turn three times in one folder: after
    the first build of each, nothing is moved or rebuilt and data/stale/ stays empty; a third config whose
    tokenizer folder would differ is refused at planning in one line, and so is one whose dataset of the demo's
    name reads another file. A run that failed before its prune keeps its outputs from the demo's prune."""
    demo = yaml.safe_load((built_demo / "config/config.yaml").read_text())
    sft = {"tokenizers": demo["tokenizers"], "sft": {"chat2": demo["sft"]["chat"]}}
    (built_demo / "sft.yaml").write_text(yaml.safe_dump(sft))
    run_snakemake(built_demo, "--configfile", "sft.yaml")
    outputs = sorted(str(path.relative_to(built_demo)) for path in (built_demo / "data").rglob("*")
                     if path.is_file() and "stale" not in path.parts)
    for _ in range(3):  # (a dry run with nothing to do: the real run would do nothing either)
        for configfile in ("config/config.yaml", "sft.yaml"):
            assert planned_jobs(built_demo, "--configfile", configfile) == set(), configfile
    assert sorted(str(path.relative_to(built_demo)) for path in (built_demo / "data").rglob("*")
                  if path.is_file() and "stale" not in path.parts) == outputs
    assert not [path for path in (built_demo / "data/stale").rglob("*") if path.is_file()
                and not path.name.startswith("moved-last-run")]
    demo_record = identity(built_demo, "config/config.yaml").key
    assert sorted(record["config"] for record in read_plan_records(built_demo).values()) == [
        ["config/config.yaml"], ["sft.yaml"]]
    other = {**demo, "tokenizers": {"gpt2": {**demo["tokenizers"]["gpt2"], "eod": "Ċ"}}, "name": "newline"}
    assert planning_refusal(built_demo, "other.yaml", other) == (
        f"tokenmill: error: {built_demo / 'other.yaml'}: {GPT2_FOLDER} is written by config config/config.yaml "
        f"(data/plans/{demo_record}.json) from data/tokenizers/gpt2.tokenizer.json with EOD '<|endoftext|>', and by "
        f"this config other.yaml from data/tokenizers/gpt2.tokenizer.json with EOD 'Ċ'; give one of the two "
        f"tokenizers another name")
    # a run that fails (a bad line, on_bad_line: error) has recorded its plan when it started: the demo's prune
    # leaves its raw index where it is
    (built_demo / "bad.jsonl").write_text('{"text": "x"}\n{"text": \n')
    bad = {"tokenizers": demo["tokenizers"], "datasets": {"bad": {"inputs": ["bad.jsonl"], "tokenizer": "gpt2",
                                                                  "on_bad_line": "error"}}}
    (built_demo / "bad.yaml").write_text(yaml.safe_dump(bad))
    assert run_snakemake(built_demo, "--configfile", "bad.yaml", check=False).returncode == 1
    assert (built_demo / "data/index/bad.idx").exists()
    assert identity(built_demo, "bad.yaml").key in read_plan_records(built_demo)
    run_snakemake(built_demo, "--configfile", "config/config.yaml", "--forcerun", "prune")
    assert (built_demo / "data/index/bad.idx").exists()
    # the demo's dataset name on another file: refused at planning, naming both configs and the shared output
    pre2 = {**bad, "datasets": {"demo": bad["datasets"]["bad"]}}
    assert planning_refusal(built_demo, "pre2.yaml", pre2) == (
        f"tokenmill: error: {built_demo / 'pre2.yaml'}: data/index/demo.idx is made by config config/config.yaml "
        f"(data/plans/{demo_record}.json) and by this config pre2.yaml from other inputs or options: each run would "
        f"remake it, and a job would read whichever ran last; give the dataset (or blend, or SFT set) another name in "
        f"one of the two")


def test_a_page_another_config_made_is_named_with_that_config_and_the_run_to_come_first(tmp_path, monkeypatch):
    """pretrain.yaml (seq 512) and bob/seq.yaml (seq 256) share dataset a and its page data/report/a.html: the
    page bob's run wrote last records bob's recipe, which both records hold; `--report` of pretrain.yaml names it
    in one line. Its own recipe, a page not built, a page of no recorded recipe and one of an older tokenmill each
    say what they are."""
    monkeypatch.chdir(tmp_path)
    shutil.copy(GPT2, tmp_path / "gpt2.json")
    (tmp_path / "a.jsonl").write_text('{"text": "x"}\n')

    def plan(seq_length: int) -> Plan:
        return Plan(validate_config({"tokenizers": {"gpt2": {"path": "gpt2.json", "eod": "<|endoftext|>"}},
                                     "datasets": {"a": {"inputs": ["a.jsonl"], "tokenizer": "gpt2"}},
                                     "sampling": {"seq_lengths": [seq_length], "seeds": [1]}}, "x"))

    pretrain, bob = identity(tmp_path, "pretrain.yaml"), identity(tmp_path, "bob/seq.yaml")
    record_plan(plan(512), pretrain, tmp_path)
    record_plan(plan(256), bob, tmp_path)
    recipes, theirs = plan(512).commands.page_recipes(), plan(256).commands.page_recipes()["data/report/a.html"]
    assert read_plan_records(tmp_path)[bob.key]["pages"]["data/report/a.html"] == theirs

    def refusal(made):
        return page_conflict(pretrain, recipes, made, "snakemake --configfile pretrain.yaml", tmp_path)

    assert refusal({"data/report/a.html": theirs}) == (
        f"data/report/a.html was made for config bob/seq.yaml (data/plans/{bob.key}.json), not for this config "
        f"pretrain.yaml's options, and the report would show it as this config's; run `snakemake --configfile "
        f"pretrain.yaml` first")
    assert refusal(recipes) is None and refusal({}) is None  # its own; not built (Snakemake's to say)
    assert refusal({"data/report/a.html": "0" * 16}).startswith(
        "data/report/a.html was made for options that no config's record names now, not for this config ")
    assert refusal({"data/report/a.html": None}).startswith(
        "data/report/a.html was made for an older tokenmill (it records no recipe), not for this config ")
    record_plan(plan(256), pretrain, tmp_path)  # pretrain.yaml's last run was of seq 256 too
    assert refusal({"data/report/a.html": theirs}).startswith(
        f"data/report/a.html was made for this config's last run (data/plans/{pretrain.key}.json) and config "
        f"bob/seq.yaml (data/plans/{bob.key}.json), not for this config pretrain.yaml's options")
