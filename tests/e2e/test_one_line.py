"""One line, never a traceback: every way a user can get an argument, a config or a file wrong.

Each case used to end in a Python traceback, or failed only after packing (issue 9). Now the CLI
prints one ``tokenmill: error: ...`` line naming the file or key and exits 1 (130 on Ctrl-C), and
the workflow refuses a bad config at ``snakemake -n``, naming the key.
"""

import hashlib
import json
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import yaml

from conftest import (GPT2, GPT2_EOD, MIXED_JSONL, PROFILE_NOTICE, REPO, run_snakemake, run_tokenmill, tool_env,
                      write_jsonl_bytes)
from tokenmill.config import validate_config
from tokenmill.errors import TokenmillError
from tokenmill.formats.pbin import PbinWriter
from tokenmill.plan import Plan


def assert_one_line_error(result, *fragments):
    assert result.returncode == 1, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("tokenmill: error: ") and "Traceback" not in result.stderr, \
        result.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


@pytest.fixture(scope="module")
def megatron_dataset(tmp_path_factory):
    folder = tmp_path_factory.mktemp("megatron")
    run_tokenmill("pack", MIXED_JSONL, "--tokenizer", GPT2, "--eod", GPT2_EOD, "-o", folder / "m.pbin")
    run_tokenmill("to-megatron", folder / "m.pbin", "-o", folder / "m")
    return folder


@pytest.mark.parametrize("option, value, message", [
    ("--seq-length", "0", "sequence length must be 2 to 2147483647, not 0"),
    ("--seq-length", "-4", "sequence length must be 2 to 2147483647, not -4"),
    ("--seed", "-1", "seed must be 0 to 4294967295"),
    ("--seed", "4294967296", "seed must be 0 to 4294967295"),
])
@pytest.mark.parametrize("verb", ["sample-index", "blend"])
def test_sequence_lengths_and_seeds_outside_megatrons_range(tmp_path, megatron_dataset, verb, option, value, message):
    settings = {"--seq-length": "8", "--seed": "1", option: value}
    if verb == "sample-index":
        target, amount = [megatron_dataset / "m"], ["--epochs", "1"]
    else:
        target, amount = ["1", megatron_dataset / "m"], ["--num-samples", "5", "--valid-samples", "0",
                                                         "--test-samples", "0"]
    result = run_tokenmill(verb, *target, "-o", tmp_path / "cache", *[x for pair in settings.items() for x in pair],
                           *amount, "--split", "1,0,0", "--vocab-size", "50257", check=False)
    assert_one_line_error(result, message)


@pytest.mark.parametrize("weights, message", [
    (["0", "0"], "blend weights add up to zero"),
    (["nan", "1"], "blend weights must be finite numbers ≥ 0, got [nan, 1.0]"),
    (["inf", "1"], "blend weights must be finite numbers ≥ 0, got [inf, 1.0]"),
])
def test_blend_weights_that_cannot_be_normalised(tmp_path, megatron_dataset, weights, message):
    prefix = megatron_dataset / "m"
    result = run_tokenmill("blend", weights[0], prefix, weights[1], prefix, "-o", tmp_path / "cache", "--seq-length",
                           "8", "--seed", "1", "--num-samples", "10", "--valid-samples", "0", "--test-samples", "0",
                           "--vocab-size", "50257", check=False)
    assert_one_line_error(result, message)


def sft_config(tmp_path, **entry):
    settings = {"inputs": [str(REPO / "data/raw/chat.jsonl")], "tokenizer": "gpt2",
                "special_tokens": {"bos_token": GPT2_EOD, "eos_token": GPT2_EOD},
                "message_construction": ["role", "instruction", "conversations"], "seq_length": 256, **entry}
    path = tmp_path / "sft.yaml"
    path.write_text(yaml.safe_dump({"tokenizers": {"gpt2": {"path": str(GPT2)}}, "sft": {"chat": settings}}))
    return path


