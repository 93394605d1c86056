"""What the tests of inputs by URL share (test_objects for s3://, test_gs, test_https, test_hf): the CLI run in
this process, the pack options, and the two comparisons every scheme must pass: a pack and an SFT set read
from URLs equal, byte for byte, the same read from local files."""

from __future__ import annotations

import json

import yaml

from conftest import GPT2, GPT2_EOD, REPO
from tokenmill import cli
from tokenmill.formats.pbin import read_sidecar
from tokenmill.formats.sidecar import record_problems

PACK = ("--tokenizer", GPT2, "--eod", GPT2_EOD, "--engine", "fastokens", "--check-fraction", "1")
CHAT = REPO / "data/raw/chat.jsonl"


def tokenmill(*args, capsys=None) -> tuple[int, str]:
    """``tokenmill ARGS`` in this process: its exit code and what it wrote to stderr."""
    code = cli.main([str(arg) for arg in args])
    return code, capsys.readouterr().err if capsys else ""


def pack_equal(folder, local: list, urls: list, capsys, *options) -> tuple[dict, str]:
    """``tokenmill pack`` of ``local`` files into ``folder/local.pbin`` and of ``urls`` into ``folder/url.pbin``;
    asserts the two equal byte for byte and the URL pack's sidecar fits its record; returns that sidecar, and
    all that the URL pack wrote to stdout and stderr."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, inputs in (("local", local), ("url", urls)):
        code = cli.main([str(arg) for arg in ("pack", *inputs, *PACK, "-o", folder / f"{name}.pbin", *options)])
        captured = capsys.readouterr()
        assert code == 0, captured.err
    assert (folder / "url.pbin").read_bytes() == (folder / "local.pbin").read_bytes()
    sidecar = read_sidecar(folder / "url.pbin")
    assert record_problems(sidecar) == []
    return sidecar, captured.out + captured.err


def sft_equal(folder, url: str, capsys) -> dict:
    """``tokenmill sft`` of the demo's chat set from its local file (``folder/local.pbin``) and from ``url``, which
    holds the same bytes (``folder/url.pbin``); asserts the two pairs equal; returns the URL set's one source."""
    config = yaml.safe_load((REPO / "config/config.yaml").read_text())
    config["tokenizers"]["gpt2"]["path"] = str(REPO / config["tokenizers"]["gpt2"]["path"])
    for name, inputs in (("local", [str(CHAT)]), ("url", [url])):
        config["sft"]["chat"]["inputs"] = inputs
        (folder / f"{name}.json").write_text(json.dumps({key: config[key] for key in ("tokenizers", "sft")}))
        code, said = tokenmill("sft", folder / f"{name}.json", "chat", "-o", folder / f"{name}.pbin", capsys=capsys)
        assert code == 0, said
    for suffix in (".pbin", ".loss_mask.pbin"):
        assert (folder / f"url{suffix}").read_bytes() == (folder / f"local{suffix}").read_bytes()
    [source] = read_sidecar(folder / "url.pbin")["sources"]
    return source
