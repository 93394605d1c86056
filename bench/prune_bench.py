"""Time of ``prune`` (:func:`tokenmill.plan.prune.move_stale`) against the entries of one output folder.

    python bench/prune_bench.py --files 5000 20000
    git show HEAD:src/tokenmill/plan/prune.py > /tmp/prune_before.py
    python bench/prune_bench.py --files 5000 20000 --module /tmp/prune_before.py   # another version, same trees

For each count N, a fresh tree in a temporary folder (on the same file system as ``--scratch``, default
the system's temporary folder) holds one planned ``.pbin`` and N files of an earlier plan in
``data/packed/`` (``old<k>.pbin``, a few bytes each) plus a user's ``readme.txt``; the time is that of one
``move_stale`` call, which moves the N files to ``data/stale/packed/``. A second call on the same tree,
after the N files are made again, moves them beside the first ones (the ``.1`` names).
"""

from __future__ import annotations

import argparse
import importlib.util
import tempfile
import time
from pathlib import Path

from tokenmill import prune


def make_tree(root: Path, files: int) -> list[str]:
    """N stale files and one planned file in ``root/data/packed``; returns the plan."""
    folder = root / "data/packed"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "b.pbin").write_bytes(b"planned")
    (folder / "readme.txt").write_bytes(b"the user's")
    for k in range(files):
        (folder / f"old{k}.pbin").write_bytes(b"x")
    return ["data/packed/b.pbin"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, nargs="+", default=[5000, 20000])
    parser.add_argument("--scratch", default=None, help="folder for the trees (default: the system's)")
    parser.add_argument("--module", default=None, help="time this file's move_stale instead (an earlier prune.py)")
    args = parser.parse_args()
    module = prune
    if args.module:
        spec = importlib.util.spec_from_file_location("prune_under_test", args.module)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    print(f"move_stale of {args.module or prune.__file__}")
    for files in args.files:
        with tempfile.TemporaryDirectory(dir=args.scratch) as scratch:
            root = Path(scratch)
            times = []
            for _ in range(2):  # a first move, then the same names again: beside the first ones
                planned = make_tree(root, files)
                start = time.perf_counter()
                moved = module.move_stale(planned, root)
                times.append(time.perf_counter() - start)
                assert len(moved) == files, len(moved)
            print(f"{files:>7,} files: first move {times[0]:7.2f} s, second (beside the first) {times[1]:7.2f} s",
                  flush=True)


if __name__ == "__main__":
    main()
