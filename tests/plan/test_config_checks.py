"""The config's checks that look past its schema (tokenmill.plan.config_checks): each refuses a config in one line
naming the key, as the plan is made, before any job runs."""

from __future__ import annotations

import pytest

from conftest import plan_of
from tokenmill.config import validate_config
from tokenmill.errors import TokenmillError
from tokenmill.plan import Plan
from tokenmill.plan.config_checks import check_inputs_outside_outputs, check_sft, check_tokenizers


def test_best_fit_packing_refuses_what_it_cannot_make(plan_folder):
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


def test_an_eod_that_is_an_ordinary_token_is_named_and_refused_where_readers_scan_for_it(plan_folder):
    """GPT-2's Ċ (a newline) is a vocabulary entry: text holds it, so every reader that ends documents at the EOS
    (OLMo-core without the csv, datatrove) would cut at each newline."""
    def plan(eod: str, formats: list[str], **tokenizer) -> Plan:
        config = {"tokenizers": {"gpt2": {"path": "gpt2.json", "eod": eod, **tokenizer}},
                  "datasets": {"a": {"inputs": ["raw/a.jsonl"], "tokenizer": "gpt2", "formats": formats}}}
        return Plan(validate_config(config, "my.yaml"))

    assert plan("<|endoftext|>", ["pbin", "olmo"]).units.notes() == []
    assert plan("Ċ", ["pbin", "megatron"]).units.notes() == [
        "tokenizers.gpt2.eod: 'Ċ' is an ordinary token of the vocabulary, not a special one: text holding it ends a "
        "document for any reader that scans for the EOS (ordinary_eod: true says it is meant)"]
    with pytest.raises(TokenmillError, match=r"^tokenizers.gpt2.eod: 'Ċ' is an ordinary token of the vocabulary, "
                                             r"which text holds too, and datasets.a is made for olmo, whose readers "
                                             r"end a document at every one; name a special token, or set "
                                             r"tokenizers.gpt2.ordinary_eod: true$"):
        plan("Ċ", ["pbin", "olmo"])
    assert len(plan("Ċ", ["pbin", "datatrove"], ordinary_eod=True).units.notes()) == 1


def test_an_input_or_tokenizer_in_a_folder_the_workflow_writes_is_refused_naming_its_key(plan_folder):
    check_inputs_outside_outputs([("datasets.a.inputs", "raw/a.jsonl"), ("tokenizers.gpt2.path", "gpt2.json")])
    with pytest.raises(TokenmillError, match=r"^datasets.a.inputs: data/packed/a.jsonl lies in data/packed/, where "
                                             r"the workflow writes its outputs"):
        check_inputs_outside_outputs([("datasets.a.inputs", "data/packed/a.jsonl")])


def test_a_tokenizer_named_like_a_part_or_of_another_type_than_its_job_flags_is_refused(plan_folder):
    entry = {"path": "gpt2.json", "type": None, "eod": "<|endoftext|>", "megatron": {}}
    assert check_tokenizers({"tokenizers": {"gpt2": entry}}) == {}
    with pytest.raises(TokenmillError, match=r"^tokenizers.part3: the name would read as a file part or shard"):
        check_tokenizers({"tokenizers": {"part3": entry}})
    sentencepiece = {"path": "gpt2.json", "type": "Llama2Tokenizer", "eod": None,
                     "megatron": {"args": "--tokenizer-type HuggingFaceTokenizer --tokenizer-model gpt2.json"}}
    with pytest.raises(TokenmillError, match=r"^tokenizers.sp.megatron.args: --tokenizer-type HuggingFaceTokenizer "
                                             r"is not its type Llama2Tokenizer$"):
        check_tokenizers({"tokenizers": {"sp": sentencepiece}})


def test_an_sft_set_s_missing_local_file_is_refused_and_its_objects_are_looked_up(plan_folder):
    looked_up = []
    entry = {"tokenizer": "gpt2", "inputs": ["raw/a.jsonl"], "seq_length": 8, "packing": None, "formats": ["pbin"]}
    config = {"tokenizers": {"gpt2": {}}, "sft": {"chat": entry}}
    check_sft(config, looked_up.append)
    assert looked_up == ["chat"]
    with pytest.raises(TokenmillError, match=r"^sft.chat.inputs: raw/none.jsonl: no such file$"):
        check_sft({**config, "sft": {"chat": {**entry, "inputs": ["raw/none.jsonl"]}}}, looked_up.append)

    def unreachable(name: str) -> list:
        raise TokenmillError("s3://bucket/chat.jsonl: no such object")

    with pytest.raises(TokenmillError, match=r"^sft.chat.inputs: s3://bucket/chat.jsonl: no such object$"):
        check_sft({**config, "sft": {"chat": {**entry, "inputs": ["s3://bucket/chat.jsonl"]}}}, unreachable)
