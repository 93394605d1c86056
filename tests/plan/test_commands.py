"""Each job's command line and identity (tokenmill.plan.commands): every setting that changes an output is in a
recorded param, and a replaced input changes its job's identity."""

from __future__ import annotations

import copy
import json
import os

import pytest

from conftest import plan_of
from tokenmill.config import validate_config
from tokenmill.errors import TokenmillError
from tokenmill.plan import Plan


@pytest.mark.parametrize("key, value, option", [
    ("text", ".body", ".body"), ("max_line_bytes", 1000, "1000"),
    ("engine", "hf", "hf"), ("check_fraction", 0.5, "0.5"), ("on_mismatch", "hf", "hf"),
    ("eod", "!", "!"), ("add_special_tokens", False, "--no-special-tokens"),
    ("allow_duplicate_inputs", True, "--allow-duplicate-inputs"), ("shard_bytes", 100, "--byte-range"),
])
def test_every_setting_that_changes_packed_bytes_is_in_the_recorded_pack_options(plan_folder, key, value, option):
    """Snakemake reruns a job when a recorded param changes: each setting must show in the options."""
    config = {"tokenizers": {"gpt2": {"path": "gpt2.json", "eod": "<|endoftext|>"}},
              "datasets": {"a": {"inputs": ["raw/a.jsonl"], "tokenizer": "gpt2"}}}
    before = Plan(validate_config(config, "my.yaml"))
    edited = copy.deepcopy(config)
    (edited["tokenizers"]["gpt2"] if key in ("eod", "engine", "check_fraction", "on_mismatch", "add_special_tokens")
     else edited["datasets"]["a"])[key] = value
    after = Plan(validate_config(edited, "my.yaml"))
    unit = after.units.builds["a"].units[0]
    assert option in after.commands.pack_options(unit) and option not in before.commands.pack_options("a")


def test_on_bad_line_leaves_the_units_identity_and_is_checked_by_merge_and_verify(plan_folder):
    """A unit packed under error has no bad line: it is what skip makes of it, so a switch repacks nothing built.
    The policy reaches each pack job and merge through params Snakemake does not record (workflow/rules/common.smk),
    and verify's recorded options, so that a switch back to error reruns verify, which refuses skipped lines."""
    plans = {policy: plan_of(a={"inputs": ["raw/a.jsonl"], "shard_bytes": 100, "on_bad_line": policy})
             for policy in ("error", "skip")}
    units = plans["error"].units.builds["a"].units
    assert len(units) > 1 and units == plans["skip"].units.builds["a"].units
    for unit in units:
        assert plans["error"].commands.pack_options(unit) == plans["skip"].commands.pack_options(unit)
        assert plans["error"].commands.unit_identity(unit) == plans["skip"].commands.unit_identity(unit)
    identities = {policy: plan.commands.output_identities() for policy, plan in plans.items()}
    assert identities["error"]["data/packed/a.pbin"] == identities["skip"]["data/packed/a.pbin"]
    for policy, plan in plans.items():
        assert plan.commands.bad_line_option("a") == ["--on-bad-line", policy]
        assert plan.commands.merge_commands("a").startswith(
            f"tokenmill merge data/parts/a.shard{{0..2}}.pbin -o data/packed/a.pbin --force --on-bad-line {policy} && ")
        assert plan.commands.verify_options("a")[:4] == ["--made-from", "data/packed/a.pbin", "--on-bad-line", policy]


@pytest.mark.parametrize("replaced", ["raw/a.jsonl", "gpt2.json"])
def test_a_replaced_input_or_tokenizer_changes_the_recorded_identity_even_when_older(plan_folder, replaced):
    """The unit `a` is named like its file stem `a`: its identity must still hold its tokenizer's."""
    before = plan_of(a={"inputs": ["raw/a.jsonl"]})
    os.utime(replaced, ns=(1, 1))  # as `cp -p` of an older file leaves it
    after = plan_of(a={"inputs": ["raw/a.jsonl"]})
    assert after.commands.unit_identity("a") != before.commands.unit_identity("a")
    assert (after.commands.file_identity("a") != before.commands.file_identity("a")) == (replaced == "raw/a.jsonl")


