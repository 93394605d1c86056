"""Every Megatron hand-off hint, followed as printed, through megatron-core itself: it finds the caches.

A workflow build with two datasets and a blend, then, in a throwaway venv with megatron-core 0.19.2,
what a training job does with each cache folder's ``megatron_args.txt`` (the summary names the first;
the README says every folder holds one): ``sys.argv = ["pretrain_gpt.py", *its arguments, a model's
required flags]``, Megatron's own ``parse_args()``, ``build_tokenizer(args)``, the blend from
``get_blend_and_blend_per_split(args)``, a ``GPTDatasetConfig`` of those arguments (with the file's
``--per-dataset-sequences-path``), and ``BlendedMegatronDatasetBuilder(GPTDataset, [train, valid,
test], ...)`` with the sample counts the file states. Then the summary's HuggingFaceTokenizer hint, a
config key, is set as printed, the workflow rerun, and the new ``megatron_args.txt`` run the same way.
Each time not one file under ``data/`` is written or changed: Megatron found every cache.

The venv installs from PyPI: megatron-core 0.19.2 (its cp311 wheel says Python >= 3.12, so
``--ignore-requires-python``; its datasets code runs on 3.11 with ``typing.override`` from
typing_extensions), triton (megatron.core imports it at start; a stub module does not do, as torch then
takes triton for present and calls into it; a 290 MB wheel, 1 GB installed, removed afterwards) and
transformers (HuggingFaceTokenizer), layered over this venv (torch, numpy, tokenizers). One pip call with
``--no-deps`` and ``--no-compile`` (14 s instead of 35 s: no resolver, and no bytecode for the thousands of modules
the job never imports): transformers' requirements are this venv's but safetensors, pinned here, and the fixture
checks each of them as pip's resolver would have. So it runs only
with TOKENMILL_TEST_MEGATRON=1 (which .ci/run sets); without it the test is skipped and names the variable.
Run it alone with:  TOKENMILL_TEST_MEGATRON=1 python -m pytest -ra tests/megatron/test_handoff_megatron.py
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
import yaml

from conftest import DEMO_JSONL, run_snakemake

pytestmark = pytest.mark.slow
OPT_IN = "TOKENMILL_TEST_MEGATRON"  # lets the test install megatron-core, triton and transformers from PyPI
# --no-deps: torch and numpy are this venv's, and so are transformers' requirements but safetensors
PEERS = ["megatron-core==0.19.2", "triton==3.9.0", "transformers==5.24.0", "safetensors==0.8.0"]
# Each requirement of transformers (its extras aside) that the venv does not meet, as pip's resolver would see it
UNMET = r"""
import importlib.metadata as metadata
from packaging.requirements import Requirement

def unmet(requirement):
    if requirement.marker is not None and not requirement.marker.evaluate({"extra": ""}):
        return False
    try:
        return not requirement.specifier.contains(metadata.version(requirement.name), prereleases=True)
    except metadata.PackageNotFoundError:
        return True

print(*[str(r) for r in map(Requirement, metadata.requires("transformers")) if unmet(r)], sep="\n")
"""

# What a Megatron-LM training job does with its arguments, up to its datasets (pretrain_gpt.py's dataset
# provider, with the argument names of megatron-core 0.19.2's parser); one folder's megatron_args.txt per
# command-line argument. Prints one line per folder (among Megatron's log): its path, its tokenizer type
# and the datasets built.
JOB = r"""
import json, shlex, sys
from pathlib import Path
from megatron.training.arguments import parse_args
from megatron.training.utils.common_utils import get_blend_and_blend_per_split
from megatron.core.tokenizers.utils.build_tokenizer import build_tokenizer
from megatron.core.datasets.blended_megatron_dataset_builder import BlendedMegatronDatasetBuilder
from megatron.core.datasets.gpt_dataset import GPTDataset, GPTDatasetConfig

MODEL = ["--num-layers", "1", "--hidden-size", "8", "--num-attention-heads", "1", "--micro-batch-size", "1"]
for path in sys.argv[1:]:
    text = Path(path).read_text()
    flags = [flag for line in text.splitlines() if not line.startswith("#") for flag in shlex.split(line)]
    stated = {split: int(line.split()[2]) for line in text.splitlines() for split in ("valid", "test")
              if line.startswith(f"# {split}: ")}
    sys.argv = ["pretrain_gpt.py", *flags, *MODEL, "--max-position-embeddings",
                flags[flags.index("--seq-length") + 1]]
    args = parse_args()
    blend, blend_per_split = get_blend_and_blend_per_split(args)
    sequences = (json.loads(Path(args.per_dataset_sequences_path).read_text())
                 if args.per_dataset_sequences_path else None)
    config = GPTDatasetConfig(
        random_seed=args.seed, sequence_length=args.seq_length, blend=blend, blend_per_split=blend_per_split,
        split=args.split, path_to_cache=args.data_cache_path, tokenizer=build_tokenizer(args),
        reset_position_ids=args.reset_position_ids, reset_attention_mask=args.reset_attention_mask,
        eod_mask_loss=args.eod_mask_loss, create_attention_mask=args.create_attention_mask_in_dataloader,
        sequences_per_dataset=sequences)
    sizes = [args.train_samples, stated.get("valid", 0), stated.get("test", 0)]
    built = BlendedMegatronDatasetBuilder(GPTDataset, sizes, lambda: True, config).build()
    print("handoff:", path, args.tokenizer_type, *(type(dataset).__name__ for dataset in built))
