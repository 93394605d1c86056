"""training/sft_datasets: conversations read on access (InstructionDataset) and collated into rows
(InstructionCollator) — only assistant turns trained, labels the next input token, special-token strings in the
text kept as text, rows aligned whatever the lengths, packing keeping conversations whole, each bad line or
setting named. The pre-tokenized pair (tokenmill sft) gives the same tensors: tests/pack/test_sft.py."""

import json
import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import GPT2, GPT2_EOD, TEKKEN, write_jsonl_bytes
from files.loopback_servers import RangeServer
from seed_chat import CHAT, FIELDS, MASKING, ORDER, SPECIAL
from tokenmill.errors import TokenmillError
from tokenmill.files import objects, urls
from tokenmill.training.sft_datasets import IGNORE_INDEX, ConversationFile, InstructionCollator, InstructionDataset


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


def test_a_conversations_object_by_a_presigned_url_reads_in_a_worker_process_that_was_given_only_the_dataset(
        monkeypatch):
    """A DataLoader worker started fresh (spawn) has none of the parent's URLs: the pickled file carries the full URL
    it was opened with to the one place a request is made, and names it by its redacted name everywhere else."""
    query = "X-Amz-Credential=AKIAPLANTED&X-Amz-Signature=c0ffee"
    text = CHAT.read_bytes()
    with RangeServer({"/chat.jsonl": text}, query=query) as server:
        conversations = ConversationFile(f"{server.url}/chat.jsonl?{query}")
        assert conversations.path == f"{server.url}/chat.jsonl?X-Amz-Credential=***&X-Amz-Signature=***"
        shipped = pickle.dumps(conversations)
        monkeypatch.setattr(urls, "_full_urls", {})  # the worker's process: no URL given to it
        monkeypatch.delenv(urls.URLS_VARIABLE, raising=False)
        objects._pinned.clear()
        in_worker = pickle.loads(shipped)
        assert in_worker.line_bytes(0, 2) == text.split(b"\n")[:2]
