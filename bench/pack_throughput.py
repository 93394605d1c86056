"""Pack throughput and memory, side by side in one run: tokenmill's engines, the tokenizer alone, the peers.

    bash bench/make_corpus.sh 100MB          # → /tmp/corpus/real-100MB.jsonl
    python bench/pack_throughput.py /tmp/corpus/real-100MB.jsonl --workers 1 2
    python bench/pack_throughput.py /tmp/corpus/real-100MB.jsonl \
        --tokenizer tests/data/tekken.tokenizer.json --eod '</s>'
    # with the peers, each installed in a throwaway venv (never a dependency of tokenmill):
    python bench/pack_throughput.py CORPUS --megatron 'VENV/bin/python MEGATRON-LM/tools/preprocess_data.py' \\
        --modalities 'VENV/bin/modalities'
    # today's peers: Megatron-LM main's preprocess_data_fast.py (bash /work/shared/bench/megatron_main_peer.sh
    # makes /tmp/megatron-main) and gigatoken's encode_files alone (a venv with gigatoken==0.10.0):
    # before/after a change: --baseline-src /path/to/other/checkout/src runs that code's packs beside these
    python bench/pack_throughput.py CORPUS --engines auto \\
        --megatron-fast 'env PYTHONPATH=/tmp/megatron-main/shim:/tmp/megatron-main/src HF_HUB_OFFLINE=1
                         /tmp/megatron-main/bin/python /tmp/megatron-main/src/tools/preprocess_data_fast.py' \\
        --gigatoken-python /tmp/venv-gt/bin/python

Every figure is end to end, JSONL file to packed file (tokenmill: ``.pbin`` and Megatron's ``.bin/.idx``
in one pass), as a separate process (``tokenmill pack``,
the peers' command lines), timed by wall clock with the peak RSS of its largest process
(``RUSAGE_CHILDREN``). Yardstick: Hugging Face ``encode_batch_fast`` on texts already parsed into
memory, the tokenizer's own threads on every core. Rounds interleave all commands so that the
machine's drifting speed hits them alike; each figure is the best of its rounds. MB are 10**6
bytes of JSONL.

The peers get the same corpus, tokenizer and EOD, and as many worker processes as there are cores:
both load the tokenizer as a ``PreTrainedTokenizerFast`` from a folder in the scratch directory
holding the tokenizer.json and a tokenizer_config.json that names the EOD as ``eos_token`` (Megatron
appends the eos_token's id). Megatron runs ``preprocess_data.py --append-eod``, Megatron main's fast path
``preprocess_data_fast.py --use-gigatoken --append-eod``; "gigatoken encode_files alone" encodes the file
with gigatoken's own JSONL reader and writes nothing (the limit of the fastest tokenizer here). Modalities runs
``create_raw_index`` then ``pack_encoded_data`` (which needs that index) in one timed shell, with a
config generated from the arguments (jq ``.text``, batches of 1000 documents).

Outputs are compared byte for byte (sha256): tokenmill's engines and Modalities' ``.pbin`` with the
first tokenmill ``.pbin``; Megatron's ``.bin``/``.idx`` with ``tokenmill to-megatron`` of that file.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson
from tokenizers import Tokenizer

from tokenmill.inputs.raw_index import scan_lines

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


def peer_commands(args: argparse.Namespace, scratch: Path) -> dict[str, tuple[list[str], list[Path]]]:
    """The peers' command lines for the same corpus, tokenizer and EOD, each with the files it writes."""
    folder = scratch / "hf-tokenizer"
    folder.mkdir()
    shutil.copyfile(args.tokenizer, folder / "tokenizer.json")
    (folder / "tokenizer_config.json").write_bytes(
        orjson.dumps({"tokenizer_class": "PreTrainedTokenizerFast", "eos_token": args.eod}))
    commands = {}
    if args.megatron:
        commands["Megatron preprocess_data.py"] = ([
            *shlex.split(args.megatron), "--input", str(args.corpus), "--output-prefix", str(scratch / "megatron"),
            "--tokenizer-type", "HuggingFaceTokenizer", "--tokenizer-model", str(folder),
            "--append-eod", "--workers", str(os.cpu_count())],
            [scratch / "megatron_text_document.bin", scratch / "megatron_text_document.idx"])
    if args.megatron_fast:
        commands["Megatron main preprocess_data_fast.py"] = ([
            *shlex.split(args.megatron_fast), "--input", str(args.corpus), "--output-prefix", str(scratch / "fast"),
            "--tokenizer-type", "HuggingFaceTokenizer", "--tokenizer-model", str(folder), "--use-gigatoken",
            "--append-eod"], [scratch / "fast_text_document.bin", scratch / "fast_text_document.idx"])
    if args.gigatoken_python:
        encode = ("import sys, gigatoken; gigatoken.Tokenizer(sys.argv[1]).encode_files("
                  "gigatoken.JsonlFileSource([sys.argv[2]], field='text'), parallel=True)")
        commands["gigatoken encode_files alone (writes nothing)"] = (
            [args.gigatoken_python, "-c", encode, str(args.tokenizer), str(args.corpus)], [])
    if args.modalities:
        config = scratch / "modalities.yaml"  # JSON is YAML
        config.write_bytes(orjson.dumps({
            "settings": {
                "src_path": str(args.corpus), "dst_path": str(scratch / "modalities.pbin"),
                "index_path": str(scratch / "modalities.idx"), "jq_pattern": ".text", "num_cpus": os.cpu_count(),
                "eod_token": args.eod, "processing_batch_size": 1000, "raw_samples_queue_size": 300,
                "processed_samples_queue_size": 300},
            "tokenizer": {
                "component_key": "tokenizer", "variant_key": "pretrained_hf_tokenizer",
                "config": {"pretrained_model_name_or_path": str(folder), "padding": False, "truncation": False,
                           "max_length": None, "special_tokens": None}}}))
        modalities = shlex.split(args.modalities)
        index = [*modalities, "data", "create_raw_index", str(args.corpus),
                 "--index_path", str(scratch / "modalities.idx"), "--file_existence_policy", "override"]
        pack = [*modalities, "data", "pack_encoded_data", str(config), "--file_existence_policy", "override"]
        commands["Modalities create_raw_index + pack"] = (
            ["sh", "-c", f"{shlex.join(index)} && {shlex.join(pack)}"], [scratch / "modalities.pbin"])
    return commands


