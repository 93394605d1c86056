"""gigatoken 0.10 against fastokens 0.3, per tokenizer: load, batch API, native JSONL reader, ids.

    python3 -m venv /tmp/venv-gt && /tmp/venv-gt/bin/pip install gigatoken==0.10.0 fastokens==0.3.5 \\
        tokenizers==0.23.3 orjson numpy                  # a throwaway venv: gigatoken is no dependency
    /tmp/venv-gt/bin/python bench/gigatoken_limit.py /tmp/corpus/real-100MB.jsonl --rounds 2

For GPT-2 and Tekken, each figure from a fresh subprocess (thread settings are read when a library's
pool starts), rounds interleaved, best of the rounds:

* ``import``: the library's import, and awkward's (gigatoken returns awkward arrays; its first batch
  pays the import unless it was imported already).
* ``load``: ``fastokens.Tokenizer.from_file`` / ``gigatoken.Tokenizer(path)``, wall and CPU.
* ``batch``: the texts parsed into memory first (as pack hands them over), encoded in ~4 MiB batches
  of ``list[str]`` into one flat uint32 array and lengths per batch (fastokens ``encode_batch_flat``;
  gigatoken ``encode_batch`` and its awkward layout's buffers, no copy), on one thread
  (``RAYON_NUM_THREADS=1 FASTOKENS_BPE_THREADS=1``; gigatoken ``parallel=False``) and on every core.
* ``files``: gigatoken's own reader, ``encode_files(JsonlFileSource([corpus], field="text"))``, the
  whole file in one call, JSON parsing included (what Megatron main's ``preprocess_data_fast.py``
  calls): the limit of the library. For comparison ``parse+fastokens``: orjson per line then
  fastokens' batches, one thread and all cores. Neither writes anything.
* ``ids``: every document of the corpus, gigatoken's ``encode_files`` ids against Hugging Face's
  ``encode_batch_fast`` (the reference, ``add_special_tokens=False``), counted as mismatching documents.

MB are 10**6 bytes of the JSONL file. CPU is the process's user + system time (``os.times``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TOKENIZERS = {"gpt2": REPO / "data/tokenizers/gpt2.tokenizer.json", "tekken": REPO / "tests/data/tekken.tokenizer.json"}
BATCH_BYTES = 4 << 20


def _cpu() -> float:
    times = os.times()
    return times.user + times.system


def _texts(corpus: str) -> tuple[list[str], int]:
    import orjson

    with open(corpus, "rb") as handle:
        texts = [orjson.loads(line)["text"] for line in handle]
    return texts, os.path.getsize(corpus)


def _batches(texts: list[str]) -> list[list[str]]:
    batches, batch, size = [], [], 0
    for text in texts:
        batch.append(text)
        size += len(text)
        if size >= BATCH_BYTES:
            batches.append(batch)
            batch, size = [], 0
    return batches + [batch] if batch else batches


def measure(part: str, library: str, tokenizer: str, corpus: str) -> dict:
    """One figure, in this (fresh) process."""
    path = str(TOKENIZERS[tokenizer])
    if part == "import":
        start, cpu = time.perf_counter(), _cpu()
        __import__(library)
        result = {"wall": time.perf_counter() - start, "cpu": _cpu() - cpu}
        if library == "gigatoken":
            start = time.perf_counter()
            import awkward  # noqa: F401

            result["awkward"] = time.perf_counter() - start
        return result
    if part == "load":
        module = __import__(library)
        if library == "gigatoken":
            import awkward  # noqa: F401
        start, cpu = time.perf_counter(), _cpu()
        module.Tokenizer.from_file(path) if library == "fastokens" else module.Tokenizer(path)
        return {"wall": time.perf_counter() - start, "cpu": _cpu() - cpu}
    if part == "files":
        import gigatoken

        encoder = gigatoken.Tokenizer(path)
        parallel = os.environ.get("RAYON_NUM_THREADS") != "1"
        encoder.encode_files(gigatoken.JsonlFileSource([corpus], field="text"), parallel=parallel)  # warm-up, caches
        start, cpu = time.perf_counter(), _cpu()
        encoder.encode_files(gigatoken.JsonlFileSource([corpus], field="text"), parallel=parallel)
        return {"wall": time.perf_counter() - start, "cpu": _cpu() - cpu, "bytes": os.path.getsize(corpus)}
    if part == "parse+fastokens":
        import fastokens
        import numpy as np

        encoder = fastokens.Tokenizer.from_file(path)
        encoder.encode_batch_flat(_texts(corpus)[0][:500], add_special_tokens=False)
        start, cpu = time.perf_counter(), _cpu()
        texts, size = _texts(corpus)
        for batch in _batches(texts):
            ids, offsets = encoder.encode_batch_flat(batch, add_special_tokens=False)
            np.frombuffer(ids, "<u4"), np.diff(np.frombuffer(offsets, "<u8"))
        return {"wall": time.perf_counter() - start, "cpu": _cpu() - cpu, "bytes": size}
    if part == "batch":
        import numpy as np

        texts, size = _texts(corpus)
        batches = _batches(texts)
        if library == "fastokens":
            import fastokens

            encoder = fastokens.Tokenizer.from_file(path)

            def encode(batch):
                ids, offsets = encoder.encode_batch_flat(batch, add_special_tokens=False)
                return np.frombuffer(ids, "<u4"), np.diff(np.frombuffer(offsets, "<u8"))
        else:
            import awkward as ak
            import gigatoken

            encoder = gigatoken.Tokenizer(path)
            parallel = os.environ.get("RAYON_NUM_THREADS") != "1"

            def encode(batch):
                layout = ak.to_layout(encoder.encode_batch(batch, parallel=parallel))
                return layout.content.data, np.diff(layout.offsets.data)
        encode(texts[:500])  # warm-up: regex compilation, caches
        start, cpu = time.perf_counter(), _cpu()
        for batch in batches:
            encode(batch)
        return {"wall": time.perf_counter() - start, "cpu": _cpu() - cpu, "bytes": size}
    if part == "ids":
        import awkward as ak
        import gigatoken
        import numpy as np
        from tokenizers import Tokenizer

        layout = ak.to_layout(gigatoken.Tokenizer(path).encode_files(gigatoken.JsonlFileSource([corpus], field="text")))
        ids, offsets = layout.content.data, layout.offsets.data
        texts, _ = _texts(corpus)
        hf = Tokenizer.from_file(path)
        mismatches = 0
        for first in range(0, len(texts), 2000):
            for i, encoding in enumerate(hf.encode_batch_fast(texts[first:first + 2000], add_special_tokens=False),
                                         start=first):
                mismatches += not np.array_equal(ids[offsets[i]:offsets[i + 1]], np.array(encoding.ids, np.uint32))
        return {"documents": len(texts), "mismatches": mismatches, "gigatoken_documents": len(offsets) - 1}
    raise ValueError(part)


def run(part: str, library: str, tokenizer: str, corpus: str, one_thread: bool) -> dict:
    env = dict(os.environ)
    if one_thread:
        env.update(RAYON_NUM_THREADS="1", FASTOKENS_BPE_THREADS="1")
    output = subprocess.run([sys.executable, __file__, corpus, "--measure", part, library, tokenizer], env=env,
                            check=True, capture_output=True, text=True).stdout
    return json.loads(output.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--tokenizers", nargs="+", default=list(TOKENIZERS))
    parser.add_argument("--no-ids", action="store_true", help="skip the comparison with Hugging Face")
    parser.add_argument("--measure", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure(*args.measure, args.corpus)))
        return
    plan = [("import", "fastokens", False), ("import", "gigatoken", False), ("load", "fastokens", True),
            ("load", "gigatoken", True), ("batch", "fastokens", True), ("batch", "gigatoken", True),
            ("batch", "fastokens", False), ("batch", "gigatoken", False), ("parse+fastokens", "fastokens", True),
            ("files", "gigatoken", True), ("parse+fastokens", "fastokens", False), ("files", "gigatoken", False)]
    for tokenizer in args.tokenizers:
        best: dict = {}
        for _ in range(args.rounds):
            for part, library, one_thread in plan:
                key = (part, library, "1 thread" if one_thread else "all cores")
                result = run(part, library, tokenizer, args.corpus, one_thread)
                if key not in best or result["wall"] < best[key]["wall"]:
                    best[key] = result
        print(f"\n{tokenizer}, {args.corpus}, best of {args.rounds}:")
        print("| part | library | threads | wall s | CPU s | MB/s |\n|---|---|---|---|---|---|")
        for (part, library, threads), result in best.items():
            rate = f"{result['bytes'] / 1e6 / result['wall']:.1f}" if "bytes" in result else ""
            extra = f" (+ awkward import {result['awkward']:.2f} s)" if "awkward" in result else ""
            print(f"| {part} | {library} | {threads} | {result['wall']:.2f}{extra} | {result['cpu']:.2f} | {rate} |")
        if not args.no_ids:
            print("ids:", run("ids", "gigatoken", tokenizer, args.corpus, False))


if __name__ == "__main__":
    main()