@pytest.mark.parametrize("entry, message", [
    ({"inputs": []}, "sft.yaml: sft.chat.inputs: [] should be non-empty"),
    ({"seq_length": "abc"}, "sft.yaml: sft.chat.seq_length: 'abc' is not of type 'integer'"),
    ({"truncation": "cut"}, "sft.yaml: sft.chat.truncation: 'cut' is not one of ['drop', 'truncate']"),
    ({"speakers": {}}, "unknown key 'speakers' (did you mean 'special_tokens'?)"),
])
def test_sft_config_is_validated_with_the_workflow_schema(tmp_path, entry, message):
    result = run_tokenmill("sft", sft_config(tmp_path, **entry), "chat", "-o", tmp_path / "chat.pbin", check=False)
    assert_one_line_error(result, message)


def test_sft_skip_keeps_each_reason_and_its_line_numbers(tmp_path):
    good = {"role": "r", "instruction": "i", "conversations": [{"from": "human", "value": "hi"}]}
    lines = [json.dumps({**good, "meta": {"x": 2}}).encode(), b'{"role": "r", "instruction": tru',
             json.dumps({**good, "meta": "a string"}).encode(), json.dumps({**good, "meta": {"x": 1}}).encode()]
    source = write_jsonl_bytes(tmp_path / "chat.jsonl", lines)
    config = sft_config(tmp_path, inputs=[str(source)], on_bad_line="skip",
                        loss_masking_jq_patterns=[".meta | select(.x == 1)"])
    run_tokenmill("sft", config, "chat", "-o", tmp_path / "chat.pbin")
    skipped = json.loads((tmp_path / "chat.pbin.meta.json").read_text())["skipped"]
    assert skipped == {
        "invalid JSON (unexpected end of data at byte 32)": {"count": 1, "first_lines": [2]},
        "loss masking pattern '.meta | select(.x == 1)' fails (Cannot iterate over string (\"a string\"))":
            {"count": 1, "first_lines": [3]}}


@pytest.mark.parametrize("change, message", [
    ({"tokenizer": []}, "m.pbin.meta.json: tokenizer must be an object, not []"),
    ({"tokenizer": {"vocab_size": "x"}}, 'm.pbin.meta.json: tokenizer.vocab_size must be an integer, not "x"'),
    ({"sources": [1]}, "m.pbin.meta.json: sources[0] must be an object with a string path"),
    ({"documents": 2.5}, "m.pbin.meta.json: documents must be an integer, not 2.5"),
])
def test_sidecars_with_wrong_types_are_named_by_every_reader(tmp_path, megatron_dataset, change, message):
    meta = json.loads((megatron_dataset / "m.pbin.meta.json").read_text())
    (tmp_path / "m.pbin").write_bytes((megatron_dataset / "m.pbin").read_bytes())
    (tmp_path / "m.pbin.meta.json").write_text(json.dumps({**meta, **change}))
    for verb in (["to-megatron", tmp_path / "m.pbin", "-o", tmp_path / "out"], ["inspect", tmp_path / "m.pbin"],
                 ["sample-index", megatron_dataset / "m", "-o", tmp_path / "cache", "--seq-length", "8", "--seed", "1",
                  "--epochs", "1", "--vocab-size-from", tmp_path / "m.pbin.meta.json"]):
        assert_one_line_error(run_tokenmill(*verb, check=False), message)
    result = run_tokenmill("verify", tmp_path / "m.pbin", check=False)
    assert result.returncode == 1 and message in result.stderr and "Traceback" not in result.stderr


def test_a_cache_description_that_is_not_an_object_is_a_problem_not_a_crash(tmp_path, megatron_dataset):
    run_tokenmill("sample-index", megatron_dataset / "m", "-o", tmp_path / "cache", "--seq-length", "8", "--seed", "1",
                  "--epochs", "1", "--split", "1,0,0", "--vocab-size", "50257")
    text = b"[1, 2]"
    for path in (tmp_path / "cache").iterdir():  # the same files, under the name of a list description
        path.rename(path.with_name(hashlib.md5(text).hexdigest() + path.name[32:]))
    next((tmp_path / "cache").glob("*-description.txt")).write_bytes(text)
    result = run_tokenmill("verify", tmp_path / "cache", check=False)
    assert result.returncode == 1 and "a JSON list, Megatron writes an object" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("sent, code, said", [(signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "terminated")],
                         ids=["ctrl-c", "sigterm"])  # SIGTERM: what scancel and Snakemake send
