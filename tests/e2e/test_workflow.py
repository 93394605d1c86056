"""The Snakemake workflow, driven as a user drives it: a subprocess in a scratch copy."""

import os
import time
from pathlib import Path

import numpy as np
import yaml

from conftest import (PROFILE_NOTICE, REPO, demo_first_run, jobs_of, planned_jobs, run_snakemake, run_tokenmill,
                      start_snakemake)
from tokenmill.formats.bin_idx import MMapIndexedDataset
from tokenmill.formats.pbin import PbinFile, read_sidecar

from tokenmill.megatron.index_cache import load_npy
from tokenmill.tokenization.engine import gigatoken_installed


def test_demo_builds_then_reruns_nothing_then_rebuilds_after_touching_the_input(shared_demo_build, built_demo):
    # The demo's build (shared_demo_build, here a copy): `snakemake data/packed/demo.pbin` from nothing, with a
    # progress line at every batch, in the log and on the console (the job's own stderr, fd 3 of its command), then
    # `snakemake`, the rest of the matrix: Megatron files and index caches.
    workflow_dir = built_demo
    progress = [line for line in (workflow_dir / "logs/pack/demo.log").read_text().splitlines()
                if line.startswith("pack data/raw/demo.jsonl: ")]
    assert progress and progress[-1].startswith("pack data/raw/demo.jsonl: 3.6/3.6 MB (100 %), 2,990 documents")
    assert [line for line in demo_first_run(shared_demo_build).splitlines() if line.startswith("pack data/raw/")] \
        == progress
    pbin = workflow_dir / "data/packed/demo.pbin"
    first_build = pbin.read_bytes()
    assert PbinFile(pbin).num_documents == 2990
    assert (workflow_dir / "data/index/demo.idx").exists()
    assert (workflow_dir / "logs/pack/demo.log").exists() and (workflow_dir / "benchmarks/pack/demo.tsv").exists()

    rerun = run_snakemake(workflow_dir, "data/packed/demo.pbin")
    assert "Nothing to be done" in rerun.stdout + rerun.stderr
    rerun = run_snakemake(workflow_dir)
    assert "Nothing to be done" in rerun.stdout + rerun.stderr

    time.sleep(1.1)  # mtime resolution
    os.utime(workflow_dir / "data/tokenizers/gpt2.tokenizer.json")
    # everything tokenized depends on the tokenizer, the raw index does not
    # (pack writes the .pbin and Megatron's .bin/.idx in one pass); so does its folder for HuggingFaceTokenizer
    assert planned_jobs(workflow_dir) == {"pack", "sample_index", "verify", "report_dataset", "sft", "verify_sft",
                                          "report_sft", "hf_tokenizer_folder", "prune", "all"}
    os.utime(workflow_dir / "data/raw/demo.jsonl")
    assert jobs_of(run_snakemake(workflow_dir)) == {"raw_index", "pack", "sample_index", "verify", "report_dataset",
                                                    "sft", "verify_sft", "report_sft", "hf_tokenizer_folder", "prune",
                                                    "all"}
    assert pbin.read_bytes() == first_build
    assert read_sidecar(workflow_dir / "data/sft/chat.pbin")["documents"] == 65
    assert (workflow_dir / "data/verified/sft/chat.ok").exists()
    megatron = MMapIndexedDataset(workflow_dir / "data/megatron/demo_text_document")
    assert megatron.num_documents == 2990 and megatron.dtype == np.uint16


