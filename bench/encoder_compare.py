"""Candidate fast encoders against Hugging Face `tokenizers`: ids compared document by document, speed.

    bash bench/make_corpus.sh 100MB          # → /tmp/corpus/real-100MB.jsonl
    # in a throwaway venv: pip install tokenizers orjson numpy fastokens==0.3.5 gigatoken==0.10.0
    python bench/encoder_compare.py /tmp/corpus/real-100MB.jsonl

For GPT-2 and Tekken: every text of the corpus is parsed into memory first, then encoded whole by
each library, with its own threads on every core and again with one thread (how tokenmill's worker
processes run an encoder), without special tokens added. A document "mismatches" when its ids differ
from HF's ``encode_batch_fast`` in any position or in length. MB are 10**6 bytes of the JSONL file.
Each encoder is warmed up on 500 documents first. Libraries that are not installed are skipped. The
one-thread figures run in a subprocess with
``RAYON_NUM_THREADS=1`` (both Rust libraries read it when their thread pool starts).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import orjson

REPO = Path(__file__).resolve().parent.parent
TOKENIZERS = {"gpt2": REPO / "data/tokenizers/gpt2.tokenizer.json", "tekken": REPO / "tests/data/tekken.tokenizer.json"}


def encoders(path: Path) -> dict:
    """name → function(texts) → list of id arrays, for every installed library."""
    from tokenizers import Tokenizer

    hf = Tokenizer.from_file(str(path))
    found = {"hf": lambda texts: [np.array(e.ids) for e in hf.encode_batch_fast(texts, add_special_tokens=False)]}
    if importlib.util.find_spec("fastokens"):
        import fastokens

        fast = fastokens.Tokenizer.from_file(str(path))

        def fastokens_encode(texts):
            ids, offsets = fast.encode_batch_flat(texts, add_special_tokens=False)
            ids, offsets = np.frombuffer(ids, np.uint32), np.frombuffer(offsets, np.uint64)
            return [ids[offsets[i]:offsets[i + 1]] for i in range(len(texts))]

        found["fastokens"] = fastokens_encode
    if importlib.util.find_spec("gigatoken"):
        import gigatoken

        giga = gigatoken.Tokenizer(str(path))

        def gigatoken_encode(texts):
            batch = giga.encode_batch(texts)
            ids, offsets = np.asarray(batch.layout.content.data), np.asarray(batch.layout.offsets.data)
            return [ids[offsets[i]:offsets[i + 1]] for i in range(len(texts))]

        found["gigatoken"] = gigatoken_encode
    return found


def measure(corpus: Path) -> dict:
    """{tokenizer: {encoder: [MB/s, mismatching documents]}} in this process's thread setting."""
    texts = [orjson.loads(line)["text"] for line in corpus.read_bytes().splitlines()]
    megabytes = corpus.stat().st_size / 1e6
    results = {}
    for name, path in TOKENIZERS.items():
        reference, results[name] = None, {}
        for encoder, encode in encoders(path).items():
            encode(texts[:500])  # warm-up: lazy regex compilation and thread-pool start are not encoding
            start = time.perf_counter()
            ids = encode(texts)
            seconds = time.perf_counter() - start
            reference = reference or ids  # hf comes first
            mismatches = sum(not np.array_equal(a, b) for a, b in zip(ids, reference))
            results[name][encoder] = [megabytes / seconds, mismatches]
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", type=Path)
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)  # the one-thread subprocess
    args = parser.parse_args()
    if args.json:
        print(json.dumps(measure(args.corpus)))
        return
    threaded = measure(args.corpus)
    single = json.loads(subprocess.run([sys.executable, __file__, str(args.corpus), "--json"], check=True,
                                       capture_output=True, text=True,
                                       env={**os.environ, "RAYON_NUM_THREADS": "1"}).stdout)
    documents = len(args.corpus.read_bytes().splitlines())
    print(f"{'tokenizer':8} {'encoder':10} {'MB/s (all cores)':>17} {'MB/s (1 thread)':>16} {'mismatching docs':>18}")
    for name, by_encoder in threaded.items():
        for encoder, (speed, mismatches) in by_encoder.items():
            print(f"{name:8} {encoder:10} {speed:17.1f} {single[name][encoder][0]:16.1f} "
                  f"{mismatches:>11} / {documents}")


if __name__ == "__main__":
    main()
