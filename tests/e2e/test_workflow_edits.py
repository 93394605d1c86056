"""Incremental builds equal fresh ones: after any config edit, deletion or input trick, the workflow
either rebuilds exactly what changed — every file then equal, byte for byte, to a fresh build of the
same config in an empty folder — or refuses in one line. Never stale or short data that verifies.

One scratch folder is edited step by step (each edit on top of the last); each step's config is also
built from nothing in a second folder, and the two ``data/`` trees are compared whole.
"""

from __future__ import annotations

import copy
import shutil
from pathlib import Path

import pytest
import yaml

from conftest import DEMO_JSONL, GPT2, REPO, built_once, copy_built, jobs_of, run_snakemake
from tokenmill.formats.pbin import read_sidecar

pytestmark = pytest.mark.slow

BASE_CONFIG = {
    "tokenizers": {"gpt2": {"path": "data/tokenizers/gpt2.tokenizer.json", "eod": "<|endoftext|>"}},
    "datasets": {
        # 100 lines and one bad one, skipped
        "a": {"inputs": ["data/raw/a.jsonl"], "tokenizer": "gpt2", "on_bad_line": "skip"},
        # ~290 kB in shards of 100 kB
        "b": {"inputs": ["data/raw/b.jsonl"], "tokenizer": "gpt2", "shard_bytes": "100kB"},
    },
    "sampling": {"seq_lengths": [128], "seeds": [1], "split": "90,5,5",
                 "num_samples": {"train": 500, "valid": 10, "test": 10}},
    "sft": {},
}


def _workspace(folder: Path) -> Path:
    """A folder holding the workflow, GPT-2 and the inputs a.jsonl (with a bad line) and b.jsonl."""
    repo = Path(__file__).resolve().parents[2]
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(repo / "Snakefile", folder / "Snakefile")
    shutil.copytree(repo / "workflow", folder / "workflow", symlinks=False)
    (folder / "data/raw").mkdir(parents=True, exist_ok=True)
    (folder / "data/tokenizers").mkdir()
    shutil.copy(GPT2, folder / "data/tokenizers/gpt2.tokenizer.json")
    lines = DEMO_JSONL.read_bytes().splitlines(keepends=True)
    (folder / "data/raw/a.jsonl").write_bytes(b"".join(lines[:50]) + b"not json\n" + b"".join(lines[50:100]))
    (folder / "data/raw/b.jsonl").write_bytes(b"".join(lines[100:340]))
    return folder


def _build(folder: Path, config: dict, check: bool = True):
    (folder / "my.yaml").write_text(yaml.safe_dump(config))
    return run_snakemake(folder, "--configfile", "my.yaml", check=check)


def _outputs(folder: Path) -> dict[str, bytes]:
    """Every file the workflow wrote under data/ (inputs, and earlier plans' files moved to data/stale/, left
    out), by path."""
    return {str(path.relative_to(folder)): path.read_bytes() for path in sorted((folder / "data").rglob("*"))
            if path.is_file() and path.parts[len(folder.parts) + 1] not in ("raw", "tokenizers", "stale")}


def _assert_same_as_fresh(folder: Path, config: dict, scratch: Path) -> None:
    fresh = _workspace(scratch)
    shutil.copytree(folder / "data/raw", fresh / "data/raw", dirs_exist_ok=True)
    _build(fresh, config)
    incremental, expected = _outputs(folder), _outputs(fresh)
    # Every file of the current plan equals the fresh one, and nothing else is left where trainers look
    # (data/index/a.idx once a has two files, old shards: moved to data/stale/).
    differing = sorted(path for path in expected if incremental.get(path) != expected[path])
    assert not differing, f"{len(differing)} files differ from a fresh build: {differing[:8]}"
    left_over = sorted(set(incremental) - set(expected))
    assert not left_over, f"{len(left_over)} files of an earlier plan left in the output folders: {left_over[:8]}"


