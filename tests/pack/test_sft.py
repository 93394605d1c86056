"""pack/sft: `tokenmill sft` pre-tokenizes conversations into a .pbin + .loss_mask.pbin pair that reads back as the
on-access datasets do (tests/training/test_sft_datasets.py), by the seed config or the model's chat template."""

import json

import pytest
import torch

from conftest import REPO, TEKKEN, chat_cases, write_jsonl_bytes
from seed_chat import CHAT, FIELDS, MASKING, ORDER, SPECIAL
from tokenmill.errors import TokenmillError
from tokenmill.formats.pbin import PbinFile
from tokenmill.formats.sidecar import sidecar_path
from tokenmill.pack import sft as sft_module
from tokenmill.pack.sft import write_sft
from tokenmill.training.sft_datasets import (IGNORE_INDEX, InstructionCollator, InstructionDataset,
                                             PackedInstructionDataset, loss_mask_path)
from tokenmill.verify.checks import verify


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


# ---- chat_template: the model's own template (tokenmill.tokenization.chat_template) ----------------------------

def chat_config(tmp_path, lines, **entry):
    cases = chat_cases()
    folder = cases.make_folder("chatml_tools", tmp_path / "tokenizer")
    write_jsonl_bytes(tmp_path / "chats.jsonl", [json.dumps(line, ensure_ascii=False).encode() for line in lines])
    return {"tokenizers": {"chatml": {"path": str(folder / "tokenizer.json"), "eod": None}},
            "sft": {"chats": {"inputs": [str(tmp_path / "chats.jsonl")], "tokenizer": "chatml",
                              "chat_template": "tokenizer", "seq_length": 256, **entry}}}


def test_chat_template_pair_holds_transformers_ids_and_reads_downstream(tmp_path):
    cases = chat_cases()
    reference = json.loads((REPO / "tests/data/chat_template_reference.json").read_text(encoding="utf-8"))["cases"]
    config = chat_config(tmp_path, [cases.CONVERSATIONS[n] for n in (0, 1, 2, 4)])
    meta = write_sft("chats", config, tmp_path / "chats.pbin")
    tokens, mask = PbinFile(tmp_path / "chats.pbin"), PbinFile(loss_mask_path(tmp_path / "chats.pbin"))
    for document, number in enumerate((0, 1, 2, 4)):
        assert tokens.document(document).tolist() == reference[f"chatml_tools/{number}"]["input_ids"]
    assert mask.document(0).tolist()[-3:] == [1, 1, 1]  # "4." <|im_end|> "\n"
    assert meta["chat_template"]["source"] == str(tmp_path / "tokenizer/chatml_tools/tokenizer_config.json")
    assert len(meta["chat_template"]["sha256"]) == 64 and meta["chat_template"]["train_on"] == "assistant"
    assert meta["tokenizer"]["special_ids"] == {"eos_token": 50258, "pad_token": 50256}
    assert verify(tmp_path / "chats.pbin") == []
    packed = PackedInstructionDataset(tmp_path / "chats.pbin", pack=True)
    batch = packed.collate([packed[i] for i in range(len(packed))])
    ids = batch["input_ids"][0, :len(reference["chatml_tools/0"]["input_ids"])]
    assert ids.tolist() == reference["chatml_tools/0"]["input_ids"]
    assert (batch["labels"] != IGNORE_INDEX).sum() == sum(int(mask.document(i)[1:].sum()) for i in range(4))


