"""What a config builds (tokenmill.plan.units): datasets → builds → units, shards and groups, blends, SFT sets,
and every config it refuses, naming the key; checked in milliseconds without Snakemake."""

from __future__ import annotations

import gzip
import os
import re
from pathlib import Path

import numpy as np
import pytest

from conftest import plan_of
from tokenmill.config import validate_config
from tokenmill.errors import TokenmillError
from tokenmill.plan import Plan, parse_size


def test_a_single_file_is_one_unit_packed_straight_to_the_build(plan_folder):
    plan = plan_of(a={"inputs": ["raw/a.jsonl"]})
    assert plan.units.builds["a"].units == ("a",)
    assert plan.commands.pack_options("a") == ["--jq", ".text", "--max-line-bytes", "67108864", "--engine", "auto",
                                               "--check-fraction", "0.002", "--on-mismatch", "error", "--index",
                                               "data/index/a.idx", "--eod", "<|endoftext|>"]
    assert plan.commands.bad_line_option("a") == ["--on-bad-line", "error"]  # the job's, not its identity
    assert plan.units.merged_builds() == []


def test_a_big_plain_file_is_cut_in_byte_range_shards_that_tile_it(plan_folder):
    plan = plan_of(a={"inputs": ["raw/a.jsonl"], "shard_bytes": 100})  # 250 bytes → 100, 100, 50
    assert plan.units.builds["a"].units == ("a.shard0", "a.shard1", "a.shard2")
    assert [plan.units.units[unit].byte_range for unit in plan.units.builds["a"].units] == ["0:100", "100:200", "200:"]
    assert plan.commands.pack_options("a.shard1")[-4:] == ["--byte-range", "100:200", "--eod", "<|endoftext|>"]
    assert plan.outputs.merge_units("a") == ["data/parts/a.shard0.pbin", "data/parts/a.shard1.pbin",
                                             "data/parts/a.shard2.pbin"]


def test_several_files_are_parts_and_a_compressed_one_has_no_index_and_no_shards(plan_folder):
    plan = plan_of(web={"inputs": ["raw/*.jsonl", "raw/c.jsonl.gz"], "shard_bytes": 100})
    assert plan.units.builds["web"].units == ("web.part0.shard0", "web.part0.shard1", "web.part0.shard2", "web.part1",
                                              "web.part2")
    assert plan.outputs.unit_index("web.part2") == [] and plan.units.files["web.part2"].compression == "gzip"
    assert "--index" not in plan.commands.pack_options("web.part2")
    assert plan.units.unit_text_bytes("web.part2") == 4 * 24  # a compressed file counts 4x


def test_a_literal_input_name_holding_glob_characters_is_that_file(plan_folder):
    (plan_folder / "raw/sp ace [1].jsonl").write_bytes(b'{"text": "x"}\n')
    (plan_folder / "raw/sp ace 1.jsonl").write_bytes(b'{"text": "y"}\n')
    assert plan_of(a={"inputs": ["raw/sp ace [1].jsonl"]}).units.files["a"].path == "raw/sp ace [1].jsonl"
    assert plan_of(a={"inputs": ["raw/sp ace [0-9].jsonl"]}).units.files["a"].path == "raw/sp ace 1.jsonl"


@pytest.mark.parametrize("inputs", [["raw/a.jsonl", "raw/a.jsonl"], ["raw/*.jsonl", "raw/a*"],
                                    ["raw/a.jsonl", "raw/hardlink.jsonl"]])
def test_an_input_named_twice_is_refused_naming_the_key_unless_allowed(plan_folder, inputs):
    os.link("raw/a.jsonl", "raw/hardlink.jsonl")
    with pytest.raises(TokenmillError, match=r"^datasets\.a\.inputs: raw/.* is the file raw/a\.jsonl again and "
                                             r"would be packed twice; .*allow_duplicate_inputs: true$"):
        plan_of(a={"inputs": inputs})
    plan = plan_of(a={"inputs": inputs, "allow_duplicate_inputs": True, "group_bytes": None})
    assert "--allow-duplicate-inputs" in plan.commands.pack_options("a.part1")