@pytest.fixture
def built_base(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, tmp_path: Path) -> Path:
    """A workspace with BASE_CONFIG built (once per test run), copied to ``tmp_path/w``."""
    def build(folder: Path) -> None:
        _build(_workspace(folder), BASE_CONFIG)

    return copy_built(built_once(request.config, tmp_path_factory, "built-edits-base", build), tmp_path / "w")


def _edit(config: dict, change) -> dict:
    edited = copy.deepcopy(config)
    change(edited)
    return edited


# Each step, applied on top of the previous ones: its edits, and for each a check that it took effect. Two
# edits share a step only where they change different datasets, so that neither's rebuild hides the other's
# (keep_parts changes only b: a's two small files pack in one job, with no parts).
STEPS = [
    [("shard_bytes of b 100kB -> 150kB", lambda c: c["datasets"]["b"].update(shard_bytes="150kB"),
      lambda folder: [s["byte_range"][1] for s in read_sidecar(folder / "data/packed/b.pbin")["sources"]][-1]
      == (folder / "data/raw/b.jsonl").stat().st_size),
     ("text of a .text -> a jq pattern", lambda c: c["datasets"]["a"].update(text=".text | ascii_downcase"),
      lambda folder: read_sidecar(folder / "data/packed/a.pbin")["text"] == ".text | ascii_downcase")],
    [("eod <|endoftext|> -> !", lambda c: c["tokenizers"]["gpt2"].update(eod="!"),
      lambda folder: read_sidecar(folder / "data/packed/a.pbin")["tokenizer"]["eod_id"] == 0)],
    [("engine auto -> hf, check_fraction 0.5",
      lambda c: c["tokenizers"]["gpt2"].update(engine="hf", check_fraction=0.5),
      lambda folder: read_sidecar(folder / "data/packed/b.pbin")["engine"]["name"] == "hf")],
    [("add_special_tokens off, max_line_bytes 4000",
      lambda c: (c["tokenizers"]["gpt2"].update(add_special_tokens=False),
                 c["datasets"]["a"].update(max_line_bytes=4000)),
      lambda folder: read_sidecar(folder / "data/packed/a.pbin")["max_line_bytes"] == 4000)],
    [("split and the hashed path prefix",
      lambda c: c["sampling"].update(split="80,10,10", megatron_path_prefix="/x/"),
      lambda folder: "/x/a_text_document" in (folder / "data/cache/a/seq128_seed1/megatron_args.txt").read_text())],
    [("dataset a gets a second file",
      lambda c: c["datasets"]["a"].update(inputs=["data/raw/a.jsonl", "data/raw/b.jsonl"]),
      lambda folder: len(read_sidecar(folder / "data/packed/a.pbin")["sources"]) == 2),
     ("keep_parts off, shards of b back to 100kB",
      lambda c: (c.update(keep_parts=False), c["datasets"]["b"].update(shard_bytes=100000)),
      lambda folder: len(read_sidecar(folder / "data/packed/b.pbin")["sources"]) == 2)],
]


def test_every_config_edit_rebuilds_to_the_bytes_of_a_fresh_build(built_base, tmp_path):
    folder, config = built_base, copy.deepcopy(BASE_CONFIG)
    for step, edits in enumerate(STEPS):
        for _, change, _ in edits:
            config = _edit(config, change)
        _build(folder, config)
        for what, _, took_effect in edits:
            assert took_effect(folder), what
        _assert_same_as_fresh(folder, config, tmp_path / f"fresh{step}")


