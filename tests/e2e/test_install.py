"""The install fits a training container: the CLI never imports torch, and `.[torch]` keeps the
torch that an image already has."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import DEMO_JSONL, GPT2, GPT2_EOD, REPO, tool_env


def test_pack_sft_and_inspect_run_where_torch_cannot_be_imported(tmp_path):
    stub = tmp_path / "no-torch" / "torch"
    stub.mkdir(parents=True)
    (stub / "__init__.py").write_text("raise ImportError('torch is not installed in this image')\n")
    env = {**tool_env(), "PYTHONPATH": str(stub.parent)}

    def tokenmill(*args):
        return subprocess.run([sys.executable, "-m", "tokenmill.cli", *map(str, args)], capture_output=True, text=True,
                              env=env, cwd=REPO)

    packed = tokenmill("pack", DEMO_JSONL, "--tokenizer", GPT2, "--eod", GPT2_EOD, "-o", tmp_path / "demo.pbin")
    assert packed.returncode == 0, packed.stderr
    built = tokenmill("sft", "config/config.yaml", "chat", "-o", tmp_path / "chat.pbin")
    assert built.returncode == 0, built.stderr
    for verb in (("to-megatron", tmp_path / "demo.pbin", "-o", tmp_path / "demo_text_document"),
                 ("verify", tmp_path / "demo.pbin"), ("inspect", tmp_path / "demo.pbin", "--doc", "3"),
                 ("report", tmp_path / "demo.pbin", "-o", tmp_path / "demo.html")):
        result = tokenmill(*verb)
        assert result.returncode == 0, (verb, result.stderr)
    # a training sample traced through its index cache: the index arithmetic Nanoset shares needs no torch
    prefix, cache = tmp_path / "demo_text_document", tmp_path / "cache" / "seq32_seed5"
    indexed = tokenmill("sample-index", prefix, "-o", cache, "--seq-length", "32", "--seed", "5", "--split", "1,0,0",
                        "--epochs", "1", "--vocab-size", "50257")
    assert indexed.returncode == 0, indexed.stderr
    sample = tokenmill("inspect", cache, "--sample", "0")
    assert sample.returncode == 0 and sample.stdout.startswith("sample 0 of train (seq 32, seed 5)"), sample.stderr
    assert "  sequence " in sample.stdout
    document = tokenmill("inspect", prefix, "--doc", "3")
    assert document.returncode == 0 and document.stdout, document.stderr
    # the modules a packing job imports do not even try
    modules = ("tokenmill.cli, tokenmill.pack.pretraining, tokenmill.training.sft_datasets, tokenmill.formats.bin_idx, "
               "tokenmill.megatron.gpt_indices, tokenmill.views.report, tokenmill.views.inspect_file, "
               "tokenmill.megatron.sample_pieces")
    imported = subprocess.run([sys.executable, "-c", f"import sys, {modules}; print('torch' in sys.modules)"],
                              capture_output=True, text=True, env=env)
    assert imported.stdout.strip() == "False", imported.stderr


def test_installing_the_torch_extra_keeps_the_torch_an_image_has(tmp_path):
    """pip's own resolution (a dry run) in a fresh venv that holds torch 2.5.0, as an NGC image would: this
    interpreter's pip run in it (``pip --python``), where the venv's own would first be copied in (ensurepip)."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site_packages = Path(subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                                        capture_output=True, text=True, check=True).stdout.strip())
    image_torch = site_packages / "torch-2.5.0.dist-info"  # the metadata is what pip resolves against
    image_torch.mkdir()
    (image_torch / "METADATA").write_text("Metadata-Version: 2.1\nName: torch\nVersion: 2.5.0\n")
    (image_torch / "INSTALLER").write_text("pip\n")
    (image_torch / "RECORD").write_text("")
    report = tmp_path / "report.json"
    resolved = subprocess.run([sys.executable, "-m", "pip", "--python", python, "install", "--dry-run", "--quiet",
                               "--report", str(report), "-e", f"{REPO}[torch]"], capture_output=True, text=True)
    if resolved.returncode != 0 and "No matching distribution" in resolved.stderr + resolved.stdout:
        pytest.skip(f"no package index reachable: {resolved.stderr.strip().splitlines()[-1]}")
    assert resolved.returncode == 0, resolved.stderr
    to_install = {item["metadata"]["name"].lower() for item in json.loads(report.read_text())["install"]}
    assert "tokenmill" in to_install and "fastokens" in to_install
    assert "torch" not in to_install and "snakemake" not in to_install, sorted(to_install)
