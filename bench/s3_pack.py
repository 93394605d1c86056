"""`tokenmill pack` from object storage against the same bytes on disk: throughput, requests, peak RSS.

    python bench/s3_pack.py /tmp/corpus/real-1GB.jsonl --rounds 2

Starts moto's S3 server on a free loopback port (the ``[test]`` extra), uploads the corpus plain and
zstd-compressed (``zstd -3``), then packs, interleaved round by round: the local file, the plain object,
the local ``.zst`` and the ``.zst`` object (GPT-2, fastokens, ``--workers`` = cores). Each pack is a
fresh ``tokenmill`` process; its wall time, its peak RSS (GNU ``time``'s ``%M``) and the requests
the server logged while it ran are taken, and every ``.pbin`` is checked equal to the local file's.
Prints a Markdown table: MB/s of JSONL text, the ratio object / local file, requests per GB, peak RSS.

A loopback server measures tokenmill's own cost of reading objects (the ranged GETs, the buffer, the
pinning), not a network's: against a real store the read is bounded by its bandwidth instead.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
GPT2 = REPO / "data/tokenizers/gpt2.tokenizer.json"
BUCKET = "bench"
# moto's access log: one line per request, its method after the quote (and a colour code for a 206)
REQUEST = re.compile(rb'"(?:\x1b\[[0-9;]*m)*(GET|HEAD|PUT|POST|DELETE) ')


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _start_server(log_path: Path) -> tuple[subprocess.Popen, str]:
    server = shutil.which("moto_server", path=os.path.dirname(sys.executable)) or shutil.which("moto_server")
    if server is None:
        sys.exit("moto_server is not installed: pip install -e '.[test]'")
    port = _free_port()
    endpoint = f"http://127.0.0.1:{port}"
    process = subprocess.Popen([server, "-H", "127.0.0.1", "-p", str(port)], stdout=subprocess.DEVNULL,
                               stderr=open(log_path, "wb"))
    for _ in range(100):
        try:
            urllib.request.urlopen(f"{endpoint}/moto-api/", timeout=1)
            return process, endpoint
        except OSError:
            time.sleep(0.1)
    sys.exit("moto_server did not start")


def _requests(log_path: Path, since: int) -> dict[str, int]:
    with open(log_path, "rb") as log:
        log.seek(since)
        counts: dict[str, int] = {}
        for method in REQUEST.findall(log.read()):
            counts[method.decode()] = counts.get(method.decode(), 0) + 1
    return counts


def _pack(source: str, out: Path, env: dict, workers: int) -> tuple[float, float]:
    """Wall seconds and peak RSS (GiB, GNU time's %M: the exec'd process's own, not the forked copy of this
    one that ru_maxrss would count) of one `tokenmill pack` process."""
    command = ["/usr/bin/time", "-f", "%M", sys.executable, "-m", "tokenmill", "pack", source, "--tokenizer", str(GPT2),
               "--eod", "<|endoftext|>", "--engine", "fastokens", "--workers", str(workers), "-o", str(out)]
    started = time.perf_counter()
    result = subprocess.run(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - started
    if result.returncode != 0:
        sys.exit(f"{source}: tokenmill pack exited {result.returncode}: {result.stderr.strip()[-500:]}")
    return wall, int(result.stderr.split()[-1]) / 2**20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", type=Path)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--workers", type=int, default=os.cpu_count())
    args = parser.parse_args()

    import boto3

    work = Path(tempfile.mkdtemp(prefix="s3-pack-"))
    log_path = work / "moto.log"
    server, endpoint = _start_server(log_path)
    try:
        env = {**os.environ, "AWS_ENDPOINT_URL": endpoint, "AWS_ACCESS_KEY_ID": "bench",
               "AWS_SECRET_ACCESS_KEY": "bench", "AWS_DEFAULT_REGION": "us-east-1"}
        os.environ.update(env)
        client = boto3.client("s3")
        client.create_bucket(Bucket=BUCKET)
        compressed = work / f"{args.corpus.name}.zst"
        subprocess.run(["zstd", "-q", "-3", "-T0", str(args.corpus), "-o", str(compressed)], check=True)
        for path in (args.corpus, compressed):
            client.upload_file(str(path), BUCKET, path.name)
        text_mb = args.corpus.stat().st_size / 1e6
        cases = {"local file": str(args.corpus), "object": f"s3://{BUCKET}/{args.corpus.name}",
                 "local .zst": str(compressed), "object .zst": f"s3://{BUCKET}/{compressed.name}"}
        walls: dict[str, list[float]] = {name: [] for name in cases}
        rss: dict[str, float] = {}
        requests: dict[str, dict[str, int]] = {}
        for _ in range(args.rounds):
            for name, source in cases.items():
                out = work / f"{name.replace(' ', '_')}.pbin"
                since = log_path.stat().st_size
                wall, peak = _pack(source, out, env, args.workers)
                walls[name].append(wall)
                rss[name] = max(rss.get(name, 0.0), peak)
                requests[name] = _requests(log_path, since)
                reference = work / "local_file.pbin"
                if out != reference and reference.exists():
                    assert out.read_bytes() == reference.read_bytes(), f"{name}: bytes differ from the local file's"
    finally:
        server.terminate()
        server.wait(10)

    print(f"{args.corpus.name} ({text_mb:,.0f} MB of JSONL), {args.workers} workers, best of {args.rounds}, "
          f"moto_server on 127.0.0.1; every .pbin equal to the local file's\n")
    print("| input | MB/s of text | vs the same bytes on disk | requests per GB (of the object) | peak RSS |")
    print("|---|---|---|---|---|")
    for name in cases:
        best = min(walls[name])
        local = min(walls["local .zst" if "zst" in name else "local file"])
        size_gb = (compressed.stat().st_size if "zst" in name else args.corpus.stat().st_size) / 1e9
        counted = requests[name]
        per_gb = ", ".join(f"{count / size_gb:,.1f} {method}" for method, count in sorted(counted.items())) or "-"
        print(f"| {name} | {text_mb / best:,.1f} | {local / best:.2f}× | {per_gb if 'object' in name else '-'} "
              f"| {rss[name]:.2f} GiB |")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