def test_a_format_added_to_a_built_dataset_is_derived_from_its_tokens_without_tokenizing_again(built_base,
                                                                                                tmp_path):
    folder, config = built_base, copy.deepcopy(BASE_CONFIG)
    built = {path: path.stat().st_mtime_ns for path in (folder / "data").rglob("*")
             if path.is_file() and path.parts[len(folder.parts) + 1] in ("packed", "megatron", "cache", "parts")}
    config["datasets"]["a"]["formats"] = ["pbin", "megatron", "datatrove"]  # a: one unit, packed in one pass
    result = _build(folder, config)
    assert "pack " not in result.stderr and "raw line index" not in result.stderr  # no job tokenizes again
    assert {path: path.stat().st_mtime_ns for path in built} == built  # the .pbin, .bin/.idx and caches untouched
    _assert_same_as_fresh(folder, config, tmp_path / "fresh")  # and the .ds as a one-config build makes them


# the jobs that tokenize, merge or sample: none reruns for a switch of on_bad_line
TOKENIZING = {"raw_index", "pack", "pack_without_megatron", "pack_unit", "pack_unit_without_megatron", "merge_units",
              "merge_units_without_megatron", "sample_index"}


def test_switching_on_bad_line_repacks_nothing_built_and_back_to_error_fails_in_verify_as_a_fresh_build(built_base,
                                                                                                     tmp_path):
    """on_bad_line leaves the units' identity: b's three shards, built under error (no bad line), are what skip makes
    of them, so error -> skip -> error packs and merges nothing again; a, built under skip with a bad line skipped,
    switched to error keeps its unit and fails in verify naming the line (a fresh build fails in pack there)."""
    folder = built_base
    lenient = _edit(BASE_CONFIG, lambda c: c["datasets"]["b"].update(on_bad_line="skip"))
    planned = jobs_of(_build(folder, lenient))
    assert "verify" in planned and not planned & TOKENIZING, planned
    _assert_same_as_fresh(folder, lenient, tmp_path / "fresh")  # the units kept are skip's bytes
    strict = _edit(BASE_CONFIG, lambda c: c["datasets"]["a"].update(on_bad_line="error"))
    result = _build(folder, strict, check=False)
    planned = jobs_of(result)
    assert result.returncode != 0 and "verify" in planned and not planned & TOKENIZING, planned
    assert ("data/packed/a.pbin: data/raw/a.jsonl:51: invalid JSON (invalid literal, expected 'null' at byte 0): "
            "skipped (lines skipped in that file: 1), but on_bad_line is error, which stops at that line: fix or "
            "remove it, or set on_bad_line: skip") in (folder / "logs/verify/a.log").read_text()
    planned = jobs_of(_build(folder, BASE_CONFIG))
    assert "verify" in planned and not planned & TOKENIZING, planned


def test_deleted_outputs_are_rebuilt_to_the_same_bytes(built_base):
    folder = built_base
    before = _outputs(folder)
    for path in ("data/megatron/a_text_document.bin", "data/index/a.idx", "data/packed/b.pbin.meta.json"):
        (folder / path).unlink()
    _build(folder, BASE_CONFIG)
    assert _outputs(folder) == before


@pytest.mark.parametrize("inputs, message, sources", [
    (["data/raw/a.jsonl", "data/raw/a.jsonl"], "datasets.a.inputs: data/raw/a.jsonl is the file data/raw/a.jsonl "
                                               "again and would be packed twice", 2),
    (["data/raw/*.jsonl", "data/raw/b*.jsonl"], "datasets.a.inputs: data/raw/b.jsonl is the file data/raw/b.jsonl "
                                                "again and would be packed twice", 3),
])
def test_an_input_named_twice_is_refused_unless_allowed(built_base, inputs, message, sources):
    folder = built_base  # b built already: the allowed build packs a alone
    config = _edit(BASE_CONFIG, lambda c: c["datasets"]["a"].update(inputs=inputs))
    result = _build(folder, config, check=False)
    assert result.returncode != 0 and message in result.stderr
    allowed = _edit(config, lambda c: c["datasets"]["a"].update(allow_duplicate_inputs=True))
    _build(folder, allowed)
    meta = read_sidecar(folder / "data/packed/a.pbin")
    assert meta["allow_duplicate_inputs"] is True and len(meta["sources"]) == sources