def test_the_report_holds_each_datasets_statistics_histogram_and_caches(built_demo):
    page = (built_demo / "data/report/demo.html").read_text()
    assert "<td>documents</td><td class=n>2,990</td>" in page and "<td>tokens</td><td class=n>1,026,497</td>" in page
    assert "<td>tokens per byte of text</td><td class=n>0.2851</td>" in page  # 1,026,497 tokens / 3,599,934 bytes
    engine = "gigatoken" if gigatoken_installed() else "fastokens"  # what auto takes (the gigatoken extra)
    assert f"engine auto: {engine}; 66 documents re-encoded with Hugging Face, 0 mismatches" in page
    assert "<td>verify</td><td>5 file(s) checked, no problem found</td>" in page
    # every format built, with its size: 1,026,497 uint16 tokens in the .bin
    assert "<td>data/megatron/demo_text_document.bin</td><td class=n>2,052,994</td>" in page
    # the histogram: one bar per log2 bin up to the longest document (38,093 tokens: bin 15)
    assert page.count("<rect ") == 16 and "64-127 tokens: 1,305 documents" in page
    for seq_length in (512, 2048):  # per cache and split: samples (whole epochs: ≥ num_samples), the arguments
        cache = built_demo / f"data/cache/demo/seq{seq_length}_seed1234"
        shuffle = load_npy(next(cache.glob("*-GPTDataset-train-shuffle_index.npy")))
        assert len(shuffle) >= 20000
        assert (f"<td>train</td><td class=n>{len(shuffle):,}</td>" in page and f"<td>{seq_length}</td>"
                f"<td>1234</td><td>data/megatron/demo_text_document</td>" in page)
    result = run_snakemake(built_demo, "--report", "report.html")
    assert "Report created" in result.stdout + result.stderr
    report = (built_demo / "report.html").read_text()
    assert "Datasets" in report and "demo.html" in report


def test_multi_file_dataset_packs_small_files_in_one_job_or_each_file_and_merges_in_order(workflow_dir):
    lines = (workflow_dir / "data/raw/demo.jsonl").read_bytes().splitlines(keepends=True)[:300]
    for k in range(3):
        (workflow_dir / f"data/raw/shard_{k}.jsonl").write_bytes(b"".join(lines[100 * k:100 * (k + 1)]))
    (workflow_dir / "data/raw/head.jsonl").write_bytes(b"".join(lines))
    run_tokenmill("pack", workflow_dir / "data/raw/head.jsonl", "--tokenizer",
                  workflow_dir / "data/tokenizers/gpt2.tokenizer.json", "--eod", "<|endoftext|>",
                  "-o", workflow_dir / "head.pbin")
    config = yaml.safe_load((workflow_dir / "config/config.yaml").read_text())
    config["datasets"] = {"sharded": {"inputs": ["data/raw/shard_*.jsonl"], "tokenizer": "gpt2"}}
    config["sampling"] = {"seq_lengths": []}  # 300 documents leave 969,30,1's test split empty
    for group_bytes in ("64MB", None):  # the default: the three small files in one job; null: a job each
        config["datasets"]["sharded"]["group_bytes"] = group_bytes
        (workflow_dir / "config/config.yaml").write_text(yaml.safe_dump(config))
        run_snakemake(workflow_dir)
        parts = sorted(path.name for path in (workflow_dir / "data/parts").glob("sharded.part*.pbin"))
        indexes = sorted(path.name for path in (workflow_dir / "data/index").glob("sharded.part*.idx"))
        if group_bytes:
            assert parts == indexes == []  # one pack job, which scans its small files itself
            assert [path.name for path in (workflow_dir / "logs/pack").glob("sharded*.log")] == ["sharded.log"]
        else:
            assert parts == [f"sharded.part{k}.pbin" for k in range(3)]
            assert indexes == [f"sharded.part{k}.idx" for k in range(3)]
        assert (workflow_dir / "data/packed/sharded.pbin").read_bytes() == (workflow_dir / "head.pbin").read_bytes()
        meta = read_sidecar(workflow_dir / "data/packed/sharded.pbin")
        assert [Path(source["path"]).name for source in meta["sources"]] == [f"shard_{k}.jsonl" for k in range(3)]