def test_chat_template_bad_lines_and_lengths(tmp_path):
    cases = chat_cases()
    lines = [cases.CONVERSATIONS[0], {"messages": [{"role": "robot", "content": "x"}]}, cases.CONVERSATIONS[4]]
    with pytest.raises(TokenmillError, match=r"chats.jsonl:2: messages\[0\]: unknown role 'robot'"):
        write_sft("chats", chat_config(tmp_path, lines), tmp_path / "chats.pbin")
    assert not (tmp_path / "chats.pbin").exists()
    # skip counts it; the 163-token tool conversation is cut after its first assistant turn that fits, or dropped
    meta = write_sft("chats", chat_config(tmp_path, lines, on_bad_line="skip", seq_length=140), tmp_path / "a.pbin")
    assert (meta["documents"], meta["truncated"], meta["dropped"]) == (2, 1, 0)
    assert meta["skipped"]["messages[0]: unknown role 'robot' (known: system, developer, user, assistant, tool)"][
        "count"] == 1
    truncated = PbinFile(loss_mask_path(tmp_path / "a.pbin")).document(1)
    assert len(truncated) == 127 and truncated[-1] == 1  # through the tool call's "<|im_end|>\\n"
    meta = write_sft("chats", chat_config(tmp_path, lines, on_bad_line="skip", seq_length=140, truncation="drop"),
                     tmp_path / "b.pbin")
    assert (meta["documents"], meta["truncated"], meta["dropped"]) == (1, 0, 1)


def test_chat_template_config_and_cli(tmp_path, capsys):
    from tokenmill import cli

    config = chat_config(tmp_path, [chat_cases().CONVERSATIONS[0]])
    del config["sft"]["chats"]["chat_template"]
    # without a chat_template the config's rendering needs its keys
    with pytest.raises(TokenmillError, match="config: sft.chats: 'special_tokens' is a required property"):
        write_sft("chats", config, tmp_path / "x.pbin")
    (tmp_path / "config.yaml").write_text(json.dumps(config), encoding="utf-8")
    command = ["sft", str(tmp_path / "config.yaml"), "chats", "-o", str(tmp_path / "c.pbin"), "--chat-template"]
    jinja = tmp_path / "llama.jinja"
    jinja.write_text(chat_cases().LLAMA3, encoding="utf-8")
    assert cli.main([*command, str(jinja)]) == 1  # Llama 3's writes bos_token, which this folder does not name
    assert capsys.readouterr().err.endswith("chats.jsonl:1: the chat template raised: 'bos_token' is undefined\n")
    jinja.write_text(chat_cases().CHATML_GENERATION, encoding="utf-8")
    assert cli.main([*command, str(jinja)]) == 0
    assert "1 conversations" in capsys.readouterr().err
    config["sft"]["chats"]["template_date"] = "2026-01-31T13:45"
    (tmp_path / "config.yaml").write_text(json.dumps(config), encoding="utf-8")
    assert cli.main([*command, str(jinja)]) == 0
    assert capsys.readouterr().err.endswith("(trained: assistant, strftime_now: 2026-01-31T13:45:00)\n")
    reference = json.loads((REPO / "tests/data/chat_template_reference.json").read_text(encoding="utf-8"))["cases"]
    assert PbinFile(tmp_path / "c.pbin").document(0).tolist() == reference["chatml_generation/0"]["input_ids"]
    assert PbinFile(loss_mask_path(tmp_path / "c.pbin")).document(0).tolist() == \
        reference["chatml_generation/0"]["assistant_masks"]
    config["sft"]["chats"]["chat_template"] = "tokenizer"
    config["sft"]["chats"]["train_on"] = "everything"
    with pytest.raises(TokenmillError, match="sft.chats.train_on: 'everything' is not one of"):
        write_sft("chats", config, tmp_path / "y.pbin")


