"""Conversion (.pbin → Megatron .bin/.idx) and merge throughput on a ≥ 1 GB .pbin.

    python bench/megatron_throughput.py --gigabytes 1.2 --scratch /tmp/tm-bench

Builds a synthetic .pbin of random 2-byte tokens in documents of 1–4,000 tokens (the bytes moved do
not depend on the token values), then times, each on a warm page cache:
- ``to-megatron`` with vocab 50,257 (uint16: a block copy of the data section) and 131,072 (int32: a
  blockwise widening cast);
- ``merge`` of the .pbin cut into 4 shards, and of their 4 Megatron conversions.
GB/s = bytes written to the output ``.bin``/``.pbin`` per second, 10**9 bytes; every writer fsyncs.
Yardstick in the same run: ``shutil.copyfile`` (kernel copy) of the whole .pbin plus fsync.
"""

from __future__ import annotations

import argparse
import os
import shutil
import time
from pathlib import Path

import numpy as np

from tokenmill.formats.merge import merge_pbin
from tokenmill.formats.bin_idx import merge_megatron, pbin_to_megatron
from tokenmill.formats.pbin import PbinWriter
from tokenmill.formats.sidecar import write_sidecar


def synthetic_pbin(path: Path, num_tokens: int, rng: np.random.Generator, vocab_size: int = 50257) -> None:
    lengths = rng.integers(1, 4000, num_tokens // 1000)  # mean 2000: more than enough documents
    lengths = lengths[:np.searchsorted(np.cumsum(lengths), num_tokens)]
    lengths = np.append(lengths, num_tokens - lengths.sum())
    with PbinWriter(path, token_width=2) as writer:
        for chunk in np.array_split(lengths, max(1, len(lengths) // 10_000)):
            writer.write(rng.integers(0, 50257, int(chunk.sum()), dtype=np.uint16), chunk)
    write_sidecar(path, {"tokenizer": {"vocab_size": vocab_size}})


def timed(label: str, output_bytes: int, action) -> None:
    start = time.perf_counter()
    action()
    seconds = time.perf_counter() - start
    print(f"{label}: {output_bytes / 1e9:.2f} GB in {seconds:.2f} s = {output_bytes / seconds / 1e9:.2f} GB/s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gigabytes", type=float, default=1.2)
    parser.add_argument("--scratch", type=Path, default=Path("/tmp/tm-bench"))
    args = parser.parse_args()
    args.scratch.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    shard_tokens = int(args.gigabytes * 1e9 / 2 / 4)
    shards = []
    for k in range(4):
        shards.append(args.scratch / f"shard{k}.pbin")
        synthetic_pbin(shards[-1], shard_tokens, rng)
    whole = args.scratch / "whole.pbin"
    merge_pbin(whole, shards, force=True)  # warm-up pass and the ≥ 1 GB input
    data_bytes = 2 * 4 * shard_tokens

    def copy_with_fsync():  # the yardstick: the OS copying the same bytes, flushed to disk like ours
        shutil.copyfile(whole, args.scratch / "copy.pbin")
        with open(args.scratch / "copy.pbin", "rb+") as handle:
            os.fsync(handle.fileno())

    timed("yardstick: shutil.copyfile + fsync of the whole .pbin", data_bytes, copy_with_fsync)
    timed("merge 4 .pbin shards", data_bytes, lambda: merge_pbin(args.scratch / "merged.pbin", shards, force=True))
    timed("to-megatron uint16 (vocab 50257)", data_bytes,
          lambda: pbin_to_megatron(whole, args.scratch / "u16", vocab_size=50257))
    timed("to-megatron int32 (vocab 131072)", 2 * data_bytes,
          lambda: pbin_to_megatron(whole, args.scratch / "i32", vocab_size=131072))
    for k, shard in enumerate(shards):
        pbin_to_megatron(shard, args.scratch / f"m{k}", vocab_size=50257)
    timed("merge 4 Megatron shards (uint16)", data_bytes,
          lambda: merge_megatron(args.scratch / "merged_m", [args.scratch / f"m{k}" for k in range(4)], force=True))
    shutil.rmtree(args.scratch)


if __name__ == "__main__":
    main()