def test_verify_checks_the_inputs_a_build_must_cover(plan_folder):
    plan = plan_of(a={"inputs": ["raw/a.jsonl", "raw/b.jsonl"], "group_bytes": None})
    assert plan.commands.verify_options("a") == ["--made-from", "data/packed/a.pbin", "--on-bad-line", "error",
                                                 "--inputs", "raw/a.jsonl",
                                                 "raw/b.jsonl", "--", "data/packed/a.pbin",
                                                 "data/megatron/a_text_document", "data/cache/a/seq512_seed1",
                                                 "data/cache/a/seq512_seed2"]
    assert {"raw/a.jsonl", "raw/b.jsonl", "data/index/a.part0.idx"} <= set(plan.outputs.verify_files("a"))


def test_the_olmo_format_is_a_folder_converted_verified_and_reported(plan_folder):
    plan = plan_of(a={"inputs": ["raw/a.jsonl"], "formats": ["pbin", "olmo"], "id_field": None,
                      "olmo_max_tokens": 1000, "count_by": ".meta.domain"})
    assert plan.units.builds_with(olmo=True) == ["a"] and "data/olmo/a" in plan.outputs.all_targets()
    assert plan.commands.olmo_options("a") == ["--max-tokens", "1000", "--id-field", ""]
    assert plan.commands.verify_options("a")[:2] == ["--made-from", "data/packed/a.pbin"]
    assert plan.commands.verify_options("a")[-1] == "data/olmo/a"  # no caches without the megatron format
    assert plan.commands.report_options("a") == ["--file", "data/olmo/a", "--count-by", ".meta.domain"]
    assert plan_of(a={"inputs": ["raw/a.jsonl"]}).commands.olmo_options("a") == ["--max-tokens", "536870912",
                                                                                  "--id-field", "id"]


def test_an_sft_set_with_the_olmo_format_has_its_folder_verified_against_its_pair(plan_folder):
    config = {"tokenizers": {"gpt2": {"path": "gpt2.json", "eod": "<|endoftext|>"}},
              "datasets": {"a": {"inputs": ["raw/a.jsonl"], "tokenizer": "gpt2"}},
              "sft": {name: {"inputs": ["raw/a.jsonl"], "tokenizer": "gpt2",
                             "special_tokens": {"bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>"},
                             "message_construction": ["conversations"], "seq_length": 64, **extra}
                      for name, extra in (("plain", {}), ("olmo", {"formats": ["pbin", "olmo"]}))}}
    plan = Plan(validate_config(config, "my.yaml"))
    assert plan.outputs.sft_olmo_folders("plain") == []
    assert plan.commands.sft_verify_options("plain") == ["data/sft/plain.pbin"]
    assert plan.outputs.sft_olmo_folders("olmo") == ["data/sft/olmo.olmo"]
    assert "data/sft/olmo.olmo" in plan.outputs.all_targets()
    assert plan.commands.sft_verify_options("olmo") == ["data/sft/olmo.pbin", "data/sft/olmo.olmo", "--made-from",
                                                        "data/sft/olmo.pbin"]
    # formats are the conversions' (sft_olmo): adding olmo converts the pair, never tokenizes it again
    assert plan.commands.sft_config("olmo") == plan.commands.sft_config("plain").replace('"plain"', '"olmo"')


