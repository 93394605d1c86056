"""One batch of JSONL lines → token ids, in two stages that threads of one process run side by side.

A job (:func:`start_engine`) loads its tokenizer once (fastokens in the background) and chooses its engine;
:class:`BatchTokenizer` holds what every batch needs. :func:`line_batches` cuts indexed lines into batches
of about ``batch_bytes`` of whole lines. :func:`ordered_results` runs, per batch, *prepare* (read its byte
range in one ``pread``, parse each line: exactly one JSON value, orjson, then the ``jq`` package for a pattern
other than a plain ``.key``; for gigatoken and a plain ``.key``, first a conservative C parser that unescapes the
texts into one UTF-8 buffer, :class:`~tokenmill.inputs.utf8_texts.Utf8Texts`, with orjson only where it is not sure
of a line; choose its proof sample and encode that with Hugging Face) and *finish*
(tokenize the batch with the engine, compare the proof sample, append the EOD id to every document that
does not already end with it, cast to the output dtype) in ``workers`` threads each; the engines release
the GIL while they encode, so the threads share the cores. Results come back strictly in batch order,
with a few batches per thread in flight (more while fastokens loads), so the bytes are the same for any
worker count and memory stays at a few batches.

Cost: see :mod:`tokenmill.pack.pretraining`; a batch's own memory is its bytes, their texts and ~125 bytes per byte
in Hugging Face's buffers for its proof sample.
"""

from __future__ import annotations

import ctypes
import os
import threading
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from tokenmill._kernels import eod_appended_cast
from tokenmill.formats.pbin import TOKEN_DTYPES
from tokenmill.inputs.text_selection import TextSelector
from tokenmill.inputs.utf8_texts import Utf8Texts
from tokenmill.pack.settings import PackSettings
from tokenmill.tokenization.engine import Encoder, preferred_fast_engine, preload_fast_engine, wait_for_fast_engine
from tokenmill.tokenization.proof import ProofSample, ProofSampler, ProofTally, input_key
from tokenmill.tokenization.tokenizer import TokenizerInfo, load_tokenizer

__all__ = ["READ_AHEAD_BYTES", "BatchTokenizer", "line_batches", "ordered_results", "preload_engine", "start_engine"]

# Hugging Face's encoder on more than this much text: its big buffers are returned at once
# (:func:`_free_big_buffers_at_once`).
_HF_BIG_BUFFERS_BYTES = 8 << 20
# Batches parsed ahead of the encoders while fastokens loads: 32 MB of JSONL is
# about what parsing and proving get through during its longest load (Tekken, 1.1-2.2 s).
READ_AHEAD_BYTES = 32 << 20


# ---------------------------------------------------------------------------------------------
# One batch of lines → token ids, in two stages that threads of this one process run side by side.

# glibc's mallopt parameter for the size above which a buffer gets its own mapping.
_M_MMAP_THRESHOLD = -3
_BIG_BUFFER_BYTES = 1 << 20


def _free_big_buffers_at_once() -> None:
    """Have glibc's malloc give each buffer of 1 MiB or more its own mapping, returned when freed.

    Hugging Face's encoder allocates ~125 bytes per input byte in short-lived buffers. By default
    glibc raises its threshold after the first such buffer is freed and then serves them from the
    heap, which fragments: Tekken with ``engine hf`` crept from 0.34 to 0.54 GiB over 100 MB; with the
    threshold fixed before the tokenizer's load it peaks at 0.46 GiB, in the same time. Not done for
    fastokens, where it cost 10 % in page faults for no need, nor for inputs under
    :data:`_HF_BIG_BUFFERS_BYTES`, where the mappings cost more than the heap's creep (0.2 s of a 1 MB
    job with Tekken). A no-op without glibc.
    """
    mallopt = getattr(ctypes.CDLL(None), "mallopt", None)
    if mallopt is not None:
        mallopt(_M_MMAP_THRESHOLD, _BIG_BUFFER_BYTES)


def _limit_engine_threads(workers: int) -> None:
    """Hold the engines' own thread pools to ``workers`` cores, set before they start (once per process).

    Each of the ``workers`` encode threads runs fastokens on one thread of its own: on 2 cores its BPE
    threads scale 1.2-1.4x, two callers on one thread each a little more, and each BPE thread's heap
    grows with the text it has seen (bench/RESULTS.md). Hugging Face's encoder and proof share one rayon
    pool of ``workers`` threads. A value the user set is kept.
    """
    os.environ.setdefault("FASTOKENS_BPE_THREADS", "1")
    os.environ.setdefault("RAYON_NUM_THREADS", str(workers))


