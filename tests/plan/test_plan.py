"""The build plan (tokenmill.plan): what the workflow builds from a config, checked in milliseconds
without Snakemake. The rule files only adapt it, so these are the workflow's decisions."""

from __future__ import annotations

import re
import copy
import gzip
import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest
import yaml

from conftest import GPT2, REPO
from tokenmill.config import validate_config
from tokenmill.errors import TokenmillError
from tokenmill.plan import Plan, parse_size


@pytest.fixture
def folder(tmp_path, monkeypatch) -> Path:
    """A working directory holding GPT-2 and three small inputs: a.jsonl (250 bytes), b.jsonl and c.jsonl.gz."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "raw").mkdir()
    (tmp_path / "raw/a.jsonl").write_bytes(b'{"text": "hello world, this is line one"}\n' * 5)
    (tmp_path / "raw/b.jsonl").write_bytes(b'{"text": "b"}\n')
    (tmp_path / "raw/c.jsonl.gz").write_bytes(b"\x1f\x8b\x08\x00" + bytes(20))
    shutil.copy(GPT2, tmp_path / "gpt2.json")
    return tmp_path


def plan_of(**datasets) -> Plan:
    config = {"tokenizers": {"gpt2": {"path": "gpt2.json", "eod": "<|endoftext|>"}},
              "datasets": {name: {"tokenizer": "gpt2", **entry} for name, entry in datasets.items()},
              "sampling": {"seq_lengths": [512], "seeds": [1, 2]}}
    return Plan(validate_config(config, "my.yaml"))


def test_a_single_file_is_one_unit_packed_straight_to_the_build(folder):
    plan = plan_of(a={"inputs": ["raw/a.jsonl"]})
    assert plan.builds["a"].units == ("a",)
    assert plan.pack_options("a") == ["--jq", ".text", "--on-bad-line", "error", "--max-line-bytes", "67108864",
                                      "--engine", "auto", "--check-fraction", "0.002", "--on-mismatch", "error",
                                      "--index", "data/index/a.idx", "--eod", "<|endoftext|>"]
    assert plan.merged_builds() == []


def test_a_big_plain_file_is_cut_in_byte_range_shards_that_tile_it(folder):
    plan = plan_of(a={"inputs": ["raw/a.jsonl"], "shard_bytes": 100})  # 250 bytes → 100, 100, 50
    assert plan.builds["a"].units == ("a.shard0", "a.shard1", "a.shard2")
    assert [plan.units[unit].byte_range for unit in plan.builds["a"].units] == ["0:100", "100:200", "200:"]
    assert plan.pack_options("a.shard1")[-4:] == ["--byte-range", "100:200", "--eod", "<|endoftext|>"]
    assert plan.merge_units("a") == ["data/parts/a.shard0.pbin", "data/parts/a.shard1.pbin",
                                     "data/parts/a.shard2.pbin"]


def test_several_files_are_parts_and_a_compressed_one_has_no_index_and_no_shards(folder):
    plan = plan_of(web={"inputs": ["raw/*.jsonl", "raw/c.jsonl.gz"], "shard_bytes": 100})
    assert plan.builds["web"].units == ("web.part0.shard0", "web.part0.shard1", "web.part0.shard2", "web.part1",
                                        "web.part2")
    assert plan.unit_index("web.part2") == [] and plan.files["web.part2"].compression == "gzip"
    assert "--index" not in plan.pack_options("web.part2")
    assert plan.unit_text_bytes("web.part2") == 4 * 24  # a compressed file counts 4x


@pytest.mark.parametrize("key, value, option", [
    ("text", ".body", ".body"), ("on_bad_line", "skip", "skip"), ("max_line_bytes", 1000, "1000"),
    ("engine", "hf", "hf"), ("check_fraction", 0.5, "0.5"), ("on_mismatch", "hf", "hf"),
    ("eod", "!", "!"), ("add_special_tokens", False, "--no-special-tokens"),
    ("allow_duplicate_inputs", True, "--allow-duplicate-inputs"), ("shard_bytes", 100, "--byte-range"),
])
def test_every_setting_that_changes_packed_bytes_is_in_the_recorded_pack_options(folder, key, value, option):
    """Snakemake reruns a job when a recorded param changes: each setting must show in the options."""
    config = {"tokenizers": {"gpt2": {"path": "gpt2.json", "eod": "<|endoftext|>"}},
              "datasets": {"a": {"inputs": ["raw/a.jsonl"], "tokenizer": "gpt2"}}}
    before = Plan(validate_config(config, "my.yaml"))
    edited = copy.deepcopy(config)
    (edited["tokenizers"]["gpt2"] if key in ("eod", "engine", "check_fraction", "on_mismatch", "add_special_tokens")
     else edited["datasets"]["a"])[key] = value
    after = Plan(validate_config(edited, "my.yaml"))
    unit = after.builds["a"].units[0]
    assert option in after.pack_options(unit) and option not in before.pack_options("a")


@pytest.mark.parametrize("replaced", ["raw/a.jsonl", "gpt2.json"])
def test_a_replaced_input_or_tokenizer_changes_the_recorded_identity_even_when_older(folder, replaced):
    """The unit `a` is named like its file stem `a`: its identity must still hold its tokenizer's."""
    before = plan_of(a={"inputs": ["raw/a.jsonl"]})
    os.utime(replaced, ns=(1, 1))  # as `cp -p` of an older file leaves it
    after = plan_of(a={"inputs": ["raw/a.jsonl"]})
    assert after.unit_identity("a") != before.unit_identity("a")
    assert (after.file_identity("a") != before.file_identity("a")) == (replaced == "raw/a.jsonl")


