"""A newcomer's first hour (issue 23): results that do not depend on the working directory, no silent
second cache, no silent pack without EOD, and inspect's words saying what each number is."""

from __future__ import annotations

import json
import logging
import re
import shutil
from pathlib import Path

import pytest

from conftest import GPT2, GPT2_EOD, MIXED_JSONL, REPO, run_snakemake, run_tokenmill
from tokenmill import FORMAT_VERSIONS
from tokenmill.formats.pbin import read_sidecar
from tokenmill.formats.sidecar import sidecar_path
from tokenmill.megatron.index_cache import build_gpt_cache, null_tokenizer_identifiers
from tokenmill.verify.checks import verify

IDENTIFIERS = null_tokenizer_identifiers(50257)


def make_project(root: Path) -> Path:
    """A folder with its own inputs and tokenizer, named relative to it (as a config in it names them)."""
    (root / "raw").mkdir(parents=True)
    (root / "tok").mkdir()
    (root / "data/packed").mkdir(parents=True)
    lines = MIXED_JSONL.read_bytes().splitlines(keepends=True)
    (root / "raw/a.jsonl").write_bytes(b"".join(lines[:30]))
    (root / "raw/b.jsonl").write_bytes(b"".join(lines[30:]))
    shutil.copy(GPT2, root / "tok/gpt2.json")
    return root


def pack_in(project: Path, name: str, *inputs: str) -> Path:
    run_tokenmill("pack", *inputs, "--tokenizer", "tok/gpt2.json", "--eod", GPT2_EOD, "-o", f"data/packed/{name}.pbin",
                  cwd=project)
    return project / f"data/packed/{name}.pbin"


def text_line(shown: str) -> str:
    return next(line for line in shown.splitlines() if line.startswith("text: "))


# ---- sidecar paths count from the sidecar's folder (item 4)

@pytest.mark.slow
def test_a_sidecar_names_its_files_from_its_own_folder_and_reads_the_same_from_anywhere(tmp_path):
    project = make_project(tmp_path / "project")
    pbin = pack_in(project, "a", "raw/a.jsonl")
    meta = read_sidecar(pbin)
    assert meta["format"] == FORMAT_VERSIONS["pbin"]
    assert meta["tokenizer"]["path"] == "../../tok/gpt2.json" and meta["sources"][0]["path"] == "../../raw/a.jsonl"

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    here = run_tokenmill("inspect", "data/packed/a.pbin", "--doc", "3", cwd=project).stdout
    there = run_tokenmill("inspect", pbin, "--doc", "3", cwd=elsewhere).stdout
    assert "not found" not in there and text_line(there) == text_line(here)
    assert "source: raw/a.jsonl, line 4" in here and f"source: {project}/raw/a.jsonl, line 4" in there
    described = run_tokenmill("inspect", pbin, cwd=elsewhere).stdout
    assert f"tokenizer: {project}/tok/gpt2.json (sha256" in described and "not found" not in described
    checked = run_tokenmill("verify", "--against-tokenizer", "1", "--inputs", project / "raw/a.jsonl", "--", pbin,
                            cwd=elsewhere)
    assert checked.stderr == "1 file(s) verified, no problem found\n"

    # the same inputs in another folder, at another depth, give the same bytes
    other = make_project(tmp_path / "deeper/still/project")
    copy = pack_in(other, "a", "raw/a.jsonl")
    assert copy.read_bytes() == pbin.read_bytes()
    assert sidecar_path(copy).read_bytes() == sidecar_path(pbin).read_bytes()


def test_absolute_paths_stay_absolute_and_a_symlinked_output_folder_is_never_misnamed(tmp_path):
    project = make_project(tmp_path / "project")
    (tmp_path / "scratch").mkdir()
    (project / "out").symlink_to(tmp_path / "scratch")  # `..` from out/ leads to tmp_path, not to project
    run_tokenmill("pack", project / "raw/a.jsonl", "--tokenizer", "tok/gpt2.json", "--eod", GPT2_EOD,
                  "-o", "out/a.pbin", cwd=project)
    meta = read_sidecar(project / "out/a.pbin")
    assert meta["sources"][0]["path"] == str(project / "raw/a.jsonl")  # given absolute: as given
    assert meta["tokenizer"]["path"] == str(project / "tok/gpt2.json")  # ../tok would miss: absolute instead
    assert verify(tmp_path / "scratch/a.pbin", inputs=[str(project / "raw/a.jsonl")]) == []