@pytest.mark.parametrize("name", sorted(chat_cases().CASES))
def test_chat_template_pair_is_the_same_bytes_for_one_or_two_render_workers(tmp_path, name, monkeypatch):
    # every stored case of the template (twice, so that its batches of three straddle them), a line that is not
    # JSON and one whose role is unknown: rendered here (workers 1) or in two worker processes (each batch cut
    # between them: pieces of two lines and one), the same bytes, sidecar and bad lines (counted with their line
    # numbers) included
    monkeypatch.setattr(sft_module, "MIN_WORKER_CONVERSATIONS", 1)  # workers even for these few lines
    cases = chat_cases()
    folder = cases.make_folder(name, tmp_path / "tokenizer")
    lines = [json.dumps(cases.CONVERSATIONS[n], ensure_ascii=False).encode() for n in cases.CASES[name] * 2]
    lines[3:3] = [b"{not json", json.dumps({"messages": [{"role": "robot", "content": "x"}]}).encode()]
    write_jsonl_bytes(tmp_path / "chats.jsonl", lines)
    config = {"tokenizers": {"t": {"path": str(folder / "tokenizer.json"), "eod": None}},
              "sft": {"chats": {"inputs": [str(tmp_path / "chats.jsonl")], "tokenizer": "t",
                                "chat_template": "tokenizer", "seq_length": 256, "on_bad_line": "skip",
                                "template_date": cases.TEMPLATE_DATE}}}  # the reference's (the dated template)
    files = {}
    for workers in (1, 2):
        out = tmp_path / f"w{workers}" / "chats.pbin"
        out.parent.mkdir()
        meta = write_sft("chats", config, out, batch_conversations=3, workers=workers)
        assert meta["documents"] == len(lines) - 2
        assert {reason: entry["first_lines"] for reason, entry in meta["skipped"].items()} == {
            "invalid JSON (unexpected character, expected a string key at byte 1)": [4],
            "messages[0]: unknown role 'robot' (known: system, developer, user, assistant, tool)": [5]}
        files[workers] = [path.read_bytes() for path in (out, loss_mask_path(out), sidecar_path(out))]
    assert files[1] == files[2]
    reference = json.loads((REPO / "tests/data/chat_template_reference.json").read_text(encoding="utf-8"))["cases"]
    first = PbinFile(tmp_path / "w2/chats.pbin").document(0).tolist()
    assert first == reference[f"{name}/{cases.CASES[name][0]}"]["input_ids"]


def test_chat_template_refusal_comes_back_from_a_render_worker(tmp_path, monkeypatch):
    # the reasoning template drops the first <think> block: the prefix rule's one-line refusal, raised in a worker
    # process, is the run's error, as it is in this process
    monkeypatch.setattr(sft_module, "MIN_WORKER_CONVERSATIONS", 1)
    cases = chat_cases()
    folder = cases.make_folder("think", tmp_path / "tokenizer")
    write_jsonl_bytes(tmp_path / "chats.jsonl", [json.dumps(cases.CONVERSATIONS[n], ensure_ascii=False).encode()
                                                 for n in (0, 1, 2, 6, 0)])
    config = {"tokenizers": {"t": {"path": str(folder / "tokenizer.json"), "eod": None}},
              "sft": {"chats": {"inputs": [str(tmp_path / "chats.jsonl")], "tokenizer": "t",
                                "chat_template": "tokenizer", "seq_length": 256}}}
    with pytest.raises(TokenmillError, match=r"chats.jsonl:4: turn 1: the chat template .* not a prefix"):
        write_sft("chats", config, tmp_path / "chats.pbin", batch_conversations=2, workers=2)
    assert not (tmp_path / "chats.pbin").exists()
    with pytest.raises(TokenmillError, match="workers must be at least 1, not 0"):
        write_sft("chats", config, tmp_path / "chats.pbin", workers=0)


def test_few_conversations_are_rendered_here(tmp_path):
    # fewer than MIN_WORKER_CONVERSATIONS lines a worker: no worker processes are made for them
    cases = chat_cases()
    folder = cases.make_folder("chatml_tools", tmp_path / "tokenizer")
    write_jsonl_bytes(tmp_path / "chats.jsonl", [json.dumps(cases.CONVERSATIONS[0]).encode()] * 3)
    config = {"tokenizers": {"t": {"path": str(folder / "tokenizer.json"), "eod": None}},
              "sft": {"chats": {"inputs": [str(tmp_path / "chats.jsonl")], "tokenizer": "t",
                                "chat_template": "tokenizer", "seq_length": 256}}}
    made = []
    real = sft_module._ChatJob.__init__

    def spy(self, encoder, workers):
        made.append(workers)
        real(self, encoder, workers)

    import unittest.mock
    with unittest.mock.patch.object(sft_module._ChatJob, "__init__", spy):
        assert write_sft("chats", config, tmp_path / "chats.pbin", workers=4)["documents"] == 3
    assert made == [1]


