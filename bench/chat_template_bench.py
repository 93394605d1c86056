#!/usr/bin/env python
"""SFT with a model's chat template: transformers' ``apply_chat_template`` against ``tokenmill sft``'s encoder,
side by side in one run on the same conversations, ids and masks compared.

    python bench/chat_template_bench.py [--conversations 5000] [--templates chatml_tools chatml_generation llama3]
        [--rounds 3] [--peer-python /tmp/tf/bin/python] [--engine fastokens] [--workers 1 2] [--out /tmp/chat_bench]

Conversations: ``--conversations`` synthetic OpenAI ``messages`` lines (seeded), 2 to 8 turns (user/assistant
alternating, a system message on a third of them), each turn 5-120 words drawn from the answers of
``data/raw/chat.jsonl`` with a little non-ASCII text; one JSONL file both sides read. Tokenizer folders: those of
``tests/tokenization/chat_template_cases.py`` (GPT-2's tokenizer.json with the templates' control tokens added).

transformers (in its own venv, ``--peer-python``: it is not a tokenmill dependency; run as a subprocess, nothing of
it imported here): ``AutoTokenizer.from_pretrained(folder)``, then, timed after loading and reading the file,
``apply_chat_template(messages, tools=..., tokenize=True, return_dict=True, return_assistant_tokens_mask=True)``
two ways: over the conversations in batches of 1,000 (its batched call: one Jinja render each, one tokenizer call
per batch), and one call per conversation (as TRL's SFT tokenizes a dataset); both give the same ids. Its masks
are its ``assistant_masks``: exact for a template with ``{% generation %}`` blocks, all zeros for one without
(transformers cannot mask those; tokenmill renders prefixes for them, extra work its figure includes).

tokenmill: :func:`tokenmill.pack.sft.encode_conversations` (``tokenmill sft``'s loop without the file writing) with
its :class:`~tokenmill.tokenization.chat_template.ChatTemplateEncoder` over the same file in batches of 1,000, the
batches rendered in ``--workers`` processes (``sft --workers``, each batch cut among them, at most one per
``tokenmill.pack.sft.MIN_WORKER_CONVERSATIONS`` lines: fewer conversations get fewer; 1: in the calling process)
and encoded in it, timed
after loading the tokenizer, with the file's index, its reading and the processes' start inside the time, in a
python that has imported it; the engine as ``--engine`` (fastokens, proven against HF as sft proves it).

Each round runs transformers and tokenmill at each ``--workers`` count, the order rotating between rounds. The
machine is shared and its speed drifts: printed are the best times of ``--rounds`` and their ratio, and each round's
own ratio (its runs adjacent in time), sorted, with their median. Then every conversation's ids are compared, and
masks where transformers has them.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "tokenization"))

import chat_template_cases as cases  # noqa: E402

BATCH = 1000

PEER_SCRIPT = r"""
import json, sys, time
import numpy as np
from transformers import AutoTokenizer
folder, data, out = sys.argv[1:4]
tokenizer = AutoTokenizer.from_pretrained(folder)
records = [json.loads(line) for line in open(data, encoding="utf-8")]
options = dict(tokenize=True, return_dict=True, return_assistant_tokens_mask=True)
t0 = time.perf_counter()
ids, masks = [], []
for start in range(0, len(records), %(batch)d):
    batch = records[start:start + %(batch)d]
    result = tokenizer.apply_chat_template([r["messages"] for r in batch], tools=batch[0].get("tools"), **options)
    ids += result["input_ids"]
    masks += result["assistant_masks"]
t1 = time.perf_counter()
one_ids = [tokenizer.apply_chat_template(r["messages"], tools=r.get("tools"), **options)["input_ids"]
           for r in records]
t2 = time.perf_counter()
assert one_ids == ids
lengths = np.array([len(x) for x in ids], dtype=np.int64)
np.savez(out, ids=np.concatenate([np.asarray(x, dtype=np.int64) for x in ids]), lengths=lengths,
         masks=np.concatenate([np.asarray(x, dtype=np.int8) for x in masks]))
print("RESULT " + json.dumps({"batched": t1 - t0, "one": t2 - t1}))
""" % {"batch": BATCH}


def words_of_chat() -> list[str]:
    """The words of data/raw/chat.jsonl's answers, and some non-ASCII ones."""
    words = []
    for line in (ROOT / "data/raw/chat.jsonl").read_text(encoding="utf-8").splitlines():
        for turn in json.loads(line)["conversations"]:
            words += turn["value"].split()
    return words + ["Grüße", "東京は", "🙂", "naïve", "Äußerst", "—", "π≈3.14"]


def make_conversations(count: int, seed: int = 0) -> list[dict]:
    rng = random.Random(seed)
    words = words_of_chat()

    def text() -> str:
        return " ".join(rng.choice(words) for _ in range(rng.randint(5, 120)))

    records = []
    for _ in range(count):
        messages = [{"role": "system", "content": text()}] if rng.random() < 1 / 3 else []
        for _ in range(rng.randint(1, 4)):
            messages += [{"role": "user", "content": text()}, {"role": "assistant", "content": text()}]
        records.append({"messages": messages})
    return records