@pytest.mark.slow
def test_a_merge_in_another_folder_rebases_the_paths_of_its_parts(tmp_path):
    project = make_project(tmp_path / "project")
    pack_in(project, "a", "raw/a.jsonl")
    pack_in(project, "b", "raw/b.jsonl")
    (tmp_path / "out").mkdir()
    run_tokenmill("merge", "data/packed/a.pbin", "data/packed/b.pbin", "-o", "../out/ab.pbin", cwd=project)
    merged = tmp_path / "out/ab.pbin"
    meta = read_sidecar(merged)
    assert [source["path"] for source in meta["sources"]] == ["../project/raw/a.jsonl", "../project/raw/b.jsonl"]
    assert meta["tokenizer"]["path"] == "../project/tok/gpt2.json"
    assert [part["path"] for part in meta["parts"]] == ["../project/data/packed/a.pbin",
                                                        "../project/data/packed/b.pbin"]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    inputs = [project / "raw/a.jsonl", project / "raw/b.jsonl"]
    assert run_tokenmill("verify", "--against-tokenizer", "1", "--inputs", *inputs, "--", merged,
                         cwd=elsewhere).stderr == "1 file(s) verified, no problem found\n"
    shown = run_tokenmill("inspect", merged, "--doc", "35", cwd=elsewhere).stdout  # b.jsonl's sixth line
    assert f"source: {tmp_path}/project/raw/b.jsonl, line 6" in shown and "not found" not in shown
    # and merged again beside its parts, the paths are the ones a pack there records
    run_tokenmill("merge", "../out/ab.pbin", "-o", "data/packed/ab.pbin", cwd=project)
    assert read_sidecar(project / "data/packed/ab.pbin")["sources"][1]["path"] == "../../raw/b.jsonl"


def test_an_older_sidecar_is_read_from_where_it_was_packed_and_elsewhere_says_what_is_missing(tmp_path):
    project = make_project(tmp_path / "project")
    pbin = pack_in(project, "a", "raw/a.jsonl")
    meta = json.loads(sidecar_path(pbin).read_text())  # as pbin/3 wrote it: paths from the folder pack ran in
    meta.update(format="modalities-pbin-0.5.0/3", sources=[{**meta["sources"][0], "path": "raw/a.jsonl"}])
    meta["tokenizer"]["path"] = "tok/gpt2.json"
    sidecar_path(pbin).write_text(json.dumps(meta))
    here = run_tokenmill("inspect", "data/packed/a.pbin", "--doc", "3", cwd=project).stdout
    assert "source: raw/a.jsonl, line 4" in here and "not found" not in text_line(here)

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    there = run_tokenmill("inspect", pbin, "--doc", "3", cwd=elsewhere).stdout
    assert text_line(there) == (
        f"text: (tokenizer not found: {project}/data/packed/tok/gpt2.json, resolved against {project}/data/packed, "
        f"then {elsewhere}: a sidecar of format modalities-pbin-0.5.0/3 names paths relative to where it was "
        f"written; rebuild it to make them relative to its folder; pass --tokenizer tokenizer.json)")
    problems = verify(pbin)
    assert any(f"source {project}/data/packed/raw/a.jsonl not found (resolved against {project}/data/packed, then "
               in problem for problem in problems), problems


# ---- EOD: refused unless asked for or explicitly left out (item 5)

