"""Instruction tuning: only assistant turns are trained, rows stay aligned, packing keeps conversations whole."""

import json

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import GPT2, GPT2_EOD, REPO, TEKKEN, write_jsonl_bytes
from tokenmill.errors import TokenmillError
from tokenmill.formats.pbin import PbinFile
from tokenmill.pack.sft import write_sft
from tokenmill.training.sft_datasets import (IGNORE_INDEX, InstructionCollator, InstructionDataset,
                                             PackedInstructionDataset, loss_mask_path)
from tokenmill.verify.checks import verify

CHAT = REPO / "data/raw/chat.jsonl"
FIELDS = [".role", ".instruction", ".conversations"]
SPECIAL = {"bos_token": "<s>", "eos_token": "</s>"}
MASKING = ['.conversations | select(.from == "human")', ".instruction", ".role"]  # the seed config's patterns
ORDER = ["role", "instruction", "conversations"]


def trained_runs(labels: np.ndarray) -> list[list[int]]:
    """The label ids of each contiguous run of trained positions."""
    runs, current = [], []
    for label in labels.tolist():
        if label != IGNORE_INDEX:
            current.append(label)
        elif current:
            runs.append(current)
            current = []
    return runs + ([current] if current else [])


@pytest.mark.parametrize("pack", [False, True])
def test_trained_positions_decode_to_exactly_the_assistant_turns(pack):
    dataset = InstructionDataset(CHAT, TEKKEN, FIELDS, SPECIAL)
    collator = InstructionCollator(ORDER, MASKING, SPECIAL, seq_length=4096, pack=pack)
    items = [dataset[i] for i in range(len(dataset))]
    batch = collator(items)
    assert collator.stats == {"conversations": 65, "dropped": 0, "truncated": 0}
    expected = [turn["value"] + "</s>" for item in items for turn in item["record"]["conversations"]
                if turn["from"] == "gpt"]
    decoded = [dataset.tokenizer.decode(run, skip_special_tokens=False)
               for row in batch["labels"].numpy() for run in trained_runs(row)]
    assert decoded == expected  # every assistant turn with its end-of-turn token, nothing else
    assert (len(batch["input_ids"]) < 65) if pack else (len(batch["input_ids"]) == 65)


def test_labels_are_the_next_input_token_wherever_they_are_trained():
    dataset = InstructionDataset(CHAT, TEKKEN, FIELDS, SPECIAL)
    batch = InstructionCollator(ORDER, MASKING, SPECIAL, seq_length=1024, pack=True)(
        [dataset[i] for i in range(20)])
    input_ids, labels = batch["input_ids"].numpy(), batch["labels"].numpy()
    trained = labels[:, :-1] != IGNORE_INDEX
    assert np.array_equal(labels[:, :-1][trained], input_ids[:, 1:][trained])
    assert (labels[batch["attention_mask"].numpy() == 0] == IGNORE_INDEX).all()
    cu_seqlens = batch["cu_seqlens"].numpy()
    assert cu_seqlens[-1] == input_ids.size and np.all(np.diff(cu_seqlens) > 0)
    positions = batch["position_ids"].numpy().reshape(-1)
    attended = batch["attention_mask"].numpy().reshape(-1) == 1
    conversation_starts = np.flatnonzero((positions == 0) & attended)
    assert set(conversation_starts.tolist()) <= set(cu_seqlens[:-1].tolist())  # positions restart per conversation


def test_special_token_strings_in_user_text_stay_text(tmp_path):
    record = {"conversations": [{"from": "human", "value": "say </s> now"}, {"from": "gpt", "value": "ok </s>"}],
              "instruction": "x", "role": "y"}
    path = write_jsonl_bytes(tmp_path / "c.jsonl", [json.dumps(record).encode()])
    dataset = InstructionDataset(path, TEKKEN, FIELDS, SPECIAL)
    eos = dataset.special_ids["eos_token"]
    batch = InstructionCollator(ORDER, MASKING, SPECIAL, seq_length=128)([dataset[0]])
    ids = batch["input_ids"][0][batch["attention_mask"][0] == 1].tolist()
    assert ids.count(eos) == 4  # the framing EOS of each of the 4 messages, none from the text


@settings(max_examples=25, deadline=None)
@given(st.lists(st.lists(st.integers(1, 60), min_size=1, max_size=6), min_size=1, max_size=8),
       st.integers(16, 200), st.sampled_from(["drop", "truncate"]), st.booleans())
