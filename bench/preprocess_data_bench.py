"""``tokenmill preprocess-data`` against Megatron's own ``tools/preprocess_data.py``, same flags, side by side.

    python bench/preprocess_data_bench.py /tmp/corpus/real-30MB.jsonl \
        --megatron-python /tmp/peer-mc019/bin/python --megatron-tools /tmp/peer-mc019/src \
        --megatron-pythonpath /tmp/peer-mc019/shim:/tmp/peer-mc019/src \
        --tokenizer-type Llama2Tokenizer --tokenizer-model tests/data/mistral-v1.tokenizer.model --workers 2 \
        [--engines auto fastokens] [--proof-share]

Per round (interleaved, ``--rounds`` of them), on the same file and flags (``--append-eod``):
- Megatron's tool in its venv (``PYTHONPATH=TOOLS``, ``HF_HUB_OFFLINE=1``), wall seconds of the process;
- ``tokenmill preprocess-data`` with each of ``--engines`` (default: ``auto``), wall seconds of the process;
- for the SentencePiece types, ``sentencepiece`` alone on the texts parsed beforehand (encode of the list,
  one thread, then ``num_threads=workers``): its encode time only, the yardstick the issue names.
Prints MB/s (10**6 input bytes per second), each ratio to Megatron and to ``sentencepiece`` alone on
``--workers`` threads, and whether every tool's ``.bin/.idx`` is byte-identical to Megatron's.

``--proof-share``: then one more ``preprocess-data`` (the first engine) in this process, the proof's calls
(:class:`tokenmill.tokenization.proof.ProofSample`'s ``of``: the sample's choice and the reference library's
encode; ``check``: the excerpts' fast encode and the comparison) timed by ``time.process_time``, which counts
every thread of the process; for that run the next batch's encode is made to run in line (it runs beside the
proof in preprocess-data), so that is the proof's CPU. Prints it against the run's whole CPU and the documents
checked whole. The Megatron venv is a peer, never a dependency (``specs/megatron-tokenizers.md``).
"""

from __future__ import annotations

import argparse
import filecmp
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import Future
from pathlib import Path


