"""Scale-out figures for bench/RESULTS.md and bench/SCALE.md, through Snakemake as a user runs it.

    bash bench/make_corpus.sh 100MB && bash bench/make_corpus.sh 1GB
    python bench/scale.py --corpus /tmp/corpus/real-100MB.jsonl --big /tmp/corpus/real-1GB.jsonl

1. plan: `snakemake -n` of a dataset of 2,000 compressed files (one pack job each, one merge).
2. many compressed files: the 100 MB corpus cut into 200 files, alternately .jsonl.gz and
   .jsonl.zst, built to one .pbin; the same bytes as one job over the plain concatenation; the
   per-job overhead (wall time per job beyond the tokenizing itself).
3. scaling: a 16-file dataset (the 100 MB corpus cut in 16) with --cores 1 and --cores 2.
4. shards: the 1 GB file with shard_bytes 100MB (10 jobs, the shape of 10 GB in 1 GB shards)
   against one job over the whole file: wall times and byte equality. `--big FILE --shard-bytes 1GB`
   runs the same for a real 10 GB file.

Each runs in a scratch copy of the workflow under /tmp/tokenmill-scale.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import shutil
import subprocess
import sys
import time
from pathlib import Path

import yaml

try:
    from compression import zstd
except ImportError:
    from backports import zstd

REPO = Path(__file__).resolve().parent.parent
SCRATCH = Path("/tmp/tokenmill-scale")
TOKENIZERS = {"gpt2": {"path": "data/tokenizers/gpt2.tokenizer.json", "eod": "<|endoftext|>"}}


def workflow(name: str, datasets: dict, **extra) -> Path:
    """A scratch copy of the workflow whose config is only ``datasets``."""
    folder = SCRATCH / name
    shutil.rmtree(folder, ignore_errors=True)
    (folder / "data").mkdir(parents=True)
    for item in ("Snakefile", "workflow", "config", "environment.yml"):
        source = REPO / item
        (shutil.copytree if source.is_dir() else shutil.copy)(source, folder / item, **(
            {"symlinks": False} if source.is_dir() else {}))
    shutil.copytree(REPO / "data" / "tokenizers", folder / "data" / "tokenizers")
    config = {"tokenizers": TOKENIZERS, "datasets": datasets, "sampling": {"seq_lengths": []}, "sft": {}, **extra}
    (folder / "config" / "config.yaml").write_text(yaml.safe_dump(config))
    return folder


def snakemake(folder: Path, *args: str) -> float:
    """Run snakemake in ``folder``; the wall time in seconds."""
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "snakemake", "--quiet", "all", *args], cwd=folder, check=True,
                   stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def split_lines(corpus: Path, parts: int) -> list[bytes]:
    lines = corpus.read_bytes().splitlines(keepends=True)
    size = -(-len(lines) // parts)
    return [b"".join(lines[k * size:(k + 1) * size]) for k in range(parts)]


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


def pack_whole(folder: Path, jsonl: Path, out: Path) -> float:
    start = time.perf_counter()
    subprocess.run(["tokenmill", "pack", str(jsonl), "--tokenizer", "data/tokenizers/gpt2.tokenizer.json",
                    "--eod", "<|endoftext|>", "--workers", "2", "-o", str(out)], cwd=folder, check=True,
                   stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def plan(files: int) -> None:
    folder = workflow("plan", {"many": {"inputs": ["data/raw/many/*"], "tokenizer": "gpt2"}})
    (folder / "data/raw/many").mkdir(parents=True)
    payload = zstd.compress(b'{"text": "a small document"}\n')
    for k in range(files):
        (folder / f"data/raw/many/{k:05d}.jsonl.zst").write_bytes(payload)
    start = time.perf_counter()
    dry = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--cores", "2", "data/packed/many.pbin"],
                         cwd=folder, check=True, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    jobs = next(line.split()[-1] for line in dry.stdout.splitlines() if line.startswith("total"))
    print(f"| plan `snakemake -n`, {files} .jsonl.zst files | {jobs} jobs | {seconds:.1f} s |")


def many_compressed(corpus: Path, files: int) -> None:
    folder = workflow("compressed", {"many": {"inputs": ["data/raw/many/*"], "tokenizer": "gpt2"}})
    (folder / "data/raw/many").mkdir(parents=True)
    pieces = split_lines(corpus, files)
    for k, piece in enumerate(pieces):
        suffix, compress = (".jsonl.gz", gzip.compress) if k % 2 else (".jsonl.zst", zstd.compress)
        (folder / f"data/raw/many/{k:05d}{suffix}").write_bytes(compress(piece))
    (folder / "whole.jsonl").write_bytes(b"".join(pieces))
    wall = snakemake(folder, "--cores", "2", "data/packed/many.pbin")
    one_job = pack_whole(folder, folder / "whole.jsonl", folder / "whole.pbin")
    same = sha256(folder / "data/packed/many.pbin") == sha256(folder / "whole.pbin")
    tsvs = sorted((folder / "benchmarks/pack").glob("*.tsv"))
    job_seconds = [float(tsv.read_text().splitlines()[1].split("\t")[0]) for tsv in tsvs]
    print(f"| {files} files (.gz/.zst alternating) → one .pbin, --cores 2 | {len(tsvs)} pack + 1 merge | "
          f"{wall:.1f} s (one job over the plain file: {one_job:.1f} s); pack job median "
          f"{sorted(job_seconds)[len(job_seconds) // 2]:.2f} s; same bytes: {same} |")


def scaling(corpus: Path, files: int) -> None:
    walls = {}
    for cores in (1, 2):
        folder = workflow(f"scaling{cores}", {"split": {"inputs": ["data/raw/split/*"], "tokenizer": "gpt2"}})
        (folder / "data/raw/split").mkdir(parents=True)
        for k, piece in enumerate(split_lines(corpus, files)):
            (folder / f"data/raw/split/{k:02d}.jsonl").write_bytes(piece)
        walls[cores] = snakemake(folder, "--cores", str(cores), "data/packed/split.pbin")
    print(f"| {files} plain files, 100 MB: --cores 1 vs --cores 2 | {2 * files + 1} jobs | "
          f"{walls[1]:.1f} s vs {walls[2]:.1f} s: {walls[1] / walls[2]:.2f}x |")


def shards(big: Path, shard_bytes: str) -> None:
    folder = workflow("shards", {"big": {"inputs": [str(big)], "tokenizer": "gpt2", "shard_bytes": shard_bytes}},
                      keep_parts=False)
    wall = snakemake(folder, "--cores", "2", "data/packed/big.pbin")
    units = len(list((folder / "benchmarks/pack").glob("*.tsv")))
    one_job = pack_whole(folder, big, folder / "whole.pbin")
    same = sha256(folder / "data/packed/big.pbin") == sha256(folder / "whole.pbin")
    print(f"| {big.stat().st_size / 1e9:.2f} GB plain file, shard_bytes {shard_bytes} | {units} shards + index + "
          f"merge | {wall:.1f} s (incl. raw index and merge) vs one pack job {one_job:.1f} s; same bytes: {same} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, default=Path("/tmp/corpus/real-100MB.jsonl"))
    parser.add_argument("--big", type=Path, default=Path("/tmp/corpus/real-1GB.jsonl"))
    parser.add_argument("--shard-bytes", default="100MB", help="shard size for the shards run (default 100MB)")
    parser.add_argument("--only", choices=("plan", "compressed", "scaling", "shards"), action="append")
    args = parser.parse_args()
    only = set(args.only or ("plan", "compressed", "scaling", "shards"))
    print("| what | jobs | result |\n|---|---|---|")
    if "plan" in only:
        plan(2000)
    if "compressed" in only:
        many_compressed(args.corpus, 200)
    if "scaling" in only:
        scaling(args.corpus, 16)
    if "shards" in only:
        shards(args.big, args.shard_bytes)


if __name__ == "__main__":
    main()
