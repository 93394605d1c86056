"""``tokenmill preprocess-data``: Megatron's ``tools/preprocess_data.py``, flag for flag and byte for byte.

Takes the flags of megatron-core 0.19's tool (``specs/megatron-tokenizers.md``) and writes what it writes,
for every tokenizer type of :mod:`tokenmill.tokenization.families`:

* one MMIDIDX pair ``<prefix>_<key>_document.{bin,idx}`` per ``--json-keys`` key (:mod:`tokenmill.formats.bin_idx`),
  tokens as uint16 where the tokenizer's ``vocab_size`` < 65,500, else int32;
* a line is one document per key. A string value is one sequence; a JSON list is one sequence per
  element. A sequence that encodes to no ids is left out, so an empty text is a document of no
  sequences, which Megatron keeps. ``--append-eod`` appends the EOD to the last sequence of every
  document that has one;
* ``--partitions P`` (P > 1) reads every file of the glob ``--input`` (``glob.glob``'s order, ``.gz``
  too) and deals its lines to P partitions, round robin or, with ``--keep-sequential-samples``, in
  runs of ceil(lines / P); the output is partition 0's documents, then 1's, ... (Megatron writes each
  partition's files, then merges them; tokenmill writes the merged files only).

Unlike Megatron, a line that is not a JSON object with the keys, or whose value is neither a string nor
a list of strings, stops the run with its file and line; outputs appear only when whole (temporary
names, renamed).

Speed: texts are encoded in batches by the fast engine (its thread pool one thread per worker), the next batch
while this one is proven and written, and a sample of each batch by the type's own library, which must give the
same ids (:mod:`tokenmill.tokenization.proof`); a difference stops the run. Memory: two batches of lines (~4 MiB
each) and their ids, and the ``.idx`` arrays.
"""

from __future__ import annotations

import argparse
import contextlib
import glob
import gzip
import math
import os
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import orjson

from tokenmill.errors import TokenmillError
from tokenmill.files.identity import refuse_inputs_as_outputs
from tokenmill.formats.document_blocks import eod_appended
from tokenmill.formats.bin_idx import MMapIndexedDatasetBuilder, optimal_dtype
from tokenmill.inputs.jsonl import iter_lines
from tokenmill.megatron.job_tokenizer import FlagParser, add_tokenizer_flags
from tokenmill.tokenization.engine import (ENGINES, FAST_ENGINE_PAYS_BYTES, Encoder, preferred_fast_engine,
                                           preload_fast_engine)
from tokenmill.tokenization.families import HF_TYPE, TYPES, TokenizerSpec
from tokenmill.tokenization.proof import DEFAULT_CHECK_FRACTION, ProofSample, ProofSampler
from tokenmill.tokenization.tokenizer import TYPE_EOD, TokenizerInfo, load_tokenizer

__all__ = ["build_parser", "preprocess_data", "tokenizer_spec_of", "PreprocessSummary"]

_BATCH_BYTES = 4 << 20


def build_parser(parser: argparse.ArgumentParser | None = None) -> argparse.ArgumentParser:
    """``preprocess_data.py``'s flags, names, defaults and ``nargs`` (its tokenizer group included)."""
    parser = parser or FlagParser(prog="tokenmill preprocess-data", allow_abbrev=False)
    add_tokenizer_flags(parser, "0.19")
    data = parser.add_argument_group("input data")
    data.add_argument("--input", required=True, help="a JSONL file (with --partitions > 1: a glob of them)")
    data.add_argument("--json-keys", nargs="+", default=["text"], help="keys to write, one output each")
    data.add_argument("--split-sentences", action="store_true", help="split documents into sentences (NLTK punkt)")
    data.add_argument("--keep-newlines", action="store_true", help="keep newlines between split sentences")
    process = parser.add_argument_group("tokenization process")
    process.add_argument("--append-eod", action="store_true", help="append the EOD to every non-empty document")
    process.add_argument("--lang", default="english", help="NLTK's language for --split-sentences")
    output = parser.add_argument_group("output data")
    output.add_argument("--output-prefix", required=True, help="writes <prefix>_<key>_document.bin/.idx")
    runtime = parser.add_argument_group("runtime")
    runtime.add_argument("--workers", type=int, required=True, help="tokenizer threads")
    runtime.add_argument("--partitions", type=int, default=1, help="partitions of the input's lines (see above)")
    runtime.add_argument("--log-interval", type=int, default=1000, help="documents between progress lines")
    runtime.add_argument("--keep-sequential-samples", action="store_true",
                         help="with --partitions > 1, deal lines in runs instead of round robin")
    extra = parser.add_argument_group("tokenmill's own")
    extra.add_argument("--engine", choices=ENGINES, default="auto",
                       help="auto: fastokens, proven per batch against the type's library, except on inputs under "
                            "1 MB; hf: the type's library alone (default: %(default)s)")
    runtime.add_argument("--find-optimal-num-workers", action="store_true", help=argparse.SUPPRESS)
    runtime.add_argument("--workers-to-check", nargs="+", type=int, default=[16, 32, 64], help=argparse.SUPPRESS)
    runtime.add_argument("--max-documents", type=int, default=100_000, help=argparse.SUPPRESS)
    return parser