"""


@pytest.fixture(scope="module")
def megatron_python(tmp_path_factory) -> str:
    """An interpreter with this venv's packages and megatron-core's: a venv whose .pth adds this venv's
    site-packages (and Python 3.12's typing.override), the peers installed by pip. Removed afterwards (1 GB)."""
    if os.environ.get(OPT_IN) != "1":
        pytest.skip(f"installs megatron-core 0.19.2, triton and transformers from PyPI into a throwaway venv: "
                    f"set {OPT_IN}=1 to allow it")
    venv = tmp_path_factory.mktemp("megatron-venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    site_packages = next((venv / "lib").glob("python*/site-packages"))
    (site_packages / "tokenmill-test-venv.pth").write_text(
        f"import site; site.addsitedir({sysconfig.get_path('purelib')!r})\n"
        "import typing, typing_extensions; typing.override = getattr(typing, 'override', typing_extensions.override)\n")
    python = str(venv / "bin" / "python")
    installed = subprocess.run([sys.executable, "-m", "pip", "--python", python, "install", "-q", "--no-deps",
                                "--no-compile", "--ignore-requires-python", *PEERS], capture_output=True, text=True)
    assert installed.returncode == 0, installed.stderr
    unmet = subprocess.run([python, "-c", UNMET], capture_output=True, text=True, check=True).stdout.split()
    assert unmet == [], f"transformers needs {unmet}: add them to PEERS"
    yield python
    shutil.rmtree(venv, ignore_errors=True)


def _data_files(folder: Path) -> dict[str, tuple[int, int]]:
    """Every file under data/ with its size and modification time."""
    return {str(path.relative_to(folder)): (path.stat().st_size, path.stat().st_mtime_ns)
            for path in sorted((folder / "data").rglob("*")) if path.is_file()}


def _run_job(python: str, folder: Path) -> list[str]:
    """The job of :data:`JOB` on every cache folder's megatron_args.txt; asserts that it wrote nothing."""
    before = _data_files(folder)
    handoffs = sorted(str(path.relative_to(folder)) for path in (folder / "data/cache").glob("*/*/megatron_args.txt"))
    job = subprocess.run([python, "-c", JOB, *handoffs], cwd=folder, capture_output=True, text=True,
                         env={**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": ""})
    assert job.returncode == 0, job.stderr[-3000:]
    written = sorted(set(_data_files(folder).items()) - set(before.items()))
    assert written == [], f"megatron-core wrote {written[:6]}"
    return [line.split(maxsplit=1)[1] for line in job.stdout.splitlines() if line.startswith("handoff: ")]


def test_every_hint_of_the_summary_and_megatron_args_finds_the_caches_in_megatron(megatron_python, workflow_dir):
    lines = DEMO_JSONL.read_bytes().splitlines(keepends=True)
    (workflow_dir / "data/raw/a.jsonl").write_bytes(b"".join(lines[:400]))
    (workflow_dir / "data/raw/b.jsonl").write_bytes(b"".join(lines[400:800]))
    config = {"tokenizers": {"gpt2": {"path": "data/tokenizers/gpt2.tokenizer.json", "eod": "<|endoftext|>"}},
              "datasets": {name: {"inputs": [f"data/raw/{name}.jsonl"], "tokenizer": "gpt2"} for name in "ab"},
              "blends": {"mix": {"weights": {"a": 0.7, "b": 0.3}}},
              "sampling": {"seq_lengths": [128], "seeds": [7], "split": "90,5,5",
                           "num_samples": {"train": 400, "valid": 20, "test": 5}},
              "sft": {}}
    (workflow_dir / "my.yaml").write_text(yaml.safe_dump(config))
    summary = run_snakemake(workflow_dir, "--configfile", "my.yaml").stdout
    assert "Megatron-LM: the arguments in data/cache/a/seq128_seed7/megatron_args.txt" in summary, summary
    ran = _run_job(megatron_python, workflow_dir)
    assert [line.split() for line in ran] == [
        [f"data/cache/{name}/seq128_seed7/megatron_args.txt", "NullTokenizer", *[kind] * 3]
        for name, kind in (("a", "GPTDataset"), ("b", "GPTDataset"), ("blend_mix", "BlendedDataset"))]

    # The HuggingFaceTokenizer hint: a config key, set as printed; the caches are then named for that job
    hint = re.search(r"caches named for it: tokenizers\.gpt2\.megatron\.args: (\".*\")$", summary, re.MULTILINE)
    assert hint, summary
    config["tokenizers"]["gpt2"]["megatron"] = {"args": json.loads(hint.group(1))}
    (workflow_dir / "my.yaml").write_text(yaml.safe_dump(config))
    summary = run_snakemake(workflow_dir, "--configfile", "my.yaml").stdout
    assert "caches named for it" not in summary  # megatron_args.txt now holds those flags
    ran = _run_job(megatron_python, workflow_dir)
    assert [line.split()[1:] for line in ran] == [["HuggingFaceTokenizer", *["GPTDataset"] * 3]] * 2 + [
        ["HuggingFaceTokenizer", *["BlendedDataset"] * 3]]
