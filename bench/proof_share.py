"""The proof's share of a pack's CPU: the same `tokenmill pack` with the proof as it is, and with its sample made
empty (``ProofSample.of`` choosing nothing, ``check`` checking nothing), interleaved, each a process of its own,
its CPU (user + system, ``RUSAGE_CHILDREN``) measured whole.

    python bench/proof_share.py /tmp/corpus/real-100MB.jsonl --rounds 3

A benchmark only: a pack without its proof is never written anywhere else. Results: bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

_PACK = r'''
import sys
import tokenmill.tokenization.proof as proof
if sys.argv[2] == "off":
    class _Nothing:
        excerpt_texts = []

        def check(self, *args, **kwargs):
            return proof.ProofTally()

    proof.ProofSample.of = classmethod(lambda cls, *args, **kwargs: _Nothing())
from tokenmill.cli import main
sys.argv = ["tokenmill", "pack", sys.argv[1], "--tokenizer", sys.argv[3], "--eod", sys.argv[4], "--workers", "2",
            "-o", sys.argv[5] + ".pbin", "--megatron", sys.argv[5]]
main()
'''


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", type=Path)
    parser.add_argument("--tokenizer", type=Path, default=REPO / "data/tokenizers/gpt2.tokenizer.json")
    parser.add_argument("--eod", default="<|endoftext|>")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    cpu: dict[str, list[float]] = {"on": [], "off": []}
    with tempfile.TemporaryDirectory() as scratch:
        for _ in range(args.rounds):
            for mode in cpu:
                before = resource.getrusage(resource.RUSAGE_CHILDREN)
                start = time.perf_counter()
                subprocess.run([sys.executable, "-c", _PACK, str(args.corpus), mode, str(args.tokenizer), args.eod,
                                f"{scratch}/{mode}"], check=True, stderr=subprocess.DEVNULL)
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                seconds = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
                cpu[mode].append(seconds)
                print(f"proof {mode:3}: {seconds:.2f} CPU-s, {time.perf_counter() - start:.2f} s wall", flush=True)
    on, off = min(cpu["on"]), min(cpu["off"])
    print(f"best of {args.rounds}: proof on {on:.2f}, off {off:.2f} CPU-s: the proof {100 * (on - off) / on:.1f} % "
          f"of the CPU (runs of one mode spread {max(cpu['on']) - on:.2f} and {max(cpu['off']) - off:.2f} CPU-s)")


if __name__ == "__main__":
    main()