def test_best_fit_packing_is_added_and_edited_rebuilding_only_its_outputs(built_base, tmp_path):
    """packing: best_fit on a built dataset runs the best-fit job alone (no pack, no caches again), verified in
    the job, and the report page; its long-document strategy edited reruns those only; packing back to concat
    moves the packed index out of where trainers look; each time equal to a fresh build."""
    folder, config = built_base, copy.deepcopy(BASE_CONFIG)
    steps = [(lambda c: c["datasets"]["a"].update(packing="best_fit"), {"best_fit", "report_dataset", "prune", "all"}),
             (lambda c: c["datasets"]["a"].update(long_doc_strategy="fragment"),
              {"best_fit", "report_dataset", "prune", "all"}),
             (lambda c: c["datasets"]["a"].update(packing="concat"), {"report_dataset", "prune", "all"})]
    for step, (change, jobs) in enumerate(steps):
        config = _edit(config, change)
        assert jobs_of(_build(folder, config)) == jobs, step  # the jobs it ran: those a dry run plans
        packed_index = folder / "data/cache/a/seq128_seed1_best_fit"
        if config["datasets"]["a"]["packing"] == "best_fit":
            strategy = config["datasets"]["a"].get("long_doc_strategy", "truncate")
            assert (packed_index / f"best_fit-{strategy}-train-description.json").is_file()
        else:
            assert not packed_index.exists()
        _assert_same_as_fresh(folder, config, tmp_path / f"fresh{step}")


def test_best_fit_packing_of_a_blend_and_an_sft_set_is_edited_rebuilding_only_its_outputs(built_base, tmp_path):
    """A blend with packing: best_fit gets its packed blend beside its caches, an SFT set (with OLMo-core's parts)
    its best-fit rows and OLMo-core work dir when its packing is turned on, each verified in its job; the blend's
    long-document strategy edited reruns its job and its report page alone, the SFT set is not tokenized again;
    packing back to concat only moves the folders out (and the page drops its table); each time equal to a fresh
    build."""
    folder, config = built_base, copy.deepcopy(BASE_CONFIG)
    shutil.copy(REPO / "data/raw/chat.jsonl", folder / "data/raw/chat.jsonl")
    config["blends"] = {"ab": {"weights": {"a": 1, "b": 2}, "packing": "best_fit"}}
    config["sft"] = {"chat": {"inputs": ["data/raw/chat.jsonl"], "tokenizer": "gpt2", "seq_length": 1024,
                              "special_tokens": {"bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>"},
                              "loss_masking_jq_patterns": [".role"], "message_construction": ["role", "conversations"],
                              "formats": ["pbin", "olmo"]}}
    _build(folder, config)
    packed_blend, rows = folder / "data/cache/blend_ab/seq128_seed1_best_fit", folder / "data/sft/chat.best_fit"
    assert (packed_blend / "blend-truncate-train-description.json").is_file()
    steps = [(lambda c: (c["blends"]["ab"].update(long_doc_strategy="fragment"),
                         c["sft"]["chat"].update(packing="best_fit")),
              {"best_fit_blend", "report_blend", "sft_best_fit", "sft_olmo_best_fit", "report_sft", "prune",
               "all"}),
             (lambda c: (c["blends"]["ab"].update(packing="concat"), c["sft"]["chat"].update(packing="concat")),
              {"report_blend", "report_sft", "prune", "all"})]
    for step, (change, jobs) in enumerate(steps):
        config = _edit(config, change)
        assert jobs_of(_build(folder, config)) == jobs, step  # the jobs it ran: those a dry run plans
        assert (packed_blend / "blend-fragment-train-description.json").is_file() == (step == 0)
        assert (rows / "sft_best_fit-description.json").is_file() == (step == 0)
        assert (folder / "data/sft/chat.olmo.best_fit/tokenmill-olmo-packing.yaml").is_file() == (step == 0)
        _assert_same_as_fresh(folder, config, tmp_path / f"fresh{step}")
