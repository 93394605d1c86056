"""``tokenmill preprocess-data`` against Megatron's own ``tools/preprocess_data.py``, same flags, side by side.

    python bench/preprocess_data_bench.py /tmp/corpus/real-30MB.jsonl \
        --megatron-python /tmp/peer-mc019/bin/python --megatron-tools /tmp/peer-mc019/src \
        --megatron-pythonpath /tmp/peer-mc019/shim:/tmp/peer-mc019/src \
        --tokenizer-type Llama2Tokenizer --tokenizer-model tests/data/mistral-v1.tokenizer.model --workers 2

Per round (interleaved, ``--rounds`` of them), on the same file and flags (``--append-eod``):
- Megatron's tool in its venv (``PYTHONPATH=TOOLS``, ``HF_HUB_OFFLINE=1``), wall seconds of the process;
- ``tokenmill preprocess-data``, wall seconds of the process;
- for the SentencePiece types, ``sentencepiece`` alone on the texts parsed beforehand (encode of the list,
  one thread, then ``num_threads=workers``): its encode time only, the yardstick the issue names.
Prints MB/s (10**6 input bytes per second), each ratio to Megatron, and whether both tools' ``.bin/.idx``
are byte-identical. The Megatron venv is a peer, never a dependency (``specs/megatron-tokenizers.md``).
"""

from __future__ import annotations

import argparse
import filecmp
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def wall(command: list[str], env: dict | None = None) -> float:
    start = time.perf_counter()
    subprocess.run(command, check=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus")
    parser.add_argument("--megatron-python", required=True)
    parser.add_argument("--megatron-tools", required=True, help="a folder holding megatron/ and tools/ (core_v0.19.0)")
    parser.add_argument("--megatron-pythonpath", help="PYTHONPATH of Megatron's tool (default: --megatron-tools)")
    parser.add_argument("--tokenizer-type", default="Llama2Tokenizer")
    parser.add_argument("--tokenizer-model", required=True)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=2)
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
    for _ in range(args.rounds):
        times.setdefault("megatron preprocess_data.py", []).append(wall(
            [args.megatron_python, f"{args.megatron_tools}/tools/preprocess_data.py", *flags,
             "--output-prefix", str(scratch / "megatron")], megatron_env))
        times.setdefault("tokenmill preprocess-data", []).append(wall(
            [sys.executable, "-m", "tokenmill.cli", "preprocess-data", *flags,
             "--output-prefix", str(scratch / "tokenmill")]))
        if texts is not None:
            import sentencepiece

            processor = sentencepiece.SentencePieceProcessor(model_file=args.tokenizer_model)
            for threads in (1, args.workers):
                start = time.perf_counter()
                processor.encode(texts, num_threads=threads)
                times.setdefault(f"sentencepiece alone, {threads} thread(s), encode only", []).append(
                    time.perf_counter() - start)
    megatron = min(times["megatron preprocess_data.py"])
    print(f"{args.corpus}: {size / 1e6:.1f} MB, {args.tokenizer_type}, --workers {args.workers}, "
          f"best of {args.rounds}")
    for label, seconds in times.items():
        best = min(seconds)
        print(f"  {label:50s} {best:7.2f} s  {size / best / 1e6:6.1f} MB/s  {megatron / best:5.2f}x Megatron  "
              f"(all: {', '.join(f'{value:.2f}' for value in seconds)})")
    identical = all(filecmp.cmp(scratch / f"megatron_text_document{suffix}",
                                scratch / f"tokenmill_text_document{suffix}", shallow=False)
                    for suffix in (".bin", ".idx"))
    print(f"  .bin/.idx byte-identical: {identical}")


if __name__ == "__main__":
    main()