def test_a_literal_input_name_holding_glob_characters_is_that_file(folder):
    (folder / "raw/sp ace [1].jsonl").write_bytes(b'{"text": "x"}\n')
    (folder / "raw/sp ace 1.jsonl").write_bytes(b'{"text": "y"}\n')
    assert plan_of(a={"inputs": ["raw/sp ace [1].jsonl"]}).files["a"].path == "raw/sp ace [1].jsonl"
    assert plan_of(a={"inputs": ["raw/sp ace [0-9].jsonl"]}).files["a"].path == "raw/sp ace 1.jsonl"


@pytest.mark.parametrize("inputs", [["raw/a.jsonl", "raw/a.jsonl"], ["raw/*.jsonl", "raw/a*"],
                                    ["raw/a.jsonl", "raw/hardlink.jsonl"]])
def test_an_input_named_twice_is_refused_naming_the_key_unless_allowed(folder, inputs):
    os.link("raw/a.jsonl", "raw/hardlink.jsonl")
    with pytest.raises(TokenmillError, match=r"^datasets\.a\.inputs: raw/.* is the file raw/a\.jsonl again and "
                                             r"would be packed twice; .*allow_duplicate_inputs: true$"):
        plan_of(a={"inputs": inputs})
    plan = plan_of(a={"inputs": inputs, "allow_duplicate_inputs": True, "group_bytes": None})
    assert "--allow-duplicate-inputs" in plan.pack_options("a.part1")


def test_small_files_of_one_kind_are_packed_together_up_to_group_bytes(folder):
    for k in range(6):
        (folder / f"raw/s{k}.jsonl").write_bytes(b'{"text": "small"}\n' * 3)  # 54 bytes each
    (folder / "raw/z.jsonl.gz").write_bytes(gzip.compress(b'{"text": "z"}\n'))
    everything = plan_of(a={"inputs": ["raw/s*.jsonl"]})  # 64MB by default: one job, named as the build
    assert everything.builds["a"].units == ("a",) and everything.merged_builds() == []
    assert everything.unit_inputs("a") == [f"raw/s{k}.jsonl" for k in range(6)]
    # scanned by the job: no raw index (and no job) per small file
    assert everything.unit_index("a") == [] and "--index" not in everything.pack_options("a")
    assert not any(target.startswith("data/index/") for target in everything.all_targets())
    assert everything.unit_text_bytes("a") == 6 * 54
    # 120 bytes: two files a group; a compressed file starts a group of its kind; a big file is cut alone
    plan = plan_of(a={"inputs": ["raw/s0.jsonl", "raw/s1.jsonl", "raw/s2.jsonl", "raw/z.jsonl.gz", "raw/a.jsonl",
                                 "raw/s3.jsonl", "raw/s4.jsonl", "raw/s5.jsonl"], "group_bytes": 120,
                      "shard_bytes": 200})
    assert plan.builds["a"].units == ("a.part0", "a.part2", "a.part3", "a.part4.shard0", "a.part4.shard1",
                                      "a.part5", "a.part7")
    assert [plan.unit_inputs(unit) for unit in ("a.part0", "a.part2", "a.part3", "a.part5")] == [
        ["raw/s0.jsonl", "raw/s1.jsonl"], ["raw/s2.jsonl"], ["raw/z.jsonl.gz"], ["raw/s3.jsonl", "raw/s4.jsonl"]]
    assert plan.unit_index("a.part3") == [] and plan.unit_identity("a.part0").count(";") == 2  # 2 files + tokenizer
    assert plan.unit_index("a.part2") == ["data/index/a.part2.idx"]  # alone in its unit: read through its index
    assert plan.unit_index("a.part4.shard1") == ["data/index/a.part4.idx"]
    alone = plan_of(a={"inputs": ["raw/s*.jsonl"], "group_bytes": None})
    assert alone.builds["a"].units == tuple(f"a.part{k}" for k in range(6))


