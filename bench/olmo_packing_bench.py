#!/usr/bin/env python
"""OLMo-core's packing caches: ``NumpyPackedFSLDataset.prepare()`` (ai2-olmo-core 3.0.0) against
``tokenmill best-fit``, side by side in one run, and the files they write compared byte for byte.

    python bench/olmo_packing_bench.py PARTS_DIR [--seq-lengths 2048 8192] [--strategy truncate] [--rounds 2]
        [--peer-python /tmp/olmo-peer/venv/bin/python] [--workers 1] [--synthetic-docs 10000000 [--synthetic-olmo]]

PARTS_DIR is a folder ``tokenmill to-olmo`` wrote (its ``metadata.json`` names the parts, dtype and ids). OLMo-core
is not a tokenmill dependency: it runs in a separate virtual environment (``--peer-python``, a python with
``ai2-olmo-core==3.0.0`` installed), as a subprocess; nothing of it is imported here. Each run gets a fresh, empty
work dir; both name the parts by their absolute paths, so both compute the same cache names.

Measured per sequence length and round (the order alternates between rounds; the parts are read once before,
so every run finds them in the page cache):

* OLMo-core: the wall of the whole process (``/usr/bin/time``, python start and ``import olmo_core`` included),
  and inside it the time of ``prepare()`` alone; peak RSS is the larger of the process and its prepare worker
  (``OLMO_DATA_PREP_WORKERS``, default 1 here: one process packs, as tokenmill does).
* tokenmill: ``tokenmill best-fit`` (wall and peak RSS of the process, ``/usr/bin/time``), and the library call
  ``write_olmo_packing_for_parts`` timed inside a python that has already imported it.

Then the three files per group: same names, same bytes; if ``document-indices`` differs, whether only in the
order of equal-length documents (numpy's unstable argsort) and where it first differs.

``--synthetic-docs N`` writes a one-part folder of N documents of 1..32 tokens (random GPT-2 ids, EOS-ended)
and reports ``tokenmill best-fit``'s wall and peak RSS on it at the first sequence length (and OLMo-core's, with
``--synthetic-olmo``: slow, its packing is a Python loop per document).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np

PEER_SCRIPT = r"""
import json, resource, sys, time
t0 = time.perf_counter()
import numpy as np
from olmo_core.data import NumpyPackedFSLDataset
from olmo_core.data.types import LongDocStrategy
t1 = time.perf_counter()
a = json.loads(sys.argv[1])
ds = NumpyPackedFSLDataset(*a["paths"], sequence_length=a["L"], pad_token_id=a["pad"], eos_token_id=a["eos"],
                           vocab_size=a["vocab"], dtype=np.dtype(a["dtype"]).type, bos_token_id=None,
                           long_doc_strategy=LongDocStrategy(a["strategy"]), source_group_size=a["group"])
ds.work_dir = a["work_dir"]
t2 = time.perf_counter()
ds.prepare()
t3 = time.perf_counter()
print("RESULT " + json.dumps({"import_s": t1 - t0, "construct_s": t2 - t1, "prepare_s": t3 - t2,
                              "instances": len(ds), "numpy": np.__version__,
                              "self_maxrss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                              "children_maxrss_kb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss}))
