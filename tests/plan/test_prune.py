"""The tree equals the plan: outputs an earlier plan made and the current one does not are moved out of the
folders trainers read (to data/stale/, recorded), never a planned file, never a user's input."""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
import yaml

from conftest import GPT2, GPT2_EOD, jobs_of, run_snakemake, run_tokenmill
from tokenmill.config import validate_config
from tokenmill.errors import TokenmillError
from tokenmill.plan import Plan
from tokenmill.plan.prune import (MOVED_RECORD, drop_old_runs, escaped, last_run_stamp, move_stale, read_moves,
                                  stale_paths)


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
    assert [(move.run, move.source, move.target) for move in read_moves(tmp_path)] == [
        (1, "data/packed/old.pbin", "data/stale/packed/old.pbin"), (1, "data/cache/old", "data/stale/cache/old")]
    assert json.loads((tmp_path / MOVED_RECORD).read_text().splitlines()[0])["from"] == "data/packed/old.pbin"
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

    config["keep_stale_runs"] = 1  # a plain value of prune's: it alone reruns, and keeps only the last run's
    config_path.write_text(yaml.safe_dump(config))
    assert jobs_of(run_snakemake(workflow_dir)) == {"prune", "all"}
    assert not (workflow_dir / "data/stale/cache").exists()  # the second run's move
    assert (workflow_dir / "data/stale/parts/demo.shard3.pbin").is_file()
    assert {move.run for move in read_moves(workflow_dir)} == {2}


# ---- Any tree: links, other file systems, a user's files, odd names, the bound, linear cost ----------


def _link(root: Path, link: str, target: Path) -> Path:
    target.mkdir(parents=True, exist_ok=True)
    (root / link).parent.mkdir(parents=True, exist_ok=True)
    (root / link).symlink_to(target, target_is_directory=True)
    return target


def test_a_linked_output_folder_is_followed_and_the_link_never_removed(tmp_path):
    elsewhere = _link(tmp_path, "data/megatron", tmp_path / "disk2/megatron")
    cache_b = _link(tmp_path, "data/cache/b", tmp_path / "disk2/cache-b")  # on the plan's path
    (tmp_path / "disk2/real.pbin").write_text("not ours to move")
    _touch(tmp_path, "data/megatron/old_text_document.bin", "data/megatron/old_text_document.idx",
           "data/cache/b/seq1_seed1/x-description.txt", "data/cache/b/seq2_seed1/x-description.txt")
    (tmp_path / "data/packed").mkdir(parents=True)
    (tmp_path / "data/packed/ext.pbin").symlink_to(tmp_path / "disk2/real.pbin")  # a link named like an output
    planned = ["data/cache/b/seq1_seed1"]
    assert move_stale(planned, tmp_path) == ["data/packed/ext.pbin", "data/megatron/old_text_document.bin",
                                             "data/megatron/old_text_document.idx", "data/cache/b/seq2_seed1"]
    assert (tmp_path / "data/megatron").is_symlink() and elsewhere.is_dir() and not any(elsewhere.iterdir())
    assert (tmp_path / "data/cache/b").is_symlink()
    assert sorted(path.name for path in cache_b.iterdir()) == ["seq1_seed1"]
    assert (tmp_path / "data/stale/megatron/old_text_document.bin").read_text() == "data/megatron/old_text_document.bin"
    assert (tmp_path / "data/stale/cache/b/seq2_seed1/x-description.txt").is_file()
    assert (tmp_path / "data/stale/packed/ext.pbin").is_symlink()  # moved as a link; what it names stays
    assert (tmp_path / "disk2/real.pbin").read_text() == "not ours to move"
    assert move_stale(planned, tmp_path) == []


def test_two_output_folders_linked_to_one_place_keep_the_plan_of_both(tmp_path):
    shared = _link(tmp_path, "data/packed", tmp_path / "shared")
    _link(tmp_path, "data/megatron", shared)
    _touch(tmp_path, "data/packed/b.pbin", "data/megatron/b_text_document.bin", "data/packed/old.pbin")
    assert move_stale(["data/packed/b.pbin", "data/megatron/b_text_document.bin"], tmp_path) == ["data/packed/old.pbin"]
    assert sorted(path.name for path in shared.iterdir()) == ["b.pbin", "b_text_document.bin"]