def test_config_typo_fails_naming_the_key(workflow_dir):
    config_path = workflow_dir / "config/config.yaml"
    typo = config_path.read_text().replace("tokenizer: gpt2", "tokenizer: gpt2\n    on_bad_lines: skip", 1)
    config_path.write_text(typo)
    result = run_snakemake(workflow_dir, "-n", check=False)
    assert result.returncode != 0
    assert result.stderr.strip() == (f"{PROFILE_NOTICE}\ntokenmill: error: config/config.yaml: datasets.demo: unknown "
                                     f"key 'on_bad_lines' (did you mean 'on_bad_line'?)")


def test_defaults_are_filled_and_bad_values_rejected(workflow_dir):
    config_path = workflow_dir / "config/config.yaml"
    bad_value = config_path.read_text().replace("tokenizer: gpt2", "tokenizer: gpt2\n    on_bad_line: maybe")
    config_path.write_text(bad_value)
    result = run_snakemake(workflow_dir, "-n", check=False)
    assert result.returncode != 0 and "maybe" in result.stdout + result.stderr


def test_lint_is_clean(workflow_dir):
    result = run_snakemake(workflow_dir, "--lint")
    assert "Congratulations, your workflow is in a good condition!" in result.stdout + result.stderr


def test_repository_config_is_the_demo_matrix():
    config = yaml.safe_load((REPO / "config/config.yaml").read_text())
    assert list(config["datasets"]) == ["demo"] and config["datasets"]["demo"]["inputs"] == ["data/raw/demo.jsonl"]


def test_sampling_matrix_builds_one_cache_per_seed_and_length_and_a_new_seed_builds_only_itself(workflow_dir):
    lines = (workflow_dir / "data/raw/demo.jsonl").read_bytes().splitlines(keepends=True)
    (workflow_dir / "data/raw/demo.jsonl").write_bytes(b"".join(lines[:1200]))
    config_path = workflow_dir / "config/config.yaml"
    config = yaml.safe_load(config_path.read_text())
    config["sampling"] = {"seq_lengths": [64], "seeds": [1, 2], "num_samples": {"train": 500, "valid": 20}}
    config_path.write_text(yaml.safe_dump(config))
    run_snakemake(workflow_dir)
    for seed in (1, 2):
        cache = workflow_dir / f"data/cache/demo/seq64_seed{seed}"
        assert len(list(cache.glob("*-GPTDataset-*-description.txt"))) == 3  # train, valid, test

    config["sampling"]["seeds"] = [1, 3]
    config_path.write_text(yaml.safe_dump(config))
    result = run_snakemake(workflow_dir, "-n")
    assert "-> data/cache/demo/seq64_seed3 (log:" in result.stdout  # the jobs' one-line messages
    assert "-> data/cache/demo/seq64_seed1 (log:" not in result.stdout
    assert jobs_of(result) == {"sample_index", "verify", "report_dataset", "prune", "all"}


