"""Pack throughput and memory, side by side in one run: tokenmill's engines, the tokenizer alone, the peers.

    bash ../shared/bench/make_corpus.sh 100MB          # → /tmp/corpus/real-100MB.jsonl
    python bench/pack_throughput.py /tmp/corpus/real-100MB.jsonl --workers 1 2
    python bench/pack_throughput.py /tmp/corpus/real-100MB.jsonl --tokenizer tests/data/tekken.tokenizer.json --eod '</s>'
    # with the peers, each installed in a throwaway venv (never a dependency of tokenmill):
    python bench/pack_throughput.py CORPUS --megatron 'VENV/bin/python MEGATRON-LM/tools/preprocess_data.py' \\
        --modalities 'VENV/bin/modalities'

Every figure is end to end, JSONL file to packed file, as a separate process (``tokenmill pack``,
the peers' command lines), timed by wall clock with the peak RSS of its largest process
(``RUSAGE_CHILDREN``). Yardstick: Hugging Face ``encode_batch_fast`` on texts already parsed into
memory, the tokenizer's own threads on every core. Rounds interleave all commands so that the
machine's drifting speed hits them alike; each figure is the best of its rounds. The outputs of
the engines are compared byte for byte. MB are 10**6 bytes of JSONL.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson
from tokenizers import Tokenizer

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


def timed(command: list[str]) -> tuple[float, float]:
    """(seconds, peak RSS in GiB of the command's largest process, its workers included); the
    command must succeed."""
    # A fresh wrapper process per command: its RUSAGE_CHILDREN peak covers exactly that command's tree.
    start = time.perf_counter()
    result = subprocess.run([sys.executable, "-c", _PEAK_RSS_WRAPPER, *command], capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if result.returncode != 0:
        sys.exit(f"{shlex.join(command)} failed:\n{result.stderr[-2000:]}")
    return seconds, int(result.stdout.split()[-1]) / 2**20


_PEAK_RSS_WRAPPER = """
import resource, subprocess, sys
code = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL).returncode
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
sys.exit(code)
"""


def peer_commands(args: argparse.Namespace, scratch: str) -> dict[str, list[str]]:
    """The peers' command lines for the same corpus and tokenizer (as their docs give them)."""
    commands = {}
    if args.megatron:
        commands["Megatron preprocess_data.py"] = [
            *shlex.split(args.megatron), "--input", str(args.corpus), "--output-prefix", f"{scratch}/megatron",
            "--tokenizer-type", "HuggingFaceTokenizer", "--tokenizer-model", str(args.tokenizer.parent),
            "--append-eod", "--workers", str(os.cpu_count())]
    if args.modalities:
        commands["Modalities pack_encoded_data"] = [
            *shlex.split(args.modalities), "data", "pack_encoded_data", str(args.modalities_config)]
    return commands


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", type=Path)
    parser.add_argument("--tokenizer", type=Path, default=REPO / "data/tokenizers/gpt2.tokenizer.json")
    parser.add_argument("--eod", default="<|endoftext|>")
    parser.add_argument("--workers", type=int, nargs="+", default=[os.cpu_count()])
    parser.add_argument("--engines", nargs="+", default=["auto", "hf"])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--megatron", help="command running Megatron-LM's tools/preprocess_data.py")
    parser.add_argument("--modalities", help="the modalities command of a venv with modalities installed")
    parser.add_argument("--modalities-config", type=Path, help="its pack_encoded_data YAML for this corpus")
    args = parser.parse_args()
    megabytes = args.corpus.stat().st_size / 1e6

    scan_lines(args.corpus)  # warm the page cache
    start = time.perf_counter()
    for _ in range(5):
        scan_lines(args.corpus)
    print(f"raw index (warm): {megabytes / ((time.perf_counter() - start) / 5) / 1000:.2f} GB/s")

    best: dict[str, tuple[float, float]] = {}
    with tempfile.TemporaryDirectory() as scratch:
        commands = {f"tokenmill pack --engine {engine} --workers {workers}": [
            sys.executable, "-m", "tokenmill.cli", "pack", str(args.corpus), "--tokenizer", str(args.tokenizer),
            "--eod", args.eod, "--engine", engine, "--workers", str(workers), "-o", f"{scratch}/{engine}{workers}.pbin"]
            for engine in args.engines for workers in args.workers}
        commands.update(peer_commands(args, scratch))
        for _ in range(args.rounds):
            seconds = tokenizer_alone(args.corpus, args.tokenizer)
            best["alone"] = (min(best.get("alone", (seconds,))[0], seconds), float("nan"))
            for name, command in commands.items():
                seconds, peak = timed(command)
                if name not in best or seconds < best[name][0]:
                    best[name] = (seconds, peak)
        digests = {name: hashlib.sha256(Path(command[-1]).read_bytes()).hexdigest()[:16]
                   for name, command in commands.items() if name.startswith("tokenmill")}
    print(f"tokenizer: {args.tokenizer.name}, corpus: {args.corpus.name} ({megabytes:.1f} MB), best of {args.rounds}")
    peers = [name for name in best if not name.startswith(("tokenmill", "alone"))]
    print(f"{'what':48} {'MB/s':>7} {'peak RSS GiB':>13} {'vs HF alone':>12}" + "".join(f"  vs {peer}" for peer in peers))
    for name, (seconds, peak) in best.items():
        label = "HF encode_batch_fast alone (pre-parsed)" if name == "alone" else name
        ratios = "".join(f"  {best[peer][0] / seconds:{len(peer) + 2}.1f}x" for peer in peers)
        print(f"{label:48} {megabytes / seconds:7.2f} {peak:13.2f} {best['alone'][0] / seconds:11.2f}x{ratios}")
    print(f"output sha256 (first 16 hex): {digests}; identical: {len(set(digests.values())) == 1}")


if __name__ == "__main__":
    main()