def tokenizer_spec_of(flags: argparse.Namespace) -> tuple[TokenizerSpec, bool]:
    """The tokenizer that Megatron builds from ``flags``, and whether its special tokens are added
    (the post-processor of HuggingFaceTokenizer and of the BERT types, as ``tokenizer(text)`` adds them).

    Raises:
        TokenmillError: a type or flag tokenmill does not reproduce, naming it.
    """
    kind = flags.tokenizer_type
    if kind not in TYPES:
        raise TokenmillError(f"--tokenizer-type {kind or '(missing)'}: supported are {', '.join(TYPES)}")
    if flags.tokenizer_metadata is not None:
        raise TokenmillError("--tokenizer-metadata: not supported; give the tokenizer's type and files")
    if flags.tokenizer_special_tokens:
        raise TokenmillError(f"--tokenizer-special-tokens: not supported for {kind} yet")
    if flags.chat_template is not None:
        raise TokenmillError("--chat-template: preprocess_data.py never applies it; leave it out")
    if kind == "GPT2BPETokenizer":
        if flags.vocab_file is None or flags.merge_file is None:
            raise TokenmillError("GPT2BPETokenizer needs --vocab-file and --merge-file")
        return TokenizerSpec(flags.vocab_file, kind, merge_file=flags.merge_file), False
    if kind.startswith("BertWordPiece"):
        if flags.vocab_file is None:
            raise TokenmillError(f"{kind} needs --vocab-file")
        return TokenizerSpec(flags.vocab_file, kind), not flags.tokenizer_hf_no_include_special_tokens
    if flags.tokenizer_model is None:
        raise TokenmillError(f"{kind} needs --tokenizer-model")
    if kind == "TikTokenizer":
        return TokenizerSpec(flags.tokenizer_model, kind, flags.tiktoken_pattern or "v2",
                             flags.tiktoken_num_special_tokens, flags.vocab_size or None), False
    add_special_tokens = kind == HF_TYPE and not flags.tokenizer_hf_no_include_special_tokens
    return TokenizerSpec(flags.tokenizer_model, kind), add_special_tokens


@dataclass
class PreprocessSummary:
    """What a run wrote: per key its prefix, and the counts."""

    prefixes: dict[str, str]
    documents: int
    tokens: dict[str, int]
    engine: str


def _input_files(flags: argparse.Namespace) -> list[str]:
    if flags.partitions == 1:
        return [flags.input]
    files = glob.glob(flags.input)  # Megatron's order: the file system's, unsorted
    if not files:
        raise TokenmillError(f"--input {flags.input}: no file matches")
    return files


def _lines(path: str) -> Iterator[tuple[int, bytes]]:
    if path.endswith(".gz"):  # as preprocess_data.py: a .gz input of a partitioned run is read decompressed
        with gzip.open(path, "rb") as handle:
            for number, line in enumerate(handle, start=1):
                yield number, line.rstrip(b"\n")
        return
    yield from iter_lines(path)