def _other_file_system(monkeypatch, other: Path) -> None:
    """``os.replace`` between a path below ``other`` and one outside raises EXDEV, as rename(2) does
    between two file systems (a path's folder taken as it resolves, so through links)."""
    real_replace = os.replace
    other = Path(os.path.realpath(other))

    def replace(source, target, **kwargs):
        sides = {Path(os.path.realpath(os.path.dirname(path))).is_relative_to(other) for path in (source, target)}
        if len(sides) == 2:
            raise OSError(errno.EXDEV, os.strerror(errno.EXDEV), str(source), None, str(target))
        return real_replace(source, target, **kwargs)

    monkeypatch.setattr(os, "replace", replace)


def _check_a_move_across_file_systems(root: Path, disk: Path) -> None:
    """A linked output folder on ``disk``: its stale files, folder and link are copied to data/stale/ file
    by file, then removed; the link to the folder stays."""
    _link(root, "data/megatron", disk / "megatron")
    _touch(root, "data/megatron/b_text_document.bin", "data/megatron/old_text_document.bin",
           "data/megatron/tokenizers/old/tokenizer.json", "data/megatron/tokenizers/old/tokenizer_config.json")
    os.utime(root / "data/megatron/old_text_document.bin", (1_000_000_000, 1_000_000_000))
    (root / "data/megatron/old_text_document.bin").chmod(0o444)
    (root / "data/megatron/tokenizers/old/gpt2.idx").symlink_to("tokenizer.json")  # a link, copied as one
    moved = move_stale(["data/megatron/b_text_document.bin"], root)
    assert moved == ["data/megatron/old_text_document.bin", "data/megatron/tokenizers"]
    stale = root / "data/stale/megatron"
    assert (stale / "old_text_document.bin").read_text() == "data/megatron/old_text_document.bin"
    assert (stale / "old_text_document.bin").stat().st_mtime == 1_000_000_000
    assert (stale / "old_text_document.bin").stat().st_mode & 0o777 == 0o444
    assert (stale / "tokenizers/old/tokenizer.json").read_text() == "data/megatron/tokenizers/old/tokenizer.json"
    assert os.readlink(stale / "tokenizers/old/gpt2.idx") == "tokenizer.json"
    assert sorted(path.name for path in (disk / "megatron").iterdir()) == ["b_text_document.bin"]
    assert (root / "data/megatron").is_symlink()
    assert not [path for path in (root / "data/stale").rglob("*") if ".prune-copy" in path.name]
    assert [move.target for move in read_moves(root)] == ["data/stale/megatron/old_text_document.bin",
                                                          "data/stale/megatron/tokenizers"]
    assert move_stale(["data/megatron/b_text_document.bin"], root) == []


def test_a_move_across_file_systems_copies_then_removes(tmp_path, monkeypatch):
    _other_file_system(monkeypatch, tmp_path / "disk2")
    _check_a_move_across_file_systems(tmp_path / "work", tmp_path / "disk2")


def test_a_move_to_a_real_other_file_system(tmp_path):
    if not os.path.isdir("/dev/shm") or os.stat("/dev/shm").st_dev == os.stat(tmp_path).st_dev:
        pytest.skip("no second file system (/dev/shm) here")
    try:
        disk = Path(tempfile.mkdtemp(dir="/dev/shm", prefix="tokenmill-prune-"))
    except OSError:
        pytest.skip("/dev/shm is not writable")
    try:
        _check_a_move_across_file_systems(tmp_path, disk)
    finally:
        shutil.rmtree(disk)