def test_a_merged_builds_commands_name_its_units_as_brace_ranges_in_order(plan_folder):
    from tokenmill.plan import brace_ranges

    assert brace_ranges(["w.part0", "w.part1", "w.part2", "w.part5", "w.part6.shard0", "w.part6.shard1", "x"],
                        "data/packed/", ".pbin") == ("data/packed/w.part{0..2}.pbin data/packed/w.part5.pbin "
                                                     "data/packed/w.part6.shard{0..1}.pbin data/packed/x.pbin")
    plan = plan_of(a={"inputs": ["raw/a.jsonl"], "shard_bytes": 100},
                   b={"inputs": ["raw/a.jsonl"], "shard_bytes": 100, "formats": ["pbin"],
                      "allow_duplicate_inputs": True})
    assert plan.commands.merge_commands("a") == (
        "tokenmill merge data/parts/a.shard{0..2}.pbin -o data/packed/a.pbin --force --on-bad-line error && "
        "tokenmill merge data/parts/a.shard{0..2}_text_document -o data/megatron/a_text_document --force")
    assert plan.commands.merge_commands("b") == \
        "tokenmill merge data/parts/b.shard{0..2}.pbin -o data/packed/b.pbin --force --on-bad-line error"
    assert plan.outputs.merge_unit_megatron_files("b") == [] and len(plan.outputs.merge_unit_megatron_files("a")) == 6
    assert plan.units.merged_builds(megatron=True) == ["a"] and plan.units.merged_builds(megatron=False) == ["b"]


def test_an_sft_set_with_a_chat_template_needs_no_config_rendering_and_passes_it_to_its_job(plan_folder):
    """``chat_template`` frees an entry of ``special_tokens``/``message_construction``; the job's config (params,
    so an edit reruns it) carries the template and ``train_on``, with their defaults filled in."""
    config = {"tokenizers": {"gpt2": {"path": "gpt2.json"}},
              "sft": {"chat": {"inputs": ["raw/a.jsonl"], "tokenizer": "gpt2", "chat_template": "tokenizer",
                               "seq_length": 64}}}
    plan = Plan(validate_config(config, "my.yaml"))
    entry = json.loads(plan.commands.sft_config("chat"))["sft"]["chat"]
    assert (entry["chat_template"], entry["train_on"]) == ("tokenizer", "assistant")
    assert "data/sft/chat.pbin" in plan.outputs.all_targets()
    # the file the template comes from is an input: editing it rebuilds the set (a .jinja path, or the folder's)
    assert plan.units.sft_inputs("chat") == ["raw/a.jsonl", "gpt2.json", "tokenizer_config.json"]
    config["sft"]["chat"]["chat_template"] = "templates/chatml.jinja"
    assert Plan(validate_config(config, "my.yaml")).units.sft_inputs("chat")[-1] == "templates/chatml.jinja"
    config["sft"]["chat"]["chat_template"] = "tokenizer"
    del config["sft"]["chat"]["chat_template"]
    with pytest.raises(TokenmillError, match="my.yaml: sft.chat: 'special_tokens' is a required property"):
        validate_config(config, "my.yaml")
    config["sft"]["chat"].update(chat_template="tokenizer", train_on="users")
    with pytest.raises(TokenmillError, match="my.yaml: sft.chat.train_on: 'users' is not one of"):
        validate_config(config, "my.yaml")


def test_the_date_a_chat_template_sees_is_in_its_jobs_params_and_reruns_that_set_alone(plan_folder):
    """The sft rule's params carry the resolved entry: a chat template's ``template_date`` (the documented default
    filled in), so a rebuild any day renders the same date and an edit reruns exactly that set; an entry without
    a template renders no date, so the key is left out of its params and an edit of it reruns nothing."""
    plain = {"inputs": ["raw/b.jsonl"], "tokenizer": "gpt2", "seq_length": 64, "message_construction": ["text"],
             "special_tokens": {"bos_token": "<s>", "eos_token": "</s>"}}
    config = {"tokenizers": {"gpt2": {"path": "gpt2.json"}},
              "sft": {"chat": {"inputs": ["raw/a.jsonl"], "tokenizer": "gpt2", "chat_template": "tokenizer",
                               "seq_length": 64}, "plain": plain}}
    before = Plan(validate_config(config, "my.yaml")).commands
    assert json.loads(before.sft_config("chat"))["sft"]["chat"]["template_date"] == "2024-07-26"
    assert "template_date" not in json.loads(before.sft_config("plain"))["sft"]["plain"]
    config["sft"]["chat"]["template_date"] = "2026-01-31T09:00"
    plain["template_date"] = "2026-01-31T09:00"
    after = Plan(validate_config(config, "my.yaml")).commands
    assert json.loads(after.sft_config("chat"))["sft"]["chat"]["template_date"] == "2026-01-31T09:00"
    assert after.sft_config("plain") == before.sft_config("plain")
    config["sft"]["chat"]["template_date"] = "31 Jan 2026"
    with pytest.raises(TokenmillError, match="my.yaml: sft.chat.template_date: '31 Jan 2026' does not match"):
        validate_config(config, "my.yaml")


