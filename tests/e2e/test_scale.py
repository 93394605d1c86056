"""Scale-out inputs: compressed JSONL read as a stream, byte-range shards of big files, and the
workflow's datasets × tokenizers axis — each giving the bytes of the plain, whole, one-job pack."""

from __future__ import annotations

import bz2
import gzip
import lzma
import random
import re
import shutil
import subprocess

import numpy as np
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import DEMO_JSONL, GPT2, GPT2_EOD, MIXED_JSONL, TEKKEN, run_snakemake, run_tokenmill
from tokenmill.formats.pbin import PbinFile, read_sidecar
from tokenmill.inputs.jsonl import stream_line_batches


try:
    from compression import zstd
except ImportError:
    from backports import zstd

COMPRESSORS = {".gz": gzip.compress, ".zst": zstd.compress, ".xz": lzma.compress, ".bz2": bz2.compress}


def pack(inputs, out, *options, tokenizer=GPT2, check=True):
    eod = ["--eod", GPT2_EOD] if tokenizer == GPT2 else ["--no-eod"]
    return run_tokenmill("pack", *inputs, "--tokenizer", tokenizer, *eod, "-o", out, *options, check=check)


# ---- Compressed inputs ------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("tokenizer", [GPT2, TEKKEN], ids=["gpt2", "tekken"])
def test_compressed_inputs_pack_to_the_bytes_of_the_plain_file(tmp_path, tokenizer):
    plain = tmp_path / "mixed.jsonl"
    plain.write_bytes(MIXED_JSONL.read_bytes())
    pack([plain], tmp_path / "plain.pbin", tokenizer=tokenizer)
    expected = (tmp_path / "plain.pbin").read_bytes()
    for suffix, compress in COMPRESSORS.items():
        archive = tmp_path / f"mixed.jsonl{suffix}"
        archive.write_bytes(compress(plain.read_bytes()))
        # tiny batches: lines cross decompressed-block boundaries many times
        pack([archive], tmp_path / f"{suffix}.pbin", "--batch-bytes", "700", tokenizer=tokenizer)
        assert (tmp_path / f"{suffix}.pbin").read_bytes() == expected, suffix
        source = read_sidecar(tmp_path / f"{suffix}.pbin")["sources"][0]
        assert source["compression"] == {".gz": "gzip", ".zst": "zstd", ".xz": "xz", ".bz2": "bzip2"}[suffix]
        assert source["lines"] == plain.read_bytes().count(b"\n")
        assert source["bytes"] == archive.stat().st_size
        assert source["decompressed_bytes"] == plain.stat().st_size


@pytest.mark.slow
def test_multi_member_gzip_and_multi_frame_zstd_are_read_whole_with_workers(tmp_path):
    lines = DEMO_JSONL.read_bytes().splitlines(keepends=True)[:1200]
    halves = b"".join(lines[:500]), b"".join(lines[500:])
    (tmp_path / "all.jsonl").write_bytes(b"".join(halves))
    (tmp_path / "cat.jsonl.gz").write_bytes(gzip.compress(halves[0]) + gzip.compress(halves[1]))
    (tmp_path / "cat.jsonl.zst").write_bytes(zstd.compress(halves[0]) + zstd.compress(halves[1]))
    pack([tmp_path / "all.jsonl"], tmp_path / "all.pbin")
    for name in ("cat.jsonl.gz", "cat.jsonl.zst"):
        pack([tmp_path / name], tmp_path / f"{name}.pbin", "--workers", "2", "--batch-bytes", "65536")
        assert (tmp_path / f"{name}.pbin").read_bytes() == (tmp_path / "all.pbin").read_bytes()
        assert read_sidecar(tmp_path / f"{name}.pbin")["documents"] == 1200