def test_a_group_stops_before_its_command_line_would_pass_64_kib(folder):
    long_name = "x" * 200
    for k in range(400):
        (folder / f"raw/{long_name}{k:03d}.jsonl").write_bytes(b'{"text": "small"}\n')
    plan = plan_of(a={"inputs": [f"raw/{long_name}*.jsonl"]})
    units = plan.builds["a"].units
    assert len(units) > 1 and sum(len(plan.unit_inputs(unit)) for unit in units) == 400
    assert all(len(" ".join(plan.unit_inputs(unit) + plan.unit_index(unit))) < 64 << 10 for unit in units)


def test_targets_hold_every_final_file_so_a_deleted_one_is_rebuilt(folder):
    plan = plan_of(a={"inputs": ["raw/a.jsonl"]}, z={"inputs": ["raw/c.jsonl.gz"]})
    targets = plan.all_targets()
    for path in ("data/index/a.idx", "data/packed/a.pbin", "data/packed/a.pbin.meta.json",
                 "data/megatron/a_text_document.bin",
                 "data/megatron/a_text_document.idx", "data/cache/a/seq512_seed2", "data/verified/a.ok",
                 "data/report/a.html", "data/packed/z.pbin"):
        assert path in targets
    assert "data/index/z.idx" not in targets  # a compressed input is read as a stream


def test_verify_checks_the_inputs_a_build_must_cover(folder):
    plan = plan_of(a={"inputs": ["raw/a.jsonl", "raw/b.jsonl"], "group_bytes": None})
    assert plan.verify_options("a") == ["--made-from", "data/packed/a.pbin", "--inputs", "raw/a.jsonl", "raw/b.jsonl",
                                        "--", "data/packed/a.pbin",
                                        "data/megatron/a_text_document", "data/cache/a/seq512_seed1",
                                        "data/cache/a/seq512_seed2"]
    assert {"raw/a.jsonl", "raw/b.jsonl", "data/index/a.part0.idx"} <= set(plan.verify_files("a"))


def test_the_olmo_format_is_a_folder_converted_verified_and_reported(folder):
    plan = plan_of(a={"inputs": ["raw/a.jsonl"], "formats": ["pbin", "olmo"], "id_field": None,
                      "olmo_max_tokens": 1000, "count_by": ".meta.domain"})
    assert plan.builds_with(olmo=True) == ["a"] and "data/olmo/a" in plan.all_targets()
    assert plan.olmo_options("a") == ["--max-tokens", "1000", "--id-field", ""]
    assert plan.verify_options("a")[:2] == ["--made-from", "data/packed/a.pbin"]
    assert plan.verify_options("a")[-1] == "data/olmo/a"  # no caches without the megatron format
    assert plan.report_options("a") == ["--file", "data/olmo/a", "--count-by", ".meta.domain"]
    assert plan_of(a={"inputs": ["raw/a.jsonl"]}).olmo_options("a") == ["--max-tokens", "536870912", "--id-field",
                                                                         "id"]


def test_an_sft_set_with_the_olmo_format_has_its_folder_verified_against_its_pair(folder):
    config = {"tokenizers": {"gpt2": {"path": "gpt2.json", "eod": "<|endoftext|>"}},
              "datasets": {"a": {"inputs": ["raw/a.jsonl"], "tokenizer": "gpt2"}},
              "sft": {name: {"inputs": ["raw/a.jsonl"], "tokenizer": "gpt2",
                             "special_tokens": {"bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>"},
                             "message_construction": ["conversations"], "seq_length": 64, **extra}
                      for name, extra in (("plain", {}), ("olmo", {"formats": ["pbin", "olmo"]}))}}
    plan = Plan(validate_config(config, "my.yaml"))
    assert plan.sft_olmo_folders("plain") == [] and plan.sft_verify_options("plain") == ["data/sft/plain.pbin"]
    assert plan.sft_olmo_folders("olmo") == ["data/sft/olmo.olmo"] and "data/sft/olmo.olmo" in plan.all_targets()
    assert plan.sft_verify_options("olmo") == ["data/sft/olmo.pbin", "data/sft/olmo.olmo", "--made-from",
                                               "data/sft/olmo.pbin"]


def test_several_tokenizers_make_one_build_each_from_one_raw_index(folder):
    config = {"tokenizers": {"gpt2": {"path": "gpt2.json"}, "other": {"path": "gpt2.json"}},
              "datasets": {"a": {"inputs": ["raw/a.jsonl"], "tokenizer": ["gpt2", "other"]}},
              "blends": {"mix": {"weights": {"a": 1}, "tokenizer": "other"}},
              "sampling": {"seq_lengths": [64], "num_samples": {"train": 10, "valid": 1, "test": 1}}}
    plan = Plan(validate_config(config, "my.yaml"))
    assert list(plan.builds) == ["a.gpt2", "a.other"]
    assert plan.unit_index("a.gpt2") == plan.unit_index("a.other") == ["data/index/a.idx"]
    assert plan.blends == {"mix": {"a.other": 1}}
    assert plan.blend_options("mix")[:2] == ["1", "data/megatron/a.other_text_document"]


