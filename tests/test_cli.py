"""cli: the `tokenmill` command — one verb per module function, each with its help; a user error is one line,
`tokenmill: error: ...`, and exit 1 (`--debug` adds the traceback); nothing is written over an input. Interrupts,
a reader that goes away and the end-to-end one-line stories: tests/e2e/test_one_line.py."""

import argparse
import contextlib
import io

import pytest

from conftest import run_tokenmill
from tokenmill import __version__
from tokenmill.cli import build_parser, main

VERBS = ["index", "pack", "prune", "preprocess-data", "merge", "to-megatron", "tokens-in", "to-datatrove",
         "sample-index", "blend", "verify", "sft", "inspect", "report", "hf-tokenizer-folder", "to-olmo", "best-fit"]


def test_every_verb_is_listed_with_what_it_does_and_answers_help():
    (verbs,) = [action for action in build_parser()._actions if isinstance(action, argparse._SubParsersAction)]
    assert list(verbs.choices) == VERBS
    assert all(choice.help for choice in verbs._choices_actions)
    for verb in VERBS:
        shown = io.StringIO()
        with contextlib.redirect_stdout(shown), pytest.raises(SystemExit) as exit_:
            main([verb, "--help"])
        assert exit_.value.code == 0 and shown.getvalue().startswith(f"usage: tokenmill {verb} "), verb


def test_the_version_is_the_package_s():
    result = run_tokenmill("--version")
    assert result.returncode == 0 and result.stdout == f"tokenmill {__version__}\n"


def test_a_user_error_is_one_line_and_exit_1_and_debug_adds_the_traceback(tmp_path):
    missing = tmp_path / "none.jsonl"
    result = run_tokenmill("index", missing, check=False)
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr == f"tokenmill: error: {missing}: cannot read (No such file or directory)\n"
    debug = run_tokenmill("--debug", "index", missing, check=False)
    assert debug.returncode == 1 and debug.stderr.startswith("Traceback (most recent call last):")
    assert debug.stderr.endswith(result.stderr)


def test_a_usage_error_is_argparse_s_exit_2(tmp_path):
    result = run_tokenmill("index", check=False)
    assert result.returncode == 2 and "the following arguments are required: input" in result.stderr
    assert run_tokenmill("no-such-verb", check=False).returncode == 2


def test_an_output_that_is_an_input_is_refused_and_the_input_kept(tmp_path):
    source = tmp_path / "x.jsonl"
    source.write_bytes(b'{"text": "a"}\n')
    result = run_tokenmill("index", source, "-o", source, check=False)
    assert result.returncode == 1
    assert result.stderr == (f"tokenmill: error: {source}: is the input {source}; refusing to overwrite an input "
                             f"(choose another output path)\n")
    assert source.read_bytes() == b'{"text": "a"}\n' and sorted(p.name for p in tmp_path.iterdir()) == ["x.jsonl"]
