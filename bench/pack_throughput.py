"""Pack throughput against the tokenizer alone, side by side in one run, as a ratio.

    bash ../shared/bench/make_corpus.sh 100MB          # → /tmp/corpus/real-100MB.jsonl
    python bench/pack_throughput.py /tmp/corpus/real-100MB.jsonl --workers 2

Yardstick: ``encode_batch_fast`` on texts already parsed into memory, 1 MB batches, the tokenizer's
own threads on every core — the best the tokenizer can do with no I/O, JSON or packing around it.
Rounds interleave yardstick and pack runs; each figure is the best of its rounds.
Measured: ``tokenmill pack`` end to end (index read, JSON parse, tokenize, EOD, ordered writes,
sidecar with sha256 of the input), in-process, once per worker count. Also: raw index build speed
(vectorised newline scan, file warm in the page cache). MB are 10**6 bytes of JSONL.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import orjson
from tokenizers import Tokenizer

from tokenmill.pack import PackSettings, pack
from tokenmill.raw_index import scan_lines

REPO = Path(__file__).resolve().parent.parent


def tokenizer_alone(corpus: Path, tokenizer_path: Path) -> float:
    """Seconds for encode_batch_fast over all texts, pre-parsed, in ~1 MB batches."""
    texts = [orjson.loads(line)["text"] for line in corpus.read_bytes().splitlines()]
    batches, batch, size = [], [], 0
    for text in texts:
        batch.append(text)
        size += len(text)
        if size >= 1 << 20:
            batches.append(batch)
            batch, size = [], 0
    batches.append(batch)
    tokenizer = Tokenizer.from_file(str(tokenizer_path))
    start = time.perf_counter()
    for batch in batches:
        tokenizer.encode_batch_fast(batch)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", type=Path)
    parser.add_argument("--tokenizer", type=Path, default=REPO / "data/tokenizers/gpt2.tokenizer.json")
    parser.add_argument("--eod", default="<|endoftext|>")
    parser.add_argument("--workers", type=int, nargs="+", default=[os.cpu_count()])
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    megabytes = args.corpus.stat().st_size / 1e6

    scan_lines(args.corpus)  # warm the page cache
    start = time.perf_counter()
    for _ in range(5):
        scan_lines(args.corpus)
    index_seconds = (time.perf_counter() - start) / 5
    print(f"raw index (warm): {megabytes / index_seconds / 1000:.2f} GB/s")

    # Rounds interleave the yardstick and every worker count, so that drifting machine speed hits all
    # of them alike; each figure is the best of its rounds.
    best: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as scratch:
        for _ in range(args.rounds):
            seconds = tokenizer_alone(args.corpus, args.tokenizer)
            best["alone"] = min(best.get("alone", seconds), seconds)
            for workers in args.workers:
                settings = PackSettings(str(args.tokenizer), eod_token=args.eod, workers=workers)
                start = time.perf_counter()
                pack([str(args.corpus)], f"{scratch}/out.pbin", settings, log=lambda message: None)
                seconds = time.perf_counter() - start
                best[workers] = min(best.get(workers, seconds), seconds)
    print(f"tokenizer alone (encode_batch_fast, pre-parsed): {megabytes / best['alone']:.2f} MB/s")
    for workers in args.workers:
        print(f"tokenmill pack --workers {workers}: {megabytes / best[workers]:.2f} MB/s, "
              f"{best['alone'] / best[workers]:.2f} x the tokenizer alone")


if __name__ == "__main__":
    main()