@pytest.mark.parametrize("change, message", [
    (lambda c: c["datasets"]["a"].update(inputs=["raw/none*.jsonl"]),
     "datasets.a.inputs: 'raw/none*.jsonl' matches no file"),
    (lambda c: c["datasets"]["a"].update(tokenizer="nope"), "datasets.a.tokenizer: 'nope' is not in tokenizers"),
    (lambda c: c["datasets"]["a"].update(shard_bytes="2 parsecs"),
     "datasets.a.shard_bytes: '2 parsecs' is not a size (e.g. 2GB, 512MiB or bytes)"),
    (lambda c: c["tokenizers"]["gpt2"].update(path="missing.json"),
     "tokenizers.gpt2.path: missing.json: no such file"),
    (lambda c: c.update(blends={"mix": {"weights": {"zzz": 1}}}, sampling={"num_samples": {"train": 1, "valid": 1,
                                                                                           "test": 1}}),
     "blends.mix.weights: 'zzz' is not in datasets"),
    (lambda c: c["sampling"].update(split="a"), "sampling.split: split 'a': not a list of numbers"),
    (lambda c: c["datasets"]["a"].update(text=".text["), "datasets.a.text: text pattern '.text[' is not valid jq"),
    (lambda c: c.update(sft={"chat": {"inputs": ["raw/chat*.jsonl"], "tokenizer": "gpt2", "seq_length": 8,
                                      "special_tokens": {"bos_token": "a", "eos_token": "b"},
                                      "message_construction": ["role"]}}),
     "sft.chat.inputs: raw/chat*.jsonl: no such file"),
    (lambda c: c["datasets"]["a"].update(count_by="..x"),
     "datasets.a.count_by: '..x': not a field path such as .id or .meta.domain"),
    (lambda c: c["datasets"]["a"].update(id_field=""), "datasets.a.id_field: '': not a field path such as .id or "
                                                       ".meta.domain"),
])
def test_a_config_that_cannot_be_built_is_refused_naming_the_key(folder, change, message):
    config = {"tokenizers": {"gpt2": {"path": "gpt2.json"}},
              "datasets": {"a": {"inputs": ["raw/a.jsonl"], "tokenizer": "gpt2"}}, "sampling": {}}
    change(config)
    with pytest.raises(TokenmillError, match=re.escape(message)) as error:
        Plan(validate_config(config, "my.yaml"))
    assert str(error.value).startswith(message)


def test_a_misspelt_key_names_its_path_and_the_nearest_valid_key():
    config = {"tokenizers": {"gpt2": {"path": "x"}},
              "datasets": {"demo": {"inputs": ["x"], "tokenizer": "gpt2", "on_bad_lines": "skip"}}}
    with pytest.raises(TokenmillError, match="unknown key 'on_bad_lines'") as error:
        validate_config(config, "my.yaml")
    assert str(error.value) == "my.yaml: datasets.demo: unknown key 'on_bad_lines' (did you mean 'on_bad_line'?)"


def test_defaults_come_from_the_schema():
    config = validate_config({"tokenizers": {"t": {"path": "x"}},
                              "datasets": {"d": {"inputs": ["x"], "tokenizer": "t"}}}, "my.yaml")
    assert config["datasets"]["d"]["on_bad_line"] == "error" and config["datasets"]["d"]["text"] == ".text"
    assert config["tokenizers"]["t"]["engine"] == "auto" and config["sampling"]["split"] == "969,30,1"
    assert config["keep_parts"] is True and config["blends"] == {}


@pytest.mark.parametrize("text, size", [("2GB", 2 * 10**9), ("512MiB", 512 << 20), ("1.5kB", 1500), (7, 7)])
def test_sizes_are_read_with_their_units(text, size):
    assert parse_size("k", text) == size


def test_the_workflow_schema_is_a_real_file_equal_to_the_package_schema():
    workflow_copy = REPO / "workflow/schemas/config.schema.yaml"
    assert not workflow_copy.is_symlink()  # a copy of workflow/ without -L (rsync, cluster staging) must work
    assert workflow_copy.read_bytes() == (REPO / "src/tokenmill/schemas/config.schema.yaml").read_bytes()


def test_the_demo_config_plans_the_demo(monkeypatch):
    monkeypatch.chdir(REPO)
    plan = Plan(validate_config(yaml.safe_load((REPO / "config/config.yaml").read_text()), "config/config.yaml"))
    assert list(plan.builds) == ["demo"] and plan.cache_dirs("demo") == ["data/cache/demo/seq512_seed1234",
                                                                        "data/cache/demo/seq2048_seed1234"]


