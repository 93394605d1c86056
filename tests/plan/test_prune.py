"""The tree equals the plan: outputs an earlier plan made and the current one does not are moved out of the
folders trainers read (to data/stale/, recorded), never a planned file, never a user's input."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from conftest import run_snakemake
from tokenmill.errors import TokenmillError
from tokenmill.plan import Plan
from tokenmill.plan.prune import MOVED_RECORD, move_stale, stale_paths


def _touch(root: Path, *paths: str) -> None:
    for path in paths:
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(path)


def test_stale_paths_are_what_the_output_folders_hold_beyond_the_plan(tmp_path):
    planned = ["data/packed/b.pbin", "data/packed/b.pbin.meta.json", "data/megatron/b_text_document.bin",
               "data/cache/b/seq128_seed1", "data/parts/b.shard0.pbin"]
    _touch(tmp_path, *planned[:3], "data/cache/b/seq128_seed1/x-description.txt", "data/parts/b.shard0.pbin",
           "data/packed/b.shard3.pbin", "data/megatron/b.shard3_text_document.bin",
           "data/cache/b/seq2048_seed1/megatron_args.txt", "data/datatrove/b/b.ds", "data/raw/mine.jsonl",
           "logs/pack/b.log", "data/megatron/notes.md")  # the last: not named as an output, the user's
    assert stale_paths(planned, tmp_path) == ["data/packed/b.shard3.pbin", "data/megatron/b.shard3_text_document.bin",
                                              "data/datatrove/b", "data/cache/b/seq2048_seed1"]


def test_move_stale_moves_them_under_data_stale_and_records_them(tmp_path):
    planned = ["data/packed/b.pbin"]
    _touch(tmp_path, "data/packed/b.pbin", "data/packed/old.pbin", "data/cache/old/seq1_seed1/a.npy")
    assert move_stale(planned, tmp_path) == ["data/packed/old.pbin", "data/cache/old"]
    assert (tmp_path / "data/stale/packed/old.pbin").read_text() == "data/packed/old.pbin"
    assert (tmp_path / "data/stale/cache/old/seq1_seed1/a.npy").is_file()
    assert (tmp_path / "data/packed/b.pbin").is_file() and not (tmp_path / "data/packed/old.pbin").exists()
    assert (tmp_path / MOVED_RECORD).read_text().splitlines() == [
        "data/packed/old.pbin -> data/stale/packed/old.pbin", "data/cache/old -> data/stale/cache/old"]
    _touch(tmp_path, "data/packed/old.pbin", "data/cache/old/seq2_seed1/a.npy")  # made and left again later
    assert move_stale(planned, tmp_path) == ["data/packed/old.pbin", "data/cache/old"]
    assert (tmp_path / "data/stale/packed/old.pbin.1").is_file()  # beside the first, which is kept
    assert (tmp_path / "data/stale/cache/old/seq1_seed1/a.npy").is_file()
    assert (tmp_path / "data/stale/cache/old.1/seq2_seed1/a.npy").is_file()
    assert not (tmp_path / "data/cache").exists()  # emptied by the move
    assert move_stale(planned, tmp_path) == []


@pytest.mark.parametrize("input_path", ["data/megatron/web_text_document.bin", "data/packed/x.jsonl",
                                        "./data/cache/a.jsonl", "data/stale/old.jsonl"])
def test_an_input_in_an_output_folder_is_refused_in_one_line(tmp_path, monkeypatch, input_path):
    monkeypatch.chdir(tmp_path)
    _touch(tmp_path, input_path)
    shutil.copy(Path(__file__).parents[2] / "data/tokenizers/gpt2.tokenizer.json", tmp_path / "gpt2.json")
    from tokenmill.config import validate_config

    config = validate_config({"tokenizers": {"gpt2": {"path": "gpt2.json", "eod": "<|endoftext|>"}},
                              "datasets": {"web": {"inputs": [input_path], "tokenizer": "gpt2"}}}, "my.yaml")
    with pytest.raises(TokenmillError, match=r"datasets\.web\.inputs: .* lies in data/[a-z]+/, where the workflow "
                                             r"writes its outputs") as raised:
        Plan(config)
    assert "\n" not in str(raised.value)
    assert (tmp_path / input_path).read_text() == input_path


@pytest.mark.slow
def test_dropping_a_length_and_a_format_moves_their_files_and_a_reshard_leaves_one_prefix(workflow_dir):
    lines = (workflow_dir / "data/raw/demo.jsonl").read_bytes().splitlines(keepends=True)
    (workflow_dir / "data/raw/demo.jsonl").write_bytes(b"".join(lines[:1200]))
    config_path = workflow_dir / "config/config.yaml"
    config = yaml.safe_load(config_path.read_text())
    config["sft"] = {}
    config["datasets"]["demo"].update(shard_bytes="300kB", formats=["pbin", "megatron", "datatrove"])
    config["sampling"] = {"seq_lengths": [64, 128], "seeds": [1], "num_samples": {"train": 200, "valid": 10}}
    config_path.write_text(yaml.safe_dump(config))
    run_snakemake(workflow_dir)
    assert (workflow_dir / "data/cache/demo/seq128_seed1").is_dir()

    config["sampling"]["seq_lengths"] = [64]  # builds nothing new: only the move runs
    config_path.write_text(yaml.safe_dump(config))
    result = run_snakemake(workflow_dir)
    assert "moved 1 output(s) of an earlier plan to data/stale/" in result.stdout
    assert sorted(path.name for path in (workflow_dir / "data/cache/demo").iterdir()) == ["seq64_seed1"]
    assert (workflow_dir / "data/stale/cache/demo/seq128_seed1/megatron_args.txt").is_file()

    config["datasets"]["demo"].update(shard_bytes="1MB", formats=["pbin", "megatron"])
    config_path.write_text(yaml.safe_dump(config))
    run_snakemake(workflow_dir)
    assert sorted(path.name for path in (workflow_dir / "data/megatron").iterdir()) == [
        "demo_text_document.bin", "demo_text_document.idx", "tokenizers"]  # gpt2's folder for HuggingFaceTokenizer
    assert not (workflow_dir / "data/datatrove/demo").exists()
    parts = sorted(path.name for path in (workflow_dir / "data/parts").glob("*.pbin"))
    assert parts == ["demo.shard0.pbin", "demo.shard1.pbin"]
    assert (workflow_dir / "data/stale/parts/demo.shard3.pbin").is_file()