def test_bad_lines_in_compressed_inputs_are_numbered_as_decompressed_lines(tmp_path):
    lines = DEMO_JSONL.read_bytes().splitlines()[:40]
    lines[4] = b'{"text": 5}'
    lines[29] = b"not json"
    archive = tmp_path / "bad.jsonl.zst"
    archive.write_bytes(zstd.compress(b"\n".join(lines) + b"\n"))
    failed = pack([archive], tmp_path / "bad.pbin", "--batch-bytes", "2000", check=False)
    assert failed.returncode == 1
    assert failed.stderr.strip().endswith(f"{archive}:5: text is not a string (a int) "
                                          f"(on_bad_line: error; use skip to leave such lines out)")
    assert not (tmp_path / "bad.pbin").exists()
    pack([archive], tmp_path / "bad.pbin", "--on-bad-line", "skip", "--batch-bytes", "2000")
    skipped = read_sidecar(tmp_path / "bad.pbin")["sources"][0]["skipped"]
    assert sorted(line for entry in skipped.values() for line in entry["first_lines"]) == [5, 30]
    assert PbinFile(tmp_path / "bad.pbin").num_documents == 38


def test_a_line_over_max_line_bytes_in_a_stream_is_skipped_without_being_held(tmp_path):
    lines = DEMO_JSONL.read_bytes().splitlines()[:30]
    lines[9] = b'{"text": "' + b"x" * 300_000 + b'"}'
    plain = tmp_path / "long.jsonl"
    plain.write_bytes(b"\n".join(lines) + b"\n")
    (tmp_path / "long.jsonl.gz").write_bytes(gzip.compress(plain.read_bytes()))
    options = ("--on-bad-line", "skip", "--max-line-bytes", "100000", "--batch-bytes", "4096")
    pack([plain], tmp_path / "plain.pbin", *options)
    pack([tmp_path / "long.jsonl.gz"], tmp_path / "gz.pbin", *options)
    assert (tmp_path / "gz.pbin").read_bytes() == (tmp_path / "plain.pbin").read_bytes()
    (reason, entry), = read_sidecar(tmp_path / "gz.pbin")["sources"][0]["skipped"].items()
    assert entry["first_lines"] == [10] and reason.startswith("line of 300012 bytes, over max_line_bytes (100000)")


CODECS = {".gz": "gzip", ".zst": "zstd", ".xz": "xz", ".bz2": "bzip2"}