def test_ctrl_c_or_sigterm_prints_one_line_removes_temporaries_and_exits(tmp_path, sent, code, said):
    corpus = tmp_path / "big.jsonl"
    corpus.write_bytes(MIXED_JSONL.read_bytes() * 400)
    process = subprocess.Popen([sys.executable, "-m", "tokenmill.cli", "pack", str(corpus), "--tokenizer", str(GPT2),
                                "--no-eod", "--engine", "hf", "--batch-bytes", "20000", "-o",
                                str(tmp_path / "big.pbin")],
                               stderr=subprocess.PIPE, text=True, env=tool_env(),
                               # a suite started in the background (`cmd &`) ignores SIGINT, which its
                               # children would inherit, and Python then installs no Ctrl-C handler
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 60
    while not list(tmp_path.glob(".big.pbin.tmp*")):  # interrupt once the writer has begun
        assert time.monotonic() < deadline and process.poll() is None
        time.sleep(0.02)
    process.send_signal(sent)
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == code and stderr == f"tokenmill: {said}\n"
    assert sorted(path.name for path in tmp_path.iterdir()) == ["big.jsonl"]


def test_ctrl_c_while_the_command_is_still_starting_is_one_line(tmp_path):
    """An interrupt during the imports (numpy, tokenizers: ~0.2 s) or the parse of the arguments, as when
    Ctrl-C stops a Snakemake run whose job has just started: one line, never the traceback of an import."""
    command = [str(Path(sys.executable).parent / "tokenmill"), "pack", str(MIXED_JSONL), "--tokenizer", str(GPT2),
               "--eod", GPT2_EOD, "-o", str(tmp_path / "x.pbin")]
    said = set()
    for delay in (0.03, 0.06, 0.1, 0.15, 0.2, 0.3):
        process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, env=tool_env(),
                                   preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        time.sleep(delay)
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=60)
        # An interrupt while the interpreter checks argv[0] (its zipimport probe) is printed and dropped by Python
        # itself, which then runs the command as if it had never come: what follows is the command's own output.
        # Its traceback may chain the KeyError of zipimport's cache, which names the script's path: it is that probe
        # when every frame it shows is one of Python's frozen modules (zipimport's, and the import machinery it calls).
        probe, dropped, after = stderr.partition("KeyboardInterrupt\n")
        frames = [line for line in probe.splitlines() if line.startswith("  File ")]
        if probe.startswith("Failed checking if argv[0] is an import path entry\n") and dropped and frames and \
                all(frame.startswith('  File "<frozen ') for frame in frames):
            stderr = after
        # Only the interpreter's start, pip's wrapper script and the package's first two imports (a few ms, more on
        # a loaded machine) come before SIGINT is held: an interrupt there is Python's own, whose traceback ends in
        # that start and never in a module tokenmill imports later (in its streams' or site's set-up, a
        # "Fatal Python error: init_...").
        before_tokenmill = stderr.startswith(("Traceback", "Fatal Python error: init_")) and not any(
            f"{os.sep}{name}" in stderr for name in (f"tokenmill{os.sep}cli{os.sep}", "numpy", "orjson", "tokenizers"))
        # A quick machine may finish the pack before a late interrupt (see the next test)
        finished = _said_what_it_wrote(stderr, tmp_path / "x.pbin")
        assert before_tokenmill or finished or stderr in ("", "tokenmill: interrupted\n"), (delay, stderr)
        assert process.returncode in (0, 1, 130, -signal.SIGINT), (delay, process.returncode)
        said.add(stderr)
    assert "tokenmill: interrupted\n" in said  # at least one landed while Python ran