def test_datatroves_tokenizer_name_is_the_configs_spelling_also_where_the_plans_paths_are_absolute(plan_folder):
    """On object storage the workflow plans with absolute local paths; .ds.metadata still names the tokenizer as
    the config file spells it, as a local build's does."""
    from tokenmill.plan.units import with_local_paths_absolute
    config = validate_config({"tokenizers": {"gpt2": {"path": "gpt2.json", "eod": "<|endoftext|>"}},
                              "datasets": {"a": {"inputs": ["raw/a.jsonl"], "tokenizer": "gpt2",
                                                 "formats": ["pbin", "datatrove"]}}}, "my.yaml")
    absolute = with_local_paths_absolute(config)
    assert absolute["tokenizers"]["gpt2"]["path"] == str(plan_folder / "gpt2.json")
    assert Plan(config).commands.datatrove_options("a") == ["--tokenizer-name", "gpt2.json"]
    assert Plan(absolute, {"gpt2": "gpt2.json"}).commands.datatrove_options("a") == ["--tokenizer-name", "gpt2.json"]


def test_a_report_page_records_a_recipe_that_differs_exactly_where_its_page_would(plan_folder):
    """Two configs that share dataset a (its .pbin and Megatron files: one output identity) but not its sequence
    lengths, its on_bad_line or its blend's packing write one page each, data/report/a.html (and the blend's),
    from other options: the recipes differ. A setting the page does not show (another dataset beside it, the blend
    weights' packing) leaves a's recipe as it is; another formats set names another page."""
    def plan(seq_lengths=(512,), blend_packing="concat", **dataset):
        config = {"tokenizers": {"gpt2": {"path": "gpt2.json", "eod": "<|endoftext|>"}},
                  "datasets": {"a": {"inputs": ["raw/a.jsonl"], "tokenizer": "gpt2", **dataset},
                               "b": {"inputs": ["raw/b.jsonl"], "tokenizer": "gpt2"}},
                  "blends": {"ab": {"weights": {"a": 1, "b": 1}, "packing": blend_packing}},
                  "sampling": {"seq_lengths": list(seq_lengths), "seeds": [1],
                               "num_samples": {"train": 10, "valid": 1, "test": 1}}}
        return Plan(validate_config(config, "my.yaml"))

    base = plan().commands
    pages = base.page_recipes()
    assert set(pages) == {"data/report/a.html", "data/report/b.html", "data/report/blend_ab/seq512_seed1.html"}
    blend_page = "data/report/blend_ab/seq512_seed1.html"
    for edited, page in ((plan(seq_lengths=(256, 512)), "data/report/a.html"), (plan(on_bad_line="skip"),
                         "data/report/a.html"), (plan(blend_packing="best_fit"), blend_page)):
        recipes = edited.commands.page_recipes()
        assert recipes[page] != pages[page] and recipes.keys() >= pages.keys(), page
        assert edited.commands.output_identities()["data/packed/a.pbin"] == base.output_identities()[
            "data/packed/a.pbin"]  # shared, not refused at planning
    assert plan(blend_packing="best_fit").commands.page_recipes()["data/report/a.html"] == pages["data/report/a.html"]
    assert plan(formats=["pbin", "megatron", "datatrove"]).commands.page_recipes().keys() - pages.keys() == {
        "data/report/a+datatrove+megatron+pbin.html"}