@pytest.mark.parametrize("keep_parts", [True, False])
def test_kept_parts_are_targets_so_a_deleted_one_is_rebuilt(folder, keep_parts):
    config = {"tokenizers": {"gpt2": {"path": "gpt2.json"}}, "keep_parts": keep_parts,
              "datasets": {"a": {"inputs": ["raw/a.jsonl"], "tokenizer": "gpt2", "shard_bytes": 100}}}
    targets = Plan(validate_config(config, "my.yaml")).all_targets()
    parts = ["data/parts/a.shard1.pbin", "data/parts/a.shard1.pbin.meta.json",
             "data/parts/a.shard1_text_document.bin", "data/parts/a.shard1_text_document.idx"]
    assert all((part in targets) == keep_parts for part in parts)


def test_the_cli_and_the_library_take_their_defaults_from_the_config_schema():
    from tokenmill.cli import build_parser
    from tokenmill.config import default, schema
    from tokenmill.pack.pretraining import PackSettings

    datasets = schema()["properties"]["datasets"]["additionalProperties"]["properties"]
    tokenizers = schema()["properties"]["tokenizers"]["additionalProperties"]["properties"]
    assert default("datasets.*.text") == datasets["text"]["default"] == ".text"
    pack = build_parser().parse_args(["pack", "x.jsonl", "--tokenizer", "t.json", "--eod", "!"])
    settings = PackSettings("t.json")
    for option, key in (("jq", "datasets.*.text"), ("on_bad_line", "datasets.*.on_bad_line"),
                        ("max_line_bytes", "datasets.*.max_line_bytes"), ("engine", "tokenizers.*.engine"),
                        ("check_fraction", "tokenizers.*.check_fraction"),
                        ("on_mismatch", "tokenizers.*.on_mismatch")):
        *_, name = key.split(".")
        schema_default = (datasets if key.startswith("datasets") else tokenizers)[name]["default"]
        assert getattr(pack, option) == getattr(settings, "text" if option == "jq" else option) == schema_default
    sample_index = build_parser().parse_args(["sample-index", "p", "-o", "c", "--seq-length", "8", "--seed", "1",
                                              "--epochs", "1", "--vocab-size", "8"])
    assert sample_index.split == schema()["properties"]["sampling"]["properties"]["split"]["default"]
    with pytest.raises(KeyError, match="no_such_key"):
        default("datasets.*.no_such_key")


def test_a_file_of_the_layout_names_its_build_and_workflow_folder():
    from tokenmill.plan import build_of

    assert build_of("data/packed/demo.pbin") == (Path("."), "demo")
    assert build_of("/x/y/data/megatron/demo.gpt2_text_document") == (Path("/x/y"), "demo.gpt2")
    assert build_of("data/megatron/demo_text_document.idx") == (Path("."), "demo")
    assert build_of("w/data/cache/demo/seq512_seed1234") == (Path("w"), "demo")
    for elsewhere in ("other/demo.pbin", "megatron/x_text_document", "data/cache/seq512_seed1234"):
        assert build_of(elsewhere) is None


def test_a_merged_builds_commands_name_its_units_as_brace_ranges_in_order(folder):
    from tokenmill.plan import brace_ranges

    assert brace_ranges(["w.part0", "w.part1", "w.part2", "w.part5", "w.part6.shard0", "w.part6.shard1", "x"],
                        "data/packed/", ".pbin") == ("data/packed/w.part{0..2}.pbin data/packed/w.part5.pbin "
                                                     "data/packed/w.part6.shard{0..1}.pbin data/packed/x.pbin")
    plan = plan_of(a={"inputs": ["raw/a.jsonl"], "shard_bytes": 100},
                   b={"inputs": ["raw/a.jsonl"], "shard_bytes": 100, "formats": ["pbin"],
                      "allow_duplicate_inputs": True})
    assert plan.merge_commands("a") == (
        "tokenmill merge data/parts/a.shard{0..2}.pbin -o data/packed/a.pbin --force && "
        "tokenmill merge data/parts/a.shard{0..2}_text_document -o data/megatron/a_text_document --force")
    assert plan.merge_commands("b") == "tokenmill merge data/parts/b.shard{0..2}.pbin -o data/packed/b.pbin --force"
    assert plan.merge_unit_megatron_files("b") == [] and len(plan.merge_unit_megatron_files("a")) == 6
    assert plan.merged_builds(megatron=True) == ["a"] and plan.merged_builds(megatron=False) == ["b"]