def _said_what_it_wrote(stderr: str, output: Path) -> bool:
    """``pack``'s one line on what it wrote, then at most the one line of an interrupt."""
    lines = stderr.splitlines()
    return lines[:1] != [] and lines[0].startswith(f"{output}: 50 documents") and \
        lines[1:] in ([], ["tokenmill: interrupted"])


def test_ctrl_c_as_the_command_finishes_is_at_most_one_line(tmp_path):
    """An interrupt just after the output is in place, while the command says so and exits: its line and at
    most the interrupt's. Never "Exception ignored" and a traceback, which an interrupt landing in a weakref
    callback printed (at the first of these delays, every time) while the command went on."""
    output = tmp_path / "x.pbin"
    command = [str(Path(sys.executable).parent / "tokenmill"), "pack", str(MIXED_JSONL), "--tokenizer", str(GPT2),
               "--eod", GPT2_EOD, "-o", str(output)]
    for delay in (0, 0.001, 0.002, 0.003, 0.005, 0.008):
        output.unlink(missing_ok=True)
        process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, env=tool_env(),
                                   preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        while not output.exists() and process.poll() is None:
            time.sleep(0.0005)
        time.sleep(delay)
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=60)
        assert _said_what_it_wrote(stderr, output) or stderr == "tokenmill: interrupted\n", (delay, stderr)
        assert process.returncode in (0, 130), (delay, process.returncode, stderr)


def test_a_write_error_while_finishing_names_the_output_and_leaves_nothing(tmp_path):
    with PbinWriter(tmp_path / "tiny.pbin", 2) as writer:  # 10 kB of tokens, a 100 kB Megatron .idx
        writer.write(np.arange(5000) % 100, np.ones(5000, np.int64))
        writer.sidecar = {"tokenizer": {"vocab_size": 100}}
    (tmp_path / "out").mkdir()

    def file_size_limit():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (50_000, 50_000))

    result = subprocess.run([sys.executable, "-m", "tokenmill.cli", "to-megatron", str(tmp_path / "tiny.pbin"), "-o",
                             str(tmp_path / "out/t")], preexec_fn=file_size_limit, capture_output=True, text=True,
                            env=tool_env())
    assert_one_line_error(result, f"{tmp_path / 'out/t'}: cannot write (File too large)")
    assert os.listdir(tmp_path / "out") == []


@pytest.mark.slow
def test_a_tokenizer_json_that_makes_the_rust_loader_panic_is_one_line(tmp_path):
    # pyo3 turns a Rust panic into PanicException, a BaseException that `except Exception` misses,
    # and Rust prints "thread ... panicked at" (and a backtrace) to stderr before Python sees it
    config = json.loads(GPT2.read_text(encoding="utf-8"))
    config["model"]["continuing_subword_prefix"] = "##"  # the byte-level merges are sliced past their ends
    bad = tmp_path / "bad.tokenizer.json"
    bad.write_text(json.dumps(config), encoding="utf-8")
    for engine in ("auto", "hf", "fastokens"):
        result = run_tokenmill("pack", MIXED_JSONL, "--tokenizer", bad, "--no-eod", "--engine", engine, "-o",
                               tmp_path / "o.pbin", check=False)
        assert_one_line_error(result, f"{bad}: Hugging Face's tokenizers cannot load it (it panicked: slice index")
        assert "panicked at" not in result.stderr
    assert os.listdir(tmp_path) == ["bad.tokenizer.json"]