"""

TOKENMILL_API = r"""
import json, resource, sys, time
from tokenmill.best_fit.olmo_cache import write_olmo_packing_for_parts
a = json.loads(sys.argv[1])
t0 = time.perf_counter()
sidecar = write_olmo_packing_for_parts(a["parts"], a["work_dir"], a["L"], a["strategy"])
t1 = time.perf_counter()
print("RESULT " + json.dumps({"call_s": t1 - t0, "samples": sidecar["samples"], "documents": sidecar["documents"],
                              "maxrss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}))
"""

TIME_RE = re.compile(r"^TIME ([0-9.]+) s ([0-9]+) KB$", re.M)


def timed(cmd: list[str], env: dict | None = None) -> dict:
    """Run cmd under /usr/bin/time; its wall, peak RSS (KB) and the JSON line it printed after RESULT."""
    cp = subprocess.run(["/usr/bin/time", "-f", "TIME %e s %M KB", *cmd], capture_output=True, text=True,
                        env={**os.environ, **(env or {})})
    found = TIME_RE.findall(cp.stderr)
    if cp.returncode != 0 or not found:
        sys.exit(f"failed ({cp.returncode}): {' '.join(cmd)}\n{cp.stderr[-3000:]}")
    wall, rss = found[-1]
    out = {"wall_s": float(wall), "maxrss_kb": int(rss)}
    for line in cp.stdout.splitlines():
        if line.startswith("RESULT "):
            out.update(json.loads(line[7:]))
    return out


def fresh(path: Path) -> Path:
    if path.exists():
        shutil.rmtree(path)
    path.mkdir(parents=True)
    return path


def compare(ours: Path, theirs: Path) -> dict:
    """The two dataset-common folders: names, bytes, and where document-indices first differs."""
    a = {p.name: p for p in (ours / "dataset-common").iterdir()}
    b = {p.name: p for p in (theirs / "dataset-common").iterdir()}
    res = {"same_names": sorted(a) == sorted(b), "only_tokenmill": sorted(set(a) - set(b)),
           "only_olmo": sorted(set(b) - set(a)), "files": {}}
    for name in sorted(set(a) & set(b)):
        x, y = np.fromfile(a[name], dtype="<u8"), np.fromfile(b[name], dtype="<u8")
        entry = {"bytes": a[name].stat().st_size, "equal": a[name].read_bytes() == b[name].read_bytes()}
        if not entry["equal"]:
            n = min(len(x), len(y))
            diff = np.flatnonzero(x[:n] != y[:n])
            entry["lengths"] = [len(x), len(y)]
            entry["first_difference"] = (int(diff[0]) if len(diff) else n)
            entry["differing_elements"] = int(len(diff)) + abs(len(x) - len(y))
            if name.startswith("document-indices") and len(x) == len(y):
                rx, ry = x.reshape(-1, 2), y.reshape(-1, 2)
                entry["ties_only"] = bool(np.array_equal(rx[:, 1] - rx[:, 0], ry[:, 1] - ry[:, 0]) and
                                          np.array_equal(np.sort(rx[:, 0]), np.sort(ry[:, 0])))
        res["files"][name] = entry
    res["all_equal"] = res["same_names"] and all(e["equal"] for e in res["files"].values())
    return res


def synthetic_parts(folder: Path, docs: int, seed: int = 0) -> Path:
    """A one-part folder (as tokenmill to-olmo writes) of ``docs`` GPT-2 documents of 1..32 tokens."""
    meta = folder / "metadata.json"
    if meta.is_file() and json.loads(meta.read_text())["documents"] == docs:
        return folder
    fresh(folder)
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, 33, size=docs, dtype=np.int64)
    ends = np.cumsum(lengths)
    tokens = rng.integers(0, 50256, size=int(ends[-1]), dtype=np.uint16)
    tokens[ends - 1] = 50256
    tokens.tofile(folder / "part-00000.npy")
    meta.write_text(json.dumps({"format": "tokenmill-olmo/1", "dtype": "uint16", "eos_token_id": 50256,
                                "bos_token_id": None, "vocab_size": 50257, "documents": docs,
                                "tokens": int(ends[-1]), "label_masks": False,
                                "parts": [{"name": "part-00000.npy", "documents": docs,
                                           "tokens": int(ends[-1])}]}, indent=1))
    return folder


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("parts", type=Path)
    ap.add_argument("--seq-lengths", type=int, nargs="+", default=[2048, 8192])
    ap.add_argument("--strategy", default="truncate", choices=["truncate", "fragment"])
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--peer-python", default="/tmp/olmo-peer/venv/bin/python")
    ap.add_argument("--tokenmill", default=str(Path(sys.executable).with_name("tokenmill")))
    ap.add_argument("--workers", default="1", help="OLMO_DATA_PREP_WORKERS for OLMo-core (default 1)")
    ap.add_argument("--work", type=Path, default=Path("/tmp/olmo-packing-bench"))
    ap.add_argument("--synthetic-docs", type=int, default=0)
    ap.add_argument("--synthetic-olmo", action="store_true")
    ap.add_argument("--json", type=Path, help="write every measurement here")
    args = ap.parse_args()

    parts = args.parts.resolve()
    meta = json.loads((parts / "metadata.json").read_text())
    paths = [str(parts / p["name"]) for p in meta["parts"]]
    size = sum(os.path.getsize(p) for p in paths)
    print(f"{parts}: {len(paths)} part(s), {meta.get('documents')} documents, {meta.get('tokens')} tokens, "
          f"{size / 1e9:.2f} GB; strategy {args.strategy}; OLMO_DATA_PREP_WORKERS={args.workers}", flush=True)
    for p in paths:  # into the page cache, for every run alike
        with open(p, "rb") as f:
            while f.read(1 << 24):
                pass

    def olmo(L: int, work_dir: Path, part_paths: list[str], m: dict) -> dict:
        spec = {"paths": part_paths, "L": L, "pad": m["eos_token_id"], "eos": m["eos_token_id"],
                "vocab": m["vocab_size"], "dtype": m["dtype"], "strategy": args.strategy, "group": 1,
                "work_dir": str(work_dir)}
        r = timed([args.peer_python, "-c", PEER_SCRIPT, json.dumps(spec)], {"OLMO_DATA_PREP_WORKERS": args.workers})
        r["peak_rss_kb"] = max(r["maxrss_kb"], r["self_maxrss_kb"], r["children_maxrss_kb"])
        return r

    def tm_cli(L: int, work_dir: Path, folder: Path) -> dict:
        return timed([args.tokenmill, "best-fit", str(folder), "-o", str(work_dir), "--seq-length", str(L),
                      "--long-doc-strategy", args.strategy])

    def tm_api(L: int, work_dir: Path, folder: Path) -> dict:
        spec = {"parts": str(folder), "work_dir": str(work_dir), "L": L, "strategy": args.strategy}
        return timed([sys.executable, "-c", TOKENMILL_API, json.dumps(spec)])

    rows, record = [], {"parts": str(parts), "bytes": size, "strategy": args.strategy, "workers": args.workers,
                        "runs": []}
    for L in args.seq_lengths:
        runs = {"olmo": [], "cli": [], "api": []}
        for r in range(args.rounds):
            order = ["olmo", "cli", "api"] if r % 2 == 0 else ["api", "cli", "olmo"]
            for who in order:
                wd = fresh(args.work / f"{who}-{L}")
                if who == "olmo":
                    runs[who].append(olmo(L, wd, paths, meta))
                elif who == "cli":
                    runs[who].append(tm_cli(L, wd, parts))
                else:
                    runs[who].append(tm_api(L, wd, parts))
        cmp = compare(args.work / f"cli-{L}", args.work / f"olmo-{L}")
        record["runs"].append({"L": L, **runs, "compare": cmp})
        best = {k: min(v, key=lambda x: x["wall_s"]) for k, v in runs.items()}
        o_prep = min(x["prepare_s"] for x in runs["olmo"])
        o_wall = min(x["wall_s"] for x in runs["olmo"])
        t_api = min(x["call_s"] for x in runs["api"])
        t_cli = min(x["wall_s"] for x in runs["cli"])
        paired = [(o["prepare_s"] / a["call_s"], o["wall_s"] / c["wall_s"])
                  for o, a, c in zip(runs["olmo"], runs["api"], runs["cli"])]
        print(f"L={L}: {runs['olmo'][0]['instances']} instances; files equal: {cmp['all_equal']}; ratios round by "
              f"round: prepare/call {', '.join(f'{x:.1f}' for x, _ in paired)}, "
              f"process/best-fit {', '.join(f'{y:.1f}' for _, y in paired)}", flush=True)
        if not cmp["all_equal"]:
            print(json.dumps(cmp, indent=1))
        o_import = min(x["import_s"] for x in runs["olmo"])
        rows.append(f"| {L} | {o_prep:.2f} s | {t_api:.2f} s | {o_prep / t_api:.0f}× | {o_wall:.2f} s "
                    f"(import {o_import:.2f} s) | {t_cli:.2f} s | {o_wall / t_cli:.1f}× | "
                    f"{best['olmo']['peak_rss_kb'] / 2**20:.2f} GiB | {best['cli']['maxrss_kb'] / 2**20:.2f} GiB | "
                    f"{'yes' if cmp['all_equal'] else 'NO'} |")
    print("\n| L | OLMo-core `prepare()` | tokenmill call | ratio | OLMo-core process | `tokenmill best-fit` | ratio | "
          "OLMo-core peak RSS | tokenmill peak RSS | files equal |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    print("\n".join(rows))
    print(f"(best of {args.rounds} rounds each)", flush=True)

    if args.synthetic_docs:
        folder = synthetic_parts(args.work / f"synthetic-{args.synthetic_docs}" / "parts", args.synthetic_docs)
        L = args.seq_lengths[0]
        r = tm_cli(L, fresh(args.work / f"synthetic-cli-{L}"), folder)
        side = json.loads((args.work / f"synthetic-cli-{L}" / "tokenmill-olmo-packing.meta.json").read_text())
        print(f"\nsynthetic: {args.synthetic_docs:,} documents, {side['tokens']:,} tokens, L={L}: "
              f"tokenmill best-fit {r['wall_s']:.2f} s, peak RSS {r['maxrss_kb'] / 2**20:.3f} GiB, "
              f"{side['samples']:,} samples", flush=True)
        record["synthetic"] = {"docs": args.synthetic_docs, "L": L, "tokenmill": r, "tokens": side["tokens"],
                               "samples": side["samples"]}
        if args.synthetic_olmo:
            wd = fresh(args.work / f"synthetic-olmo-{L}")
            o = olmo(L, wd, [str(folder / "part-00000.npy")],
                     json.loads((folder / "metadata.json").read_text()))
            cmp = compare(args.work / f"synthetic-cli-{L}", wd)
            print(f"synthetic: OLMo-core prepare() {o['prepare_s']:.2f} s (process {o['wall_s']:.2f} s), "
                  f"peak RSS {o['peak_rss_kb'] / 2**20:.3f} GiB; files equal: {cmp['all_equal']}", flush=True)
            if not cmp["all_equal"]:
                print(json.dumps(cmp, indent=1))
            record["synthetic"].update({"olmo": o, "compare": cmp})
    if args.json:
        args.json.write_text(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    main()
