"""What the tests of inputs by URL share (test_objects for s3://, test_gs, test_https, test_hf): the CLI run in
this process, the pack options, and the two comparisons every scheme must pass: a pack and an SFT set read
from URLs equal, byte for byte, the same read from local files."""

from __future__ import annotations

import json
import os

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


def assert_a_local_builds_bytes(stored: dict[str, bytes], built) -> None:
    """``stored`` (the objects under a storage prefix, by their key's rest) are the local build ``built``'s
    data files object for object: byte for byte but the sidecars, which name the config's own files absolute
    (jobs run in Snakemake's folder of local copies), and the report page that shows one; those equal once
    their paths are resolved."""
    # (Snakemake stamps a folder it made with .snakemake_timestamp, locally too.)
    data = {key: content for key, content in stored.items() if key.startswith("data/") and "/." not in key}
    local = {str(path.relative_to(built)): path.read_bytes() for path in (built / "data").rglob("*")
             if path.is_file() and not path.name.startswith(".") and not path.is_relative_to(built / "data/raw")
             and not path.is_relative_to(built / "data/tokenizers") and "stale" not in path.parts
             and "plans" not in path.parts}  # (prune's, of a local tree: data/stale/ and the plans it records)
    assert set(data) == set(local)
    assert {"data/packed/demo.pbin", "data/megatron/demo_text_document.idx",
            "data/cache/demo/seq512_seed1234/megatron_args.txt"} <= set(data)
    differing = {key for key in data if data[key] != local[key]}
    assert differing == {"data/packed/demo.pbin.meta.json", "data/report/demo.html", "data/sft/chat.pbin.meta.json"}
    sidecars = [json.loads(text) for text in (data["data/packed/demo.pbin.meta.json"],
                                             local["data/packed/demo.pbin.meta.json"])]
    for sidecar in sidecars:
        for record in [*sidecar["sources"], sidecar["tokenizer"]]:
            record["path"] = os.path.normpath(built / "data/packed" / record["path"])
    assert sidecars[0] == sidecars[1]


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
