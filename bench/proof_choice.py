"""The proof's sample choice alone: CPU-s per GB of text of ``ProofSampler.choose`` over a corpus's texts in
batches (as pack cuts them: ordinals given), for GPT-2, SentencePiece (Mistral v1's ``.model``) and Tekken, best
of ``--rounds``, with a digest of every choice (equal digests before and after a change: the same choice).

    python bench/proof_choice.py /tmp/corpus/real-100MB.jsonl --megabytes 30 --rounds 3 [--profile]

Results: bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import cProfile
import hashlib
import json
import pstats
import time
from pathlib import Path

import numpy as np

from tokenmill.tokenization.families import TokenizerSpec
from tokenmill.tokenization.proof import DEFAULT_CHECK_FRACTION, ProofSampler
from tokenmill.tokenization.tokenizer import load_tokenizer

REPO = Path(__file__).resolve().parent.parent
TOKENIZERS = {"GPT-2": "/work/shared/tokenizers/gpt2.tokenizer.json",
              "SentencePiece": TokenizerSpec(str(REPO / "tests/data/mistral-v1.tokenizer.model"),
                                             "SentencePieceTokenizer"),
              "Tekken": str(REPO / "tests/data/tekken.tokenizer.json")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", type=Path)
    parser.add_argument("--megabytes", type=int, default=30)
    parser.add_argument("--batch", type=int, default=800)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    texts, size = [], 0
    with open(args.corpus, "rb") as lines:
        for line in lines:
            texts.append(json.loads(line)["text"])
            size += len(texts[-1].encode("utf-8", "surrogatepass"))
            if size >= args.megabytes << 20:
                break
    batches = [(texts[i:i + args.batch], np.arange(i, i + len(texts[i:i + args.batch])))
               for i in range(0, len(texts), args.batch)]
    for name, source in TOKENIZERS.items():
        sampler = ProofSampler(load_tokenizer(source).added_tokens(), DEFAULT_CHECK_FRACTION)
        digest = hashlib.sha256()
        for batch, ordinals in batches:
            choice = sampler.choose(batch, ordinals, 7)
            digest.update(repr((choice.documents, choice.excerpts, choice.eligible, choice.characters)).encode())
        best = min(_cpu(sampler, batches) for _ in range(args.rounds))
        print(f"{name}: {best:.3f} CPU-s for {size / 1e6:.1f} MB of text, {best / size * 1e9:.2f} CPU-s per GB, "
              f"choice digest {digest.hexdigest()[:16]}", flush=True)
        if args.profile:
            profile = cProfile.Profile()
            profile.runcall(_cpu, sampler, batches)
            pstats.Stats(profile).sort_stats("tottime").print_stats(6)


def _cpu(sampler: ProofSampler, batches: list) -> float:
    start = time.process_time()
    for batch, ordinals in batches:
        sampler.choose(batch, ordinals, 7)
    return time.process_time() - start


if __name__ == "__main__":
    main()