def test_a_failed_copy_across_file_systems_leaves_the_source_and_says_so_in_one_line(tmp_path, monkeypatch):
    _other_file_system(monkeypatch, tmp_path / "disk2")
    _link(tmp_path, "data/olmo", tmp_path / "disk2/olmo")
    _touch(tmp_path, "data/olmo/old/part-00000.npy", "data/olmo/old/part-00001.npy", "data/olmo/old/metadata.json")
    real_copyfile, copies = shutil.copyfile, []

    def copyfile(source, target, **kwargs):
        copies.append(source)
        if len(copies) == 2:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(target))
        return real_copyfile(source, target, **kwargs)

    monkeypatch.setattr(shutil, "copyfile", copyfile)
    with pytest.raises(TokenmillError, match=r"^data/olmo/old: cannot copy it to data/stale/olmo/old on the other "
                                             r"file system \(No space left on device\)") as raised:
        move_stale([], tmp_path)
    assert "\n" not in str(raised.value)
    left = sorted(path.name for path in (tmp_path / "disk2/olmo/old").iterdir())
    copied = sorted(path.name for path in (tmp_path / "data/stale/olmo/old").iterdir())
    assert len(left) == 2 and len(copied) == 1 and sorted(left + copied) == [
        "metadata.json", "part-00000.npy", "part-00001.npy"]  # each file in one place, whole; no temporary
    assert [move.target for move in read_moves(tmp_path)] == ["data/stale/olmo/old"]  # what arrived is recorded
    monkeypatch.setattr(shutil, "copyfile", real_copyfile)
    assert move_stale([], tmp_path) == ["data/olmo/old"]  # the rest, beside it
    assert sorted(path.name for path in (tmp_path / "data/stale/olmo/old.1").iterdir()) == left
    assert (tmp_path / "data/olmo").is_symlink()


def test_only_what_is_named_like_the_workflows_outputs_moves(tmp_path):
    finished = subprocess.Popen(["true"])
    finished.wait()
    dead, alive = finished.pid, os.getpid()
    users = ["data/megatron/readme.txt", "data/megatron/plan.tmp.txt", "data/megatron/notes.md",
             "data/megatron/.readme.txt.tmp1", f"data/packed/.b.pbin.tmp{alive}",  # a writer that still runs
             "data/megatron/mine/notes.txt", "data/cache/b/seq9_seed1/readme.txt", "data/stale/mine.txt"]
    ours = ["data/megatron/old_text_document.bin", f"data/packed/.old.pbin.tmp{dead}",
            "data/megatron/mine/old_text_document.idx", "data/cache/b/seq9_seed1/x-description.txt",
            "data/cache/gone/seq1_seed1/x-description.txt", "data/cache/gone/seq1_seed1/megatron_args.txt",
            "data/cache/gone/seq1_seed1/.snakemake_timestamp", "data/olmo/gone/part-00000.csv.gz",
            "data/olmo/gone/metadata.json"]
    _touch(tmp_path, *users, *ours)
    (tmp_path / "data/megatron/empty").mkdir()
    assert move_stale([], tmp_path) == [
        "data/packed/.old.pbin.tmp" + str(dead), "data/megatron/empty", "data/megatron/mine/old_text_document.idx",
        "data/megatron/old_text_document.bin", "data/olmo/gone", "data/cache/b/seq9_seed1/x-description.txt",
        "data/cache/gone"]
    for path in users:  # a user's files stay, and so the folders that hold them
        assert (tmp_path / path).read_text() == path
    for path in ours:
        assert not (tmp_path / path).exists() and (tmp_path / "data/stale" / Path(path).relative_to("data")).is_file()


NAMES = ["a\nb.pbin", "x -> y.pbin", "a -> b -> c.idx", "line\u2028sep.pbin", 'q"u\\o\tte.pbin',
         b"caf\xe9-latin1.pbin", "\u00e9t\u00e9.pbin"]


def test_a_name_with_any_character_is_one_record_line_read_back_exactly(tmp_path):
    folder = os.fsencode(tmp_path / "data/packed")
    os.makedirs(folder)
    raw = [name if isinstance(name, bytes) else os.fsencode(name) for name in NAMES]
    for name in raw:
        with open(os.path.join(folder, name), "wb") as handle:
            handle.write(name)
    moved = move_stale([], tmp_path)
    assert sorted(os.fsencode(path) for path in moved) == sorted(b"data/packed/" + name for name in raw)
    text = (tmp_path / MOVED_RECORD).read_bytes().decode("utf-8")  # valid UTF-8 whatever the names' bytes
    assert len(text.split("\n")) == len(NAMES) + 1 and len(text.splitlines()) == len(NAMES)
    assert "\u00e9t\u00e9.pbin" in text and "data/packed/x -> y.pbin\"" in text  # readable where it can be
    for move in read_moves(tmp_path):
        assert os.fsencode(move.target) == b"data/stale/" + os.fsencode(move.source)[len(b"data/"):]
        with open(os.path.join(os.fsencode(tmp_path), os.fsencode(move.target)), "rb") as handle:
            assert b"data/packed/" + handle.read() == os.fsencode(move.source)
    for path in moved:  # the stamp's spelling: one line each, and the path again through JSON
        assert "\n" not in escaped(path) and "\u2028" not in escaped(path)
        assert json.loads(f'"{escaped(path)}"') == path
    assert escaped("data/packed/b.pbin") == "data/packed/b.pbin"


