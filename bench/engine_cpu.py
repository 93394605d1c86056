"""CPU per byte of each fast engine on one thread, as pack feeds it: the corpus's texts parsed first, then
encoded in batches of ~4 MiB (pack's batch) by one caller, each engine and tokenizer in a fresh process,
rounds interleaved; CPU time (``RUSAGE_SELF``) rather than wall time, as this machine is shared.

    python bench/engine_cpu.py /tmp/corpus/real-100MB.jsonl --tokenizers data/tokenizers/gpt2.tokenizer.json \\
        tests/data/tekken.tokenizer.json 'tests/data/mistral-v1.tokenizer.model:Llama2Tokenizer' --rounds 3

A ``PATH:TYPE`` tokenizer is a Megatron type, converted as tokenmill converts it (the engines load that).
Prints each run and, per tokenizer, the best of the rounds and gigatoken's ratio to fastokens.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

_ONE_RUN = """
import os, resource, sys
os.environ.setdefault("RAYON_NUM_THREADS", "1")
import orjson, numpy as np
from tokenmill.tokenization.engine import GIGATOKEN_CACHE_BYTES
engine, corpus, source = sys.argv[1:4]
if ":" in source:
    from tokenmill.tokenization.families import TokenizerSpec, load_family
    path, kind = source.rsplit(":", 1)
    text = load_family(TokenizerSpec(path, kind)).hf_json
else:
    text = open(source, encoding="utf-8").read()
batches, batch, size = [], [], 0
with open(corpus, "rb") as handle:
    for line in handle:
        batch.append(orjson.loads(line)["text"])
        size += len(line)
        if size >= 4 << 20:
            batches.append(batch)
            batch, size = [], 0
batches.append(batch)
if engine == "gigatoken":
    import gigatoken
    gigatoken.set_max_cache_bytes(GIGATOKEN_CACHE_BYTES)
    tokenizer = gigatoken.Tokenizer.from_json(text)
    tokenizer.encode_batch(["warm"], parallel=False)  # awkward's import, as pack's loader does
    encode = lambda texts: tokenizer.encode_batch(texts, parallel=False)
else:
    import fastokens
    tokenizer = fastokens.Tokenizer.from_json_str(text)
    encode = lambda texts: tokenizer.encode_batch_flat(texts, add_special_tokens=False, split_special_tokens=False)
def cpu():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime
start = cpu()
for batch in batches:
    encode(batch)
print(os.path.getsize(corpus) / 1e6 / (cpu() - start))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus")
    parser.add_argument("--tokenizers", nargs="+", required=True)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    best: dict[tuple[str, str], float] = {}
    for _ in range(args.rounds):
        for source in args.tokenizers:
            for engine in ("gigatoken", "fastokens"):
                result = subprocess.run([sys.executable, "-c", _ONE_RUN, engine, args.corpus, source],
                                        capture_output=True, text=True, env={**os.environ})
                if result.returncode:
                    sys.exit(result.stderr[-2000:])
                rate = float(result.stdout.split()[-1])
                print(f"{engine:9} {os.path.basename(source):40} {rate:6.1f} MB/s of CPU", flush=True)
                best[engine, source] = max(best.get((engine, source), 0.0), rate)
    print(f"best of {args.rounds}, MB of JSONL per CPU-second, one thread:")
    for source in args.tokenizers:
        giga, fast = best["gigatoken", source], best["fastokens", source]
        print(f"  {os.path.basename(source):40} gigatoken {giga:6.1f}  fastokens {fast:6.1f}  {giga / fast:.2f}x")


if __name__ == "__main__":
    main()