@pytest.mark.slow
def test_pack_without_an_eod_is_refused_unless_no_eod_says_so(tmp_path):
    out = tmp_path / "x.pbin"
    refused = run_tokenmill("pack", MIXED_JSONL, "--tokenizer", GPT2, "-o", out, check=False)
    assert refused.returncode == 1 and refused.stderr.count("\n") == 1
    assert refused.stderr.startswith("tokenmill: error: pack needs --eod TOKEN") and "--no-eod" in refused.stderr
    both = run_tokenmill("pack", MIXED_JSONL, "--tokenizer", GPT2, "--eod", GPT2_EOD, "--no-eod", "-o", out,
                         check=False)
    assert both.stderr == "tokenmill: error: pack takes --eod TOKEN or --no-eod, not both\n"
    assert not list(tmp_path.iterdir())

    run_tokenmill("pack", MIXED_JSONL, "--tokenizer", GPT2, "--no-eod", "-o", out)
    assert "eod: none (packed with --no-eod): documents run together" in run_tokenmill("inspect", out).stdout
    checked = run_tokenmill("verify", out)  # a warning, not a problem: exit 0
    warning, verdict = checked.stderr.splitlines()
    assert warning.startswith(f"{out}: warning: packed without an EOD") and verdict.endswith("no problem found")
    said = []
    assert verify(out, warn=said.append) == [] and len(said) == 1

    run_tokenmill("pack", MIXED_JSONL, "--tokenizer", GPT2, "--eod", GPT2_EOD, "-o", tmp_path / "eod.pbin")
    assert "eod: '<|endoftext|>' = id 50256, ending every document" in \
        run_tokenmill("inspect", tmp_path / "eod.pbin").stdout
    assert run_tokenmill("verify", tmp_path / "eod.pbin").stderr == "1 file(s) verified, no problem found\n"


def test_a_workflow_tokenizer_without_eod_packs_with_no_eod_said_explicitly(tmp_path, monkeypatch):
    from tokenmill.config import validate_config
    from tokenmill.plan import Plan

    monkeypatch.chdir(make_project(tmp_path))
    config = {"tokenizers": {"gpt2": {"path": "tok/gpt2.json"}},
              "datasets": {"a": {"inputs": ["raw/a.jsonl"], "tokenizer": "gpt2"}}}
    assert "--no-eod" in Plan(validate_config(config, "my.yaml")).commands.pack_options("a")
    config["tokenizers"]["gpt2"]["eod"] = GPT2_EOD
    options = Plan(validate_config(config, "my.yaml")).commands.pack_options("a")
    assert "--no-eod" not in options and options[options.index("--eod") + 1] == GPT2_EOD


# ---- one cache per split: a second one is said, never silent (item 2)

@pytest.fixture
def megatron(tmp_path):
    """The mixed fixture as a Megatron dataset: tmp_path/data/megatron/x_text_document."""
    project = make_project(tmp_path / "project")
    (project / "data/megatron").mkdir()
    pack_in(project, "x", "raw/a.jsonl", "raw/b.jsonl")
    prefix = project / "data/megatron/x_text_document"
    run_tokenmill("to-megatron", project / "data/packed/x.pbin", "-o", prefix)
    return prefix


def nanoset_config(prefix, cache, **settings):
    from tokenmill.training.datasets import NanosetConfig

    settings.setdefault("tokenizer_identifiers", IDENTIFIERS)
    return NanosetConfig(str(prefix), str(cache), seq_length=16, seed=1, split="1,0,0", num_samples={"train": 300},
                         **settings)


