"""Where a pack's CPU time goes: each part of `tokenmill pack` timed alone, on one thread.

    python bench/pack_cost.py /tmp/corpus/real-100MB.jsonl            # GPT-2
    python bench/pack_cost.py /tmp/corpus/real-100MB.jsonl --tokenizer tests/data/tekken.tokenizer.json --eod '</s>'

Runs pack's own two stages (read/parse/sample/HF proof, then fast encode/check/EOD) batch after
batch in this thread, with ``RAYON_NUM_THREADS=1`` so that neither library uses a second core, and
times the functions that do the work. The sum is the CPU time a pack spends, whatever the overlap;
divided by the cores, it is the floor of its wall time. Interpreter start-up and imports are timed
in a fresh process.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

os.environ["RAYON_NUM_THREADS"] = "1"  # before either library starts its thread pool

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))

from tokenmill import pack as pack_module, tokenizer as tokenizer_module  # noqa: E402
from tokenmill.pbin import PbinWriter  # noqa: E402
from tokenmill.raw_index import scan_lines  # noqa: E402
from tokenmill.text import TextSelector  # noqa: E402

spent: dict[str, float] = defaultdict(float)


def timed(owner, name: str, label: str) -> None:
    """Replace ``owner.name`` by a wrapper adding its run time to ``spent[label]``."""
    original = getattr(owner, name)

    def wrapper(*args, **kwargs):
        start = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            spent[label] += time.perf_counter() - start

    setattr(owner, name, wrapper)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", type=Path)
    parser.add_argument("--tokenizer", type=Path, default=REPO / "data/tokenizers/gpt2.tokenizer.json")
    parser.add_argument("--eod", default="<|endoftext|>")
    args = parser.parse_args()

    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", "import tokenmill.cli, tokenmill.pack"], check=True,
                   env={**os.environ, "PYTHONPATH": str(REPO / "src")})
    spent["interpreter start-up and imports"] = time.perf_counter() - start

    start = time.perf_counter()
    info = tokenizer_module.load_tokenizer(args.tokenizer, args.eod)
    spent["Hugging Face load (with the file's parse)"] = time.perf_counter() - start
    start = time.perf_counter()
    import fastokens

    fastokens.Tokenizer.from_file(str(args.tokenizer))
    spent["fastokens load"] = time.perf_counter() - start

    timed(TextSelector, "select", "JSON parse (orjson)")
    timed(tokenizer_module.ProofSampler, "choose", "proof: choice of the sample")
    timed(tokenizer_module, "encode_batch_hf", "proof: Hugging Face encode")
    timed(tokenizer_module.Encoder, "encode_batch", "fastokens encode (and the excerpts' for the proof)")
    timed(tokenizer_module.ProofSample, "check", "proof: comparison")
    timed(PbinWriter, "write", "writes and their sha256")
    timed(tokenizer_module, "file_sha256", "sha256 of the input")
    timed(pack_module, "_prepare_batch", "_prepare_batch")
    timed(pack_module, "_finish_batch", "_finish_batch")

    settings = pack_module.PackSettings(str(args.tokenizer), eod_token=args.eod)
    pack_module._init_worker(settings, single_process=True, tokenizer=info)
    start = time.perf_counter()
    lines = scan_lines(str(args.corpus))
    spent["line scan"] = time.perf_counter() - start
    tokenizer_module.file_sha256(args.corpus)
    out = Path("/tmp/pack_cost.pbin")
    documents = 0
    with PbinWriter(str(out), info.token_width) as writer:
        for task in pack_module._batches(str(args.corpus), lines, 1, settings.batch_bytes, "fastokens", []):
            tokens, lengths, _, _ = pack_module._finish_batch(pack_module._prepare_batch(task))
            writer.write(tokens, lengths)
            documents += len(lengths)
    out.unlink()
    # What the stages spend besides the functions timed inside them.
    spent["reads, the loop over lines"] = spent.pop("_prepare_batch") - spent["JSON parse (orjson)"] \
        - spent["proof: choice of the sample"] - spent["proof: Hugging Face encode"]
    spent["EOD insertion, dtype"] = spent.pop("_finish_batch") - spent["proof: comparison"] \
        - spent["fastokens encode (and the excerpts' for the proof)"]
    total = sum(spent.values())
    megabytes = args.corpus.stat().st_size / 1e6
    print(f"{args.corpus} ({megabytes:.1f} MB, {documents} documents), {args.tokenizer.name}, one thread:")
    print("| part | s | share |\n|---|---|---|")
    for label, seconds in sorted(spent.items(), key=lambda item: -item[1]):
        print(f"| {label} | {seconds:.2f} | {seconds / total:.0%} |")
    print(f"| **total CPU** | **{total:.2f}** | |")
    print(f"floor of the wall time on 2 cores: {total / 2:.2f} s = {megabytes / (total / 2):.1f} MB/s")


if __name__ == "__main__":
    main()