def _ordered_lines(flags: argparse.Namespace) -> Iterator[tuple[str, int, bytes]]:
    """``(file, line number, line)`` in the order Megatron's output holds them (see the module docstring)."""
    files = _input_files(flags)
    if flags.partitions == 1:
        for number, line in _lines(files[0]):
            yield files[0], number, line
        return
    total = sum(1 for path in files for _ in _lines(path)) if flags.keep_sequential_samples else 0
    run = math.ceil(total / flags.partitions) if total else 1
    for partition in range(flags.partitions):  # a pass over the inputs per partition: no partition files
        index = 0
        for path in files:
            for number, line in _lines(path):
                owner = min(index // run, flags.partitions - 1) if flags.keep_sequential_samples \
                    else index % flags.partitions
                if owner == partition:
                    yield path, number, line
                index += 1


def _batches(lines: Iterator[tuple[str, int, bytes]], batch_bytes: int) -> Iterator[list[tuple[str, int, bytes]]]:
    batch, size = [], 0
    for entry in lines:
        batch.append(entry)
        size += len(entry[2])
        if size >= batch_bytes:
            yield batch
            batch, size = [], 0
    if batch:
        yield batch


def _texts_of(batch: list[tuple[str, int, bytes]],
              keys: list[str]) -> tuple[dict[str, list[str]], dict[str, np.ndarray]]:
    """Per key: every sequence's text of the batch and, per document, its number of texts.

    Raises:
        TokenmillError: ``file:line`` and what is wrong, for a line that is not such a document.
    """
    texts = {key: [] for key in keys}
    counts = {key: np.zeros(len(batch), np.int64) for key in keys}
    for position, (path, number, line) in enumerate(batch):
        try:
            document = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            raise TokenmillError(f"{path}:{number}: not valid JSON ({exc})") from None
        if not isinstance(document, dict):
            raise TokenmillError(f"{path}:{number}: not a JSON object")
        for key in keys:
            if key not in document:
                raise TokenmillError(f"{path}:{number}: no key {key!r} (--json-keys)")
            value = document[key]
            if isinstance(value, str):
                texts[key].append(value)
                counts[key][position] = 1
            elif isinstance(value, list) and all(isinstance(element, str) for element in value):
                texts[key].extend(value)
                counts[key][position] = len(value)
            elif isinstance(value, list):
                element = next(element for element in value if not isinstance(element, str))
                raise TokenmillError(f"{path}:{number}: {key!r} is a list holding a {type(element).__name__} "
                                     f"({json_text(element)}), not only strings")
            else:
                raise TokenmillError(f"{path}:{number}: {key!r} is {type(value).__name__}, not a string or a list "
                                     f"of strings")
    return texts, counts


def json_text(value: object) -> str:
    """A JSON value as a short text for a message."""
    text = orjson.dumps(value).decode("utf-8")
    return text if len(text) <= 40 else f"{text[:37]}..."


class _Locations:
    """``file:line`` of text i of a batch, computed only for the texts a proof names."""

    def __init__(self, batch: list[tuple[str, int, bytes]], counts: np.ndarray):
        self.batch, self.document_of_text = batch, np.repeat(np.arange(len(counts)), counts)

    def __getitem__(self, text: int) -> str:
        path, number, _ = self.batch[int(self.document_of_text[text])]
        return f"{path}:{number}"


def _documents(ids: np.ndarray, lengths: np.ndarray, counts: np.ndarray,
               eod_id: int | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A batch's ``(tokens, sequence lengths, sequences per document)`` from each text's ids, as
    ``preprocess_data.py`` builds them: texts of no ids dropped, the EOD after each non-empty document."""
    document_of_text = np.repeat(np.arange(len(counts)), counts)
    kept = lengths > 0
    sequence_lengths = lengths[kept].copy()
    per_document = np.bincount(document_of_text[kept], minlength=len(counts)).astype(np.int64)
    if eod_id is not None and len(sequence_lengths):
        last_sequences = np.cumsum(per_document)[per_document > 0] - 1
        ids, sequence_lengths, _ = eod_appended(ids, sequence_lengths, last_sequences, eod_id)
    return ids, sequence_lengths, per_document


def preprocess_data(argv: list[str], log=sys.stderr) -> PreprocessSummary:
    """Run ``preprocess_data.py`` with flags ``argv`` (see the module docstring).

    Raises:
        TokenmillError: a refused flag, a bad line (file and line), an unreadable input, a tokenizer
            that cannot be loaded, or a fast-engine id that differs from the type's library.
    """
    flags = build_parser().parse_args(argv)
    if flags.split_sentences:
        raise TokenmillError("--split-sentences: needs NLTK's punkt data, which tokenmill does not load (a pickle); "
                             "split sentences into a JSON list per document instead")
    if flags.find_optimal_num_workers:
        raise TokenmillError("--find-optimal-num-workers: not supported; tokenmill's threads need no search")
    if flags.workers < 1 or flags.partitions < 1 or flags.workers % flags.partitions:
        raise TokenmillError(f"--workers {flags.workers}: must be a positive multiple of --partitions "
                             f"{flags.partitions}")
    if flags.log_interval < 1:
        raise TokenmillError("--log-interval: must be at least 1")
    spec, add_special_tokens = tokenizer_spec_of(flags)
    keys = list(dict.fromkeys(flags.json_keys))
    prefixes = {key: f"{flags.output_prefix}_{key}_document" for key in keys}
    files = _input_files(flags)
    refuse_inputs_as_outputs([f"{prefix}{ext}" for prefix in prefixes.values() for ext in (".bin", ".idx")],
                             [*files, spec.path])
    os.environ.setdefault("RAYON_NUM_THREADS", str(flags.workers))  # the engines' threads, before their first use
    input_bytes = sum(os.path.getsize(path) for path in files if os.path.isfile(path))
    if flags.engine != "hf" and (flags.engine != "auto" or input_bytes >= FAST_ENGINE_PAYS_BYTES):
        # the fast engine loads in the background (Rust, without the GIL) while the reference loads here
        preload_fast_engine(spec, preferred_fast_engine(flags.engine, spec))
    info = load_tokenizer(spec, TYPE_EOD if flags.append_eod else None,
                          no_type_eod_advice="drop --append-eod, or pack with tokenmill pack --eod TOKEN")
    encoder = Encoder(info, flags.engine, input_bytes=input_bytes, fall_back=True, parallel=flags.workers > 1)
    print(f"tokenmill preprocess-data: {spec.type} {spec.path}, {encoder.reason}", file=log)
    sampler = ProofSampler(info.added_tokens(), DEFAULT_CHECK_FRACTION)
    dtype = optimal_dtype(info.vocab_size)
    documents, tokens, started, read = 0, dict.fromkeys(keys, 0), time.monotonic(), 0
    sequences = dict.fromkeys(keys, 0)  # texts encoded so far per key: each text's ordinal for the proof
    for prefix in prefixes.values():
        if os.path.dirname(prefix):
            os.makedirs(os.path.dirname(prefix), exist_ok=True)
    with contextlib.ExitStack() as stack:
        builders = {key: stack.enter_context(MMapIndexedDatasetBuilder(prefix, dtype)) for key, prefix in
                    prefixes.items()}
        for batch, texts, counts, encoded in _encoded_batches(_batches(_ordered_lines(flags), _BATCH_BYTES), keys,
                                                              encoder, add_special_tokens):
            for key in keys:
                ids, lengths = _proven(encoder, info, sampler, texts[key], encoded[key], add_special_tokens,
                                       _Locations(batch, counts[key]), sequences[key])
                sequences[key] += len(texts[key])
                ids, sequence_lengths, per_document = _documents(ids, lengths, counts[key],
                                                                 info.eod_id if flags.append_eod else None)
                builders[key].add_sequences(ids, sequence_lengths, per_document)
                tokens[key] += len(ids)
            before, documents = documents, documents + len(batch)
            read += sum(len(line) + 1 for _, _, line in batch)
            if documents // flags.log_interval > before // flags.log_interval:
                elapsed = max(time.monotonic() - started, 1e-9)
                print(f"Processed {documents} documents ({documents / elapsed:.1f} docs/s, "
                      f"{read / elapsed / 2**20:.2f} MB/s).", file=log)
    return PreprocessSummary(prefixes, documents, tokens, encoder.name)


def _encoded_batches(batches: Iterator[list[tuple[str, int, bytes]]], keys: list[str], encoder: Encoder,
                     add_special_tokens: bool) -> Iterator[tuple[list, dict, dict, dict]]:
    """Each batch with its texts and counts (:func:`_texts_of`) and, per key, the fast engine's ``(ids, lengths)``:
    the next batch is parsed and its encode started in a thread (the engines release the GIL) before a batch is
    given, so that the engine works while the caller proves and writes the one before. A bad line is raised once
    every batch before it has been given, as reading line by line would.

    Raises:
        TokenmillError: a bad line (see :func:`_texts_of`).
    """
    def encode(texts: dict[str, list[str]]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        return {key: encoder.encode_batch(texts[key], add_special_tokens) for key in keys}

    pending, error = None, None
    with ThreadPoolExecutor(1, thread_name_prefix="preprocess-encode") as pool:
        for batch in batches:
            try:
                texts, counts = _texts_of(batch, keys)
            except TokenmillError as exc:
                error = exc
                break
            following = (batch, texts, counts, pool.submit(encode, texts))
            if pending is not None:
                yield *pending[:3], pending[3].result()
            pending = following
        if pending is not None:
            yield *pending[:3], pending[3].result()
    if error is not None:
        raise error


def _proven(encoder: Encoder, info: TokenizerInfo, sampler: ProofSampler, texts: list[str],
            encoded: tuple[np.ndarray, np.ndarray], add_special_tokens: bool, locations: _Locations,
            first: int) -> tuple[np.ndarray, np.ndarray]:
    """``(ids, lengths)`` of ``texts`` (int64) from the engine's ``encoded``, a fast engine's proven on a sample
    against the reference; the sample is drawn by each text's ordinal in the run, from ``first``."""
    ids, lengths = encoded
    if encoder.name != "hf":
        ordinals = np.arange(first, first + len(texts), dtype=np.int64)
        ProofSample.of(texts, sampler, info, add_special_tokens, ordinals).check(encoder, ids, lengths, locations,
                                                                                 add_special_tokens)
    return np.asarray(ids, dtype=np.int64), lengths