@pytest.mark.parametrize("megatron_built", [False, True])
def test_a_cache_folder_of_the_jobs_spelling_is_named_when_nanoset_builds_a_second(megatron, tmp_path, caplog,
                                                                                   megatron_built):
    from tokenmill.training.datasets import NanosetBuilder

    cache = tmp_path / "cache"
    job_path = "/data/megatron/x_text_document"  # sampling.megatron_path_prefix: how the training job spells it
    built = build_gpt_cache(megatron, cache, 16, 1, "1,0,0", {"train": 300}, IDENTIFIERS, dataset_path=job_path)
    if megatron_built:  # a cache Megatron built has no fingerprint: the file name tells the dataset
        (cache / built["train"]["files"]["description.txt"].replace("description.txt",
                                                                    "tokenmill_fingerprint.json")).unlink()
    assert verify(cache) == []
    with caplog.at_level(logging.WARNING, logger="tokenmill.training.nanoset"):
        NanosetBuilder(nanoset_config(megatron, cache)).build()
    warning, = [record.getMessage() for record in caplog.records]
    assert job_path in warning and repr(str(megatron)) in warning and f"dataset_path={job_path!r}" in warning

    problem, = verify(cache)
    assert problem.startswith(f"{cache}: 2 GPTDataset train caches of one dataset (") and "dataset_path" in problem
    assert repr(job_path) in problem and repr(str(megatron)) in problem and "delete the files" in problem
    sample = run_tokenmill("inspect", cache, "--sample", "0", check=False)
    assert sample.returncode == 1 and sample.stderr == f"tokenmill: error: {problem}\n"
    summary = run_tokenmill("inspect", cache).stdout.splitlines()
    assert sum(line.startswith("  train: ") for line in summary) == 2 and summary[-1] == f"problem: {problem}"

    # spelled as the job spells it: the folder's own cache, nothing said, nothing built
    caplog.clear()
    before = sorted(path.name for path in cache.iterdir())
    with caplog.at_level(logging.WARNING, logger="tokenmill.training.nanoset"):
        NanosetBuilder(nanoset_config(megatron, cache, dataset_path=job_path)).build()
    assert not caplog.records and sorted(path.name for path in cache.iterdir()) == before


def test_a_second_cache_for_other_tokenizer_identifiers_is_said_and_verify_reports_it(megatron, tmp_path, caplog):
    """The workflow's caches hash the job's tokenizer flags (its megatron_args.txt); a Nanoset given other
    identifiers (NullTokenizer's, from the README of old) builds a second set, which is said, never silent."""
    from tokenmill.training.datasets import NanosetBuilder
    from tokenmill.megatron.job_tokenizer import job_tokenizer_identifiers

    cache = tmp_path / "cache"
    job_flags = f"--tokenizer-type HuggingFaceTokenizer --tokenizer-model {GPT2.parent}"
    job_identifiers = job_tokenizer_identifiers("0.19", job_flags)
    build_gpt_cache(megatron, cache, 16, 1, "1,0,0", {"train": 300}, job_identifiers)
    with caplog.at_level(logging.WARNING, logger="tokenmill.training.nanoset"):
        NanosetBuilder(nanoset_config(megatron, cache)).build()  # NullTokenizer's identifiers
    warning, = [record.getMessage() for record in caplog.records]
    assert warning.startswith(f"{cache}: its caches of {megatron} were built for the tokenizer identifiers ")
    assert f'"tokenizer_path": "{GPT2.parent}"' in warning and '"vocab_size": "50257"' in warning  # both, named
    assert "pass tokenizer_identifiers=job_tokenizer_identifiers(VERSION, FLAGS)" in warning
    problem, = verify(cache)
    assert problem.startswith(f"{cache}: 2 GPTDataset train caches of one dataset (")

    caplog.clear()  # the job's own identifiers: the folder's cache, nothing said
    with caplog.at_level(logging.WARNING, logger="tokenmill.training.nanoset"):
        NanosetBuilder(nanoset_config(megatron, cache, tokenizer_identifiers=job_identifiers)).build()
    assert not caplog.records