@pytest.mark.parametrize("edit, message", [
    (lambda c: c["sampling"].update(split="0,0,0"), "sampling.split: split '0,0,0': the weights add up to zero"),
    (lambda c: c["sampling"].update(split="abc"), "sampling.split: split 'abc': not a list of numbers"),
    (lambda c: c["sampling"].update(split="1,1,1,1"), "sampling.split: split '1,1,1,1': at most 3 weights"),
    (lambda c: c["tokenizers"]["gpt2"].update(eod="<|end|>"), "tokenizers.gpt2: data/tokenizers/gpt2.tokenizer.json: "
                                                              "EOD token '<|end|>' is not a single token"),
    (lambda c: c["tokenizers"]["gpt2"].update(path="data/tokenizers"), "tokenizers.gpt2: data/tokenizers: is a "
                                                                       "directory"),
    (lambda c: c.update(datasets={**c["datasets"], "blend_m": c["datasets"]["demo"]},
                        blends={"m": {"weights": {"demo": 1}}}), "datasets.blend_m: its caches would share"),
    (lambda c: c.update(blends={"m": {"weights": {"demo": 0}}}), "blends.m.weights: blend weights add up to zero"),
    (lambda c: c["sampling"].update(seeds=[2**32]), "4294967296 is greater than the maximum of 4294967295"),
    (lambda c: c["sampling"].update(seq_lengths=[2**40]), "1099511627776 is greater than the maximum of 2147483647"),
    (lambda c: c["datasets"]["demo"].update(shard_bytes="1.2.3MB"), "datasets.demo.shard_bytes: '1.2.3MB' is not a "
                                                                     "size"),
    (lambda c: c["datasets"]["demo"].update(shard_bytes="0.5"), "datasets.demo.shard_bytes: '0.5' is less than one "
                                                                "byte"),
    (lambda c: c["datasets"]["demo"].update(tokenizer=["gpt2", "gpt2"]), "['gpt2', 'gpt2'] has non-unique elements"),
], ids=["split-zero", "split-abc", "split-four", "eod", "tokenizer-dir", "blend-name", "blend-zero", "seed",
        "seq-length", "shard-bytes-garbage", "shard-bytes-zero", "tokenizer-twice"])
def test_bad_config_values_fail_before_any_job_naming_the_key(monkeypatch, edit, message):
    """What `snakemake -n` prints in one line, before any job (tokenmill.config + tokenmill.plan)."""
    monkeypatch.chdir(REPO)
    config = yaml.safe_load((REPO / "config/config.yaml").read_text())
    edit(config)
    with pytest.raises(TokenmillError, match=re.escape(message)) as error:
        Plan(validate_config(config, "config/config.yaml"))
    assert message in str(error.value) and "\n" not in str(error.value)


@pytest.mark.slow
def test_a_bad_config_stops_snakemake_in_one_line_before_any_job(workflow_dir):
    config_path = workflow_dir / "config/config.yaml"
    config = yaml.safe_load(config_path.read_text())
    config["sampling"]["split"] = "0,0,0"
    config_path.write_text(yaml.safe_dump(config))
    result = run_snakemake(workflow_dir, "-n", check=False)
    assert result.returncode == 1 and not (workflow_dir / "data/index").exists()
    assert result.stderr.strip() == (f"{PROFILE_NOTICE}\ntokenmill: error: config/config.yaml: sampling.split: split "
                                     f"'0,0,0': the weights add up to zero")


def test_a_failed_job_ends_the_run_with_its_one_line_error_and_its_log(workflow_dir, tmp_path):
    """Snakemake's error block of a failed tokenmill job, the shell command twice among it, gives way to the job's
    own line and log, the last thing printed: by the tokenmill logger, which the workflow's profiles/default sets
    and Snakemake finds by itself beside the Snakefile, so with no flag at all (the README's plain commands), from
    another folder with -s too, and with the quiet local profile. Without any profile (--workflow-profile none)
    the Snakefile's onerror prints them after Snakemake's block."""
    demo = workflow_dir / "data/raw/demo.jsonl"
    lines = demo.read_bytes().count(b"\n")
    demo.write_bytes(demo.read_bytes() + b"not json\n")
    error = [f"tokenmill: error: data/raw/demo.jsonl:{lines + 1}: invalid JSON (invalid literal, expected 'null' at "
             f"byte 0) (on_bad_line: error; use skip to leave such lines out)", "  log: logs/pack/demo.log"]
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "data").mkdir(parents=True)
    shutil.copytree(workflow_dir / "data/raw", elsewhere / "data/raw")
    shutil.copytree(workflow_dir / "data/tokenizers", elsewhere / "data/tokenizers")
    for folder, args in ((workflow_dir, ()), (workflow_dir, ("--profile", "workflow/profiles/default")),
                         (elsewhere, ("-s", workflow_dir / "Snakefile", "--configfile",
                                      workflow_dir / "config/config.yaml"))):
        result = run_snakemake(folder, "data/packed/demo.pbin", *args, check=False)
        assert result.returncode == 1 and result.stderr.splitlines()[-2:] == error, result.stderr
        for noise in ("RuleException", "CalledProcessError", "Error in rule", "tokenmill pack", "Traceback",
                      "WorkflowError", "Look above"):
            assert noise not in result.stderr, (args, noise)
    plain = run_snakemake(workflow_dir, "--workflow-profile", "none", "data/packed/demo.pbin", check=False)
    assert plain.returncode == 1 and "Error in rule pack" in plain.stderr
    tail = plain.stderr[plain.stderr.rindex("Exiting because a job execution failed"):].splitlines()
    assert tail[1:3] == error