def test_best_fit_packing_plans_a_packed_index_and_olmo_work_dirs(folder):
    plan = plan_of(a={"inputs": ["raw/a.jsonl"], "packing": "best_fit", "formats": ["pbin", "megatron", "olmo"],
                      "long_doc_strategy": "fragment"})
    assert plan.best_fit_dirs("a") == ["data/cache/a/seq512_seed1_best_fit", "data/cache/a/seq512_seed2_best_fit",
                                       "data/olmo/a.best_fit/seq512"]
    assert set(plan.best_fit_dirs("a")) <= set(plan.all_targets())
    assert plan.best_fit_options("a") == ["--long-doc-strategy", "fragment", "--split", "969,30,1"]
    assert plan.olmo_best_fit_options("a") == ["--long-doc-strategy", "fragment", "--job-path-prefix", "data/olmo/a"]
    assert plan_of(a={"inputs": ["raw/a.jsonl"]}).best_fit_dirs("a") == []


def test_best_fit_packing_refuses_what_it_cannot_make(folder):
    with pytest.raises(TokenmillError, match=r"^datasets.a.packing: best_fit packs for the megatron or olmo format; "
                                             r"its formats are pbin$"):
        plan_of(a={"inputs": ["raw/a.jsonl"], "packing": "best_fit", "formats": ["pbin"]})
    config = {"tokenizers": {"gpt2": {"path": "gpt2.json", "eod": "<|endoftext|>"}},
              "datasets": {"a": {"inputs": ["raw/a.jsonl"], "tokenizer": "gpt2", "packing": "best_fit",
                                 "formats": ["pbin", "olmo"]}},
              "sampling": {"seq_lengths": [1000, 2048]}}
    with pytest.raises(TokenmillError, match=r"^datasets.a.packing: OLMo-core packs only sequence lengths that are "
                                             r"powers of two; sampling.seq_lengths has 1000$"):
        Plan(validate_config(config, "my.yaml"))


def test_best_fit_packing_of_blends_and_sft_sets_plans_their_folders_and_leaves_the_pair_alone(folder):
    config = {"tokenizers": {"gpt2": {"path": "gpt2.json", "eod": "<|endoftext|>"}},
              "datasets": {"a": {"inputs": ["raw/a.jsonl"], "tokenizer": "gpt2"},
                           "b": {"inputs": ["raw/b.jsonl"], "tokenizer": "gpt2"}},
              "blends": {"ab": {"weights": {"a": 1, "b": 3}, "packing": "best_fit", "long_doc_strategy": "fragment"}},
              "sampling": {"seq_lengths": [512], "seeds": [1], "num_samples": {"train": 10, "valid": 2, "test": 0}},
              "sft": {"chat": {"inputs": ["raw/a.jsonl"], "tokenizer": "gpt2", "message_construction": ["c"],
                               "special_tokens": {"bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>"},
                               "seq_length": 64, "formats": ["pbin", "olmo"]}}}
    concat = Plan(validate_config(config, "my.yaml"))
    assert concat.sft_packing_dirs("chat") == concat.sft_olmo_packing_dirs("chat") == []
    config["sft"]["chat"]["packing"] = "best_fit"
    plan = Plan(validate_config(config, "my.yaml"))
    assert plan.blend_packing_dirs("ab") == ["data/cache/blend_ab/seq512_seed1_best_fit"]
    assert plan.blend_best_fit_options("ab") == [
        "--blend", "1", "data/megatron/a_text_document", "3", "data/megatron/b_text_document", "--split", "969,30,1",
        "--train-samples=10", "--valid-samples=2", "--test-samples=0", "--long-doc-strategy", "fragment"]
    assert plan.sft_packing_dirs("chat") == ["data/sft/chat.best_fit"]
    assert plan.sft_olmo_packing_dirs("chat") == ["data/sft/chat.olmo.best_fit"]
    assert {*plan.blend_packing_dirs("ab"), "data/sft/chat.best_fit", "data/sft/chat.olmo.best_fit"} <= \
        set(plan.all_targets())
    assert plan.sft_olmo_best_fit_options("chat") == ["--seq-length", "64", "--job-path-prefix", "data/sft/chat.olmo"]
    config["sft"]["chat"]["olmo_path"] = "/mnt/sft/chat/"
    plan = Plan(validate_config(config, "my.yaml"))
    assert plan.sft_olmo_best_fit_options("chat")[-1] == "/mnt/sft/chat"
    assert plan.sft_config("chat") == concat.sft_config("chat")  # the pair is not tokenized again
    config["sft"]["chat"]["seq_length"] = 100
    with pytest.raises(TokenmillError, match=r"^sft.chat.packing: OLMo-core packs only sequence lengths that are "
                                             r"powers of two; its seq_length is 100$"):
        Plan(validate_config(config, "my.yaml"))


