"""Follow ``tokenmill pack``'s settings trip: which files a reader visits from the CLI's handler to the first
batch, and how often the trip enters ``tokenmill.files`` (issue 53: "Following pack's settings now takes 42
stays in 18 files, 10 in files/").

The trip is the main thread's calls, from the CLI's ``pack`` handler until the pack starts its first input
(``tokenmill.pack.pretraining._pack_input``): the arguments, the settings, each input resolved, the engine
started, the outputs opened; ``--verb sft`` follows ``tokenmill sft`` over the demo config's ``chat`` set the same
way, until its first conversations are written (``tokenmill.pack.sft._write_conversations``). Imports (a module's
body) are not part of it. A *stay* begins where a tokenmill function is entered from a tokenmill function of
another file (or from outside tokenmill); an *entry into files/* is a stay in ``tokenmill/files/`` entered from
outside it (calls inside files/ are files/' own business).

Usage (from the repository root, PYTHONPATH=src):

    python bench/trace_settings.py [--verb pack|sft] [--input data/raw/demo.jsonl] [--show]

Cost: one pack of the input under ``sys.setprofile`` (the demo: about a second).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections import Counter

import tokenmill
from tokenmill import cli

PACKAGE = os.path.dirname(os.path.abspath(tokenmill.__file__)) + os.sep
FILES_ROOM = os.path.join(PACKAGE, "files") + os.sep
ENDS = {"pack": ("_pack_input", os.path.join(PACKAGE, "pack", "pretraining.py")),
        "sft": ("_write_conversations", os.path.join(PACKAGE, "pack", "sft.py"))}


class _TripEnds(Exception):
    """Raised from the profiler where the trip ends: the pack is not run further."""


def trace(argv: list[str], end: tuple[str, str]) -> list[tuple[str, str, str | None]]:
    """The stays of ``tokenmill ARGV``'s trip until the function ``end`` (name, file) is entered: ``(file, first
    function, file it was entered from)``."""
    stays: list[tuple[str, str, str | None]] = []
    stack: list[str | None] = []  # per Python frame: its tokenmill file (None: not tokenmill, or a module's body)
    importing = [0]

    def profile(frame, event, _arg):
        if event == "call":
            code = frame.f_code
            if (code.co_name, code.co_filename) == end:
                raise _TripEnds
            in_package = code.co_filename.startswith(PACKAGE) and code.co_name != "<module>"
            if code.co_name == "<module>":
                importing[0] += 1
            file = code.co_filename if in_package and not importing[0] else None
            caller = next((entry for entry in reversed(stack) if entry is not None), None)
            if file is not None and file != caller:
                stays.append((file, code.co_name, caller))
            stack.append(file)
        elif event == "return":
            if frame.f_code.co_name == "<module>":
                importing[0] -= 1
            if stack:
                stack.pop()

    sys.setprofile(profile)
    try:
        cli.main(argv)
    except _TripEnds:
        pass
    finally:
        sys.setprofile(None)
    return stays


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--verb", choices=sorted(ENDS), default="pack")
    parser.add_argument("--input", default="data/raw/demo.jsonl", help="pack's input")
    parser.add_argument("--tokenizer", default="data/tokenizers/gpt2.tokenizer.json")
    parser.add_argument("--show", action="store_true", help="print each stay")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        output = os.path.join(folder, "trace.pbin")
        argv = ["pack", args.input, "--tokenizer", args.tokenizer, "--eod", "<|endoftext|>", "-o", output] \
            if args.verb == "pack" else ["sft", "config/config.yaml", "chat", "-o", output]
        stays = trace(argv, ENDS[args.verb])
    in_files = [stay for stay in stays if stay[0].startswith(FILES_ROOM)]
    entries = [stay for stay in in_files if stay[2] is None or not stay[2].startswith(FILES_ROOM)]
    if args.show:
        for file, function, caller in stays:
            print(f"  {os.path.relpath(file, PACKAGE)}:{function}  (from "
                  f"{os.path.relpath(caller, PACKAGE) if caller else '-'})")
    by_file = Counter(os.path.relpath(file, PACKAGE) for file, _, _ in in_files)
    print(f"{args.verb}'s settings trip: {len(stays)} stays in {len({stay[0] for stay in stays})} files; "
          f"{len(in_files)} stays in files/, entered {len(entries)} times from outside it "
          f"({', '.join(f'{name} {count}' for name, count in by_file.most_common())})")


if __name__ == "__main__":
    main()
