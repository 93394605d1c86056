"""Tokens already made as a dataset's input (``datasets.<name>.tokens``): a build from JSONL, then a second config
in another folder whose datasets take that build's Megatron ``.bin/.idx`` and ``.pbin`` as their tokens. Its caches,
blends, best-fit packing, OLMo-core and datatrove files are the first build's bytes, and no job tokenizes."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
import yaml

from conftest import DEMO_JSONL, GPT2, REPO, jobs_of, planned_jobs, run_snakemake, run_tokenmill
from tokenmill.formats.pbin import read_sidecar

pytestmark = pytest.mark.slow

SAMPLING = {"seq_lengths": [128], "seeds": [1], "split": "90,5,5",
            "num_samples": {"train": 400, "valid": 10, "test": 10}}
FORMATS = ["pbin", "megatron", "datatrove", "olmo"]


def _workspace(folder: Path, config: dict) -> Path:
    folder.mkdir(parents=True)
    shutil.copy(REPO / "Snakefile", folder / "Snakefile")
    shutil.copytree(REPO / "workflow", folder / "workflow")
    (folder / "data/raw").mkdir(parents=True)
    (folder / "data/tokenizers").mkdir()
    shutil.copy(GPT2, folder / "data/tokenizers/gpt2.tokenizer.json")
    (folder / "my.yaml").write_text(yaml.safe_dump(config))
    return folder


def _files(folder: Path, *patterns: str) -> dict[str, bytes]:
    return {str(path.relative_to(folder)): path.read_bytes() for pattern in patterns
            for path in sorted(folder.glob(pattern)) if path.is_file()}


def test_a_dataset_of_existing_bin_idx_builds_the_caches_of_its_jsonl_with_no_pack_job(tmp_path):
    lines = DEMO_JSONL.read_bytes().splitlines(keepends=True)
    tokenizers = {"gpt2": {"path": "data/tokenizers/gpt2.tokenizer.json", "eod": "<|endoftext|>"}}
    common = {"formats": FORMATS, "packing": "best_fit", "tokenizer": "gpt2"}
    first = _workspace(tmp_path / "first", {
        "tokenizers": tokenizers, "sampling": SAMPLING, "blends": {"mix": {"weights": {"web": 0.7, "books": 0.3}}},
        "datasets": {"web": {"inputs": ["data/raw/web.jsonl"], **common},
                     "books": {"inputs": ["data/raw/books.jsonl"], **common}}})
    # a text ending with the EOD gets two in Megatron's .bin, one in the .pbin (eod_in_text): both read back
    (first / "data/raw/web.jsonl").write_bytes(b"".join(lines[:80]) + b'{"text": "the end<|endoftext|>"}\n')
    (first / "data/raw/books.jsonl").write_bytes(b"".join(lines[80:140]))
    run_snakemake(first, "--configfile", "my.yaml", "--cores", "2")

    second = _workspace(tmp_path / "second", {
        "tokenizers": tokenizers, "sampling": SAMPLING, "blends": {"mix": {"weights": {"web": 0.7, "books": 0.3}}},
        "datasets": {"web": {"tokens": [str(first / "data/megatron/web_text_document")], **common},
                     "books": {"tokens": [str(first / "data/packed/books.pbin")], **common}}})
    built_second = run_snakemake(second, "--configfile", "my.yaml", "--cores", "2")
    jobs = jobs_of(built_second)  # the jobs it ran: those a dry run plans
    assert "tokens_in" in jobs and not jobs & {"pack", "pack_unit", "raw_index", "merge_units"}, jobs
    summary = built_second.stdout
    assert "  tokenmill verify data/packed/" in summary and "--against-tokenizer" not in summary  # no text to re-encode

    same = ("data/cache/**/*", "data/megatron/*_text_document.*", "data/packed/*.pbin", "data/datatrove/**/*",
            "data/olmo/**/*.npy", "data/olmo/*/metadata.json", "data/olmo/*.best_fit/**/*")
    built, taken = _files(first, *same), _files(second, *same)
    assert any("BlendedDataset" in path for path in built) and any("best_fit" in path for path in built)
    assert any(path.startswith("data/olmo/web/part-") for path in built)
    assert sorted(taken) == sorted(built)
    assert [path for path in built if built[path] != taken[path]] == []
    view = "+datatrove+megatron+olmo+pbin"  # FORMATS, not the default: named in the stamps' names
    assert (second / f"data/verified/web{view}.ok").is_file() and (second / f"data/verified/books{view}.ok").is_file()

    # the sidecar names where the tokens came from, with their size and sha256
    sources = read_sidecar(second / "data/packed/web.pbin")["sources"]
    assert [(source["format"], source["bytes"]) for source in sources] == [
        ("megatron", (first / "data/megatron/web_text_document.bin").stat().st_size)]
    assert read_sidecar(second / "data/packed/web.pbin")["eod_in_text"] == [[80, 81]]

    # an edited source reruns its build's tokens_in and what depends on it; the other dataset's stays
    source = first / "data/packed/books.pbin"
    os.utime(source, ns=(source.stat().st_atime_ns, source.stat().st_mtime_ns + 10**9))
    jobs = planned_jobs(second, "--configfile", "my.yaml")
    assert "tokens_in" in jobs and "sample_index" in jobs and not jobs & {"pack", "raw_index"}, jobs


def test_megatrons_empty_documents_build_every_format_and_megatrons_files_keep_their_bytes(tmp_path):
    """A prefix preprocess-data wrote (Megatron's bytes) with empty texts and a text spelling the EOD: the build's
    .bin/.idx are the source's bytes, every format verifies, and the summary warns of the EOD inside a document
    as it does for a pack; a link to the source named beside it is refused when planning, naming both."""
    source = tmp_path / "made"
    (source / "hf").mkdir(parents=True)
    shutil.copy(GPT2, source / "hf/tokenizer.json")
    (source / "hf/tokenizer_config.json").write_text('{"eos_token": "<|endoftext|>"}')
    (source / "in.jsonl").write_bytes(b"".join(DEMO_JSONL.read_bytes().splitlines(keepends=True)[:40])
                                      + b'{"text": ""}\n{"text": "a<|endoftext|>b"}\n{"text": ["", ""]}\n')
    run_tokenmill("preprocess-data", "--input", source / "in.jsonl", "--output-prefix", source / "web", "--workers",
                  "1", "--tokenizer-type", "HuggingFaceTokenizer", "--tokenizer-model", source / "hf", "--append-eod")
    prefix = source / "web_text_document"
    for suffix in (".bin", ".idx"):
        os.symlink(f"{prefix}{suffix}", source / f"link{suffix}")
    config = {"tokenizers": {"gpt2": {"path": "data/tokenizers/gpt2.tokenizer.json", "eod": "<|endoftext|>"}},
              "sampling": SAMPLING, "datasets": {"web": {"tokens": [str(prefix)], "formats": FORMATS,
                                                         "tokenizer": "gpt2"}}}
    folder = _workspace(tmp_path / "build", config)
    summary = run_snakemake(folder, "--configfile", "my.yaml", "--cores", "2").stdout
    for suffix in (".bin", ".idx"):
        built = folder / f"data/megatron/web_text_document{suffix}"
        assert built.read_bytes() == Path(f"{prefix}{suffix}").read_bytes()
    assert read_sidecar(folder / "data/packed/web.pbin")["empty_texts"] == [[40, 41], [42, 43]]
    assert (folder / "data/verified/web+datatrove+megatron+olmo+pbin.ok").is_file()  # FORMATS named
    assert "warning: the EOD '<|endoftext|>' (id 50256) occurs 1 times inside documents' own tokens" in summary

    config["datasets"]["web"]["tokens"].append(str(source / "link"))
    (folder / "my.yaml").write_text(yaml.safe_dump(config))
    refused = run_snakemake(folder, "--configfile", "my.yaml", "-n", check=False)
    assert refused.returncode != 0
    assert f"datasets.web.tokens: {source / 'link'} is the source {prefix} again (the same file) and its documents " \
           f"would be written twice; name it once" in refused.stderr + refused.stdout