def run_peer(python: str, folder: Path, data: Path, out: Path) -> dict[str, float]:
    done = subprocess.run([python, "-c", PEER_SCRIPT, str(folder), str(data), str(out)], capture_output=True,
                          text=True, check=False)
    if done.returncode:
        sys.exit(f"transformers failed:\n{done.stderr[-3000:]}")
    line = next(line for line in done.stdout.splitlines() if line.startswith("RESULT "))
    return json.loads(line[len("RESULT "):])


def run_tokenmill(folder: Path, data: Path, engine: str, workers: int, train_on: str
                  ) -> tuple[float, list[tuple[np.ndarray, np.ndarray]]]:
    import contextlib

    from tokenmill.pack.sft import encode_conversations
    from tokenmill.tokenization.chat_template import ChatTemplateEncoder, load_chat_template
    from tokenmill.tokenization.engine import Encoder
    from tokenmill.tokenization.tokenizer import load_tokenizer
    from tokenmill.training.sft_datasets import ConversationFile

    info = load_tokenizer(folder / "tokenizer.json")
    info.tokenizer.encode_special_tokens = False
    fast = Encoder(info, engine)
    if engine != "hf":
        fast.encode_batch(["warm up"], False)  # fastokens loads on first use: not the encoder's time
    encoder = ChatTemplateEncoder(load_chat_template("tokenizer", folder / "tokenizer.json"), info.tokenizer,
                                  train_on, engine=fast)
    start = time.perf_counter()  # from here: the file's index and lines read, the render processes started
    results = []
    with contextlib.closing(encode_conversations(encoder, [ConversationFile(data)], BATCH, workers)) as batches:
        for _, batch in batches:
            results += batch
    return time.perf_counter() - start, results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conversations", type=int, default=5000)
    parser.add_argument("--templates", nargs="+", default=["chatml_tools", "chatml_generation", "llama3"],
                        choices=sorted(cases.TEMPLATES))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--peer-python", default="/tmp/tf/bin/python")
    parser.add_argument("--engine", default="fastokens", choices=["hf", "fastokens"])
    parser.add_argument("--workers", type=int, nargs="+", default=[2],
                        help="tokenmill's render processes (sft --workers); several: each run every round")
    parser.add_argument("--train-on", default="assistant", choices=["assistant", "last_assistant", "all"],
                        help="tokenmill's mask (all: the ids alone, one render per conversation, as transformers "
                             "makes for a template without generation blocks)")
    parser.add_argument("--out", type=Path, default=Path("/tmp/chat_bench"))
    args = parser.parse_args()

    args.out.mkdir(parents=True, exist_ok=True)
    data = args.out / "conversations.jsonl"
    records = make_conversations(args.conversations)
    data.write_text("".join(json.dumps(record, ensure_ascii=False) + "\n" for record in records), encoding="utf-8")
    print(f"{len(records)} conversations, {data.stat().st_size / 1e6:.1f} MB, "
          f"{sum(len(r['messages']) for r in records)} messages; engine {args.engine}, render workers {args.workers}, "
          f"train_on {args.train_on}")
    for name in args.templates:
        folder = cases.make_folder(name, args.out)
        peer_out = args.out / f"{name}.transformers.npz"
        rounds = []
        sides = ["transformers", *(f"tokenmill{workers}" for workers in args.workers)]
        for round_number in range(args.rounds):
            times = {}
            for side in sides[round_number % len(sides):] + sides[:round_number % len(sides)]:  # order rotating
                if side == "transformers":
                    times.update(run_peer(args.peer_python, folder, data, peer_out))
                else:
                    times[side], results = run_tokenmill(folder, data, args.engine, int(side[len("tokenmill"):]),
                                                               args.train_on)
            rounds.append(times)
        peer = np.load(peer_out, allow_pickle=False)
        cuts = np.concatenate([[0], np.cumsum(peer["lengths"])])
        generation = "{% generation %}" in cases.TEMPLATES[name][0] and args.train_on == "assistant"
        same_ids = same_masks = 0
        for k, (ids, trained) in enumerate(results):
            want = peer["ids"][cuts[k]:cuts[k + 1]]
            same_ids += np.array_equal(ids, want)
            same_masks += generation and np.array_equal(trained, peer["masks"][cuts[k]:cuts[k + 1]].astype(bool))
        tokens = int(cuts[-1])
        best = {side: min(r[side] for r in rounds) for side in ("one", "batched", *sides[1:])}
        print(f"{name}: {tokens:,} tokens; ids equal {same_ids}/{len(records)}"
              + (f", masks equal {same_masks}/{len(records)}" if generation else
                 " (masks: transformers has none for a template without generation blocks)"))
        for mine in sides[1:]:
            for side, what in (("one", "one call per conversation"), ("batched", f"batches of {BATCH}")):
                ratios = sorted(r[side] / r[mine] for r in rounds)
                print(f"  {mine[len('tokenmill'):]} workers; transformers, {what}: best {best[side]:.2f} s "
                      f"({len(records) / best[side]:,.0f} conv/s); tokenmill best {best[mine]:.2f} s "
                      f"({len(records) / best[mine]:,.0f} conv/s): {best[side] / best[mine]:.1f}x best to best; "
                      f"round by round {', '.join(f'{ratio:.1f}' for ratio in ratios)}x, "
                      f"median {ratios[len(ratios) // 2]:.1f}x")

if __name__ == "__main__":
    main()
