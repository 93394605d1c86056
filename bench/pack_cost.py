"""Where a pack's CPU time goes: each part of `tokenmill pack` timed alone, on one thread, and the proof's share.

    python bench/pack_cost.py /tmp/corpus/real-100MB.jsonl            # GPT-2
    python bench/pack_cost.py /tmp/corpus/real-100MB.jsonl --tokenizer tests/data/tekken.tokenizer.json --eod '</s>'
    python bench/make_adversarial.py /tmp/corpus/emoji-40MB.jsonl     # emoji, combining marks, ~every line
    python bench/pack_cost.py /tmp/corpus/emoji-40MB.jsonl

Runs pack's own two stages (read/parse/sample/HF proof, then fast encode/check/EOD) batch after
batch in this thread, with ``RAYON_NUM_THREADS=1`` so that Hugging Face uses one core, and takes
the process's CPU time (``time.process_time``: fastokens' own threads included, other jobs on the
machine not) of the functions that do the work, each net of the timed functions it calls. The sum
is the CPU time a pack spends, whatever the overlap; divided by the cores, it is the floor of its
wall time. Interpreter start-up and imports are timed in a fresh process (its CPU time).

Then: the proof's share of that CPU (every ``proof:`` row: the choice, Hugging Face's encode, the
excerpts' fastokens encode, the comparison), what it checked (the sidecar's ``engine.proof``), and
k, Hugging Face's cost per byte over fastokens' (from the same run: the proof's HF bytes and time,
the text's bytes and the fast encode's time), which sizes the proof's budget (``tokenmill.tokenization.proof``).
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

os.environ["RAYON_NUM_THREADS"] = "1"  # before either library starts its thread pool

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))

from tokenmill.files import identity  # noqa: E402
from tokenmill.formats.pbin import PbinWriter  # noqa: E402
from tokenmill.inputs.raw_index import scan_lines  # noqa: E402
from tokenmill.inputs.text_selection import TextSelector  # noqa: E402
from tokenmill.pack import batches as batches_module, settings as settings_module  # noqa: E402
from tokenmill.tokenization import engine as engine_module, proof as proof_module  # noqa: E402
from tokenmill.tokenization.tokenizer import TokenizerInfo, load_tokenizer  # noqa: E402

spent: dict[str, float] = defaultdict(float)
_running: list[list[float]] = []  # per timed call in progress: the time its timed callees took
text_bytes = [0]


def timed(owner, name: str, label) -> None:
    """Replace ``owner.name`` by a wrapper adding its run time, net of the timed calls inside it, to
    ``spent[label]`` (``label`` may be a function of the labels of the calls in progress)."""
    original = getattr(owner, name)
    stack: list[str] = []

    def wrapper(*args, **kwargs):
        where = label(stack) if callable(label) else label
        stack.append(where)
        _running.append([0.0])
        start = time.process_time()
        try:
            return original(*args, **kwargs)
        finally:
            elapsed = time.process_time() - start
            spent[where] += elapsed - _running.pop()[0]
            stack.pop()
            if _running:
                _running[-1][0] += elapsed

    wrapper.stack = stack
    setattr(owner, name, wrapper)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", type=Path)
    parser.add_argument("--tokenizer", type=Path, default=REPO / "data/tokenizers/gpt2.tokenizer.json")
    parser.add_argument("--eod", default="<|endoftext|>")
    parser.add_argument("--check-fraction", type=float, default=proof_module.DEFAULT_CHECK_FRACTION)
    args = parser.parse_args()

    subprocess.run([sys.executable, "-c", "import tokenmill.cli, tokenmill.pack.pretraining"], check=True,
                   env={**os.environ, "PYTHONPATH": str(REPO / "src")})
    child = resource.getrusage(resource.RUSAGE_CHILDREN)
    spent["interpreter start-up and imports"] = child.ru_utime + child.ru_stime

    start = time.process_time()
    info = load_tokenizer(args.tokenizer, args.eod)
    spent["Hugging Face load (with the file's parse)"] = time.process_time() - start
    start = time.process_time()
    engine_module.preload_fast_engine(args.tokenizer)  # the load pack starts in the background, waited for here
    engine_module._fast_loads[("fastokens", info.sha256)].join()
    spent["fastokens load"] = time.process_time() - start

    timed(TextSelector, "select", "JSON parse (orjson)")
    timed(proof_module.ProofSampler, "choose", "proof: choice of the sample")
    timed(TokenizerInfo, "encode_reference", "proof: Hugging Face encode")
    timed(proof_module.ProofSample, "of", "proof: excerpts' strings and sizes")
    timed(proof_module.ProofSample, "check", "proof: comparison")
    checking = proof_module.ProofSample.check.stack
    real_encode = engine_module.Encoder.encode_batch

    def encode_batch(self, texts, add_special_tokens):  # counts the text's bytes, untimed
        if not checking:
            text_bytes[0] += sum(len(text.encode("utf-8", "surrogatepass")) for text in texts)
        return real_encode(self, texts, add_special_tokens)

    engine_module.Encoder.encode_batch = encode_batch
    timed(engine_module.Encoder, "encode_batch",
          lambda stack: "proof: fastokens encode of the excerpts" if checking else "fastokens encode")
    timed(PbinWriter, "write", "writes and their sha256")
    timed(identity, "file_sha256", "sha256 of the input")
    timed(batches_module.BatchTokenizer, "prepare", "reads, the loop over lines")
    timed(batches_module.BatchTokenizer, "finish", "EOD insertion, dtype")

    settings = settings_module.PackSettings(str(args.tokenizer), eod=args.eod, check_fraction=args.check_fraction)
    job = batches_module.BatchTokenizer(info, engine_module.Encoder(info, "fastokens"), settings)
    start = time.process_time()
    lines = scan_lines(str(args.corpus))
    spent["line scan"] = time.process_time() - start
    identity.file_sha256(args.corpus)
    out = Path("/tmp/pack_cost.pbin")
    documents, tally = 0, proof_module.ProofTally()
    with PbinWriter(str(out), info.token_width) as writer:
        for task in batches_module.line_batches(str(args.corpus), lines, 1, settings.batch_bytes, "fastokens", []):
            tokens, lengths, _, checked, *_ = job.finish(job.prepare(task))
            writer.write(tokens, lengths)
            documents += len(lengths)
            tally += checked
    out.unlink()
    total = sum(spent.values())
    megabytes = args.corpus.stat().st_size / 1e6
    print(f"{args.corpus} ({megabytes:.1f} MB, {documents} documents), {args.tokenizer.name}, one thread, "
          f"check_fraction {args.check_fraction}:")
    print("| part | s | share |\n|---|---|---|")
    for label, seconds in sorted(spent.items(), key=lambda item: -item[1]):
        print(f"| {label} | {seconds:.2f} | {seconds / total:.1%} |")
    print(f"| **total CPU** | **{total:.2f}** | |")
    proof = sum(seconds for label, seconds in spent.items() if label.startswith("proof:"))
    print(f"floor of the wall time on 2 cores: {total / 2:.2f} s = {megabytes / (total / 2):.1f} MB/s")
    print(f"proof: {proof:.2f} s = {proof / total:.1%} of the CPU; {tally.sidecar_entry(args.check_fraction)}")
    hf_per_byte = spent["proof: Hugging Face encode"] / max(tally.hf_bytes, 1)
    fast_per_byte = spent["fastokens encode"] / max(text_bytes[0], 1)
    hf_rate = tally.hf_bytes / 1e6 / spent["proof: Hugging Face encode"]
    fast_rate = text_bytes[0] / 1e6 / spent["fastokens encode"]
    print(f"k = {hf_per_byte / fast_per_byte:.0f} (Hugging Face {hf_rate:.2f} "
          f"MB/s on {tally.hf_bytes / 1e6:.2f} MB, fastokens {fast_rate:.1f} MB/s "
          f"on {text_bytes[0] / 1e6:.1f} MB)")


if __name__ == "__main__":
    main()