def test_the_logger_shows_a_failure_that_is_not_tokenmills_as_snakemake_does(tmp_path, capsys):
    """A job whose log does not end in tokenmill's line (a shell command of a user's own, a killed job)
    keeps Snakemake's RuleException and error block."""
    import logging

    from snakemake.logging import DefaultFilter, DefaultFormatter
    from snakemake.settings.types import OutputSettings
    from snakemake_interface_logger_plugins.common import LogEvent

    from snakemake_logger_plugin_tokenmill import LogHandler

    handler = LogHandler(OutputSettings(), None)
    handler.setFormatter(DefaultFormatter())
    handler.addFilter(DefaultFilter(set(), False, False, False, False))
    (tmp_path / "other.log").write_text("Killed\n")
    (tmp_path / "ours.log").write_text("progress...\ntokenmill: error: x.jsonl:3: invalid JSON\n")

    def records(log):
        exception = logging.LogRecord("snakemake", logging.ERROR, "", 0, "RuleException:\nCalledProcessError ...",
                                      None, None)
        block = logging.LogRecord("snakemake", logging.ERROR, "", 0, None, None, None)
        block.__dict__.update(event=LogEvent.JOB_ERROR, rule_name="pack", rule_msg=None, jobid=1, input=[],
                              output=[], log=[str(log)], conda_env=None, shellcmd="tokenmill pack ...", aux={},
                              indent=False)
        return [exception, block]

    for record in records(tmp_path / "other.log"):
        handler.handle(record)
    shown = capsys.readouterr().err
    assert "RuleException" in shown and "Error in rule pack" in shown and "tokenmill pack" in shown
    for record in records(tmp_path / "ours.log"):
        handler.handle(record)
    handler.handle(logging.LogRecord("snakemake", logging.ERROR, "", 0,
                                     "WorkflowError:\nAt least one job did not complete successfully.", None, None))
    assert capsys.readouterr().err == f"tokenmill: error: x.jsonl:3: invalid JSON\n  log: {tmp_path / 'ours.log'}\n"


def test_a_reader_that_went_away_ends_the_command_quietly(tmp_path):
    """``tokenmill inspect ... | head``: the pipe's reader is gone before the command writes a line."""
    source = write_jsonl_bytes(tmp_path / "x.jsonl", [b'{"text": "a document"}'] * 3)
    run_tokenmill("pack", source, "--tokenizer", GPT2, "--eod", GPT2_EOD, "-o", tmp_path / "x.pbin")
    read_end, write_end = os.pipe()
    os.close(read_end)  # before the command starts: its every write meets a closed pipe
    result = subprocess.run([sys.executable, "-m", "tokenmill.cli", "inspect", str(tmp_path / "x.pbin"), "--doc", "0"],
                            stdout=write_end, stderr=subprocess.PIPE, text=True, env=tool_env())
    os.close(write_end)
    assert (result.returncode, result.stderr) == (128 + signal.SIGPIPE, "")
