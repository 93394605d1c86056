"""Index build time and random-read speed, tokenmill against megatron-core, side by side in one run.

    python bench/sample_index_bench.py --megatron-python /tmp/venv-meg/bin/python

megatron-core is never a dependency: give the interpreter of a throwaway venv where
``megatron.core`` (0.19, with its compiled C++ helpers) imports; its code runs there, in a
subprocess, on the same ``.npy``/``.bin``/``.idx`` files.

1. Sample index: sizes of 100,000 sequences (1–2,000 tokens, ~1e8 tokens), seq 2048, 4 epochs,
   one shuffled document_index; megatron's C++ ``build_sample_idx`` against
   :func:`tokenmill.megatron.gpt_indices.build_sample_index` (same output checked), best of 3 each.
   Also tokenmill's whole split build (document + sample + shuffle index).
2. Random reads: 20,000 random samples of seq 2048 from a Megatron dataset of those sizes through
   megatron's ``GPTDataset`` and tokenmill's ``Nanoset`` over the same cache folder.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np

from tokenmill.formats.bin_idx import MMapIndexedDatasetBuilder
from tokenmill.megatron.gpt_indices import GPTIndexSpec, build_gpt_indices, build_sample_index
from tokenmill.megatron.index_cache import null_tokenizer_identifiers
from tokenmill.training.datasets import NanosetBuilder, NanosetConfig

SEQ, EPOCHS, READS = 2048, 4, 20_000

MEGATRON_SAMPLE_INDEX = """
import sys, time, numpy as np
from megatron.core.datasets import helpers
sizes, document_index = np.load(sys.argv[1]), np.load(sys.argv[2])
seq, epochs, tokens = int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
best = float("inf")
for _ in range(3):
    start = time.perf_counter()
    rows = helpers.build_sample_idx(sizes, document_index, seq, epochs, tokens, True, True)
    best = min(best, time.perf_counter() - start)
np.save(sys.argv[6], rows)
print(best)
"""

MEGATRON_READS = """
import sys, time, logging, numpy as np
logging.disable(logging.WARNING)
from megatron.core.datasets.blended_megatron_dataset_builder import BlendedMegatronDatasetBuilder
from megatron.core.datasets.gpt_dataset import GPTDataset, GPTDatasetConfig
from megatron.core.tokenizers import MegatronTokenizer
prefix, cache, seq, reads = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
tokenizer = MegatronTokenizer.from_pretrained(metadata_path={"library": "null-text"}, vocab_size=50257)
config = GPTDatasetConfig(random_seed=1234, sequence_length=seq, blend=([prefix], None), split="1,0,0",
                          path_to_cache=cache, tokenizer=tokenizer, reset_position_ids=False,
                          reset_attention_mask=False,
                          eod_mask_loss=False, create_attention_mask=False)
train = BlendedMegatronDatasetBuilder(GPTDataset, [None, None, None], lambda: True, config).build()[0]
picks = np.random.default_rng(0).integers(0, len(train), reads)
start = time.perf_counter()
for i in picks:
    train[int(i)]
print(reads / (time.perf_counter() - start))
"""


def best_of(runs: int, action) -> float:
    best = float("inf")
    for _ in range(runs):
        start = time.perf_counter()
        action()
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megatron-python", required=True, help="python of a venv with megatron-core")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    sizes = rng.integers(1, 2000, 100_000).astype(np.int32)
    tokens = int(sizes.sum())
    with tempfile.TemporaryDirectory() as scratch:
        scratch = Path(scratch)
        document_index = np.tile(np.arange(len(sizes), dtype=np.int32), EPOCHS)
        np.random.RandomState(1).shuffle(document_index)
        np.save(scratch / "sizes.npy", sizes)
        np.save(scratch / "document_index.npy", document_index)
        megatron_seconds = float(subprocess.run(
            [args.megatron_python, "-c", MEGATRON_SAMPLE_INDEX, scratch / "sizes.npy", scratch / "document_index.npy",
             str(SEQ), str(EPOCHS), str(tokens), scratch / "megatron_rows.npy"],
            check=True, capture_output=True, text=True).stdout.split()[-1])
        ours = build_sample_index(sizes, document_index, SEQ, EPOCHS, tokens, True, 1)
        assert np.array_equal(ours, np.load(scratch / "megatron_rows.npy")), "sample indices differ"
        our_seconds = best_of(3, lambda: build_sample_index(sizes, document_index, SEQ, EPOCHS, tokens, True, 1))
        whole_split = best_of(3, lambda: build_gpt_indices(sizes, np.arange(len(sizes), dtype=np.int32),
                                                           GPTIndexSpec(SEQ, 1234, EPOCHS * tokens // SEQ - 1)))
        print(f"sample index, {tokens / 1e6:.0f}M tokens x {EPOCHS} epochs, seq {SEQ}, {len(ours) - 1} samples: "
              f"megatron C++ {megatron_seconds * 1000:.1f} ms, tokenmill {our_seconds * 1000:.1f} ms "
              f"({megatron_seconds / our_seconds:.2f} x megatron's speed)")
        print(f"tokenmill whole split (document + sample + shuffle index): {whole_split * 1000:.0f} ms")

        with MMapIndexedDatasetBuilder(scratch / "data", np.uint16) as builder:
            builder.add_document(rng.integers(0, 50257, tokens, dtype=np.uint16), sizes)
        cache = scratch / "cache"
        megatron_reads = json.loads(subprocess.run(
            [args.megatron_python, "-c", MEGATRON_READS, scratch / "data", cache, str(SEQ), str(READS)],
            check=True, capture_output=True, text=True).stdout.split()[-1])
        train = NanosetBuilder(NanosetConfig(str(scratch / "data"), str(cache), SEQ, 1234,
                                             null_tokenizer_identifiers(50257), split="1,0,0")).build()["train"]
        picks = np.random.default_rng(0).integers(0, len(train), READS)
        start = time.perf_counter()
        for i in picks:
            train[int(i)]
        seconds = time.perf_counter() - start
        print(f"random reads, seq {SEQ}: megatron GPTDataset {megatron_reads:.0f} samples/s, tokenmill Nanoset "
              f"{READS / seconds:.0f} samples/s ({READS / seconds / megatron_reads:.2f} x)")


if __name__ == "__main__":
    main()