def test_an_eod_that_is_an_ordinary_token_is_named_and_refused_where_readers_scan_for_it(folder):
    """GPT-2's Ċ (a newline) is a vocabulary entry: text holds it, so every reader that ends documents at the EOS
    (OLMo-core without the csv, datatrove) would cut at each newline."""
    def plan(eod: str, formats: list[str], **tokenizer) -> Plan:
        config = {"tokenizers": {"gpt2": {"path": "gpt2.json", "eod": eod, **tokenizer}},
                  "datasets": {"a": {"inputs": ["raw/a.jsonl"], "tokenizer": "gpt2", "formats": formats}}}
        return Plan(validate_config(config, "my.yaml"))

    assert plan("<|endoftext|>", ["pbin", "olmo"]).notes() == []
    assert plan("Ċ", ["pbin", "megatron"]).notes() == [
        "tokenizers.gpt2.eod: 'Ċ' is an ordinary token of the vocabulary, not a special one: text holding it ends a "
        "document for any reader that scans for the EOS (ordinary_eod: true says it is meant)"]
    with pytest.raises(TokenmillError, match=r"^tokenizers.gpt2.eod: 'Ċ' is an ordinary token of the vocabulary, "
                                             r"which text holds too, and datasets.a is made for olmo, whose readers "
                                             r"end a document at every one; name a special token, or set "
                                             r"tokenizers.gpt2.ordinary_eod: true$"):
        plan("Ċ", ["pbin", "olmo"])
    assert len(plan("Ċ", ["pbin", "datatrove"], ordinary_eod=True).notes()) == 1


def test_a_relative_tokenizer_model_hashed_into_the_cache_names_is_named_at_planning(folder):
    config = {"tokenizers": {"sp": {"path": "sp.model", "type": "Llama2Tokenizer"}},
              "datasets": {"a": {"inputs": ["raw/a.jsonl"], "tokenizer": "sp"}}, "sampling": {"seq_lengths": [512]}}
    (folder / "sp.model").write_bytes(b"")  # planning reads no .model
    assert Plan(validate_config(config, "my.yaml")).notes() == [
        "tokenizers.sp.path: the caches are named for a job passing --tokenizer-model sp.model as spelled here; if "
        "your job spells it otherwise (an absolute path), give its flags in tokenizers.sp.megatron.args"]
    config["tokenizers"]["sp"]["megatron"] = {"args": "--tokenizer-type Llama2Tokenizer --tokenizer-model /m/sp.model"}
    assert Plan(validate_config(config, "my.yaml")).notes() == []


def test_an_sft_set_with_a_chat_template_needs_no_config_rendering_and_passes_it_to_its_job(folder):
    """``chat_template`` frees an entry of ``special_tokens``/``message_construction``; the job's config (params,
    so an edit reruns it) carries the template and ``train_on``, with their defaults filled in."""
    config = {"tokenizers": {"gpt2": {"path": "gpt2.json"}},
              "sft": {"chat": {"inputs": ["raw/a.jsonl"], "tokenizer": "gpt2", "chat_template": "tokenizer",
                               "seq_length": 64}}}
    plan = Plan(validate_config(config, "my.yaml"))
    entry = json.loads(plan.sft_config("chat"))["sft"]["chat"]
    assert (entry["chat_template"], entry["train_on"]) == ("tokenizer", "assistant")
    assert "data/sft/chat.pbin" in plan.all_targets()
    # the file the template comes from is an input: editing it rebuilds the set (a .jinja path, or the folder's)
    assert plan.sft_inputs("chat") == ["raw/a.jsonl", "gpt2.json", "tokenizer_config.json"]
    config["sft"]["chat"]["chat_template"] = "templates/chatml.jinja"
    assert Plan(validate_config(config, "my.yaml")).sft_inputs("chat")[-1] == "templates/chatml.jinja"
    config["sft"]["chat"]["chat_template"] = "tokenizer"
    del config["sft"]["chat"]["chat_template"]
    with pytest.raises(TokenmillError, match="my.yaml: sft.chat: 'special_tokens' is a required property"):
        validate_config(config, "my.yaml")
    config["sft"]["chat"].update(chat_template="tokenizer", train_on="users")
    with pytest.raises(TokenmillError, match="my.yaml: sft.chat.train_on: 'users' is not one of"):
        validate_config(config, "my.yaml")