def digest(paths: list[Path]) -> str:
    """sha256 of the files' bytes one after the other, first 16 hex digits."""
    sha = hashlib.sha256()
    for path in paths:
        sha.update(path.read_bytes())
    return sha.hexdigest()[:16]


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
    parser.add_argument("--megatron-fast", help="command running Megatron-LM main's tools/preprocess_data_fast.py")
    parser.add_argument("--gigatoken-python", help="python of a venv with gigatoken installed")
    parser.add_argument("--baseline-src", nargs="+", default=[],
                        help="src/ folders of other tokenmill checkouts whose packs run beside this one's")
    parser.add_argument("--no-hf-alone", action="store_true",
                        help="leave out the Hugging Face yardstick (~3 min per round at 1 GB)")
    args = parser.parse_args()
    megabytes = args.corpus.stat().st_size / 1e6

    scan_lines(args.corpus)  # warm the page cache
    start = time.perf_counter()
    for _ in range(5):
        scan_lines(args.corpus)
    print(f"raw index (warm): {megabytes / ((time.perf_counter() - start) / 5) / 1000:.2f} GB/s")

    best: dict[str, tuple[float, float]] = {}
    with tempfile.TemporaryDirectory() as scratch_name:
        scratch = Path(scratch_name)
        commands = {f"tokenmill pack --engine {engine} --workers {workers}": ([
            sys.executable, "-m", "tokenmill.cli", "pack", str(args.corpus), "--tokenizer", str(args.tokenizer),
            "--eod", args.eod, "--engine", engine, "--workers", str(workers), "-o", str(output),
            "--megatron", str(output.with_suffix(""))], [output])
            for engine in args.engines for workers in args.workers
            for output in [scratch / f"{engine}{workers}.pbin"]}
        for source in args.baseline_src:  # the same packs by another checkout's code (before/after, side by side)
            for engine in args.engines:
                output = scratch / f"{Path(source).parent.name}-{engine}.pbin"
                commands[f"tokenmill pack --engine {engine} ({source})"] = ([
                    "env", f"PYTHONPATH={source}", sys.executable, "-m", "tokenmill.cli", "pack", str(args.corpus),
                    "--tokenizer", str(args.tokenizer), "--eod", args.eod, "--engine", engine, "--workers",
                    str(args.workers[0]), "-o", str(output), "--megatron", str(output.with_suffix(""))], [output])
        commands.update(peer_commands(args, scratch))
        for _ in range(args.rounds):
            if not args.no_hf_alone:
                seconds = tokenizer_alone(args.corpus, args.tokenizer)
                best["alone"] = (min(best.get("alone", (seconds,))[0], seconds), float("nan"))
            for name, (command, _) in commands.items():
                seconds, peak = timed(command)
                if name not in best or seconds < best[name][0]:
                    best[name] = (seconds, peak)
        reference = next(iter(commands.values()))[1][0]
        subprocess.run([sys.executable, "-m", "tokenmill.cli", "to-megatron", str(reference),
                        "-o", str(scratch / "reference")], check=True, capture_output=True)
        expected = {"pbin": digest([reference]),
                    "megatron": digest([scratch / "reference.bin", scratch / "reference.idx"])}
        digests = {name: digest(outputs) for name, (_, outputs) in commands.items() if outputs}
        one_pass = reference.with_suffix("")  # the first tokenmill command's own .bin/.idx
        digests["tokenmill pack --megatron (.bin+.idx)"] = digest([one_pass.with_suffix(".bin"),
                                                                  one_pass.with_suffix(".idx")])
    print(f"tokenizer: {args.tokenizer.name}, corpus: {args.corpus.name} ({megabytes:.1f} MB), best of {args.rounds}")
    peers = [name for name in best if not name.startswith(("tokenmill", "alone"))]
    print(f"{'what':48} {'MB/s':>7} {'peak RSS GiB':>13}" + ("  vs HF alone" if "alone" in best else "")
          + "".join(f"  vs {peer}" for peer in peers))
    for name, (seconds, peak) in best.items():
        label = "HF encode_batch_fast alone (pre-parsed)" if name == "alone" else name
        ratios = "".join(f"  {best[peer][0] / seconds:{len(peer) + 2}.2f}x" for peer in peers)
        alone = f"{best['alone'][0] / seconds:13.2f}x" if "alone" in best else ""
        print(f"{label:48} {megabytes / seconds:7.2f} {peak:13.2f}{alone}{ratios}")
    print(f"sha256 (first 16 hex) of the first tokenmill .pbin: {expected['pbin']}, of its to-megatron .bin+.idx: "
          f"{expected['megatron']}")
    for name, sha in digests.items():
        equal = sha == expected["megatron" if name.startswith("Megatron") or "--megatron" in name else "pbin"]
        print(f"  {name:46} {sha}  {'identical' if equal else 'DIFFERENT'}")


if __name__ == "__main__":
    main()
