"""Where a config's outputs go (tokenmill.plan.outputs): each build's files and folders and the matrix's targets,
so that a deleted output is rebuilt."""

from __future__ import annotations


import pytest

from conftest import plan_of
from tokenmill.config import validate_config
from tokenmill.errors import TokenmillError
from tokenmill.plan import Plan


def test_targets_hold_every_final_file_so_a_deleted_one_is_rebuilt(plan_folder):
    plan = plan_of(a={"inputs": ["raw/a.jsonl"]}, z={"inputs": ["raw/c.jsonl.gz"]})
    targets = plan.outputs.all_targets()
    for path in ("data/index/a.idx", "data/packed/a.pbin", "data/packed/a.pbin.meta.json",
                 "data/megatron/a_text_document.bin",
                 "data/megatron/a_text_document.idx", "data/cache/a/seq512_seed2", "data/verified/a.ok",
                 "data/report/a.html", "data/packed/z.pbin"):
        assert path in targets
    assert "data/index/z.idx" not in targets  # a compressed input is read as a stream


@pytest.mark.parametrize("keep_parts", [True, False])
def test_kept_parts_are_targets_so_a_deleted_one_is_rebuilt(plan_folder, keep_parts):
    config = {"tokenizers": {"gpt2": {"path": "gpt2.json"}}, "keep_parts": keep_parts,
              "datasets": {"a": {"inputs": ["raw/a.jsonl"], "tokenizer": "gpt2", "shard_bytes": 100}}}
    targets = Plan(validate_config(config, "my.yaml")).outputs.all_targets()
    parts = ["data/parts/a.shard1.pbin", "data/parts/a.shard1.pbin.meta.json",
             "data/parts/a.shard1_text_document.bin", "data/parts/a.shard1_text_document.idx"]
    assert all((part in targets) == keep_parts for part in parts)


def test_best_fit_packing_plans_a_packed_index_and_olmo_work_dirs(plan_folder):
    plan = plan_of(a={"inputs": ["raw/a.jsonl"], "packing": "best_fit", "formats": ["pbin", "megatron", "olmo"],
                      "long_doc_strategy": "fragment"})
    assert plan.outputs.best_fit_dirs("a") == ["data/cache/a/seq512_seed1_best_fit",
                                               "data/cache/a/seq512_seed2_best_fit", "data/olmo/a.best_fit/seq512"]
    assert set(plan.outputs.best_fit_dirs("a")) <= set(plan.outputs.all_targets())
    assert plan.commands.best_fit_options("a") == ["--long-doc-strategy", "fragment", "--split", "969,30,1"]
    assert plan.commands.olmo_best_fit_options("a") == ["--long-doc-strategy", "fragment", "--job-path-prefix",
                                                        "data/olmo/a"]
    assert plan_of(a={"inputs": ["raw/a.jsonl"]}).outputs.best_fit_dirs("a") == []


def test_best_fit_packing_of_blends_and_sft_sets_plans_their_folders_and_leaves_the_pair_alone(plan_folder):
    config = {"tokenizers": {"gpt2": {"path": "gpt2.json", "eod": "<|endoftext|>"}},
              "datasets": {"a": {"inputs": ["raw/a.jsonl"], "tokenizer": "gpt2"},
                           "b": {"inputs": ["raw/b.jsonl"], "tokenizer": "gpt2"}},
              "blends": {"ab": {"weights": {"a": 1, "b": 3}, "packing": "best_fit", "long_doc_strategy": "fragment"}},
              "sampling": {"seq_lengths": [512], "seeds": [1], "num_samples": {"train": 10, "valid": 2, "test": 0}},
              "sft": {"chat": {"inputs": ["raw/a.jsonl"], "tokenizer": "gpt2", "message_construction": ["c"],
                               "special_tokens": {"bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>"},
                               "seq_length": 64, "formats": ["pbin", "olmo"]}}}
    concat = Plan(validate_config(config, "my.yaml"))
    assert concat.outputs.sft_packing_dirs("chat") == concat.outputs.sft_olmo_packing_dirs("chat") == []
    config["sft"]["chat"]["packing"] = "best_fit"
    plan = Plan(validate_config(config, "my.yaml"))
    assert plan.outputs.blend_packing_dirs("ab") == ["data/cache/blend_ab/seq512_seed1_best_fit"]
    assert plan.commands.blend_best_fit_options("ab") == [
        "--blend", "1", "data/megatron/a_text_document", "3", "data/megatron/b_text_document", "--split", "969,30,1",
        "--train-samples=10", "--valid-samples=2", "--test-samples=0", "--long-doc-strategy", "fragment"]
    assert plan.outputs.sft_packing_dirs("chat") == ["data/sft/chat.best_fit"]
    assert plan.outputs.sft_olmo_packing_dirs("chat") == ["data/sft/chat.olmo.best_fit"]
    assert {*plan.outputs.blend_packing_dirs("ab"), "data/sft/chat.best_fit", "data/sft/chat.olmo.best_fit"} <= \
        set(plan.outputs.all_targets())
    assert plan.commands.sft_olmo_best_fit_options("chat") == ["--seq-length", "64", "--job-path-prefix",
                                                               "data/sft/chat.olmo"]
    config["sft"]["chat"]["olmo_path"] = "/mnt/sft/chat/"
    plan = Plan(validate_config(config, "my.yaml"))
    assert plan.commands.sft_olmo_best_fit_options("chat")[-1] == "/mnt/sft/chat"
    assert plan.commands.sft_config("chat") == concat.commands.sft_config("chat")  # the pair is not tokenized again
    config["sft"]["chat"]["seq_length"] = 100
    with pytest.raises(TokenmillError, match=r"^sft.chat.packing: OLMo-core packs only sequence lengths that are "
                                             r"powers of two; its seq_length is 100$"):
        Plan(validate_config(config, "my.yaml"))