@pytest.mark.slow
@pytest.mark.parametrize("damage", ["truncated", "corrupt"])
@pytest.mark.parametrize("suffix", list(COMPRESSORS))
def test_a_damaged_archive_is_an_error_naming_it_never_a_shorter_output(tmp_path, damage, suffix):
    data = bytearray(COMPRESSORS[suffix](DEMO_JSONL.read_bytes()))
    data = data[:len(data) // 2] if damage == "truncated" else data
    if damage == "corrupt":
        data[len(data) // 2] ^= 0x55
    archive = tmp_path / f"demo.jsonl{suffix}"
    archive.write_bytes(bytes(data))
    failed = pack([archive], tmp_path / "out.pbin", "--on-bad-line", "skip", check=False)
    assert failed.returncode == 1
    message = failed.stderr.strip().splitlines()[-1]
    assert message.startswith(f"tokenmill: error: {archive}: {CODECS[suffix]} archive is {damage}")
    assert not (tmp_path / "out.pbin").exists() and not list(tmp_path.glob("*.tmp*"))


@pytest.mark.slow
@pytest.mark.parametrize("suffix", list(COMPRESSORS))
def test_concatenated_streams_are_read_whole_and_bytes_after_the_last_are_refused(tmp_path, suffix):
    first, rest = b'{"text": "a"}\n', b'{"text": "b"}\n{"text": "c"}\n'
    compress = COMPRESSORS[suffix]
    (tmp_path / "all.jsonl").write_bytes(first + rest)
    pack([tmp_path / "all.jsonl"], tmp_path / "all.pbin")
    whole = tmp_path / f"cat.jsonl{suffix}"
    whole.write_bytes(compress(first) + compress(rest))  # as `cat a.xz b.xz`, pbzip2, pigz -i
    pack([whole], tmp_path / "cat.pbin", "--batch-bytes", "16")
    assert (tmp_path / "cat.pbin").read_bytes() == (tmp_path / "all.pbin").read_bytes()
    assert read_sidecar(tmp_path / "cat.pbin")["sources"][0]["decompressed_bytes"] == len(first + rest)
    # issue 18's file: one stream, then plain JSONL after it; the decompressors of Python's bz2 and
    # lzma modules stop at the first stream's end, which packed one document with exit status 0
    archive = tmp_path / f"tail.jsonl{suffix}"
    archive.write_bytes(compress(first) + rest)
    failed = pack([archive], tmp_path / "out.pbin", check=False)
    assert failed.returncode == 1
    assert "Traceback" not in failed.stderr
    message = failed.stderr.strip().splitlines()[-1]
    assert message.startswith(f"tokenmill: error: {archive}: ") and message.endswith("; no output was written")
    if suffix in (".xz", ".bz2"):  # read here stream by stream, so the offset is known
        codec = CODECS[suffix]
        assert message == (f"tokenmill: error: {archive}: {codec} data ends at byte {len(compress(first))}, followed "
                           f"by {len(rest)} bytes that are not {'an' if codec == 'xz' else 'a'} {codec} stream; "
                           f"no output was written")
    assert not (tmp_path / "out.pbin").exists() and not list(tmp_path.glob("*.tmp*"))


@pytest.mark.slow
def test_xz_stream_padding_is_read_as_xz_does_and_padding_not_a_multiple_of_4_is_corrupt(tmp_path):
    first, rest = b'{"text": "a"}\n', b'{"text": "b"}\n{"text": "c"}\n'
    (tmp_path / "all.jsonl").write_bytes(first + rest)
    pack([tmp_path / "all.jsonl"], tmp_path / "all.pbin")
    one, two = lzma.compress(first, check=lzma.CHECK_CRC32), lzma.compress(rest, check=lzma.CHECK_CRC32)
    padded = tmp_path / "padded.jsonl.xz"  # null padding between and after streams, 4 and 8 bytes
    padded.write_bytes(one + b"\0" * 4 + two + b"\0" * 8)
    if shutil.which("xz"):  # the reference reader agrees that this is one valid file
        assert subprocess.run(["xz", "-t", padded]).returncode == 0
    pack([padded], tmp_path / "padded.pbin")
    assert (tmp_path / "padded.pbin").read_bytes() == (tmp_path / "all.pbin").read_bytes()
    assert read_sidecar(tmp_path / "padded.pbin")["sources"][0]["bytes"] == padded.stat().st_size
    for name, (data, at, zeros) in {"between": (one + b"\0" * 3 + two, len(one), 3),
                                    "after": (one + two + b"\0" * 6, len(one + two), 6)}.items():
        odd = tmp_path / f"{name}.jsonl.xz"
        odd.write_bytes(data)
        failed = pack([odd], tmp_path / "odd.pbin", check=False)
        assert (failed.returncode, failed.stderr.strip().splitlines()[-1]) == (
            1, f"tokenmill: error: {odd}: xz stream padding at byte {at} is {zeros} null bytes, not a multiple of 4 "
               f"(corrupt); no output was written")
        assert not (tmp_path / "odd.pbin").exists()


def test_zip_archives_are_refused_and_compressed_files_have_no_raw_index(tmp_path):
    zipped = tmp_path / "demo.jsonl.zip"
    zipped.write_bytes(b"PK\x03\x04" + b"\0" * 100)
    failed = pack([zipped], tmp_path / "out.pbin", check=False)
    assert "a zip archive; tokenmill reads plain JSONL or a gzip/zstd/xz/bzip2-compressed stream" in failed.stderr
    archive = tmp_path / "demo.jsonl.gz"
    archive.write_bytes(gzip.compress(b'{"text": "a"}\n'))
    failed = run_tokenmill("index", archive, "-o", tmp_path / "demo.idx", check=False)
    assert failed.returncode == 1
    assert "a raw index (byte offsets, as Modalities' MemMapDataset reads them) exists only for plain JSONL" \
        in failed.stderr


@settings(max_examples=60, deadline=None)
@given(st.lists(st.binary(max_size=40).map(lambda line: line.replace(b"\n", b"")), max_size=30),
       st.booleans(), st.integers(1, 64), st.integers(1, 50))
def test_stream_batches_cut_exactly_at_lines(tmp_path_factory, lines, final_newline, batch_bytes, max_line_bytes):
    text = b"\n".join(lines) + (b"\n" if final_newline and lines else b"")
    archive = tmp_path_factory.mktemp("stream") / "x.gz"
    archive.write_bytes(gzip.compress(text))
    got, numbers = [], []
    for first_line, batch_lines, block in stream_line_batches(archive, "gzip", batch_bytes, max_line_bytes):
        for number, (offset, length) in enumerate(batch_lines.tolist(), start=first_line):
            numbers.append(number)
            got.append((length, None if offset < 0 else block[offset:offset + length]))
    expected = text.split(b"\n")
    if text.endswith(b"\n") or not text:
        expected = expected[:-1]  # no empty line after the final newline, as the raw index
    assert numbers == list(range(1, len(expected) + 1))
    for (length, line), wanted in zip(got, expected):
        assert length == len(wanted)
        # a line is only ever left out when it is over the limit
        assert line == wanted or (line is None and len(wanted) > max_line_bytes)


# ---- Byte-range shards ------------------------------------------------------------------------


@pytest.mark.slow
def test_byte_range_shards_merge_to_the_whole_file_with_its_line_numbers(tmp_path):
    index = tmp_path / "demo.idx"
    run_tokenmill("index", DEMO_JSONL, "-o", index)
    pack([DEMO_JSONL], tmp_path / "whole.pbin", "--index", index)
    size = DEMO_JSONL.stat().st_size
    cuts = sorted(random.Random(7).sample(range(1, size), 5))
    # a range holding no line start (both ends inside one line) gives an empty, mergeable part
    line_start = DEMO_JSONL.read_bytes().index(b"\n", 5000) + 1
    cuts = sorted(set(cuts + [line_start + 3, line_start + 5]))
    bounds = [0, *cuts, size]
    parts = []
    for k, (start, end) in enumerate(zip(bounds[:-1], bounds[1:])):
        parts.append(tmp_path / f"shard{k}.pbin")
        pack([DEMO_JSONL], parts[-1], "--index", index, "--byte-range",
             f"{start}:{end if k < len(bounds) - 2 else ''}")
    run_tokenmill("merge", *parts, "-o", tmp_path / "merged.pbin")
    assert (tmp_path / "merged.pbin").read_bytes() == (tmp_path / "whole.pbin").read_bytes()
    sources = read_sidecar(tmp_path / "merged.pbin")["sources"]
    assert sum(source["lines"] for source in sources) == 2990
    assert [source["first_line"] for source in sources if source["lines"]] == \
        list(np.cumsum([0] + [source["lines"] for source in sources if source["lines"]][:-1]) + 1)
    assert 0 in [source["lines"] for source in sources]
    # provenance and the HF re-check find each shard's lines in the whole file
    verified = run_tokenmill("verify", tmp_path / "merged.pbin", "--against-tokenizer", "0.05")
    assert "no problem found" in verified.stdout + verified.stderr
    shown = run_tokenmill("inspect", tmp_path / "merged.pbin", "--doc", "2000").stdout
    assert "source: " + str(DEMO_JSONL) + ", line 2001" in shown


def test_a_bad_line_in_a_shard_is_named_by_its_line_in_the_whole_file(tmp_path):
    lines = DEMO_JSONL.read_bytes().splitlines(keepends=True)[:100]
    lines[61] = b'{"txt": "no text key"}\n'
    jsonl = tmp_path / "x.jsonl"
    jsonl.write_bytes(b"".join(lines))
    start = sum(map(len, lines[:50]))
    failed = pack([jsonl], tmp_path / "x.pbin", "--byte-range", f"{start}:", check=False)
    assert failed.stderr.strip().endswith(f"{jsonl}:62: no key 'text' (on_bad_line: error; use skip to leave "
                                          f"such lines out)")
    with_gz = tmp_path / "x.jsonl.gz"
    with_gz.write_bytes(gzip.compress(jsonl.read_bytes()))
    refused = pack([with_gz], tmp_path / "y.pbin", "--byte-range", "0:100", check=False)
    assert "a byte range needs exactly one plain (uncompressed) JSONL input" in refused.stderr


# ---- The workflow: compressed shards, shard_bytes, datasets × tokenizers ------------------------


def test_workflow_packs_compressed_files_shards_and_several_tokenizers_from_one_index(workflow_dir, tmp_path):
    lines = DEMO_JSONL.read_bytes().splitlines(keepends=True)
    shards = workflow_dir / "data/raw/shards"
    shards.mkdir()
    for k in range(4):
        compress = gzip.compress if k % 2 else zstd.compress
        shard = shards / f"s{k}.jsonl.{'gz' if k % 2 else 'zst'}"
        shard.write_bytes(compress(b"".join(lines[k * 700:(k + 1) * 700])))
    (workflow_dir / "data/tokenizers/tekken.tokenizer.json").write_bytes(TEKKEN.read_bytes())
    config = yaml.safe_load((workflow_dir / "config/config.yaml").read_text())
    config["tokenizers"]["tekken"] = {"path": "data/tokenizers/tekken.tokenizer.json"}
    config["datasets"] = {
        "demo": {"inputs": ["data/raw/demo.jsonl"], "tokenizer": ["gpt2", "tekken"], "shard_bytes": "1MB"},
        "web": {"inputs": ["data/raw/shards/*"], "tokenizer": "gpt2", "group_bytes": None},  # a job per file
    }
    config["sampling"]["seq_lengths"] = [512]
    config["blends"] = {"mix": {"weights": {"demo": 0.5, "web": 0.5}}}  # the one tokenizer they share
    config["sft"] = {}
    config["keep_parts"] = False
    (workflow_dir / "config/config.yaml").write_text(yaml.safe_dump(config))

    result = run_snakemake(workflow_dir)
    jobs = re.findall(r"^Job [0-9]+: (raw line index of|pack) (\S+)", result.stderr, re.MULTILINE)
    assert [what for what, _ in jobs].count("raw line index of") == 1  # one for both tokenizers and all shards
    assert sorted(unit for what, unit in jobs if what == "pack") == sorted(
        [f"demo.{tokenizer}.shard{j}" for tokenizer in ("gpt2", "tekken") for j in range(4)]
        + [f"web.part{k}" for k in range(4)])
    packed = workflow_dir / "data/packed"
    assert sorted(path.name for path in packed.glob("*.pbin")) == ["demo.gpt2.pbin", "demo.tekken.pbin", "web.pbin"]
    pack([DEMO_JSONL], tmp_path / "gpt2.pbin")
    pack([DEMO_JSONL], tmp_path / "tekken.pbin", tokenizer=TEKKEN)
    (tmp_path / "head.jsonl").write_bytes(b"".join(lines[:2800]))
    pack([tmp_path / "head.jsonl"], tmp_path / "web.pbin")
    for name, expected in (("demo.gpt2", "gpt2"), ("demo.tekken", "tekken"), ("web", "web")):
        assert (packed / f"{name}.pbin").read_bytes() == (tmp_path / f"{expected}.pbin").read_bytes(), name
    for name in ("demo.gpt2", "demo.tekken", "web"):
        assert (workflow_dir / f"data/megatron/{name}_text_document.bin").exists()
        assert (workflow_dir / f"data/verified/{name}.ok").exists()
        assert (workflow_dir / f"data/cache/{name}/seq512_seed1234").is_dir()
    blend_description = next((workflow_dir / "data/cache/blend_mix/seq512_seed1234").glob("*BlendedDataset-train*"
                                                                                          "-description.txt"))
    assert "demo.gpt2_text_document" in blend_description.read_text()
    assert "web_text_document" in blend_description.read_text()
    blend_page = (workflow_dir / "data/report/blend_mix/seq512_seed1234.html").read_text()
    # asked 0.5/0.5; Megatron's greedy blend realises exactly that on 20,000 train samples
    assert ("<td>data/megatron/demo.gpt2_text_document</td><td class=n>0.5</td><td class=n>0.5</td>"
            "<td class=n>10,000</td>") in blend_page
    # a blend whose datasets share two tokenizers must name one
    config["datasets"]["web"]["tokenizer"] = ["gpt2", "tekken"]
    (workflow_dir / "config/config.yaml").write_text(yaml.safe_dump(config))
    failed = run_snakemake(workflow_dir, "-n", check=False)
    assert "blends.mix: its datasets share 2 tokenizers (gpt2, tekken); name one in blends.mix.tokenizer" \
        in failed.stdout + failed.stderr
