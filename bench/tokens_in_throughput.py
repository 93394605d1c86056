"""``tokenmill tokens-in`` (a build from an existing Megatron ``.bin/.idx``) against the passes it is made of.

    python bench/tokens_in_throughput.py --tokens 80000000 --rounds 3 --scratch /tmp/tm-tokens-in

Writes a synthetic Megatron prefix of random GPT-2 ids (uint16) in documents of 50-1,500 tokens, each ending with
the EOD, then times side by side in each round, on a warm page cache: ``merge`` of that one prefix (a block copy
of the ``.bin``, the floor for writing Megatron's files), ``to-megatron`` of a ``.pbin`` of the same tokens, and
``tokens-in`` (both outputs, every token checked against the vocabulary, every document's EOD, both source files
hashed). Reports seconds and the ratio to the ``merge``, best of the rounds.
"""

from __future__ import annotations

import argparse
import shutil
import time
from pathlib import Path

import numpy as np

from tokenmill.formats.bin_idx import MMapIndexedDatasetBuilder, merge_megatron, pbin_to_megatron
from tokenmill.pack.tokens_in import tokens_in

GPT2 = Path(__file__).resolve().parents[1] / "data/tokenizers/gpt2.tokenizer.json"
EOD, EOD_ID = "<|endoftext|>", 50256


def synthetic_prefix(prefix: Path, num_tokens: int, rng: np.random.Generator) -> int:
    lengths = rng.integers(50, 1500, num_tokens // 700)
    lengths = lengths[:np.searchsorted(np.cumsum(lengths), num_tokens)]
    with MMapIndexedDatasetBuilder(prefix, np.uint16) as builder:
        for chunk in np.array_split(lengths, max(1, len(lengths) // 20_000)):
            tokens = rng.integers(0, EOD_ID, int(chunk.sum()), dtype=np.uint16)
            tokens[np.cumsum(chunk) - 1] = EOD_ID
            builder.add_documents(tokens, chunk)
    return int(lengths.sum())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=80_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--scratch", type=Path, default=Path("/tmp/tm-tokens-in"))
    args = parser.parse_args()
    shutil.rmtree(args.scratch, ignore_errors=True)
    args.scratch.mkdir(parents=True)
    source = args.scratch / "source_text_document"
    tokens = synthetic_prefix(source, args.tokens, np.random.default_rng(0))
    tokens_in([str(source)], args.scratch / "x.pbin", str(GPT2), EOD)  # warms the page cache and the tokenizer
    runs = {"merge (block copy of the .bin)": lambda: merge_megatron(args.scratch / "m", [source], force=True),
            "to-megatron of the same tokens' .pbin": lambda: pbin_to_megatron(args.scratch / "x.pbin",
                                                                                args.scratch / "t"),
            "tokens-in (.pbin + .bin/.idx)": lambda: tokens_in([str(source)], args.scratch / "y.pbin", str(GPT2), EOD,
                                                               megatron_prefix=args.scratch / "y")}
    best = {label: float("inf") for label in runs}
    for _ in range(args.rounds):
        for label, run in runs.items():
            started = time.perf_counter()
            run()
            best[label] = min(best[label], time.perf_counter() - started)
    floor = best["merge (block copy of the .bin)"]
    print(f"{tokens:,} tokens ({tokens * 2 / 1e6:,.0f} MB of uint16), best of {args.rounds} rounds")
    print("| what | s | vs merge |\n|---|---|---|")
    for label, seconds in best.items():
        print(f"| {label} | {seconds:.2f} | {seconds / floor:.2f} |")
    assert (args.scratch / "y.bin").read_bytes() == source.with_suffix(".bin").read_bytes()
    shutil.rmtree(args.scratch)


if __name__ == "__main__":
    main()