def _run(root: Path, run: int, *paths: str) -> list[str]:
    _touch(root, *paths)
    moved = move_stale(["data/cache/old/seq2_seed1"] if run >= 2 else [], root)
    assert {move.run for move in read_moves(root)} >= {run}
    return moved


def test_data_stale_keeps_the_last_runs_and_deletes_only_what_older_runs_moved_there(tmp_path):
    outside = tmp_path.parent / f"{tmp_path.name}-outside.txt"
    outside.write_text("never deleted")
    _touch(tmp_path, "data/stale/mine.txt", "data/stale/packed/put-by-hand.pbin")
    (tmp_path / MOVED_RECORD).write_text(  # the earlier format, and a record edited to point elsewhere
        "data/packed/legacy.pbin -> data/stale/packed/legacy.pbin\n"
        + json.dumps({"run": 0, "time": "", "from": "x", "to": f"data/stale/packed/../../../{outside.name}"}) + "\n")
    _touch(tmp_path, "data/stale/packed/legacy.pbin")
    _link(tmp_path, "data/stale/olmo", tmp_path / "disk2/stale-olmo")  # a link inside data/stale/
    assert _run(tmp_path, 1, "data/packed/old.pbin", "data/cache/old/seq1_seed1/a.npy", "data/olmo/x/part-00000.npy") \
        == ["data/packed/old.pbin", "data/olmo/x", "data/cache/old"]
    # the plan now makes a folder inside old: what else it holds moves into the first run's folder
    assert _run(tmp_path, 2, "data/packed/old.pbin", "data/cache/old/seq2_seed1/a.npy",
                "data/cache/old/seq3_seed1/a.npy") == ["data/packed/old.pbin", "data/cache/old/seq3_seed1"]
    assert (tmp_path / "data/stale/cache/old/seq3_seed1/a.npy").is_file()
    assert drop_old_runs(3, tmp_path) == []  # runs 0 (the earlier format's lines), 1 and 2
    assert drop_old_runs(2, tmp_path) == ["data/stale/packed/legacy.pbin"]  # run 0 goes
    assert _run(tmp_path, 3, "data/packed/old.pbin") == ["data/packed/old.pbin"]
    assert drop_old_runs(None, tmp_path) == [] and drop_old_runs(3, tmp_path) == []
    assert drop_old_runs(2, tmp_path) == ["data/stale/packed/old.pbin", "data/stale/cache/old"]  # run 1
    assert sorted(str(path.relative_to(tmp_path)) for path in (tmp_path / "data/stale").rglob("*")
                  if not path.is_dir() and "disk2" not in str(path)) == [
        "data/stale/MOVED.txt", "data/stale/cache/old/seq3_seed1/a.npy", "data/stale/mine.txt",
        "data/stale/packed/old.pbin.1", "data/stale/packed/old.pbin.2",
        "data/stale/packed/put-by-hand.pbin"]
    # kept: runs 2 and 3, and run 1's move through the link (never deleted, so still recorded)
    assert [(move.run, move.target) for move in read_moves(tmp_path)] == [
        (1, "data/stale/olmo/x"), (2, "data/stale/packed/old.pbin.1"), (2, "data/stale/cache/old/seq3_seed1"),
        (3, "data/stale/packed/old.pbin.2")]
    assert outside.read_text() == "never deleted" and (tmp_path / "disk2/stale-olmo/x/part-00000.npy").is_file()
    with pytest.raises(TokenmillError, match="keep at least 1 run"):
        drop_old_runs(0, tmp_path)


