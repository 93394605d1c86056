"""Tokenize JSONL (or Parquet) into a ``.pbin`` and, from the same tokens in the same pass, Megatron's
``.bin/.idx`` and datatrove's ``.ds`` files: parallel, ordered, streaming, proven, and never silently short.

Pipeline per input file:

1. The raw index (given, or scanned now) cuts the file into batches of whole lines, about
   ``batch_bytes`` each.
2. One process loads each tokenizer once (:func:`tokenmill.pack.batches.start_engine`; the fast engine in the
   background, started before the inputs are scanned and their hashing begins, which it overlaps; Hugging
   Face's load after gigatoken's, as both hold the GIL) and runs two stages per batch in ``workers`` threads each
   (:func:`tokenmill.pack.batches.ordered_results`). *Prepare*: read
   the batch's byte range in one ``pread``, parse each line (exactly one JSON value; orjson, then the
   ``jq`` package for a pattern other than a plain ``.key``), choose its proof sample and encode that
   with Hugging Face. *Finish*: tokenize the batch with the engine (gigatoken, fastokens or Hugging Face, see
   :class:`tokenmill.tokenization.engine.Encoder`), compare the proof sample (fast engine only), append the EOD id
   to every document that does not already end with it, and cast the ids to the output dtype. The
   engines release the GIL while they encode, so the threads share the cores; a thread hashes the
   inputs for the sidecar.
3. The calling thread keeps a few batches per thread in flight (more while fastokens loads) and
   writes results strictly in batch order with one ``write`` each, so the bytes are the same for any
   worker count and memory stays at a few batches (plus 8 bytes per document for the index).

A bad line (blank, invalid UTF-8 or JSON, not an object, text missing, not a string, empty, or no
tokens) stops the run with ``file:line: reason`` under ``on_bad_line="error"``; under ``"skip"``
it is left out and counted by reason in the sidecar and the log. Nothing is ever dropped silently.
A proof document on which the engines differ stops the run (``on_mismatch="error"``) or has its
whole input re-encoded with Hugging Face (``"hf"``): no differing id is ever written.

Cost (2 cores, GPT-2; bench/RESULTS.md, "One process, tokenizers loaded once"): 79 MB/s on 1 GB in
0.6 GiB, 2.0x Megatron-LM main's gigatoken path and 0.56x gigatoken's reader alone; on 100 MB 6.3x and
0.69x. Of the CPU (``bench/pack_cost.py``), fastokens' encode ~45 %, the proof (:mod:`tokenmill.tokenization.proof`:
Hugging Face on ~0.25 % of the text, and the choice of it) ~8 % on prose and ~4 % on emoji-dense text,
the two tokenizers' loads and the imports ~25 % of a 100 MB job. With gigatoken (issue 45, a busy machine):
the same CPU as fastokens at 1 GB, 0.1 GiB less RSS, 1.08x Megatron main and 0.60x gigatoken alone there; after
the EOD and cast became one C pass and the proof's excerpts rode in the batch's engine call ("Pack's hot path,
round two"), 1.56x main and 0.50x gigatoken alone at 1 GB, 4.96x and 0.69x at 100 MB (1.12-1.18x before them).
With ``--engine hf``: the speed of HF alone.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import os
import sys
import threading
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
from tokenmill import FORMAT_VERSIONS
from tokenmill.errors import TokenmillError
from tokenmill.files.identity import FileIdentity, file_sha256
from tokenmill.files.source import Source, resolve_inputs
from tokenmill.formats.datatrove import DatatroveWriter, datatrove_paths, token_size_for
from tokenmill.formats.bin_idx import MMapIndexedDatasetBuilder, optimal_dtype
from tokenmill.formats.pbin import LAYOUT_050, PbinWriter
from tokenmill.formats.sidecar import (SidecarRecord, SourceRecord, eod_within_note, index_ranges, sidecar_path,
                                      skipped_summary)
from tokenmill.inputs.jsonl import input_compression, lines_in_range, stream_line_batches
from tokenmill.inputs.parquet import parquet_source, row_line_batches
from tokenmill.inputs.raw_index import read_index, scan_lines
from tokenmill.inputs.text_selection import TextSelector
from tokenmill.pack.batches import (READ_AHEAD_BYTES, BatchTokenizer, line_batches, ordered_results, preload_engine,
                                    start_engine)
from tokenmill.pack.settings import BAD_LINE_POLICIES, BATCH_BYTES, MISMATCH_POLICIES, PackSettings, useful_workers
from tokenmill.progress import Progress
from tokenmill.tokenization.engine import FastEngineUnavailable, choose_engine, fast_engine_loading
from tokenmill.tokenization.proof import EngineMismatch, ProofTally, job_check_fraction
from tokenmill.tokenization.tokenizer import TokenizerInfo

__all__ = ["PackSettings", "pack", "useful_workers", "BATCH_BYTES", "BAD_LINE_POLICIES", "MISMATCH_POLICIES",
           "EngineMismatch"]

_COMPRESSION_RATIO = 4  # about what gzip/zstd give on web text: the decompressed size, for the engine's choice


def pack(inputs: list[str], out_path: str | None, settings: PackSettings, indexes: list[str] | None = None,
         byte_range: tuple[int, int] | None = None, row_groups: tuple[int, int | None] | None = None,
         log: Callable[[str], None] = lambda message: print(message, file=sys.stderr),
         megatron_prefix: str | None = None, datatrove_name: str | None = None,
         datatrove_tokenizer_name: str | None = None) -> SidecarRecord:
    """Tokenize ``inputs`` (in order) into one ``.pbin`` with its sidecar, and/or Megatron's
    ``.bin/.idx``, and/or datatrove's ``.ds`` files, in one pass over the tokens.

    Args:
        inputs: JSONL files, plain or compressed (gzip, zstd, xz, bzip2; see :mod:`tokenmill.inputs.jsonl`), or
            Parquet files (:mod:`tokenmill.inputs.parquet`); local, or by URL (a scheme of
            :data:`tokenmill.files.urls.SCHEMES`, globs where its row allows them; :mod:`tokenmill.files.objects`),
            streamed.
        out_path: the ``.pbin`` to write (atomically; its sidecar is renamed into place just before
            it), or None for none.
        settings: see :class:`PackSettings`.
        indexes: raw index per plain input (scanned on the fly where None; ignored for compressed ones).
        byte_range: ``(start, end)``: pack only the lines of the one plain input that start in this
            byte range, numbered as in the whole file (a shard of a big file).
        row_groups: ``(start, end)``: pack only these row groups of the one Parquet input (end None:
            to the last), rows numbered as in the whole file (see :mod:`tokenmill.inputs.parquet`).
        log: where progress and skip counts go.
        megatron_prefix: also write ``<prefix>.bin/.idx`` from the same tokens, the bytes
            ``preprocess_data.py --append-eod`` writes (see :func:`tokenmill.formats.bin_idx.pbin_to_megatron`).
        datatrove_name: also write ``DIR/NAME.ds``, ``.ds.index`` and ``.ds.metadata`` from the same
            tokens, the bytes datatrove's ``DocumentTokenizer`` writes (see
            :func:`tokenmill.formats.datatrove.pbin_to_datatrove`).
        datatrove_tokenizer_name: the tokenizer as ``.ds.metadata`` names it; default: the
            tokenizer path as given.

    Returns:
        The sidecar contents.

    Raises:
        TokenmillError: a bad line under ``on_bad_line="error"`` (naming file and line), an
            unreadable input, index or tokenizer, a truncated or corrupt archive, a byte range of
            several or compressed inputs, no output asked for, an output that is one of the inputs, or two
            input URLs of one redacted name.
    """
    outputs = _output_paths(out_path, megatron_prefix, datatrove_name)
    sources = _check_arguments(inputs, outputs, settings, indexes, byte_range, row_groups)
    input_bytes = (sum(source.size * (1 if source.compression is None else _COMPRESSION_RATIO) for source in sources)
                   if byte_range is None else max(min(byte_range[1], sources[0].size) - byte_range[0], 0))
    asked = settings.engine
    estimate = ", compressed input counted 4x" if any(source.compression for source in sources) else ""
    if choose_engine(asked, input_bytes=input_bytes)[0] == "hf":  # hf, or auto on a small input (same ids)
        settings = dataclasses.replace(settings, engine="hf")
    check_fraction = settings.check_fraction  # as asked, for the sidecar; a small job checks more documents
    settings = dataclasses.replace(settings, check_fraction=job_check_fraction(check_fraction, input_bytes))
    with contextlib.ExitStack() as stack:
        preload_engine(settings)
        # Inputs are hashed for the sidecar in a thread (hashlib releases the GIL), beside tokenizing.
        hasher = stack.enter_context(ThreadPoolExecutor(1, thread_name_prefix="tokenmill-sha256"))
        hashing_stop = threading.Event()
        stack.callback(hashing_stop.set)  # on the way out (an error, a signal), before waiting for the thread
        hash_input = functools.partial(hasher.submit, file_sha256, stop=hashing_stop)
        # Scanned (numpy, the GIL mostly released) and their hashing started while the fast engine loads
        read = [_plan_input(source, indexes[number] if indexes else None, byte_range, row_groups, hash_input)
                for number, source in enumerate(sources)]
        job = start_engine(settings, asked, input_bytes, estimate)
        stack.callback(job.close)
        writer = _Outputs(stack, out_path, megatron_prefix, job.tokenizer,
                          datatrove_name, datatrove_tokenizer_name or str(settings.tokenizer_path),
                          settings.add_special_tokens)
        for item in read:
            _pack_input(item, job, writer, log)
        _refuse_modified(sources)
        meta = _sidecar(job, read, writer, check_fraction)
        if writer.pbin is not None:
            writer.pbin.sidecar = meta
    if writer.pbin is not None:  # as written: its paths relative to the sidecar's folder
        meta = {**writer.pbin.sidecar, "file": writer.pbin.identity}
    _log_summary(meta, job, len(read), " and ".join(filter(None, (out_path, megatron_prefix, datatrove_name))), log)
    return meta


def _log_summary(meta: SidecarRecord, job: BatchTokenizer, input_count: int, written: str,
                 log: Callable[[str], None]) -> None:
    """The job's closing lines: what it wrote (``written``), the engine's choice and proof, and a warning where
    documents hold the EOD id."""
    log(f"{written}: {meta['documents']} documents, "
        f"{meta['tokens']} tokens, {sum(meta['skipped'].values())} lines skipped; {job.chosen.reason}, "
        f"{meta['engine']['checked_documents']} documents checked against "
        f"{'Hugging Face' if job.tokenizer.reference_library == 'tokenizers' else job.tokenizer.reference_library}"
        + (f"; {meta['engine']['mismatches']} of {input_count} inputs re-encoded with Hugging Face after a mismatch"
           if meta['engine']['mismatches'] else ""))
    if note := eod_within_note(meta):
        log(f"warning: {note}")


def _refuse_modified(sources: list[Source]) -> None:
    """The bytes hashed and packed are the bytes recorded: a local input modified since the job resolved it stops
    the job (an object's reads were of its pinned version).

    Raises:
        TokenmillError: naming the file.
    """
    for source in dict.fromkeys(sources):
        if not source.is_url and (now := FileIdentity.of(source.name)) != source.identity:
            raise TokenmillError(f"{source.name}: modified while it was being packed ({source.size} → "
                                 f"{now.size} bytes); nothing was written")


def _output_paths(out_path: str | None, megatron_prefix: str | None, datatrove_name: str | None) -> list[str]:
    """Every file a pack writes.

    Raises:
        TokenmillError: none asked for.
    """
    if out_path is None and megatron_prefix is None and datatrove_name is None:
        raise TokenmillError("pack needs an output: a .pbin (-o), a Megatron prefix (--megatron), "
                             "a datatrove name (--datatrove), or several")
    return (([out_path, sidecar_path(out_path)] if out_path else [])
            + ([f"{megatron_prefix}.bin", f"{megatron_prefix}.idx"] if megatron_prefix else [])
            + ([str(path) for path in datatrove_paths(datatrove_name).values()] if datatrove_name else []))


def _check_arguments(inputs: list[str], outputs: list[str], settings: PackSettings, indexes: list[str] | None,
                     byte_range: tuple[int, int] | None, row_groups: tuple[int, int | None] | None) -> list[Source]:
    """The inputs (object globs expanded), each resolved once (its identity, checked again once packed, and its
    compression), once the arguments are found good; then the outputs' folders are created (a refused run
    leaves none).

    Raises:
        TokenmillError: see :func:`pack`.
    """
    for output in outputs:  # found now, not at the last rename, after the other outputs were put in place
        if os.path.isdir(output):
            raise TokenmillError(f"{output}: is a directory; give a file path for the output")
    TextSelector(settings.text)  # a bad pattern fails before any tokenizer loads
    sources = resolve_inputs(inputs, outputs, [*(indexes or []), settings.tokenizer_path],
                             None if settings.allow_duplicate_inputs else
                             "pass --allow-duplicate-inputs to pack it once per mention")
    for source in sources:
        input_compression(source)  # a zip archive (no stream) is refused before anything is read
    if indexes is not None and len(indexes) != len(sources):
        raise TokenmillError(f"got {len(indexes)} index files for {len(sources)} inputs")
    if byte_range is not None and (len(sources) != 1 or sources[0].compression):
        raise TokenmillError("a byte range needs exactly one plain (uncompressed) JSONL input")
    if byte_range is not None and sources[0].is_url and not indexes:
        raise TokenmillError(f"{sources[0].name}: a byte range of an object needs its raw index (--index; tokenmill "
                             f"index URL -o FILE.idx writes it)")
    if row_groups is not None and (len(sources) != 1 or sources[0].compression != "parquet"):
        raise TokenmillError("a row-group range needs exactly one Parquet input")
    for output in outputs:
        try:
            Path(output).parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise TokenmillError(f"{output}: cannot create its folder ({exc.strerror})") from None
    return sources


@dataclass
class _Input:
    """One input as a pack reads it: its sidecar entry, completed as it is packed, and what the sidecar
    does not keep."""

    entry: dict
    lines: np.ndarray | None = None  # a plain file's indexed lines (of its byte range); else read as a stream
    source: Source | None = None
    proof: ProofTally = field(default_factory=ProofTally)


def _plan_input(source: Source, index: str | None, byte_range: tuple[int, int] | None,
                row_groups: tuple[int, int | None] | None, hash_input: Callable[..., Future]) -> _Input:
    """How one input is read (see :func:`_source_tasks`), with its sidecar entry so far."""
    if source.compression == "parquet":
        item = _Input(parquet_source(source, row_groups, hash_input))
    elif source.is_url:
        item = _Input(_object_source(source, index, byte_range))
    elif source.compression is None:
        item = _plain_source(source, index, byte_range, hash_input)
    else:
        item = _Input({"path": source.name, "compression": source.compression})
    if source.is_url:
        item.entry["object"] = source.identity.sidecar_entry()
    item.source = source
    return item


def _pack_input(item: _Input, job: BatchTokenizer, writer: _Outputs, log: Callable[[str], None]) -> None:
    """Pack one input with the job's engine; on a proof mismatch under ``on_mismatch: hf`` again from its start
    with Hugging Face; where a fast engine cannot load the tokenizer under ``auto``, with the next engine.

    Raises:
        EngineMismatch: a mismatch under ``on_mismatch: error``.
        TokenmillError: see :func:`_pack_source`.
    """
    start, source = writer.mark(), item.entry
    try:
        _pack_source(item, job.chosen.name, job, writer)
    except EngineMismatch as mismatch:
        if job.settings.on_mismatch == "error":
            raise
        log(f"{mismatch}; re-encoding {source['path']} with Hugging Face (on_mismatch: hf)")
        writer.rewind(start)
        _pack_source(item, "hf", job, writer)
        source["mismatch"] = str(mismatch)
    except FastEngineUnavailable as unavailable:  # auto takes the next engine, saying why; one asked for stops
        job.chosen.fall_back(unavailable)
        writer.rewind(start)
        _pack_input(item, job, writer, log)  # gigatoken, then fastokens, then HF, which always loads
        return
    for reason, entry in source["skipped"].items():
        log(f"{source['path']}: skipped {entry['count']} lines: {reason} "
            f"(first at {_place(source, entry['first_lines'][0])})")


def _sidecar(job: BatchTokenizer, read: list[_Input], writer: _Outputs, check_fraction: float) -> SidecarRecord:
    """The ``.pbin`` sidecar of a finished pack (``check_fraction`` as asked; the job's may be raised)."""
    sources = [item.entry for item in read]
    for source in sources:
        if isinstance(source["sha256"], Future):
            source["sha256"] = source["sha256"].result()
    settings, tokenizer, encoder = job.settings, job.tokenizer, job.chosen
    proof = sum((item.proof for item in read), ProofTally())
    return {
        "format": FORMAT_VERSIONS["pbin"],
        "layout": LAYOUT_050,
        "tokenizer": {**tokenizer.sidecar_entry(), "add_special_tokens": settings.add_special_tokens},
        "engine": {"name": encoder.name, "reason": encoder.reason, "versions": encoder.versions(),
                   "check_fraction": check_fraction, "on_mismatch": settings.on_mismatch,
                   "checked_documents": sum(source["checked_documents"] for source in sources),
                   "proof": proof.sidecar_entry(settings.check_fraction),
                   "mismatches": sum("mismatch" in source for source in sources)},
        "token_width": tokenizer.token_width,
        "text": settings.text,  # (not on_bad_line: the skipped lines say what it did, and nothing where none)
        "max_line_bytes": settings.max_line_bytes,
        "documents": writer.num_documents,
        "tokens": writer.num_tokens,
        "sources": sources,
        "allow_duplicate_inputs": settings.allow_duplicate_inputs,
        "skipped": _total_skipped(sources),
        "eod_in_text": writer.eod_in_text(),
        **({"eod_within_documents": writer.eod_within} if tokenizer.eod_id is not None else {}),
    }


def _object_source(source: Source, index: str | None, byte_range: tuple[int, int] | None) -> SourceRecord:
    """The sidecar entry of a JSONL object, read as one stream (:func:`tokenmill.inputs.jsonl.stream_line_batches`),
    or of its byte range, whose lines its raw ``index`` locates (one ranged ``GET`` of their span); the
    sha256 and line count come as it is read."""
    entry = {"path": source.name, **({"compression": source.compression} if source.compression else {})}
    if byte_range is not None:
        lines = read_index(index)
        if len(lines) and int(lines[-1, 0] + lines[-1, 1]) > source.size:
            raise TokenmillError(f"{index}: indexes {int(lines[-1, 0] + lines[-1, 1])} bytes, but {source.name} "
                                 f"holds {source.size} (the index of another object?)")
        first, lines = lines_in_range(lines, *byte_range)
        span_start = int(lines[0, 0]) if len(lines) else min(byte_range[0], source.size)
        span_end = min(int(lines[-1, 0] + lines[-1, 1]) + 1, source.size) if len(lines) else span_start
        entry.update(byte_range=[span_start, span_end], first_line=first + 1)
    return entry


def _plain_source(source: Source, index: str | None, byte_range: tuple[int, int] | None,
                  hash_file: Callable[..., Future]) -> _Input:
    """A plain input (or its byte range): its lines, and its sidecar entry with its ``sha256`` a future of
    ``hash_file(path, start, end)``.

    A byte range is recorded as the span of the lines it selects, and ``sha256`` hashes that span:
    a shard job reads and hashes only its own bytes. The hash stops at ``size``, the size the file had
    when the job began (:func:`pack` refuses a file that changed meanwhile).
    """
    path, size = source.name, source.size
    lines = read_index(index, path) if index else scan_lines(source)
    entry = {"path": path, "bytes": size}
    first = 0
    if byte_range is None:
        entry["sha256"] = hash_file(path, 0, size)
    else:
        first, lines = lines_in_range(lines, *byte_range)
        span_start = int(lines[0, 0]) if len(lines) else min(byte_range[0], size)
        span_end = min(int(lines[-1, 0] + lines[-1, 1]) + 1, size) if len(lines) else span_start
        entry.update(byte_range=[span_start, span_end], first_line=first + 1,
                     sha256=hash_file(path, span_start, span_end))
    return _Input({**entry, "lines": len(lines)}, lines)


def _source_tasks(item: _Input, engine: str, settings: PackSettings, sizes: deque):
    """The batches of one input, with the input bytes behind each appended to ``sizes``: a plain file's
    by its lines; another's as a stream decompressed here, its entry completed at its end."""
    if item.lines is not None:
        return line_batches(item.entry["path"], item.lines, item.entry.get("first_line", 1), settings.batch_bytes,
                            engine, sizes)
    return _compressed_tasks(item, engine, settings, sizes)


def _compressed_tasks(item: _Input, engine: str, settings: PackSettings, sizes: deque):
    source, archive = item.entry, {}
    compressed_bytes_read = [0]
    lines = reported = 0

    def count(read: int) -> None:
        compressed_bytes_read[0] += read

    if source.get("format") == "parquet":  # rows as JSON lines; the entry is complete already
        batches = row_line_batches(source, settings.text, settings.batch_bytes, settings.max_line_bytes, count)
    else:
        batches = stream_line_batches(item.source, source.get("compression"), settings.batch_bytes,
                                      settings.max_line_bytes, archive, on_read=count,
                                      byte_span=source.get("byte_range"), first_line=source.get("first_line", 1))
    for first_line, batch_lines, block in batches:
        lines += len(batch_lines)
        sizes.append(compressed_bytes_read[0] - reported)
        reported = compressed_bytes_read[0]
        yield source["path"], first_line, batch_lines, engine, block
    if archive and item.source.is_url:  # a whole object or a span of it, as stored
        source.update(bytes=item.source.size, sha256=archive["sha256"], lines=lines)
        if source.get("compression"):
            source["decompressed_bytes"] = archive["decompressed_bytes"]
    elif archive:
        source.update(bytes=archive["bytes"], sha256=archive["sha256"],
                      decompressed_bytes=archive["decompressed_bytes"], lines=lines)


def _source_bytes(item: _Input) -> int:
    """The bytes an input's progress counts: its byte range, or its file (compressed, as stored)."""
    if "byte_range" in item.entry:
        return item.entry["byte_range"][1] - item.entry["byte_range"][0]
    return item.source.size


class _Outputs:
    """The files one pack writes from the same batches, in one pass: a ``.pbin`` (Modalities' bytes),
    Megatron's ``.bin/.idx`` and datatrove's ``.ds`` files, any of them, each by its peer's rule
    (docs/formats.md §10):

    * ``.pbin``: the tokenizer's ids (its post-processor's BOS/EOS kept), then the EOD unless they
      already end with it; ``token_width`` bytes per token (every id fits).
    * ``.bin``: the same, with one more EOD after each document whose ids already ended with it (as
      ``--append-eod``); uint16 or int32 by Megatron's rule on ``vocab_size`` (``len(tokenizer)``).
    * ``.ds``: the text's own ids without the post-processor's, then one EOD (datatrove replaces
      the post-processor by ``$A <EOS>``); 2 or 4 bytes by datatrove's rule on ``vocab_size``.

    Counts are of the ``.pbin``'s documents and tokens; the documents that kept their own EOD are the
    sidecar's ``eod_in_text``. Cost: one write per batch and format (plus, for Megatron and datatrove,
    one vectorised insert where a batch has such documents, and for datatrove one vectorised mask
    where the post-processor adds ids): the tokens are derived per batch, never encoded again.
    """

    def __init__(self, stack: contextlib.ExitStack, pbin_path: str | None, megatron_prefix: str | None,
                 tokenizer: TokenizerInfo, datatrove_name: str | None = None, tokenizer_name: str = "",
                 add_special_tokens: bool = True):
        self.pbin = stack.enter_context(PbinWriter(pbin_path, tokenizer.token_width)) if pbin_path else None
        self.megatron = (stack.enter_context(MMapIndexedDatasetBuilder(megatron_prefix,
                                                                       optimal_dtype(tokenizer.vocab_size)))
                         if megatron_prefix else None)
        self.datatrove = None
        if datatrove_name:
            self.datatrove = stack.enter_context(DatatroveWriter(datatrove_name, token_size_for(tokenizer.vocab_size),
                                                                 tokenizer_name))
        # the ids each packed document holds from the post-processor, which datatrove's leave out
        self._added = tokenizer.post_processor_ids if add_special_tokens else ((), ())
        self.eod_id = tokenizer.eod_id
        self.num_documents = self.num_tokens = 0
        self._eod_in_text: list[np.ndarray] = []  # per batch: documents (0-based, global) that kept their EOD
        self.eod_within = 0  # EOD ids inside documents, before their last token (the sidecar's eod_within_documents)

    def write(self, tokens: np.ndarray, lengths: np.ndarray, eod_in_text: np.ndarray, eod_within: int = 0) -> None:
        """Append a batch: ``tokens`` of documents ``lengths`` long; ``eod_in_text``: its documents (0-based in
        the batch) whose own ids already ended with the EOD; ``eod_within``: the EOD ids its documents hold
        before their last token.

        Raises:
            TokenmillError: a token id that does not fit a format's width.
        """
        if self.pbin is not None:
            self.pbin.write(tokens, lengths)
        if self.megatron is not None:
            self.megatron.add_batch(tokens, lengths, self.eod_id, eod_in_text)
        if self.datatrove is not None:
            self.datatrove.add_batch(tokens, lengths, self.eod_id, eod_in_text, added=self._added)
        self._eod_in_text.append(self.num_documents + eod_in_text)
        self.eod_within += eod_within
        self.num_documents += len(lengths)
        self.num_tokens += len(tokens)

    def mark(self) -> tuple:
        """A point to :meth:`rewind` to (an input re-encoded another way starts there again)."""
        return (tuple(writer.mark() if writer else None for writer in (self.pbin, self.megatron, self.datatrove)),
                self.num_documents, self.num_tokens, len(self._eod_in_text), self.eod_within)

    def rewind(self, mark: tuple) -> None:
        writer_marks, self.num_documents, self.num_tokens, batches, self.eod_within = mark
        for writer, writer_mark in zip((self.pbin, self.megatron, self.datatrove), writer_marks):
            if writer is not None:
                writer.rewind(writer_mark)
        del self._eod_in_text[batches:]

    def eod_in_text(self) -> list[list[int]]:
        """The sidecar's ``eod_in_text`` ranges."""
        return index_ranges(np.concatenate([np.empty(0, np.int64), *self._eod_in_text]))


def _pack_source(item: _Input, engine: str, job: BatchTokenizer, writer: _Outputs) -> None:
    """Tokenize one input into ``writer``, filling its sidecar entry (documents, skipped, checked),
    and report progress (see :mod:`tokenmill.progress`) as batches are written.

    Raises:
        TokenmillError: a bad line under ``on_bad_line="error"``, a corrupt archive.
        EngineMismatch: a proof document differs.
    """
    skipped_lines: dict[str, list[int]] = {}
    source, item.proof = item.entry, ProofTally()
    source.update(engine=engine, documents=0, tokens=0, checked_documents=0)
    settings = job.settings
    sizes: deque = deque()  # input bytes of each batch handed out, in order
    tasks = _source_tasks(item, engine, settings, sizes)
    with Progress(f"pack {source['path']}", _source_bytes(item)) as progress:
        # far while fastokens loads (its load releases the GIL), then just enough to keep the encoder fed;
        # gigatoken's load (awkward's import, from_json) holds the GIL: parsing ahead would only slow it
        def read_ahead() -> int:
            if engine == "fastokens" and fast_engine_loading(settings.tokenizer_path):
                return max(2, READ_AHEAD_BYTES // settings.batch_bytes)
            return 2

        for tokens, lengths, bad, checked, eod_in_text, eod_within in ordered_results(tasks, job, settings.workers,
                                                                                      read_ahead):
            if bad and settings.on_bad_line == "error":
                line_number, reason = bad[0]
                where = (f"{source['path']}: row {line_number}" if source.get("format") == "parquet"
                         else f"{source['path']}:{line_number}")
                raise TokenmillError(f"{where}: {reason} "
                                     f"(on_bad_line: error; use skip to leave such lines out)")
            for line_number, reason in bad:
                skipped_lines.setdefault(reason, []).append(line_number)
            writer.write(tokens, lengths, eod_in_text, eod_within)
            source["documents"] += len(lengths)
            source["tokens"] += int(lengths.sum())
            source["checked_documents"] += checked.checked
            item.proof += checked
            progress.update(sizes.popleft(), len(lengths))
    source["skipped"] = skipped_summary(skipped_lines)


def _place(source: SourceRecord, number: int) -> str:
    """``line 12`` of a source, or ``row 12`` of a Parquet file."""
    return f"{'row' if source.get('format') == 'parquet' else 'line'} {number}"


def _total_skipped(sources: list[SourceRecord]) -> dict[str, int]:
    totals: dict[str, int] = {}
    for source in sources:
        for reason, entry in source["skipped"].items():
            totals[reason] = totals.get(reason, 0) + entry["count"]
    return dict(sorted(totals.items()))