def test_datatroves_tokenizer_name_is_the_configs_spelling_also_where_the_plans_paths_are_absolute(folder):
    """On object storage the workflow plans with absolute local paths; .ds.metadata still names the tokenizer as
    the config file spells it, as a local build's does."""
    from tokenmill.plan.units import with_local_paths_absolute
    config = validate_config({"tokenizers": {"gpt2": {"path": "gpt2.json", "eod": "<|endoftext|>"}},
                              "datasets": {"a": {"inputs": ["raw/a.jsonl"], "tokenizer": "gpt2",
                                                 "formats": ["pbin", "datatrove"]}}}, "my.yaml")
    absolute = with_local_paths_absolute(config)
    assert absolute["tokenizers"]["gpt2"]["path"] == str(folder / "gpt2.json")
    assert Plan(config).datatrove_options("a") == ["--tokenizer-name", "gpt2.json"]
    assert Plan(absolute, {"gpt2": "gpt2.json"}).datatrove_options("a") == ["--tokenizer-name", "gpt2.json"]


def _megatron_prefix(folder: Path, name: str = "made/web_text_document") -> str:
    """A small Megatron dataset made outside the workflow's folders (two documents ending with GPT-2's EOD)."""
    from tokenmill.formats.mmidx import MMapIndexedDatasetBuilder

    (folder / name).parent.mkdir(parents=True, exist_ok=True)
    with MMapIndexedDatasetBuilder(folder / name, np.uint16) as builder:
        builder.add_documents(np.array([5, 50256, 6, 7, 50256]), np.array([2, 3]))
    return name


def test_a_dataset_of_tokens_is_one_tokens_in_job_and_no_pack_unit(folder):
    prefix = _megatron_prefix(folder)
    plan = plan_of(web={"tokens": [f"{prefix}.bin"], "formats": ["pbin", "megatron", "olmo"]})
    assert plan.builds["web"].units == () and plan.single_unit_builds() == plan.merged_builds() == []
    assert plan.token_builds(megatron=True) == ["web"] and plan.token_files("web") == [f"{prefix}.bin", f"{prefix}.idx"]
    assert plan.tokens_in_options("web") == [prefix, "--eod", "<|endoftext|>"]
    assert plan.tokens_in_outputs("web") == ["-o", "data/packed/web.pbin",
                                             "--megatron", "data/megatron/web_text_document"]
    assert plan.tokens_in_inputs("web")[-1] == "gpt2.json" and plan.tokens_identity("web").startswith(
        f"{prefix}.bin: 10 bytes, mtime ")
    assert plan.verify_options("web")[:4] == ["--made-from", "data/packed/web.pbin", "--inputs", f"{prefix}.bin"]
    assert not any(target.startswith("data/index/") for target in plan.all_targets())
    assert "data/olmo/web" in plan.all_targets() and plan.cache_dirs("web")


@pytest.mark.parametrize("entry, message", [
    ({"inputs": ["raw/a.jsonl"], "tokens": ["made/web_text_document"]},
     "datasets.web: give inputs (JSONL to tokenize) or tokens (.bin/.idx prefixes or .pbin files already made), not "
     "both"),
    ({}, "datasets.web: give inputs (JSONL to tokenize) or tokens"),
    ({"tokens": ["made/other_text_document"]}, "datasets.web.tokens: made/other_text_document.bin: no such file (the "
                                                "prefix made/other_text_document names made/other_text_document.bin"),
    ({"tokens": ["made/*.pbin"]}, "datasets.web.tokens: 'made/*.pbin' matches no .bin/.idx or .pbin file"),
    ({"tokens": ["made/fake"]}, "datasets.web.tokens: made/fake.idx: not a Megatron .idx (it starts with b'\\x80\\x04"),
    ({"tokens": ["made/web_text_document"], "tokenizer": ["gpt2", "gpt2b"]},
     "datasets.web.tokenizer: tokens were made with one tokenizer; name that one"),
    ({"tokens": ["made/web_text_document"], "count_by": ".source"},
     "datasets.web.count_by: a dataset of tokens has no JSON lines to count by"),
    ({"tokens": ["made/web_text_document", "made/web_text_document.idx"]},
     "datasets.web.tokens: made/web_text_document is named twice"),
    ({"tokens": ["data/megatron/web_text_document"]},
     "datasets.web.tokens: data/megatron/web_text_document.bin lies in data/megatron/, where the workflow writes"),
])
def test_a_dataset_of_tokens_that_cannot_be_built_is_refused_naming_the_key(folder, entry, message):
    _megatron_prefix(folder)
    _megatron_prefix(folder, "data/megatron/web_text_document")
    (folder / "made/fake.bin").write_bytes(b"")
    (folder / "made/fake.idx").write_bytes(b"\x80\x04" + bytes(40))
    config = {"tokenizers": {"gpt2": {"path": "gpt2.json", "eod": "<|endoftext|>"},
                             "gpt2b": {"path": "gpt2.json", "eod": "<|endoftext|>"}},
              "datasets": {"web": {"tokenizer": "gpt2", **entry}}}
    with pytest.raises(TokenmillError) as error:
        Plan(validate_config(config, "my.yaml"))
    assert str(error.value).startswith(message), str(error.value)