@dataclass
class _Prepared:
    """A batch read, parsed and sampled, with Hugging Face's ids of its proof sample (stage 1)."""

    path: str
    engine: str
    texts: list | Utf8Texts = field(default_factory=list)  # one UTF-8 buffer where gigatoken takes the batch
    text_lines: list | np.ndarray = field(default_factory=list)  # each text's line number (an array once prepared)
    bad: list = field(default_factory=list)
    proof: ProofSample | None = None  # with a fast engine


class _Locations:
    """``file:line`` of a batch's i-th text, written only for the one a proof error names (not per text)."""

    def __init__(self, path: str, text_lines: np.ndarray):
        self.path, self.text_lines = path, text_lines

    def __getitem__(self, i: int) -> str:
        return f"{self.path}:{self.text_lines[i]}"


class BatchTokenizer:
    """What every batch of a job needs (the tokenizer, its encoders, the text selector, the proof's sampler,
    the open inputs), shared by the threads that run :meth:`prepare` and :meth:`finish`.

    Both stages are safe to run in several threads at once: the engines release the GIL while they
    encode and share no per-call state, inputs are read with ``pread``.
    """

    def __init__(self, tokenizer: TokenizerInfo, encoder: Encoder, settings: PackSettings):
        self.tokenizer, self.settings = tokenizer, settings
        self.selector = TextSelector(settings.text)
        self.sampler = ProofSampler(tokenizer.added_tokens(), settings.check_fraction)
        self.chosen = encoder  # the job's engine (HF re-encodes an input after a mismatch)
        self._encoders = {encoder.name: encoder}
        self._files: dict[str, object] = {}
        self._lock = threading.Lock()

    def close(self) -> None:
        for handle in self._files.values():
            handle.close()

    def encoder(self, engine: str) -> Encoder:
        with self._lock:
            if engine not in self._encoders:
                self._encoders[engine] = Encoder(self.tokenizer, engine)
            return self._encoders[engine]

    def _read_range(self, path: str, offset: int, length: int) -> bytes:
        with self._lock:
            handle = self._files.get(path)
            if handle is None:
                handle = self._files[path] = open(path, "rb")
        return os.pread(handle.fileno(), length, offset)

    def prepare(self, task: tuple[str, int, np.ndarray, str, bytes | None]) -> _Prepared:
        """Stage 1 of a batch: read and parse its lines, choose its proof sample and encode that with HF.

        Nothing here needs the fast engine, so this runs ahead while fastokens is still loading and
        while it encodes earlier batches.

        Args:
            task: (path, 1-based number of the first line, ``(n, 2)`` offsets/lengths of the lines, engine,
                and the lines' bytes when the parent read them (a compressed input; offsets are then
                relative to them) or None to read them from ``path``).
        """
        path, first_line, lines, engine, block = task  # see _batches, _compressed_tasks
        batch = _Prepared(path, engine)
        max_bytes = self.settings.max_line_bytes
        base = 0
        # A line over max_line_bytes is a bad line, never parsed: its batch is read line by line (a compressed
        # input's block holds such a line whole where it fits a read, or none of it at offset -1)
        fits = bool(len(lines)) and int(lines[:, 1].max()) <= max_bytes
        if block is None and fits:  # else (rare) read the lines one by one
            base = int(lines[0, 0])
            block = self._read_range(path, base, int(lines[-1, 0] + lines[-1, 1]) - base)
            if len(block) < int(lines[-1, 0] + lines[-1, 1]) - base:
                batch.bad = [(first_line, "file is shorter than its index says (stale index?)")]
                return batch
        texts = None
        if fits and block is not None:
            starts = lines[:, 0] - base
            if engine == "gigatoken" and self.selector.key is not None:
                # One C pass: the texts unescaped into one UTF-8 buffer, which gigatoken reads as it is; None where
                # the parser is not sure of a line (then orjson and each bad line's reason, as for other engines)
                texts = Utf8Texts.from_json_lines(block, starts, lines[:, 1], self.selector.key)
            if texts is None:
                texts = self.selector.select_lines(block, starts, lines[:, 1])
        if texts is not None:  # every line good: one parse, nothing per line in Python
            batch.texts, batch.text_lines = texts, np.arange(first_line, first_line + len(texts), dtype=np.int64)
            lines = lines[:0]
        for line_number, (offset, length) in enumerate(lines.tolist(), start=first_line):
            if length > max_bytes:
                text, reason = None, (f"line of {length} bytes, over max_line_bytes ({max_bytes}): tokenizing it "
                                      f"would take ~125 bytes of memory per byte")
            else:
                line = (self._read_range(path, offset, length) if block is None
                        else block[offset - base:offset - base + length])
                text, reason = self.selector.select(line)
            if reason is None:
                batch.texts.append(text)
                batch.text_lines.append(line_number)
            else:
                batch.bad.append((line_number, reason))
                if self.settings.on_bad_line == "error":  # the run stops here; nothing to tokenize
                    return batch
        batch.text_lines = np.asarray(batch.text_lines, dtype=np.int64)
        if engine != "hf":
            batch.proof = ProofSample.of(batch.texts, self.sampler, self.tokenizer,
                                         self.settings.add_special_tokens, batch.text_lines, input_key(path))
        return batch

    def finish(self, batch: _Prepared) -> tuple[np.ndarray, np.ndarray, list, ProofTally, np.ndarray, int]:
        """Stage 2 of a batch: tokenize it with its engine, prove the fast engine's sample, add EODs.

        Returns:
            (tokens in the output dtype, tokens per kept document, [(line number, reason)] of bad lines,
            what the proof checked with HF, the kept documents (0-based in the batch) whose own
            ids already ended with the EOD id, so that none was appended, and how many EOD ids the
            documents' own ids hold before their last (the sidecar's ``eod_within_documents``)).

        Raises:
            EngineMismatch: a proof document differs.
        """
        bad = batch.bad
        if bad and self.settings.on_bad_line == "error":
            return np.empty(0), np.empty(0, np.int64), bad, ProofTally(), np.empty(0, np.int64), 0
        info, encoder = self.tokenizer, self.encoder(batch.engine)
        # The proof's excerpts ride in the batch's own call (one release of the GIL, one result to unpack)
        excerpts = batch.proof.excerpt_texts if encoder.name != "hf" and batch.proof is not None else []
        tokens, lengths = encoder.encode_batch(batch.texts + excerpts if excerpts else batch.texts,
                                               self.settings.add_special_tokens)
        excerpt_ids = None
        if excerpts:
            count = len(batch.texts)
            cut = int(lengths[:count].sum())
            tokens, lengths, excerpt_ids = tokens[:cut], lengths[:count], (tokens[cut:], lengths[count:])
        checked = ProofTally()
        if encoder.name != "hf":
            checked = batch.proof.check(encoder, tokens, lengths, _Locations(batch.path, batch.text_lines),
                                        self.settings.add_special_tokens, excerpt_ids)
        if (lengths == 0).any():  # e.g. only whitespace for a tokenizer that drops it
            bad = sorted(bad + [(int(batch.text_lines[i]), "text gives no tokens")
                                for i in np.flatnonzero(lengths == 0)])
            lengths = lengths[lengths > 0]  # they hold no tokens, so `tokens` stays as it is
        if not len(lengths):
            return np.empty(0, TOKEN_DTYPES[info.token_width]), lengths, bad, checked, np.empty(0, np.int64), 0
        # Modalities' EOD rule and the cast in one C pass (Hugging Face's int64 ids made uint32 first: every id fits)
        tokens, lengths, eod_in_text, eod_within = _eod_appended_cast(tokens.astype(np.uint32, copy=False), lengths,
                                                                      info.eod_id, TOKEN_DTYPES[info.token_width])
        return tokens, lengths, bad, checked, eod_in_text, eod_within


