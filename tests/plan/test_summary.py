"""The summary that ends a build (tokenmill.plan.summary, the Snakefile's onsuccess), the quiet default
profile, and a report of one's own config (issue 23, items 1 and 6)."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from conftest import DEMO_JSONL, GPT2, GPT2_EOD, REPO, run_snakemake, run_tokenmill
from tokenmill.config import validate_config
from tokenmill.formats.bin_idx import MMapIndexedDataset
from tokenmill.plan import Plan
from tokenmill.plan.summary import MAX_BUILDS_SHOWN, report_command, summary_lines


def _config(names: list[str], **sampling) -> dict:
    return {"tokenizers": {"gpt2": {"path": "tok/gpt2.json", "eod": GPT2_EOD}},
            "datasets": {name: {"inputs": [f"raw/{name}.jsonl"], "tokenizer": "gpt2"} for name in names},
            "sampling": {"seq_lengths": [128], "seeds": [7], **sampling}}


@pytest.fixture
def folder(tmp_path, monkeypatch) -> Path:
    """A working directory with GPT-2 and raw/a.jsonl (the demo's first 200 lines), packed as
    data/packed/a.pbin with its Megatron files, and raw/b.jsonl, not packed."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "raw").mkdir()
    (tmp_path / "tok").mkdir()
    for sub in ("data/packed", "data/megatron"):
        (tmp_path / sub).mkdir(parents=True)
    shutil.copy(GPT2, tmp_path / "tok/gpt2.json")
    lines = DEMO_JSONL.read_bytes().splitlines(keepends=True)
    (tmp_path / "raw/a.jsonl").write_bytes(b"".join(lines[:200]))
    (tmp_path / "raw/b.jsonl").write_bytes(b"".join(lines[200:300]))
    run_tokenmill("pack", "raw/a.jsonl", "--tokenizer", "tok/gpt2.json", "--eod", GPT2_EOD, "-o", "data/packed/a.pbin",
                  "--megatron", "data/megatron/a_text_document", cwd=tmp_path)
    return tmp_path


def test_a_summary_names_each_builds_counts_and_files_and_the_report_command_of_the_config(folder):
    plan = Plan(validate_config(_config(["a", "b"], megatron_path_prefix="/data/megatron/"), "my.yaml"))
    (folder / "data/cache/a/seq128_seed7").mkdir(parents=True)
    meta = json.loads((folder / "data/packed/a.pbin.meta.json").read_text())
    lines = summary_lines(plan, [folder / "my.yaml"], REPO / "Snakefile", shell_dir=str(folder))

    assert lines[0] == f"tokenmill: 1 dataset of my.yaml in {folder}:"
    assert lines[1] == f"  a: {meta['documents']:,} documents, {meta['tokens']:,} tokens"
    pbin_kb, bin_kb = ((folder / name).stat().st_size / 1e3 for name in ("data/packed/a.pbin",
                                                                          "data/megatron/a_text_document.bin"))
    assert lines[2] == (f"    data/packed/a.pbin ({pbin_kb:.1f} kB); Megatron data/megatron/a_text_document "
                        f"({bin_kb:.1f} kB)")
    assert lines[3] == "    caches data/cache/a/seq128_seed7, for --data-path /data/megatron/a_text_document"
    assert lines[4].startswith("  not built yet: b ")
    assert lines[5] == "Next:"  # the shell is in the working directory: no cd
    commands = [line.split("  ")[1] for line in lines[6:10]]
    assert commands == ["tokenmill inspect data/packed/a.pbin --doc 0",
                        "tokenmill inspect data/cache/a/seq128_seed7 --sample 0",
                        "tokenmill verify data/packed/a.pbin --against-tokenizer 0.05",
                        f"snakemake -s {REPO / 'Snakefile'} --configfile my.yaml --report report.html"]
    assert lines[10] == "  Megatron-LM: the arguments in data/cache/a/seq128_seed7/megatron_args.txt"
    assert lines[11] == ("  PyTorch: NanosetConfig on that folder with "
                         "dataset_path='/data/megatron/a_text_document' and")  # the job's spelling: no second cache
    # and the job's tokenizer identifiers (the workflow's NullTokenizer of GPT-2's 50,257 ids): no second cache
    assert lines[12] == ("    tokenizer_identifiers=job_tokenizer_identifiers('0.19', '--tokenizer-type NullTokenizer "
                         "--vocab-size 50257') (README, \"Training with it\")")
    assert len(lines) == 13

    for command in (commands[0], commands[2]):  # they run as printed, from the working directory
        run_tokenmill(*shlex.split(command)[1:], cwd=folder)


def test_the_report_command_repeats_the_runs_snakefile_and_config_files_from_the_working_directory(tmp_path):
    workdir = tmp_path / "run"
    assert report_command((), workdir / "Snakefile", str(workdir)) == "snakemake --report report.html"
    assert report_command([workdir / "cfg/my.yaml", tmp_path / "other dir/b.yaml"], tmp_path / "clone/Snakefile",
                          str(workdir)) == (f"snakemake -s {tmp_path}/clone/Snakefile --configfile cfg/my.yaml "
                                            f"'{tmp_path}/other dir/b.yaml' --report report.html")


def test_a_shell_in_another_directory_is_told_to_cd_first(folder, tmp_path_factory):
    plan = Plan(validate_config(_config(["a"]), "my.yaml"))
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    lines = summary_lines(plan, [], folder / "Snakefile", shell_dir=str(elsewhere))
    assert lines[lines.index("Next:") + 1] == f"  cd {folder}"
    assert lines[-1].startswith("  PyTorch: tokenmill.training.datasets.PackedMemMapDatasetContinuous "
                                "on data/packed/a.pbin")


def test_thirty_builds_fit_one_screen_summed_up_past_the_first(folder):
    names = [f"set{k:02d}" for k in range(30)]
    for name in names:  # thirty builds: each a copy of a.pbin and its sidecar, under its own name
        (folder / f"raw/{name}.jsonl").write_bytes((folder / "raw/a.jsonl").read_bytes())
        shutil.copy(folder / "data/packed/a.pbin", folder / f"data/packed/{name}.pbin")
        shutil.copy(folder / "data/packed/a.pbin.meta.json", folder / f"data/packed/{name}.pbin.meta.json")
    meta = json.loads((folder / "data/packed/a.pbin.meta.json").read_text())
    plan = Plan(validate_config(_config(names), "my.yaml"))
    lines = summary_lines(plan, [folder / "my.yaml"], folder / "Snakefile", shell_dir=str(folder))
    assert len(lines) <= 25
    rest = len(names) - MAX_BUILDS_SHOWN
    assert (f"  and {rest} more (set03, set04, set05, ...): {rest * meta['documents']:,} documents, "
            f"{rest * meta['tokens']:,} tokens, in data/packed/") in lines
    assert lines[0] == f"tokenmill: 30 datasets of my.yaml in {folder}:"


def test_an_own_config_builds_quietly_ends_with_its_summary_and_its_printed_report_command_reports_it(
        workflow_dir):
    lines = (workflow_dir / "data/raw/demo.jsonl").read_bytes().splitlines(keepends=True)
    (workflow_dir / "mine").mkdir()
    for name, part in (("web", lines[:600]), ("code", lines[600:1200])):
        (workflow_dir / f"mine/{name}.jsonl").write_bytes(b"".join(part))
    config = {"tokenizers": {"gpt2": {"path": "data/tokenizers/gpt2.tokenizer.json", "eod": GPT2_EOD}},
              "datasets": {name: {"inputs": [f"mine/{name}.jsonl"], "tokenizer": "gpt2"} for name in ("web", "code")},
              "sampling": {"seq_lengths": [256], "seeds": [1], "num_samples": {"train": 300, "valid": 10, "test": 5}}}
    (workflow_dir / "my.yaml").write_text(yaml.safe_dump(config))

    result = run_snakemake(workflow_dir, "--profile", "workflow/profiles/default", "--configfile", "my.yaml")
    output = result.stdout + result.stderr
    assert "tokenmill pack" not in output and "Shell command" not in output  # no shell commands
    assert "reason:" not in output and "Platform:" not in output  # no rerun reasons, no host banner
    assert "log: logs/pack/web.log" in output  # where a running job writes its progress
    summary = result.stdout[result.stdout.index("tokenmill: 2 datasets of my.yaml"):].splitlines()
    assert len(summary) <= 25
    assert any(line.startswith("  web: 600 documents, ") for line in summary)
    assert any(line.startswith("  code: 600 documents, ") for line in summary)
    report = next(line.split("  ")[1] for line in summary if line.startswith("  snakemake "))
    assert report == "snakemake --configfile my.yaml --report report.html"

    run_snakemake(workflow_dir, *shlex.split(report)[1:])  # as printed
    page = (workflow_dir / "report.html").read_text()
    assert "web.html" in page and "code.html" in page and "demo.html" not in page
    front = re.search(r"This report is of the config it was made with: datasets\\n<strong>(.*?)</strong>", page)
    assert set(front.group(1).split(", ")) == {"web", "code"}  # the front page names the datasets reported


def test_the_summary_module_imports_no_snakemake():
    """The Snakefile's onsuccess hands it the plan and the run's files: tokenmill stays free of Snakemake."""
    result = subprocess.run([sys.executable, "-c",
                             "import sys, tokenmill.plan.summary; print('snakemake' in sys.modules)"],
                            capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"


def test_a_build_packed_without_an_eod_is_warned_about_in_the_summary(folder):
    run_tokenmill("pack", "raw/a.jsonl", "--tokenizer", "tok/gpt2.json", "--no-eod", "-o", "data/packed/a.pbin",
                  cwd=folder)
    config = _config(["a"])
    config["tokenizers"]["gpt2"]["eod"] = None
    lines = summary_lines(Plan(validate_config(config, "my.yaml")), [folder / "my.yaml"], REPO / "Snakefile")
    assert lines[3] == ("    warning: packed without an EOD (tokenizers.gpt2.eod: null): its documents run together "
                        "in training")
    del config["tokenizers"]["gpt2"]["eod"]  # what a config without the key says, never a value it did not set
    lines = summary_lines(Plan(validate_config(config, "my.yaml")), [folder / "my.yaml"], REPO / "Snakefile")
    assert lines[3] == ("    warning: packed without an EOD (tokenizers.gpt2 names no eod): its documents run "
                        "together in training")


def test_best_fits_tokens_dropped_by_truncate_stand_beside_its_padding_with_their_split_and_a_warning(folder):
    """Build a (the demo's first 200 documents, one sequence each) packed best fit at 128 tokens with the default
    truncate. Expected from the .idx alone: train is sequences [0, round(0.969·N)) of its N (split 969,30,1);
    truncate drops, of each train document over 128 tokens, all past its first 128. The summary's best-fit line
    says those tokens and their share of the train split's tokens, beside the padding, and a warning (over 5 %)
    names long_doc_strategy: fragment, once for the build: of its lengths (128 and 1,024), the one that drops
    most; with fragment, nothing is dropped and nothing warned."""
    config = _config(["a"], seq_lengths=[128, 1024])
    config["datasets"]["a"]["packing"] = "best_fit"
    plan = Plan(validate_config(config, "my.yaml"))
    out, longer = plan.outputs.packed_index_dirs("a")
    for length, where in (("128", out), ("1024", longer)):
        run_tokenmill("best-fit", "data/megatron/a_text_document", "-o", where, "--seq-length", length, "--seed",
                      "7", cwd=folder)
    lengths = MMapIndexedDataset(folder / "data/megatron/a_text_document").sequence_lengths.astype(np.int64)
    train = lengths[:round(0.969 * len(lengths))]
    dropped, tokens = int(np.maximum(train - 128, 0).sum()), int(train.sum())
    assert dropped / tokens > 0.05
    lines = summary_lines(plan, [folder / "my.yaml"], REPO / "Snakefile")
    at = next(k for k, line in enumerate(lines) if line.startswith("    best fit data/cache/a/{seq128_seed7_best_fit,"
                                                                   "seq1024_seed7_best_fit} (the train split at 128: "))
    share = f"{100 * dropped / tokens:.1f} %"
    assert f"; truncate dropped {dropped:,} of the train split's {tokens:,} tokens ({share}); padding " in lines[at]
    assert lines[at + 1] == (f"    warning: truncate dropped {share} of the train split's tokens (documents over 128 "
                             f"tokens cut to their first 128; more than 5 %): long_doc_strategy: fragment "
                             f"(--long-doc-strategy fragment) keeps them, as pieces of 128 ({out})")
    assert sum("warning" in line for line in lines) == 1


    for length, where in (("128", out), ("1024", longer)):
        shutil.rmtree(where)
        run_tokenmill("best-fit", "data/megatron/a_text_document", "-o", where, "--seq-length", length, "--seed",
                      "7", "--long-doc-strategy", "fragment", cwd=folder)
    lines = summary_lines(plan, [folder / "my.yaml"], REPO / "Snakefile")
    assert f"; fragment kept every one of the train split's {tokens:,} tokens; padding " in lines[at]
    assert not any("warning" in line for line in lines)


def test_a_best_fit_blends_line_says_the_epochs_it_repeats_and_what_its_datasets_truncation_dropped(folder):
    """A blend of a alone, best fit at 128 with 2,000 train samples: a's train split packs into K samples, so
    the blend repeats them ceil(2,000 / K) epochs, which its line says; the warning of a's truncation (its
    folder in the blend's) follows, naming a."""
    from tokenmill.best_fit.packed_blend import build_packed_blend

    config = _config(["a"], num_samples={"train": 2000, "valid": 10, "test": 10})
    config["blends"] = {"mix": {"weights": {"a": 1.0}, "packing": "best_fit"}}
    plan = Plan(validate_config(config, "my.yaml"))
    for cache in plan.outputs.cache_dirs("blend_mix"):
        Path(cache).mkdir(parents=True)
    out = plan.outputs.blend_packing_dirs("mix")[0]
    build_packed_blend(["data/megatron/a_text_document"], [1.0], out, 128, 7, "969,30,1", {"train": 2000})
    packed = json.loads((Path(out) / "dataset-0/best_fit-truncate-train-description.json").read_text())["samples"]
    lines = summary_lines(plan, [folder / "my.yaml"], REPO / "Snakefile")
    at = lines.index(next(line for line in lines if line.startswith(f"    best fit {out} ")))
    assert (f"2,000 train samples drawn by the weights, epochs of each dataset's packed samples: a_text_document "
            f"{-(-2000 // packed)}; padding ") in lines[at]
    assert lines[at + 1].startswith("    warning: truncate dropped ")
    assert lines[at + 1].endswith(f"(data/megatron/a_text_document in {out}/dataset-0)")


def test_the_reports_front_page_gives_the_command_as_the_run_spelled_it(tmp_path, monkeypatch):
    from tokenmill.plan.summary import report_front_page

    monkeypatch.chdir(tmp_path)
    (tmp_path / "my.yaml").write_text("{}")
    page = report_front_page(REPO / "workflow/report/workflow.rst", ".snakemake/tokenmill/workflow.rst",
                             ["my.yaml"], REPO / "Snakefile")
    assert page == str(tmp_path / ".snakemake/tokenmill/workflow.rst")
    text = Path(page).read_text()
    assert f"    snakemake -s {REPO / 'Snakefile'} --configfile my.yaml --report report.html\n" in text
    assert "REPORT_COMMAND" not in text
    assert text.replace(f"snakemake -s {REPO / 'Snakefile'} --configfile my.yaml --report report.html",
                        "REPORT_COMMAND") == (REPO / "workflow/report/workflow.rst").read_text().replace(
        "REPORT_TABLE", "")


def test_the_front_page_tables_each_datasets_and_sft_sets_counts_from_their_sidecars(folder):
    """A built dataset's documents and tokens, one not built yet, the datasets' total, an SFT set's
    conversations (its sidecar's documents) and tokens, in the RST table that replaces REPORT_TABLE."""
    from tokenmill.plan.summary import report_front_page

    (folder / "data/sft").mkdir()
    (folder / "data/sft/chat.pbin.meta.json").write_text('{"documents": 65, "tokens": 54071}')
    config = _config(["a", "b"])
    config["sft"] = {"chat": {"inputs": ["raw/a.jsonl"], "tokenizer": "gpt2", "seq_length": 128,
                              "special_tokens": {"bos_token": GPT2_EOD, "eos_token": GPT2_EOD},
                              "message_construction": ["conversations"]}}
    meta = json.loads((folder / "data/packed/a.pbin.meta.json").read_text())
    page = report_front_page(REPO / "workflow/report/workflow.rst", "front.rst", [], REPO / "Snakefile",
                             Plan(validate_config(config, "my.yaml")))
    text = Path(page).read_text()
    table = text[text.index(".. list-table::"):text.index("**Datasets**")].strip().splitlines()
    cells = [line.strip().removeprefix("* ").removeprefix("- ").strip() for line in table[3:]]
    rows = [cells[k:k + 5] for k in range(0, len(cells), 5)]
    assert table[:3] == [".. list-table::", "   :header-rows: 1", ""] and rows == [
        ["name", "kind", "documents / conversations", "tokens", "file"],
        ["a", "dataset", f"{meta['documents']:,}", f"{meta['tokens']:,}", "data/packed/a.pbin"],
        ["b", "dataset", "not built", "-", "data/packed/b.pbin"],
        ["all datasets", "-", f"{meta['documents']:,}", f"{meta['tokens']:,}", "-"],
        ["chat", "SFT set", "65", "54,071", "data/sft/chat.pbin"]]


def test_a_build_whose_documents_hold_the_eod_is_warned_about_with_the_count(folder):
    run_tokenmill("pack", "raw/a.jsonl", "--tokenizer", "tok/gpt2.json", "--eod", "Ċ", "-o", "data/packed/a.pbin",
                  cwd=folder)
    inside = json.loads((folder / "data/packed/a.pbin.meta.json").read_text())["eod_within_documents"]
    config = _config(["a"])
    config["tokenizers"]["gpt2"].update(eod="Ċ", ordinary_eod=True)
    lines = summary_lines(Plan(validate_config(config, "my.yaml")), [folder / "my.yaml"], REPO / "Snakefile")
    assert inside > 0 and lines[3] == (
        f"    warning: the EOD 'Ċ' (id 198) occurs {inside:,} times inside documents' own tokens: a reader that finds "
        f"documents by scanning for the EOS (OLMo-core without its csv, datatrove) cuts them there")


def test_the_huggingface_hint_is_the_config_key_that_names_the_caches_for_that_job(folder):
    """The caches are named for NullTokenizer: a job loading the tokenizer folder with HuggingFaceTokenizer would
    build its own, so the summary gives the key that names them for it (tests/megatron/test_handoff_megatron.py
    follows it through megatron-core), and no hint once the config names the job's flags."""
    (folder / "data/cache/a/seq128_seed7").mkdir(parents=True)
    (folder / "data/megatron/tokenizers/gpt2").mkdir(parents=True)
    (folder / "data/megatron/tokenizers/gpt2/tokenizer_config.json").write_text("{}")
    config = _config(["a"])
    lines = summary_lines(Plan(validate_config(config, "my.yaml")), [folder / "my.yaml"], REPO / "Snakefile")
    flags = "--tokenizer-type HuggingFaceTokenizer --tokenizer-model data/megatron/tokenizers/gpt2"
    at = lines.index("  Megatron-LM: the arguments in data/cache/a/seq128_seed7/megatron_args.txt")
    assert lines[at + 1] == ("    for HuggingFaceTokenizer (data/megatron/tokenizers/gpt2 holds its tokenizer.json, "
                             f"the EOD as eos_token), caches named for it: tokenizers.gpt2.megatron.args: \"{flags}\"")
    config["tokenizers"]["gpt2"]["megatron"] = {"args": flags}
    lines = summary_lines(Plan(validate_config(config, "my.yaml")), [folder / "my.yaml"], REPO / "Snakefile")
    assert not any("caches named for it" in line for line in lines)
    assert "job_tokenizer_identifiers('0.19', '--tokenizer-type HuggingFaceTokenizer --tokenizer-model " \
           "data/megatron/tokenizers/gpt2')" in "\n".join(lines)