# ---- a template that writes the date or time: one fixed moment, recorded -------------------------------------------

def test_a_strftime_now_template_builds_the_same_bytes_three_times_and_the_sidecar_names_the_date(tmp_path):
    # the dated template writes strftime_now('%d %b %Y') and ('%H:%M:%S') in the header of every render: with the
    # clock, the prefix rule's renders of one conversation could straddle a second (a false "rewrites earlier
    # turns") and each day's build had other bytes, its date recorded nowhere. Three builds: one set of bytes,
    # the documented default moment in the text, and the sidecar names it
    cases = chat_cases()
    folder = cases.make_folder("dated", tmp_path / "tokenizer")
    write_jsonl_bytes(tmp_path / "chats.jsonl", [json.dumps(cases.CONVERSATIONS[n], ensure_ascii=False).encode()
                                                 for n in cases.CASES["dated"] * 5])
    config = {"tokenizers": {"t": {"path": str(folder / "tokenizer.json"), "eod": None}},
              "sft": {"chats": {"inputs": [str(tmp_path / "chats.jsonl")], "tokenizer": "t",
                                "chat_template": "tokenizer", "seq_length": 256}}}
    builds = []
    for run in range(3):
        out = tmp_path / f"run{run}" / "chats.pbin"
        out.parent.mkdir()
        meta = write_sft("chats", config, out)
        builds.append([path.read_bytes() for path in (out, loss_mask_path(out), sidecar_path(out))])
    assert builds[0] == builds[1] == builds[2]
    assert meta["chat_template"]["date"] == "2024-07-26T00:00:00" and meta["documents"] == 20
    assert json.loads(builds[0][2])["chat_template"]["date"] == "2024-07-26T00:00:00"
    from tokenizers import Tokenizer
    text = Tokenizer.from_file(str(folder / "tokenizer.json")).decode(
        PbinFile(tmp_path / "run0/chats.pbin").document(1).tolist(), skip_special_tokens=False)
    assert "Today Date: 26 Jul 2024\nTime: 00:00:00\n\nYou answer briefly." in text


def test_template_date_sets_the_date_the_template_renders(tmp_path):
    # the config's template_date is what strftime_now gives (the transformers reference was made at this moment):
    # the reference's ids, and the sidecar names it; a date that does not exist is refused naming the key
    cases = chat_cases()
    folder = cases.make_folder("dated", tmp_path / "tokenizer")
    write_jsonl_bytes(tmp_path / "chats.jsonl", [json.dumps(cases.CONVERSATIONS[1]).encode()])
    config = {"tokenizers": {"t": {"path": str(folder / "tokenizer.json"), "eod": None}},
              "sft": {"chats": {"inputs": [str(tmp_path / "chats.jsonl")], "tokenizer": "t",
                                "chat_template": "tokenizer", "seq_length": 256,
                                "template_date": "2026-01-31T13:45:07"}}}
    meta = write_sft("chats", config, tmp_path / "chats.pbin")
    reference = json.loads((REPO / "tests/data/chat_template_reference.json").read_text(encoding="utf-8"))["cases"]
    assert PbinFile(tmp_path / "chats.pbin").document(0).tolist() == reference["dated/1"]["input_ids"]
    assert meta["chat_template"]["date"] == "2026-01-31T13:45:07"
    config["sft"]["chats"]["template_date"] = "2026-02-30"
    with pytest.raises(TokenmillError, match=r"^sft.chats.template_date: '2026-02-30' is not a date \(day is out"):
        write_sft("chats", config, tmp_path / "bad.pbin")
    config["sft"]["chats"]["template_date"] = "31 Jan 2026"
    with pytest.raises(TokenmillError, match=r"sft.chats.template_date: '31 Jan 2026' does not match"):
        write_sft("chats", config, tmp_path / "bad.pbin")
    assert not (tmp_path / "bad.pbin").exists()