def _eod_appended_cast(tokens: np.ndarray, lengths: np.ndarray, eod_id: int | None,
                       dtype: np.dtype) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """``finish``'s last step on uint32 ids in one C pass (:func:`tokenmill._kernels.eod_appended_cast`): the ids
    cast to ``dtype`` with ``eod_id`` after each document whose ids do not already end with it (Modalities'
    rule), the new lengths, the documents that kept their own EOD, and the EOD ids before documents' last.
    The bytes of the numpy steps it replaces (a comparison, a count, ``np.insert``, ``astype``), ~4x faster."""
    out = np.empty(len(tokens) + (len(lengths) if eod_id is not None else 0), dtype)
    out_lengths, kept = np.empty(len(lengths), np.int64), np.empty(len(lengths), np.int64)
    written, num_kept, eod_count = eod_appended_cast(np.ascontiguousarray(tokens), np.ascontiguousarray(lengths,
                                                                                                        np.int64),
                                                     -1 if eod_id is None else eod_id, out, out_lengths, kept)
    if eod_id is None:
        return out, out_lengths, np.empty(0, np.int64), 0
    return out[:written], out_lengths, kept[:num_kept].copy(), eod_count - num_kept


# ---------------------------------------------------------------------------------------------
# Parent side: batches in, ordered writes out.


