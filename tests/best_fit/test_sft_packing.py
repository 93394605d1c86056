"""An SFT pair's best-fit rows (tokenmill.best_fit.sft_packing) and the items PackedConversations serves: the demo's
chat set as the demo config builds it (GPT-2, 2,048 tokens), then its properties, verify."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from conftest import GPT2, GPT2_EOD, REPO, run_tokenmill
from tokenmill.errors import TokenmillError
from tokenmill.formats.pbin import PbinFile
from tokenmill.pack.sft import write_sft
from tokenmill.best_fit.sft_packing import SFT_PACKING_NAMES, build_sft_best_fit, load_sft_best_fit
from tokenmill.training.loader import collate_samples
from tokenmill.training.sft_datasets import IGNORE_INDEX, PackedConversations, PackedInstructionDataset, collate
from tokenmill.verify.checks import verify

CONFIG = {"tokenizers": {"gpt2": {"path": str(GPT2)}},
          "sft": {"chat": {"inputs": [str(REPO / "data/raw/chat.jsonl")], "tokenizer": "gpt2",
                           "special_tokens": {"bos_token": GPT2_EOD, "eos_token": GPT2_EOD},
                           "loss_masking_jq_patterns": ['.conversations | select(.from == "human")', ".instruction",
                                                        ".role"],
                           "message_construction": ["role", "instruction", "conversations"], "seq_length": 2048}}}


@pytest.fixture(scope="module")
def chat(tmp_path_factory):
    folder = tmp_path_factory.mktemp("sft")
    write_sft("chat", CONFIG, folder / "chat.pbin")
    run_tokenmill("best-fit", folder / "chat.pbin", "-o", folder / "rows", "--seq-length", "2048")
    return folder


def test_the_demo_chat_set_packs_into_27_rows_instead_of_65(chat):
    """65 conversations, 54,071 tokens: one per row pads 59.4 % of 65 rows; packed whole by best fit, 27 rows
    of 2,048 hold them with 1,225 tokens of padding (2.2 %)."""
    description, pieces, offsets = load_sft_best_fit(chat / "rows")
    assert {key: description[key] for key in ("conversations", "tokens", "samples", "padding", "padding_share",
                                              "unpacked_padding_share")} == {
        "conversations": 65, "tokens": 54071, "samples": 27, "padding": 1225, "padding_share": 0.022154,
        "unpacked_padding_share": 0.593818}
    assert sorted(pieces[:, 0].tolist()) == list(range(65)) and (pieces[:, 1] == 0).all()
    assert len(offsets) == 28


def test_a_row_is_what_collate_makes_of_its_conversations_in_one_row(chat):
    rows, pairs = PackedConversations(chat / "chat.pbin", chat / "rows"), PackedInstructionDataset(chat / "chat.pbin")
    _, pieces, offsets = load_sft_best_fit(chat / "rows")
    lengths = PbinFile(chat / "chat.pbin").doc_lengths
    for k in range(len(rows)):
        item = rows[k]
        conversations = pieces[offsets[k]:offsets[k + 1], 0]
        expected = collate([pairs[int(i)] for i in conversations], 2048, True, pairs.eos)
        assert torch.equal(item["tokens"], expected["input_ids"][0])
        assert torch.equal(item["labels"], expected["labels"][0])
        used = int(lengths[conversations].sum())
        assert item["cu_seqlens"].tolist()[:len(conversations) + 1] == [0, *np.cumsum(lengths[conversations])]
        assert item["cu_seqlens"].tolist()[-1] == 2048 and (item["position_ids"][:used] < 2048).all()
        assert torch.equal(item["position_ids"][:used], expected["position_ids"][0][:used])
        assert (item["loss_mask"][used - 1:] == 0).all() and item["loss_mask"].sum() > 0
        assert torch.equal(item["loss_mask"] == 1, item["labels"] != IGNORE_INDEX)
    batch = collate_samples([rows[0], rows[1]])
    assert batch["tokens"].shape == (2, 2048) and batch["cu_seqlens"][-1] == 4096


def test_verify_finds_tampered_rows_and_a_changed_pair(chat, tmp_path):
    assert verify(chat / "rows") == []
    build_sft_best_fit(chat / "chat.pbin", tmp_path / "rows", 2048)
    offsets = tmp_path / "rows" / SFT_PACKING_NAMES["sample_offsets"]
    wrong = np.load(offsets)
    wrong[1] += 1
    np.save(offsets, wrong)
    assert verify(tmp_path / "rows") == [
        f"{tmp_path / 'rows' / SFT_PACKING_NAMES['description']}: row 0 holds 3681 tokens, over 2048",
        f"{offsets}: not what the packer makes from {chat / 'chat.pbin'}"]
    write_sft("chat", {**CONFIG, "sft": {"chat": {**CONFIG["sft"]["chat"], "seq_length": 1024}}},
              tmp_path / "chat.pbin")
    build_sft_best_fit(tmp_path / "chat.pbin", tmp_path / "again", 2048)
    write_sft("chat", CONFIG, tmp_path / "chat.pbin")  # longer conversations now: another pair
    assert verify(tmp_path / "again") == [f"{tmp_path / 'again' / SFT_PACKING_NAMES['description']}: "
                                          f"{tmp_path / 'chat.pbin'} changed since it was packed"]
    with pytest.raises(TokenmillError, match="packed from another pair"):
        PackedConversations(tmp_path / "chat.pbin", tmp_path / "again")
    with pytest.raises(TokenmillError, match="conversation 0 has 541 tokens, over the rows' 512"):
        build_sft_best_fit(chat / "chat.pbin", tmp_path / "short", 512)