def test_small_files_of_one_kind_are_packed_together_up_to_group_bytes(plan_folder):
    for k in range(6):
        (plan_folder / f"raw/s{k}.jsonl").write_bytes(b'{"text": "small"}\n' * 3)  # 54 bytes each
    (plan_folder / "raw/z.jsonl.gz").write_bytes(gzip.compress(b'{"text": "z"}\n'))
    everything = plan_of(a={"inputs": ["raw/s*.jsonl"]})  # 64MB by default: one job, named as the build
    assert everything.units.builds["a"].units == ("a",) and everything.units.merged_builds() == []
    assert everything.units.unit_inputs("a") == [f"raw/s{k}.jsonl" for k in range(6)]
    # scanned by the job: no raw index (and no job) per small file
    assert everything.outputs.unit_index("a") == [] and "--index" not in everything.commands.pack_options("a")
    assert not any(target.startswith("data/index/") for target in everything.outputs.all_targets())
    assert everything.units.unit_text_bytes("a") == 6 * 54
    # 120 bytes: two files a group; a compressed file starts a group of its kind; a big file is cut alone
    plan = plan_of(a={"inputs": ["raw/s0.jsonl", "raw/s1.jsonl", "raw/s2.jsonl", "raw/z.jsonl.gz", "raw/a.jsonl",
                                 "raw/s3.jsonl", "raw/s4.jsonl", "raw/s5.jsonl"], "group_bytes": 120,
                      "shard_bytes": 200})
    assert plan.units.builds["a"].units == ("a.part0", "a.part2", "a.part3", "a.part4.shard0", "a.part4.shard1",
                                            "a.part5", "a.part7")
    assert [plan.units.unit_inputs(unit) for unit in ("a.part0", "a.part2", "a.part3", "a.part5")] == [
        ["raw/s0.jsonl", "raw/s1.jsonl"], ["raw/s2.jsonl"], ["raw/z.jsonl.gz"], ["raw/s3.jsonl", "raw/s4.jsonl"]]
    assert plan.outputs.unit_index("a.part3") == []
    assert plan.commands.unit_identity("a.part0").count(";") == 2  # 2 files + tokenizer
    assert plan.outputs.unit_index("a.part2") == ["data/index/a.part2.idx"]  # alone in its unit: read through its index
    assert plan.outputs.unit_index("a.part4.shard1") == ["data/index/a.part4.idx"]
    alone = plan_of(a={"inputs": ["raw/s*.jsonl"], "group_bytes": None})
    assert alone.units.builds["a"].units == tuple(f"a.part{k}" for k in range(6))


def test_a_group_stops_before_its_command_line_would_pass_64_kib(plan_folder):
    long_name = "x" * 200
    for k in range(400):
        (plan_folder / f"raw/{long_name}{k:03d}.jsonl").write_bytes(b'{"text": "small"}\n')
    plan = plan_of(a={"inputs": [f"raw/{long_name}*.jsonl"]})
    units = plan.units.builds["a"].units
    assert len(units) > 1 and sum(len(plan.units.unit_inputs(unit)) for unit in units) == 400
    assert all(len(" ".join(plan.units.unit_inputs(unit) + plan.outputs.unit_index(unit))) < 64 << 10 for unit in units)


def test_several_tokenizers_make_one_build_each_from_one_raw_index(plan_folder):
    config = {"tokenizers": {"gpt2": {"path": "gpt2.json"}, "other": {"path": "gpt2.json"}},
              "datasets": {"a": {"inputs": ["raw/a.jsonl"], "tokenizer": ["gpt2", "other"]}},
              "blends": {"mix": {"weights": {"a": 1}, "tokenizer": "other"}},
              "sampling": {"seq_lengths": [64], "num_samples": {"train": 10, "valid": 1, "test": 1}}}
    plan = Plan(validate_config(config, "my.yaml"))
    assert list(plan.units.builds) == ["a.gpt2", "a.other"]
    assert plan.outputs.unit_index("a.gpt2") == plan.outputs.unit_index("a.other") == ["data/index/a.idx"]
    assert plan.units.blends == {"mix": {"a.other": 1}}
    assert plan.commands.blend_options("mix")[:2] == ["1", "data/megatron/a.other_text_document"]


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
def test_a_config_that_cannot_be_built_is_refused_naming_the_key(plan_folder, change, message):
    config = {"tokenizers": {"gpt2": {"path": "gpt2.json"}},
              "datasets": {"a": {"inputs": ["raw/a.jsonl"], "tokenizer": "gpt2"}}, "sampling": {}}
    change(config)
    with pytest.raises(TokenmillError, match=re.escape(message)) as error:
        Plan(validate_config(config, "my.yaml"))
    assert str(error.value).startswith(message)


@pytest.mark.parametrize("text, size", [("2GB", 2 * 10**9), ("512MiB", 512 << 20), ("1.5kB", 1500), (7, 7)])
def test_sizes_are_read_with_their_units(text, size):
    assert parse_size("k", text) == size