def test_the_cli_bounds_data_stale_by_the_flag_or_the_config_and_stamps_one_line_per_move(tmp_path, monkeypatch):
    shutil.copy(GPT2, tmp_path / "gpt2.json")
    _touch(tmp_path, "data/raw/web.jsonl")
    monkeypatch.chdir(tmp_path)
    config = validate_config({"tokenizers": {"gpt2": {"path": "gpt2.json", "eod": GPT2_EOD}},
                              "datasets": {"web": {"inputs": ["data/raw/web.jsonl"], "tokenizer": "gpt2"}},
                              "keep_stale_runs": 2}, "my.yaml")
    for run in range(1, 5):
        _touch(tmp_path, "data/packed/old.pbin", "data/packed/a\nb.pbin")
        flags = ["--keep-stale-runs", "1"] if run == 4 else []
        stamp = last_run_stamp("config")
        result = run_tokenmill("prune", "--config-json", json.dumps(config), "--stamp", stamp, *flags, cwd=tmp_path)
        assert "moved 2 file(s) of an earlier plan to data/stale/" in result.stderr
        assert (tmp_path / stamp).read_text().split("\n") == ["data/packed/a\\nb.pbin", "data/packed/old.pbin", ""]
        assert {move.run for move in read_moves(tmp_path)} == {1, 2, 3, 4}.intersection(
            range(run - (1 if run == 4 else 2) + 1, run + 1))
    assert "deleted 4 path(s)" in result.stderr  # runs 2 and 3's
    # run 1's names, freed when the bound (2) dropped it after run 3, are the first free ones again
    assert sorted(path.name for path in (tmp_path / "data/stale/packed").iterdir()) == ["a\nb.pbin", "old.pbin"]
    result = run_tokenmill("prune", "--config-json", "{}", "--keep-stale-runs", "0", check=False, cwd=tmp_path)
    assert result.returncode == 2 and "at least 1, or all" in result.stderr


def test_prune_costs_a_constant_number_of_folder_listings_and_a_few_stats_per_entry(tmp_path, monkeypatch):
    """Linear in a folder's entries, counted, not timed: no listing per move (an emptied-folder check
    listing the folder after each move, or a probe of .1, .2... per name, made 20,000 files take 104 s)."""
    counts = {"listings": 0, "stats": 0}

    def counting(function, kind):
        def counted(*args, **kwargs):
            counts[kind] += 1
            return function(*args, **kwargs)
        return counted

    def cost(files: int) -> dict:
        root = tmp_path / str(files)
        names = [f"data/packed/old{k}.pbin" for k in range(files)]
        _touch(root, "data/packed/b.pbin", *names, *(f"data/stale/packed/old{k}.pbin" for k in range(files)))
        with monkeypatch.context() as patch:
            for name, kind in (("scandir", "listings"), ("listdir", "listings"), ("stat", "stats"),
                               ("lstat", "stats")):
                patch.setattr(os, name, counting(getattr(os, name), kind))
            counts.update(listings=0, stats=0)
            assert len(move_stale(["data/packed/b.pbin"], root)) == files  # each beside an earlier one (.1)
        assert (root / f"data/stale/packed/old{files - 1}.pbin.1").is_file()
        return dict(counts)

    small, large = cost(50), cost(1000)
    assert large["listings"] == small["listings"]
    assert large["stats"] - small["stats"] <= 2 * (1000 - 50)


def test_a_folder_deeper_than_pythons_recursion_limit_moves_and_is_deleted_by_the_bound(tmp_path, monkeypatch):
    deepest = tmp_path / "data/cache/gone"
    deepest.mkdir(parents=True)
    monkeypatch.chdir(deepest)
    for _ in range(1100):  # (one level at a time: os.makedirs itself recurses)
        os.mkdir("d")
        os.chdir("d")
    Path("x.npy").write_text("x")
    monkeypatch.chdir(tmp_path)
    assert move_stale([], tmp_path) == ["data/cache/gone"]
    _touch(tmp_path, "data/packed/old.pbin")
    move_stale([], tmp_path)
    assert drop_old_runs(1, tmp_path) == ["data/stale/cache/gone"] and not (tmp_path / "data/stale/cache").exists()