def line_batches(path: str, lines: np.ndarray, first_line: int, batch_bytes: int, engine: str, sizes: deque):
    """Cut the indexed lines (the first is line ``first_line``) into tasks of about ``batch_bytes``
    bytes of whole lines, appending each task's bytes to ``sizes``."""
    if not len(lines):
        return
    line_ends = lines[:, 0] + lines[:, 1]
    cut_points = np.searchsorted(line_ends - lines[0, 0], np.arange(batch_bytes, int(line_ends[-1] - lines[0, 0]),
                                                                     batch_bytes), side="right")
    bounds = sorted({0, *cut_points.tolist(), len(lines)})  # (np.unique would import numpy.ma: 20 ms)
    for start, stop in zip(bounds[:-1], bounds[1:]):
        sizes.append(int(line_ends[stop - 1] - lines[start, 0]) + 1)
        yield path, first_line + int(start), lines[start:stop], engine, None


def ordered_results(tasks, job: BatchTokenizer, workers: int, read_ahead: Callable[[], int]):
    """Yield each task's result in task order: ``workers`` threads prepare batches (:meth:`~BatchTokenizer.prepare`:
    parsing, sampling, HF's proof ids) and ``workers`` threads encode them (:meth:`~BatchTokenizer.finish`),
    with ``read_ahead()`` batches beyond those in flight, far while fastokens loads (0.3-2.2 s). ``job`` may be
    anything with such ``prepare`` and ``finish``, safe in several threads (``sft``'s chat-template job, whose
    ``prepare`` waits on a worker process: :func:`tokenmill.pack.sft.encode_conversations`).

    One process, one load of each tokenizer: the engines release the GIL while they encode, so their
    threads share the cores with the parsing, where worker processes each paid the imports and both
    loads again (~0.85 s of CPU each; 56 % of a 100 MB job's CPU with two workers).
    """
    with ThreadPoolExecutor(workers, thread_name_prefix="tokenmill-prepare") as preparers, \
            ThreadPoolExecutor(workers, thread_name_prefix="tokenmill-encode") as encoders:
        in_flight: deque = deque()  # (prepared, finished) futures per batch, in task order
        try:
            for task in tasks:
                prepared = preparers.submit(job.prepare, task)
                in_flight.append((prepared, encoders.submit(_finish_when_prepared, job, prepared)))
                if len(in_flight) > read_ahead() + workers - 1:
                    yield in_flight.popleft()[1].result()
            while in_flight:
                yield in_flight.popleft()[1].result()
        finally:  # stopped early (an error, Ctrl-C): drop what was not started, wait for the rest
            for futures in in_flight:
                for future in futures:
                    future.cancel()


def _finish_when_prepared(job: BatchTokenizer, prepared: Future) -> tuple:
    return job.finish(prepared.result())


def preload_engine(settings: PackSettings) -> str | None:
    """Start loading the job's fast engine in the background (once per process; :func:`start_engine` does it
    too), for a caller with other work to overlap it (pack's raw index scan and input hashing, which release
    the GIL); return which engine, or None under ``hf``."""
    _limit_engine_threads(settings.workers)  # before any engine starts its pool
    if settings.engine == "hf":
        return None
    fast = preferred_fast_engine(settings.engine, settings.tokenizer_spec)
    preload_fast_engine(settings.tokenizer_spec, fast)
    return fast


def start_engine(settings: PackSettings, asked: str, input_bytes: float, estimate: str) -> BatchTokenizer:
    """Load the job's tokenizer once, fastokens in the background (the first batch waits for it), and
    choose its engine (see :func:`tokenmill.tokenization.engine.choose_engine`).

    gigatoken's load (awkward's import, ``from_json``) holds the GIL, as Hugging Face's does: run side by side,
    each starved the other and the first encode began ~0.5-0.8 s later than with the two one after the other
    (100 MB, bench/RESULTS.md "Start-up"), so Hugging Face's load waits for gigatoken's.

    Raises:
        TokenmillError: an unreadable tokenizer, or one whose EOD is not a single token.
    """
    if preload_engine(settings) == "gigatoken":  # its load holds the GIL as HF's does: one after the other
        wait_for_fast_engine(settings.tokenizer_path)
    big_hf_job = input_bytes > _HF_BIG_BUFFERS_BYTES
    if settings.engine == "hf" and big_hf_job:
        _free_big_buffers_at_once()  # before the tokenizer's load, whose buffers are big too
    tokenizer = load_tokenizer(settings.tokenizer_spec, settings.eod)
    encoder = Encoder(tokenizer, asked, input_bytes=input_bytes, estimate=estimate)
    if encoder.name == "hf" and settings.engine != "hf" and big_hf_job:  # auto took HF: an unproven tokenizer
        _free_big_buffers_at_once()
    return BatchTokenizer(tokenizer, encoder, settings)
