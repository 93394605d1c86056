"""What the tests of inputs by URL share (test_objects for s3://, test_gs, test_https, test_hf): the CLI run in
this process, the pack options, the two comparisons every scheme must pass (a pack and an SFT set read from URLs
equal, byte for byte, the same read from local files), and the two checks of a GET broken mid-body by
tests/fault_proxy.py every scheme must pass too (it resumes to the same bytes, or fails in one line)."""

from __future__ import annotations

import json
import os

import yaml

from conftest import GPT2, GPT2_EOD, MIXED_JSONL, REPO
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
    (jobs run in Snakemake's folder of local copies), and the report pages that show them; those equal once
    their paths are resolved."""
    # (Snakemake stamps a folder it made with .snakemake_timestamp, locally too.)
    data = {key: content for key, content in stored.items() if key.startswith("data/") and "/." not in key}
    local = {str(path.relative_to(built)): path.read_bytes() for path in (built / "data").rglob("*")
             if path.is_file() and not path.name.startswith(".") and not path.is_relative_to(built / "data/raw")
             and not path.is_relative_to(built / "data/tokenizers") and "stale" not in path.parts
             and "plans" not in path.parts}  # (prune's, of a local tree: data/stale/ and the plans it records)
    assert set(data) == set(local), (sorted(set(data) - set(local)), sorted(set(local) - set(data)))
    assert {"data/packed/demo.pbin", "data/megatron/demo_text_document.idx",
            "data/cache/demo/seq512_seed1234/megatron_args.txt"} <= set(data)
    differing = {key for key in data if data[key] != local[key]}
    assert differing == {"data/packed/demo.pbin.meta.json", "data/report/demo.html", "data/sft/chat.pbin.meta.json",
                         "data/report/sft/chat.html"}, sorted(differing)
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


# ---- Faults mid-GET: a scheme's client reaches its loopback server through a FaultProxy, the object holding
# tests/data/mixed.jsonl (9,907 bytes); the caller makes remote.PIECE_BYTES 4096 and the read timeout 1 s.
FAULTED = MIXED_JSONL

# Where the read resumes after a break at byte 6,000 of the body. A truncated body hands over all it had; a
# stalled one the whole 4 KiB pieces (the one in progress is dropped with the connection); after a reset the
# kernel throws away what had arrived but not yet been read, so anything from 0 up to the last whole piece.
RESUMED_FROM = {"truncate": {6000}, "stall": {4096}, "reset": {0, 4096}}

# A break 8 bytes into every GET of the body. A reset or a stall loses the piece in progress, so no read gains a
# byte, and the third in a row fails; a truncated body hands over its 8 bytes, so each read gains a little and the
# stream fails on its 31st drop (10 * ATTEMPTS survived), bounded however slowly the bytes come.
GIVES_UP = {"reset": "truncated: the stream stopped at byte 0 of 9907 (3 attempts)",
            "stall": "truncated: the stream stopped at byte 0 of 9907 (3 attempts)",
            "truncate": "the connection dropped 31 times before byte 248 of 9907"}


def _body_ranges(proxy, target: str) -> list[str]:
    """The ``Range`` of each GET of the object's body through ``proxy`` (not the 8 bytes that sniff its kind)."""
    return [exchange.headers.get("range") for exchange in proxy.exchanges
            if exchange.method == "GET" and target in exchange.target and exchange.headers.get("range") != "bytes=0-7"]


def assert_a_broken_get_resumes(proxy, url: str, fault: str, folder, capsys, target: str = "") -> None:
    """``fault`` once, 6,000 bytes into the body of the GET of ``url`` (through ``proxy``, a request whose target
    holds ``target``): the pack resumes to the bytes of the local file's, with one more GET of the rest from
    where :data:`RESUMED_FROM` says."""
    proxy.inject(fault, after=6000, target=target)
    pack_equal(folder, [FAULTED], [url], capsys, "--on-bad-line", "skip")
    assert [(hit.fault, hit.fault_at) for hit in proxy.faults_hit()] == [(fault, 6000)]
    last = FAULTED.stat().st_size - 1
    ranges = _body_ranges(proxy, target)
    assert ranges[0] == f"bytes=0-{last}" and len(ranges) == 2, ranges
    assert int(ranges[1].removeprefix("bytes=").split("-")[0]) in RESUMED_FROM[fault], ranges
    assert ranges[1].endswith(f"-{last}")  # the rest, pinned to the same version


def assert_a_get_broken_every_time_fails(proxy, url: str, fault: str, folder, capsys, target: str = "") -> None:
    """``fault`` 8 bytes into every GET of ``url``'s body (8: the GET that sniffs the file's kind passes): the pack
    fails in one line naming ``url`` (:data:`GIVES_UP`), with nothing written."""
    from tokenmill.files import remote

    assert remote.ATTEMPTS == 3 and remote.MAX_RESUMES == 30
    proxy.inject(fault, after=8, times=1000, target=target)
    output = folder / "out" / "url.pbin"
    output.parent.mkdir(parents=True)
    code, said = tokenmill("pack", url, *PACK, "--on-bad-line", "skip", "-o", output, capsys=capsys)
    assert (code, said) == (1, f"tokenmill: error: {url}: {GIVES_UP[fault]}; nothing was written\n")
    assert len(proxy.faults_hit()) == (31 if fault == "truncate" else 3)
    assert list(output.parent.iterdir()) == []