def wall(command: list[str], env: dict | None = None) -> float:
    start = time.perf_counter()
    subprocess.run(command, check=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


class _InLine:
    """An executor that runs each call when it is submitted."""

    def __init__(self, *args, **kwargs):
        pass

    def __enter__(self) -> "_InLine":
        return self

    def __exit__(self, *exc) -> None:
        return None

    def submit(self, function, *args) -> Future:
        future = Future()
        try:
            future.set_result(function(*args))
        except Exception as exc:  # raised by result(), as a thread's would be
            future.set_exception(exc)
        return future


def proof_share(argv: list[str]) -> None:
    """One ``preprocess-data`` in this process with the proof's CPU counted (see the module docstring)."""
    from tokenmill.megatron import preprocess_data as module
    from tokenmill.megatron.preprocess_data import preprocess_data
    from tokenmill.tokenization.proof import ProofSample

    module.ThreadPoolExecutor = _InLine

    spent, tallies = [0.0], []
    original_of, original_check = ProofSample.of.__func__, ProofSample.check

    def timed_of(cls, *args, **kwargs):
        start = time.process_time()
        try:
            return original_of(cls, *args, **kwargs)
        finally:
            spent[0] += time.process_time() - start

    def timed_check(self, *args, **kwargs):
        start = time.process_time()
        try:
            tallies.append(original_check(self, *args, **kwargs))
            return tallies[-1]
        finally:
            spent[0] += time.process_time() - start

    ProofSample.of, ProofSample.check = classmethod(timed_of), timed_check
    try:
        start = time.process_time()
        summary = preprocess_data(argv, log=open(os.devnull, "w"))
        total = time.process_time() - start
    finally:
        ProofSample.of, ProofSample.check = classmethod(original_of), original_check
    tally = sum(tallies[1:], tallies[0])
    share = 100 * spent[0] / total
    print(f"  proof ({summary.engine}): {spent[0]:.2f} CPU-s of the run's {total:.2f} ({share:.1f} %); "
          f"{tally.documents:,} of {tally.texts:,} texts checked whole ({1000 * tally.documents / tally.texts:.2f} per "
          f"1,000), {tally.excerpts:,} excerpts, {tally.hf_bytes / 1e3:,.0f} kB re-encoded by the reference")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus")
    parser.add_argument("--megatron-python", required=True)
    parser.add_argument("--megatron-tools", required=True, help="a folder holding megatron/ and tools/")
    parser.add_argument("--megatron-pythonpath", help="PYTHONPATH of Megatron's tool (default: --megatron-tools)")
    parser.add_argument("--tokenizer-type", default="Llama2Tokenizer")
    parser.add_argument("--tokenizer-model", required=True)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--engines", nargs="+", default=["auto"], help="tokenmill's --engine, one run each per round")
    parser.add_argument("--proof-share", action="store_true", help="then time the proof's share (module docstring)")
    args = parser.parse_args()
    size = os.path.getsize(args.corpus)
    flags = ["--input", args.corpus, "--tokenizer-type", args.tokenizer_type, "--tokenizer-model",
             os.path.abspath(args.tokenizer_model), "--append-eod", "--workers", str(args.workers)]
    megatron_env = {**os.environ, "PYTHONPATH": args.megatron_pythonpath or args.megatron_tools, "HF_HUB_OFFLINE": "1"}
    scratch = Path(tempfile.mkdtemp(prefix="preprocess-bench-"))
    texts = None
    if args.tokenizer_type in ("Llama2Tokenizer", "SentencePieceTokenizer", "GPTSentencePieceTokenizer"):
        with open(args.corpus, encoding="utf-8") as handle:
            texts = [json.loads(line)["text"] for line in handle]
    times: dict[str, list[float]] = {}
    outputs = {}
    for _ in range(args.rounds):
        times.setdefault("megatron preprocess_data.py", []).append(wall(
            [args.megatron_python, f"{args.megatron_tools}/tools/preprocess_data.py", *flags,
             "--output-prefix", str(scratch / "megatron")], megatron_env))
        for engine in args.engines:
            label = f"tokenmill preprocess-data --engine {engine}"
            outputs[label] = scratch / f"tokenmill-{engine}"
            times.setdefault(label, []).append(wall(
                [sys.executable, "-m", "tokenmill.cli", "preprocess-data", *flags, "--engine", engine,
                 "--output-prefix", str(outputs[label])]))
        if texts is not None:
            import sentencepiece

            processor = sentencepiece.SentencePieceProcessor(model_file=args.tokenizer_model)
            for threads in (1, args.workers):
                start = time.perf_counter()
                processor.encode(texts, num_threads=threads)
                times.setdefault(f"sentencepiece alone, {threads} thread(s), encode only", []).append(
                    time.perf_counter() - start)
    megatron = min(times["megatron preprocess_data.py"])
    alone = min(times.get(f"sentencepiece alone, {args.workers} thread(s), encode only", [math.nan]))
    print(f"{args.corpus}: {size / 1e6:.1f} MB, {args.tokenizer_type}, --workers {args.workers}, "
          f"best of {args.rounds}")
    for label, seconds in times.items():
        best = min(seconds)
        print(f"  {label:50s} {best:7.2f} s  {size / best / 1e6:6.1f} MB/s  {megatron / best:5.2f}x Megatron  "
              f"{alone / best:5.2f}x sentencepiece on {args.workers}  "
              f"(all: {', '.join(f'{value:.2f}' for value in seconds)})")
    for label, prefix in outputs.items():
        identical = all(filecmp.cmp(scratch / f"megatron_text_document{suffix}",
                                    Path(f"{prefix}_text_document{suffix}"), shallow=False)
                        for suffix in (".bin", ".idx"))
        print(f"  {label}: .bin/.idx byte-identical to Megatron's: {identical}")
    if args.proof_share:
        proof_share([*flags, "--engine", args.engines[0], "--output-prefix", str(scratch / "proof")])
    shutil.rmtree(scratch)


if __name__ == "__main__":
    main()