@pytest.mark.slow
def test_rows_never_misalign_whatever_the_lengths(tmp_path_factory, conversation_lengths, seq_length, policy, pack):
    words = "alpha beta gamma delta epsilon zeta eta theta".split()
    lines = []
    for n, lengths in enumerate(conversation_lengths):
        turns = [{"from": "human" if k % 2 == 0 else "gpt", "value": " ".join(words[(k + j) % 8] for j in range(size))}
                 for k, size in enumerate(lengths)]
        lines.append(json.dumps({"conversations": turns, "instruction": f"task {n}", "role": "r"}).encode())
    path = write_jsonl_bytes(tmp_path_factory.mktemp("sft") / "c.jsonl", lines)
    # GPT-2 (one special token for both ends) loads 3x faster than Tekken: it keeps this test short
    special = {"bos_token": GPT2_EOD, "eos_token": GPT2_EOD}
    dataset = InstructionDataset(path, GPT2, FIELDS, special)
    collator = InstructionCollator(ORDER, MASKING, special, seq_length, pack=pack, truncation=policy)
    batch = collator([dataset[i] for i in range(len(dataset))])
    input_ids, labels = batch["input_ids"].numpy(), batch["labels"].numpy()
    assert input_ids.shape[1] == seq_length
    trained = labels[:, :-1] != IGNORE_INDEX
    assert np.array_equal(labels[:, :-1][trained], input_ids[:, 1:][trained])
    for row in labels:  # every trained run is a whole assistant turn ending with EOS
        for run in trained_runs(row):
            assert run[-1] == dataset.special_ids["eos_token"]
    kept = len(dataset) - collator.stats["dropped"]
    assert kept == 0 or len(input_ids) <= kept


@pytest.mark.parametrize("line, message", [
    (b'["not", "a", "conversation"]', ":1: not a conversation"),
    (b'{"conversations": [], "instruction": "x", "role": "y"}', ":1: empty 'conversations'"),
    (b'{"conversations": [{"from": "human"}], "instruction": "x", "role": "y"}', "needs string 'from' and 'value'"),
])
def test_bad_conversations_name_file_and_line(tmp_path, line, message):
    path = write_jsonl_bytes(tmp_path / "c.jsonl", [line])
    with pytest.raises(TokenmillError, match=message):
        InstructionDataset(path, TEKKEN, FIELDS, SPECIAL)[0]


@pytest.mark.slow
def test_bad_configuration_names_the_key():
    with pytest.raises(TokenmillError, match="special_tokens.eos_token: '<eos>' is not a single token"):
        InstructionDataset(CHAT, TEKKEN, FIELDS, {"bos_token": "<s>", "eos_token": "<eos>"})
    InstructionDataset(CHAT, TEKKEN, FIELDS, SPECIAL)  # the valid special tokens load
    with pytest.raises(TokenmillError, match="loss_masking_jq_patterns: '.conversations | select\\(' is not valid jq"):
        InstructionCollator(ORDER, [".conversations | select("], SPECIAL, 128)
    # the collator's special tokens are the ones its items were tokenized with, or it refuses them
    other = InstructionCollator(ORDER, MASKING, {"bos_token": "<s>", "eos_token": "<unk>"}, 4096)
    with pytest.raises(TokenmillError, match="special_tokens.eos_token: the collator's '<unk>', but .*:1 was "
                                             "tokenized with '</s>'"):
        other([InstructionDataset(CHAT, TEKKEN, FIELDS, SPECIAL)[0]])


@pytest.mark.slow
def test_pretokenized_pair_gives_the_same_tensors_as_the_lazy_path(tmp_path):
    config = {"tokenizers": {"tekken": {"path": str(TEKKEN)}},
              "sft": {"chat": {"inputs": [str(CHAT)], "tokenizer": "tekken", "special_tokens": SPECIAL,
                               "loss_masking_jq_patterns": MASKING, "message_construction": ORDER,
                               "seq_length": 768, "truncation": "truncate"}}}
    meta = write_sft("chat", config, tmp_path / "chat.pbin")
    dataset = InstructionDataset(CHAT, TEKKEN, FIELDS, SPECIAL)
    for pack in (False, True):
        lazy = InstructionCollator(ORDER, MASKING, SPECIAL, seq_length=768, pack=pack, truncation="truncate")
        expected = lazy([dataset[i] for i in range(len(dataset))])
        packed = PackedInstructionDataset(tmp_path / "chat.pbin", pack=pack)
        actual = packed.collate([packed[i] for i in range(len(packed))])
        assert expected.keys() == actual.keys()
        assert all(torch.equal(expected[key], actual[key]) for key in expected)
    assert (meta["truncated"], meta["dropped"]) == (lazy.stats["truncated"], lazy.stats["dropped"])
    assert meta["documents"] == len(packed) == 65 - meta["dropped"]
    assert meta["truncated"] > 0  # 768 tokens force some truncation on this file
    assert PbinFile(loss_mask_path(tmp_path / "chat.pbin")).token_width == 1

    # verify checks the pair: no EOD asked of conversations, the loss mask against its recorded identity
    assert verify(tmp_path / "chat.pbin") == []
    mask = loss_mask_path(tmp_path / "chat.pbin")
    flags = bytearray(mask.read_bytes())
    flags[100] = 2
    mask.write_bytes(bytes(flags))
    assert verify(tmp_path / "chat.pbin") == [f"{tmp_path / 'chat.pbin.meta.json'}: describes another .pbin than "
                                              f"{mask} (its tokens differ: data_sha256 mismatch)"]


def test_missing_config_key_is_named(tmp_path):
    with pytest.raises(TokenmillError, match="config: sft.chat: 'seq_length' is a required property"):
        write_sft("chat", {"tokenizers": {"t": {"path": str(TEKKEN)}},
                           "sft": {"chat": {"inputs": [str(CHAT)], "tokenizer": "t", "special_tokens": SPECIAL,
                                            "message_construction": ORDER}}}, tmp_path / "x.pbin")
    assert not (tmp_path / "x.pbin").exists()