def test_a_relative_tokenizer_model_hashed_into_the_cache_names_is_named_at_planning(plan_folder):
    config = {"tokenizers": {"sp": {"path": "sp.model", "type": "Llama2Tokenizer"}},
              "datasets": {"a": {"inputs": ["raw/a.jsonl"], "tokenizer": "sp"}}, "sampling": {"seq_lengths": [512]}}
    (plan_folder / "sp.model").write_bytes(b"")  # planning reads no .model
    assert Plan(validate_config(config, "my.yaml")).units.notes() == [
        "tokenizers.sp.path: the caches are named for a job passing --tokenizer-model sp.model as spelled here; if "
        "your job spells it otherwise (an absolute path), give its flags in tokenizers.sp.megatron.args"]
    config["tokenizers"]["sp"]["megatron"] = {"args": "--tokenizer-type Llama2Tokenizer --tokenizer-model /m/sp.model"}
    assert Plan(validate_config(config, "my.yaml")).units.notes() == []


def _megatron_prefix(plan_folder: Path, name: str = "made/web_text_document") -> str:
    """A small Megatron dataset made outside the workflow's folders (two documents ending with GPT-2's EOD)."""
    from tokenmill.formats.bin_idx import MMapIndexedDatasetBuilder

    (plan_folder / name).parent.mkdir(parents=True, exist_ok=True)
    with MMapIndexedDatasetBuilder(plan_folder / name, np.uint16) as builder:
        builder.add_documents(np.array([5, 50256, 6, 7, 50256]), np.array([2, 3]))
    return name


def test_a_dataset_of_tokens_is_one_tokens_in_job_and_no_pack_unit(plan_folder):
    prefix = _megatron_prefix(plan_folder)
    plan = plan_of(web={"tokens": [f"{prefix}.bin"], "formats": ["pbin", "megatron", "olmo"]})
    assert plan.units.builds["web"].units == () and plan.units.single_unit_builds() == plan.units.merged_builds() == []
    assert plan.units.token_builds(megatron=True) == ["web"]
    assert plan.units.token_files("web") == [f"{prefix}.bin", f"{prefix}.idx"]
    assert plan.commands.tokens_in_options("web") == [prefix, "--eod", "<|endoftext|>"]
    assert plan.commands.tokens_in_outputs("web") == ["-o", "data/packed/web.pbin",
                                                      "--megatron", "data/megatron/web_text_document"]
    assert plan.units.tokens_in_inputs("web")[-1] == "gpt2.json" and plan.commands.tokens_identity("web").startswith(
        f"{prefix}.bin: 10 bytes, mtime ")
    assert plan.commands.verify_options("web")[:4] == ["--made-from", "data/packed/web.pbin", "--inputs",
                                                       f"{prefix}.bin"]
    assert not any(target.startswith("data/index/") for target in plan.outputs.all_targets())
    assert "data/olmo/web" in plan.outputs.all_targets() and plan.outputs.cache_dirs("web")


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
     "datasets.web.tokens: made/web_text_document is the source made/web_text_document again (the same file) and its "
     "documents would be written twice; name it once"),
    ({"tokens": ["made/web_text_document", "made/link_text_document"]},  # a link to it: the same file
     "datasets.web.tokens: made/link_text_document is the source made/web_text_document again (the same file)"),
    ({"tokens": ["data/megatron/web_text_document"]},
     "datasets.web.tokens: data/megatron/web_text_document.bin lies in data/megatron/, where the workflow writes"),
])
def test_a_dataset_of_tokens_that_cannot_be_built_is_refused_naming_the_key(plan_folder, entry, message):
    _megatron_prefix(plan_folder)
    _megatron_prefix(plan_folder, "data/megatron/web_text_document")
    (plan_folder / "made/fake.bin").write_bytes(b"")
    (plan_folder / "made/fake.idx").write_bytes(b"\x80\x04" + bytes(40))
    for suffix in (".bin", ".idx"):
        (plan_folder / f"made/link_text_document{suffix}").symlink_to(f"web_text_document{suffix}")
    config = {"tokenizers": {"gpt2": {"path": "gpt2.json", "eod": "<|endoftext|>"},
                             "gpt2b": {"path": "gpt2.json", "eod": "<|endoftext|>"}},
              "datasets": {"web": {"tokenizer": "gpt2", **entry}}}
    with pytest.raises(TokenmillError) as error:
        Plan(validate_config(config, "my.yaml"))
    assert str(error.value).startswith(message), str(error.value)