def test_named_blend_builds_megatron_blend_caches(workflow_dir):
    lines = (workflow_dir / "data/raw/demo.jsonl").read_bytes().splitlines(keepends=True)
    (workflow_dir / "data/raw/a.jsonl").write_bytes(b"".join(lines[:1200]))
    (workflow_dir / "data/raw/b.jsonl").write_bytes(b"".join(lines[1200:2400]))
    config_path = workflow_dir / "config/config.yaml"
    config = yaml.safe_load(config_path.read_text())
    config["datasets"] = {name: {"inputs": [f"data/raw/{name}.jsonl"], "tokenizer": "gpt2"} for name in "ab"}
    config["blends"] = {"mix": {"weights": {"a": 0.7, "b": 0.3}}}
    config["sampling"] = {"seq_lengths": [128], "seeds": [7], "num_samples": {"train": 2000, "valid": 50, "test": 5}}
    config_path.write_text(yaml.safe_dump(config))
    run_snakemake(workflow_dir)
    cache = workflow_dir / "data/cache/blend_mix/seq128_seed7"
    assert len(list(cache.glob("*-BlendedDataset-*-description.txt"))) == 3
    assert len(list(cache.glob("*-GPTDataset-*-description.txt"))) == 6  # both datasets, three splits
    train = next(cache.glob("*-BlendedDataset-train-dataset_index.npy"))
    dataset_index = np.load(train, allow_pickle=False)
    # 2000 samples at 0.7/0.3: ceil(1400) + ceil(600), drawn greedily in that proportion
    assert len(dataset_index) == 2000 and np.bincount(dataset_index).tolist() == [1400, 600]
    description = next(cache.glob("*-BlendedDataset-train-description.txt")).read_text()
    assert '"dataset_path": "data/megatron/a_text_document"' in description
    assert (workflow_dir / "data/verified/blend/mix.ok").exists()
    # the hand-off: what a Megatron job passes to find this cache
    arguments = [line for line in (cache / "megatron_args.txt").read_text().splitlines() if not line.startswith("#")]
    assert arguments == ["--data-path 0.7 data/megatron/a_text_document 0.3 data/megatron/b_text_document",
                         "--data-cache-path data/cache/blend_mix/seq128_seed7", "--split 969,30,1",
                         "--seq-length 128", "--seed 7", "--train-samples 2000", "--tokenizer-type NullTokenizer",
                         "--vocab-size 50257",
                         "--per-dataset-sequences-path data/cache/blend_mix/seq128_seed7/sequences_per_dataset.json"]
    # a blend sample traced through the blend's indices to a dataset, its sample, and source lines
    shown = run_tokenmill("inspect", "data/cache/blend_mix/seq128_seed7", "--sample", "1", cwd=workflow_dir).stdout
    header, pieces = shown.splitlines()[0], [line for line in shown.splitlines() if line.startswith("  sequence ")]
    sample_index = np.load(next(cache.glob("*-BlendedDataset-train-dataset_sample_index.npy")))
    part, part_sample = int(dataset_index[1]), int(sample_index[1])
    name = "ab"[part]
    assert header == f"sample 1 of the train blend = dataset {part} (data/megatron/{name}_text_document), " \
                     f"its sample {part_sample}"
    assert pieces and all(f"from data/raw/{name}.jsonl line " in piece for piece in pieces)


def _outputs(workflow_dir) -> dict[str, bytes]:
    data = workflow_dir / "data"
    return {str(path.relative_to(data)): path.read_bytes() for path in sorted(data.rglob("*"))
            if path.is_file() and path.parts[len(data.parts)] not in ("raw", "tokenizers")}


def test_killed_runs_resume_to_byte_identical_outputs(workflow_dir, shared_demo_build):
    expected = _outputs(shared_demo_build)  # the demo built in one go
    assert any(name.startswith("cache/") for name in expected) and "verified/demo.ok" in expected

    # One build, killed at every stage: each resume (`--unlock`, then a plain run, as a user would: the profile
    # found beside the Snakefile sets rerun-incomplete) is itself killed as soon as the file marking the next
    # stage appears. Kill points are tied to the build's own progress, not to clock time (a loaded machine runs
    # slower).
    stages = [".snakemake/locks/*", "data/index/demo.idx", "data/packed/.demo.pbin.tmp*", "data/packed/demo.pbin",
              "data/megatron/demo_text_document.idx", "data/cache/demo/*/*-description.txt", "data/sft/chat.pbin"]
    interrupted = 0
    for marker in stages:
        run = start_snakemake(workflow_dir)
        deadline = time.monotonic() + 300
        while not list(workflow_dir.glob(marker)) and run.poll(timeout=0.005) is None and time.monotonic() < deadline:
            pass
        run.kill()
        interrupted += _outputs(workflow_dir) != expected  # the kill cut the build short
        run_snakemake(workflow_dir, "--unlock")
    run_snakemake(workflow_dir)
    assert _outputs(workflow_dir) == expected
    leftovers = [path for path in (workflow_dir / "data").rglob(".*.tmp*")]
    assert leftovers == [], "temporary files left after resuming"
    assert interrupted >= 6
