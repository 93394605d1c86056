"""The ``tokenmill`` command: parses arguments and calls one module function per verb.

The verbs by family, each verb's arguments beside its handler (``add_<verb>`` in the family's module):

    build     index, pack, tokens-in, sft, merge, preprocess-data    tokens into .pbin and its companions
    convert   to-megatron, to-datatrove, to-olmo, hf-tokenizer-folder
    caches    sample-index, blend, best-fit                          what a training job reads beside the tokens
    look      inspect, verify, report, prune

User errors (:class:`TokenmillError`, missing files) print one line, ``tokenmill: error: ...``,
and exit 1; Ctrl-C prints ``tokenmill: interrupted`` and exits 130; ``--debug`` shows the
traceback too. ``python -m tokenmill.cli`` runs :func:`main` (``cli/__main__.py``); the console script
is :mod:`tokenmill.__main__`, which holds Ctrl-C back while this package loads.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import traceback

from tokenmill import __version__
from tokenmill.cli import build, caches, convert, look
from tokenmill.errors import TokenmillError
from tokenmill.files.atomic import remove_temporaries
from tokenmill.files.urls import redact_text

# Every verb, in the order `tokenmill --help` lists them
_VERBS = (build.add_index, build.add_pack, look.add_prune, build.add_preprocess_data, build.add_merge,
          convert.add_to_megatron, build.add_tokens_in, convert.add_to_datatrove, caches.add_sample_index,
          caches.add_blend, look.add_verify, build.add_sft, look.add_inspect, look.add_report,
          convert.add_hf_tokenizer_folder, convert.add_to_olmo, caches.add_best_fit)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every verb."""
    parser = argparse.ArgumentParser(prog="tokenmill", description="Turn raw JSONL corpora into LLM training data.")
    parser.add_argument("--version", action="version", version=f"tokenmill {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks for errors")
    verbs = parser.add_subparsers(dest="verb", required=True, metavar="VERB")
    for add_verb in _VERBS:
        add_verb(verbs)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run one verb (see :mod:`tokenmill.__main__`, the console script); returns the exit code."""
    try:
        args = build_parser().parse_args(argv)
    except KeyboardInterrupt:
        print("tokenmill: interrupted", file=sys.stderr)
        return 128 + signal.SIGINT
    # SIGTERM (scancel, Snakemake stopping a job) unwinds like Ctrl-C, so writers remove their temporaries
    previous_handler = signal.signal(signal.SIGTERM, _terminate)
    try:
        args.run(args)
        sys.stdout.flush()  # here, so that a reader gone away is seen below, not at the interpreter's exit
    except KeyboardInterrupt as interruption:  # writers have removed their temporaries on the way out
        remove_temporaries()  # and these are the ones a signal caught before their writer's `with` began
        if args.debug:
            traceback.print_exc()
        terminated = isinstance(interruption, _Terminated)
        print(f"tokenmill: {'terminated' if terminated else 'interrupted'}", file=sys.stderr)
        return 128 + (signal.SIGTERM if terminated else signal.SIGINT)
    except BrokenPipeError:  # the reader went away (`tokenmill inspect ... | head`): nothing more to say
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # so that the exit's flush fails no more
        return 128 + signal.SIGPIPE
    except (TokenmillError, OSError) as exc:
        if args.debug:
            traceback.print_exc()
        message = str(exc) if isinstance(exc, TokenmillError) else f"{exc.filename or ''}: {exc.strerror}"
        print(f"tokenmill: error: {redact_text(message)}", file=sys.stderr)
        return 1
    finally:
        signal.signal(signal.SIGTERM, previous_handler)
    return 0


class _Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the program is, to unwind through the writers' clean-up."""


def _terminate(signum, frame) -> None:
    raise _Terminated()