def test_a_folder_shared_by_two_datasets_is_no_second_cache(megatron, tmp_path, caplog):
    """Megatron's --data-cache-path is often one folder for every dataset: another dataset's cache
    there is neither warned about nor a problem."""
    from tokenmill.training.datasets import NanosetBuilder

    project = megatron.parent.parent.parent
    pack_in(project, "y", "raw/b.jsonl")
    other = project / "data/megatron/y_text_document"
    run_tokenmill("to-megatron", project / "data/packed/y.pbin", "-o", other)
    cache = tmp_path / "cache"
    build_gpt_cache(other, cache, 16, 1, "1,0,0", {"train": 300}, IDENTIFIERS, dataset_path="/data/y_text_document")
    with caplog.at_level(logging.WARNING, logger="tokenmill.training.nanoset"):
        NanosetBuilder(nanoset_config(megatron, cache)).build()
    assert not caplog.records and verify(cache) == []
    # a copy of x's files under y's file name: the fingerprints, not the names, tell which dataset it is
    for suffix in (".bin", ".idx"):
        shutil.copy(f"{megatron}{suffix}", tmp_path / f"y_text_document{suffix}")
    with caplog.at_level(logging.WARNING, logger="tokenmill.training.nanoset"):
        NanosetBuilder(nanoset_config(tmp_path / "y_text_document", cache)).build()
    warning, = [record.getMessage() for record in caplog.records]
    assert repr(str(megatron)) in warning and "/data/y_text_document" not in warning
    problem, = verify(cache)
    assert str(megatron) in problem and str(tmp_path / "y_text_document") in problem


# ---- inspect's words (item 9)

def test_inspect_says_what_each_number_of_a_sample_is_and_summarises_a_cache_folder(megatron, tmp_path):
    cache = tmp_path / "cache"
    build_gpt_cache(megatron, cache, 16, 1, "1,0,0", {"train": 300}, IDENTIFIERS)
    summary = run_tokenmill("inspect", cache).stdout.splitlines()
    assert summary[0] == f"cache folder: {cache}"
    train, = [line for line in summary if line.startswith("  train: ")]
    assert train.startswith(f"  train: 314 samples (300 asked: whole epochs), seq length 16, seed 1, split 1,0,0, "
                            f"built for dataset path {megatron} [")
    shown = run_tokenmill("inspect", cache, "--sample", "0").stdout.splitlines()
    pieces = [line for line in shown if line.startswith("  sequence ")]
    assert pieces
    said = re.compile(r"  sequence (\d+): tokens (\d+)-(\d+) of its (\d+) \((\d+) tokens\), from (\S+) line (\d+)")
    for piece in pieces:  # "  sequence 7: tokens 12-16 of its 40 (5 tokens), from FILE line 8"
        match = said.fullmatch(piece)
        sequence, first, last, size, count, line = (int(match[k]) for k in (1, 2, 3, 4, 5, 7))
        assert 0 <= first <= last < size and count == last - first + 1
        assert (match[6], line) == ((f"{megatron.parent.parent.parent}/raw/a.jsonl", sequence + 1) if sequence < 30 else
                                    (f"{megatron.parent.parent.parent}/raw/b.jsonl", sequence - 29))
    assert sum(int(piece.split("(")[1].split()[0]) for piece in pieces) == 17  # seq_length + the extra token


# ---- the workflow from a data folder of its own (item 4)

@pytest.mark.slow
def test_the_workflow_runs_from_a_data_folder_with_paths_relative_to_it(tmp_path):
    config = {"tokenizers": {"gpt2": {"path": "tok/gpt2.json", "eod": GPT2_EOD}},
              "datasets": {"web": {"inputs": ["raw/*.jsonl"], "tokenizer": "gpt2"}},
              "sampling": {"seq_lengths": [16], "seeds": [1], "split": "1,0,0", "num_samples": {"train": 300}},
              "sft": {}}
    sidecars = []
    for folder in (tmp_path / "one", tmp_path / "two/levels/down"):
        make_project(folder)
        (folder / "my.yaml").write_text(json.dumps(config))
        run_snakemake(tmp_path, "-s", REPO / "Snakefile", "--directory", folder, "--configfile", folder / "my.yaml",
                      "--quiet")
        sidecars.append((folder / "data/packed/web.pbin.meta.json").read_bytes())
    assert sidecars[0] == sidecars[1]  # nothing of where the folder lives
    shown = run_tokenmill("inspect", tmp_path / "one/data/packed/web.pbin", "--doc", "31", cwd=REPO).stdout
    assert "not found" not in shown and f"source: {tmp_path}/one/raw/b.jsonl, line 2" in shown
    assert run_tokenmill("verify", tmp_path / "one/data/cache/web/seq16_seed1", cwd=REPO).returncode == 0
