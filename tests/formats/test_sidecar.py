"""The sidecar record (tokenmill.formats.sidecar.SidecarRecord): every kind of sidecar the tools write holds only the
keys the record declares, each of its declared JSON type, and a key no one declared is named."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from conftest import DATA, GPT2, GPT2_EOD, MIXED_JSONL, REPO, built_once, run_tokenmill
from tokenmill.formats.pbin import read_sidecar
from tokenmill.formats.sidecar import record_problems


@pytest.fixture(scope="module")
def sidecars(request, tmp_path_factory) -> dict[str, dict]:
    """One sidecar of each kind (:func:`_make_sidecars`), made once per run (~4 s) for every xdist worker."""
    folder = built_once(request.config, tmp_path_factory, "sidecars", _make_sidecars)
    names = ["plain", "shard", "merged", "llama2", "chat", "sub/outside", "tokens_in", "parquet"]
    return {name: read_sidecar(folder / f"{name}.pbin") for name in names if (folder / f"{name}.pbin").exists()}


def _make_sidecars(folder: Path) -> None:
    """A pack of a plain file and a gzip one with bad lines skipped, a byte-range shard, their merge, a Megatron
    tokenizer type, an SFT pair, tokens read in, and (with pyarrow) a Parquet file, each with its sidecar."""
    folder.mkdir()
    (folder / "a.jsonl.gz").write_bytes(gzip.compress(MIXED_JSONL.read_bytes()))
    (folder / "bad.jsonl").write_bytes(MIXED_JSONL.read_bytes() + b"\nnot json\n")
    gpt2 = ("--tokenizer", GPT2, "--eod", GPT2_EOD)
    run_tokenmill("pack", folder / "bad.jsonl", folder / "a.jsonl.gz", *gpt2, "--on-bad-line", "skip",
                  "-o", folder / "plain.pbin")
    run_tokenmill("pack", MIXED_JSONL, *gpt2, "--byte-range", "0:2000", "--on-bad-line", "skip",
                  "-o", folder / "shard.pbin")
    run_tokenmill("merge", folder / "plain.pbin", folder / "shard.pbin", "-o", folder / "merged.pbin")
    (folder / "sub").mkdir()  # an input outside the working folder: recorded absolute too
    run_tokenmill("pack", "../bad.jsonl", *gpt2, "--on-bad-line", "skip", "-o", "outside.pbin", cwd=folder / "sub")
    run_tokenmill("pack", MIXED_JSONL, "--tokenizer-type", "Llama2Tokenizer", "--tokenizer",
                  DATA / "mistral-v1.tokenizer.model", "--on-bad-line", "skip", "-o", folder / "llama2.pbin")
    config = {"tokenizers": {"gpt2": {"path": str(GPT2)}},
              "sft": {"chat": {"inputs": [str(REPO / "data/raw/chat.jsonl")], "tokenizer": "gpt2",
                               "special_tokens": {"bos_token": GPT2_EOD, "eos_token": GPT2_EOD},
                               "message_construction": ["role", "instruction", "conversations"], "seq_length": 2048}}}
    (folder / "sft.json").write_text(json.dumps(config))
    run_tokenmill("sft", folder / "sft.json", "chat", "-o", folder / "chat.pbin")
    run_tokenmill("to-megatron", folder / "shard.pbin", "-o", folder / "shard_text_document")
    run_tokenmill("tokens-in", folder / "shard_text_document", folder / "shard.pbin", *gpt2, "-o",
                  folder / "tokens_in.pbin")  # tokens read in: from Megatron's files and a .pbin
    try:
        import pyarrow
        import pyarrow.parquet
    except ImportError:
        return
    pyarrow.parquet.write_table(pyarrow.table({"text": [f"row {k}" for k in range(50)]}), folder / "rows.parquet",
                                row_group_size=10)
    run_tokenmill("pack", folder / "rows.parquet", *gpt2, "-o", folder / "parquet.pbin")


def test_every_kind_of_sidecar_is_a_sidecar_record(sidecars):
    for name, meta in sidecars.items():
        assert record_problems(meta) == [], name
    assert sidecars["merged"]["parts"] and sidecars["chat"]["loss_mask"] == "chat.loss_mask.pbin"
    assert sidecars["llama2"]["tokenizer"]["type"] == "Llama2Tokenizer"
    assert any(source.get("skipped") for source in sidecars["plain"]["sources"])
    assert "absolute_path" in sidecars["sub/outside"]["sources"][0]
    assert [source["format"] for source in sidecars["tokens_in"]["sources"]] == ["megatron", "pbin"]


def test_a_key_no_one_declared_or_a_value_of_another_type_is_named(sidecars):
    meta = json.loads(json.dumps(sidecars["plain"]))
    meta["new_key"] = 1
    meta["sources"][1]["documents"] = "12"
    meta["tokenizer"]["eod_id"] = True
    meta["sources"][0]["skipped"] = {"blank line": {"count": 1, "first_lines": [2], "more": 0}}
    assert sorted(record_problems(meta)) == ["new_key: not in the record",
                                             "sources[0].skipped.blank line.more: not in the record",
                                             'sources[1].documents must be an integer, not "12"',
                                             "tokenizer.eod_id must be an integer or null, not true"]
