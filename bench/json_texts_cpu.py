"""CPU per GB of pack's two ways to a batch's texts, on the same 4 MiB batches: orjson's parse into str
(``TextSelector.select_lines``) against the C parser's one UTF-8 buffer (``Utf8Texts.from_json_lines``) and its
proof facts (``code_point_facts``); the texts compared, every batch.

    python bench/json_texts_cpu.py /tmp/corpus/real-100MB.jsonl

Prints how many batches the C parser accepted and each way's CPU-s per GB of JSONL (``process_time``, one thread).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from tokenmill.inputs.text_selection import TextSelector
from tokenmill.inputs.utf8_texts import Utf8Texts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus")
    parser.add_argument("--key", default="text")
    args = parser.parse_args()
    data = open(args.corpus, "rb").read()
    selector = TextSelector("." + args.key)
    position = batches = accepted = 0
    c_time = orjson_time = facts_time = 0.0
    while position < len(data):
        end = data.find(b"\n", min(position + (4 << 20), len(data) - 1))
        end = len(data) if end < 0 else end + 1
        block = data[position:end].rstrip(b"\n")
        position = end
        newlines = np.flatnonzero(np.frombuffer(block, np.uint8) == 10)
        starts = np.concatenate([[0], newlines + 1]).astype(np.int64)
        lengths = (np.concatenate([newlines, [len(block)]]) - starts).astype(np.int64)
        start = time.process_time()
        mine = Utf8Texts.from_json_lines(block, starts, lengths, args.key)
        middle = time.process_time()
        texts = selector.select_lines(block, starts, lengths)
        c_time, orjson_time = c_time + middle - start, orjson_time + time.process_time() - middle
        batches += 1
        if mine is not None:
            accepted += 1
            start = time.process_time()
            mine.code_point_facts()
            facts_time += time.process_time() - start
            assert list(mine) == texts
    gigabytes = len(data) / 1e9
    print(f"{accepted}/{batches} batches accepted by the C parser; CPU-s per GB: C parse {c_time / gigabytes:.2f}, "
          f"its facts {facts_time / gigabytes:.2f}, orjson into str {orjson_time / gigabytes:.2f}")


if __name__ == "__main__":
    main()