def test_a_dropped_conversation_is_counted_with_its_line_and_reason_and_every_line_left_out_is_listed(tmp_path,
                                                                                                     capsys):
    """'dropped' is a good conversation the fit to seq_length or the mask leaves nothing of (not a bad line, which is
    'skipped'): each source's sidecar entry counts both by reason with their first lines, lists every line left out
    as ranges (what inspect and the OLMo conversion map documents to lines by), and the log names each reason."""
    from tokenmill import cli

    cases = chat_cases()
    lines = [{"messages": [{"role": "user", "content": "Hi"}]},  # no assistant turn: nothing trained
             {"messages": [{"role": "robot", "content": "x"}]},  # a bad line
             cases.CONVERSATIONS[0], cases.CONVERSATIONS[4],  # the 163-token tool conversation: longer than 140
             cases.CONVERSATIONS[1]]
    config = chat_config(tmp_path, lines, on_bad_line="skip", seq_length=140, truncation="drop")
    meta = write_sft("chats", config, tmp_path / "a.pbin")
    assert (meta["documents"], meta["dropped"]) == (2, 2)
    source = meta["sources"][0]
    assert source["dropped"] == {
        "longer than seq_length (truncation: drop)": {"count": 1, "first_lines": [4]},
        "nothing trained (no assistant turn the template trains, or every message masked)":
            {"count": 1, "first_lines": [1]}}
    robot = "messages[0]: unknown role 'robot' (known: system, developer, user, assistant, tool)"
    assert source["skipped"] == {robot: {"count": 1, "first_lines": [2]}}
    assert source["left_out"] == [[1, 3], [4, 5]]
    (tmp_path / "config.yaml").write_text(json.dumps(config), encoding="utf-8")
    assert cli.main(["sft", str(tmp_path / "config.yaml"), "chats", "-o", str(tmp_path / "b.pbin")]) == 0
    log = capsys.readouterr().err.splitlines()
    chats = tmp_path / "chats.jsonl"
    assert log[:3] == [f"{chats}: dropped 1 conversations: longer than seq_length (truncation: drop) (first at line 4)",
                       f"{chats}: dropped 1 conversations: nothing trained (no assistant turn the template trains, or "
                       f"every message masked) (first at line 1)",
                       f"{chats}: skipped 1 lines: {robot} (first at line 2)"]


def test_a_conversation_whose_every_message_is_masked_is_dropped_with_its_line(tmp_path):
    """The seed config's rendering: a conversation of human turns only (masked by its patterns) trains nothing."""
    human = {"role": "r", "instruction": "i", "conversations": [{"from": "human", "value": "only a question"}]}
    answered = {**human, "conversations": [*human["conversations"], {"from": "gpt", "value": "an answer"}]}
    write_jsonl_bytes(tmp_path / "c.jsonl", [json.dumps(line).encode() for line in (human, answered)])
    meta = write_sft("chat", {"tokenizers": {"tekken": {"path": str(TEKKEN)}},
                              "sft": {"chat": {"inputs": [str(tmp_path / "c.jsonl")], "tokenizer": "tekken",
                                               "special_tokens": SPECIAL, "loss_masking_jq_patterns": MASKING,
                                               "message_construction": ORDER, "seq_length": 256}}},
                     tmp_path / "c.pbin")
    assert (meta["documents"], meta["dropped"]) == (1, 1)
    assert meta["sources"][0]["dropped"] == {
        "nothing trained (no assistant turn the template trains, or every message masked)":
            {"count": 1, "first_lines": [1]}}
    assert meta["sources"][0]["left_out"] == [[1, 2]]
