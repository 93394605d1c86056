"""``tokenmill sft``: a config's conversation files → the ``.pbin`` / ``.loss_mask.pbin`` pair and its sidecar.

Each kept conversation is one document in both files (same lengths), laid out and masked by
:class:`tokenmill.training.sft_datasets.InstructionCollator`; conversations are truncated or dropped as it does.
A line gives no document when it is *skipped* (a bad line, under ``on_bad_line: skip``) or *dropped* (a good
conversation that the fit to ``seq_length`` or the mask leaves nothing of: longer than ``seq_length`` under
``truncation: drop``, no trained part within ``seq_length``, or nothing trained at all: no assistant turn the
template trains, or every message masked). Each source's sidecar entry counts both by reason with their first line
numbers (``skipped``, ``dropped``) and lists every line left out as ranges (``left_out``: ``[[first, stop], ...]``,
1-based, half-open), so that document ``k`` of a source is its ``k``-th line not left out
(:func:`tokenmill.formats.provenance.document_lines`) whatever was left out before it; the log names each reason
with its first line. Inputs may be
URLs (the schemes of :data:`tokenmill.files.urls.SCHEMES`; globs listed), read forward. The loss mask is renamed first,
then the sidecar (which records the mask's identity), then the tokens: a run killed in between leaves a pair
whose sidecar check fails, never a mixed pair.

An entry with a ``chat_template`` (or ``--chat-template``) renders each conversation with the model's own
template instead (:mod:`tokenmill.tokenization.chat_template`: the ids of transformers' ``apply_chat_template``,
assistant-only masks); a conversation longer than ``seq_length`` is dropped, or cut after its last trained run
that fits; the sidecar records the template's source and sha256 in ``chat_template``, and the date its
``strftime_now`` gave (``template_date``, a fixed default: never the build's day). Its batches go through
pack's ordered pool (:func:`tokenmill.pack.batches.ordered_results`): each is parsed and rendered in this process
or, cut in pieces, in ``workers`` worker processes (Jinja holds the GIL, and the renders are ~70 % of the
time: one process renders on one core), then encoded and masked in this one, and written strictly in batch order,
so the bytes are the same for any worker count.

Cost: tokenizing the messages (the fast engine where proven, the proof as ``pack``'s), one write per batch
of conversations, and the sha256 of each input; with a chat template, its renders (one per conversation, two
more per assistant turn without generation blocks), spread over the workers, and the encoding of the rendered
texts; starting the workers (a forkserver, then one fork each) costs 0.7-1 s, so there is at most one per
MIN_WORKER_CONVERSATIONS lines. The lines left out cost one int each while their input is written, and the
sidecar two per run of consecutive ones (a few bytes a line at worst, where every other line is left out).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from tokenmill import FORMAT_VERSIONS
from tokenmill.config import default, validate_sections
from tokenmill.errors import BadLine, TokenmillError
from tokenmill.files.identity import file_sha256
from tokenmill.files.source import Source, resolve_inputs
from tokenmill.formats.pbin import LAYOUT_050, PbinWriter
from tokenmill.formats.sidecar import SidecarRecord, SourceRecord, index_ranges, sidecar_path, skipped_summary
from tokenmill.tokenization.engine import Encoder, choose_engine
from tokenmill.tokenization.families import TokenizerSpec
from tokenmill.tokenization.proof import ProofTally
from tokenmill.pack.batches import ordered_results
from tokenmill.tokenization.chat_template import (ChatTemplateEncoder, load_chat_template, render_in_worker,
                                               start_render_worker, template_date)
from tokenmill.tokenization.tokenizer import TokenizerInfo, is_plain_file, load_tokenizer
from tokenmill.training.sft_datasets import (DROPPED_LONGER, DROPPED_NOTHING_FITS, DROPPED_NOTHING_TRAINED,
                                             ConversationFile, InstructionCollator, InstructionDataset, loss_mask_path)

__all__ = ["write_sft", "encode_conversations", "summary_lines", "MIN_WORKER_CONVERSATIONS"]

# fewer lines per render worker than this: fewer workers (starting them costs 0.7-1 s, ~10,000 renders' time)
MIN_WORKER_CONVERSATIONS = 5000


def _source_entry(source: Source, conversations: int, documents: int, tokens: int, **counts) -> SourceRecord:
    """The sidecar entry of one conversation file or object: its name, bytes and sha256 (of the version read),
    its counts, and an object's pinned version."""
    return {"path": source.name, "bytes": source.size, "sha256": file_sha256(source.name), "lines": conversations,
            "documents": documents, "tokens": tokens, **counts,
            **({"object": source.identity.sidecar_entry()} if source.is_url else {})}


def write_sft(name: str, config: dict, out_path: str | os.PathLike, batch_conversations: int = 1000,
              source: str = "config", engine: str | None = None, chat_template: str | None = None,
              workers: int | None = None) -> SidecarRecord:
    """Tokenize ``config["sft"][name]`` into the ``.pbin`` / ``.loss_mask.pbin`` pair and a sidecar.

    Each kept conversation is one document in both files (same lengths); conversations are
    truncated or dropped exactly as :class:`InstructionCollator` does, counted in the sidecar;
    skipped lines are counted by reason with their first line numbers, as ``pack`` does.

    Args:
        name: the entry of ``sft:`` to build.
        config: the parsed configuration (its ``tokenizers`` and ``sft`` sections are validated
            against the workflow's schema).
        out_path: the tokens ``.pbin``.
        batch_conversations: conversations per write.
        source: names the configuration in errors.
        engine: overrides the tokenizer's ``engine`` (default ``auto``); its ``check_fraction`` applies.
        chat_template: overrides the entry's ``chat_template``: ``tokenizer`` or a ``.jinja`` path renders
            each conversation with that template (:func:`write_chat_sft`); None keeps the entry's.
        workers: with a chat template, render batches in this many worker processes (1: in this one; None: the
            entry's ``workers``), never more than there are batches; the bytes written are the same for any count.

    Raises:
        TokenmillError: a config that breaks the schema or lacks the entry (naming the key), bad
            lines under ``on_bad_line: error``, a message on which the fast engine disagrees with HF, workers
            under 1.
    """
    if workers is not None and workers < 1:
        raise TokenmillError(f"workers must be at least 1, not {workers}")
    if chat_template is not None:  # the override, before validation: it frees the entry of the config's keys
        entry = _config_entry(config, ("sft", name))
        config = {**config, "sft": {**config["sft"], name: {**entry, "chat_template": chat_template}}}
    validate_sections(config, ("tokenizers", "sft"), source)
    entry = _config_entry(config, ("sft", name))
    tokenizer_config = _config_entry(config, ("tokenizers", entry["tokenizer"]))  # the schema checked the rest
    if entry.get("chat_template") is not None:
        return _write_chat_sft(name, entry, tokenizer_config, out_path, batch_conversations, engine,
                               entry.get("workers", default("sft.*.workers")) if workers is None else workers)
    messages = entry["message_construction"]
    on_bad_line = entry.get("on_bad_line", default("sft.*.on_bad_line"))
    sources, left_outs, proof = [], [], ProofTally()
    inputs = resolve_inputs(entry["inputs"], [out_path, loss_mask_path(out_path), sidecar_path(out_path)],
                            [tokenizer_config["path"]])
    spec = TokenizerSpec.from_config(tokenizer_config)
    tokenizer = load_tokenizer(spec)
    asked = engine or tokenizer_config.get("engine", default("tokenizers.*.engine"))
    check_fraction = tokenizer_config.get("check_fraction", default("tokenizers.*.check_fraction"))
    input_bytes = sum(source.size for source in inputs)
    # (the messages' control-token strings stay text: split_special_tokens, as the datasets' encoders have it)
    engine, reason = choose_engine(asked, tokenizer, input_bytes, split_special_tokens=True)
    # The datasets get auto as asked, so that their encoders fall back to HF where fastokens cannot load.
    dataset_engine = "hf" if engine == "hf" else asked
    # The loss mask is renamed first, then the sidecar (which records the mask's identity), then the
    # tokens: a run killed in between leaves a pair whose sidecar check fails, never a mixed pair.
    with PbinWriter(out_path, tokenizer.token_width) as tokens_out:
        with PbinWriter(loss_mask_path(out_path), 1) as mask_out:
            collator = None
            for source in inputs:
                dataset = InstructionDataset(source, tokenizer, [f".{field}" for field in messages],
                                             entry["special_tokens"], engine=dataset_engine,
                                             check_fraction=check_fraction)
                collator = collator or InstructionCollator(messages, entry.get("loss_masking_jq_patterns", []),
                                                           entry["special_tokens"], entry["seq_length"],
                                                           truncation=entry.get("truncation", "truncate"))
                left_outs.append(_LeftOut(on_bad_line))
                documents, tokens = _write_conversations(dataset, collator, tokens_out, mask_out,
                                                         batch_conversations, left_outs[-1])
                sources.append(_source_entry(source, len(dataset), documents, tokens,
                                             checked_messages=dataset.checked, **left_outs[-1].entry()))
                proof += dataset.proof
        tokens_out.sidecar = _sft_sidecar(entry, tokens_out, mask_out, tokenizer, dataset, collator,
                                          {"chosen": engine, "reason": reason, "check_fraction": check_fraction},
                                          proof, _LeftOut.skipped_lines(left_outs), sources)
    return {**tokens_out.sidecar, "file": tokens_out.identity}


def _write_chat_sft(name: str, entry: dict, tokenizer_config: dict, out_path: str | os.PathLike,
                    batch_conversations: int, engine: str | None, workers: int) -> SidecarRecord:
    """``write_sft`` for an entry with a ``chat_template``: each conversation rendered by the model's template
    and tokenized as transformers' ``apply_chat_template`` does, masked by
    :class:`~tokenmill.tokenization.chat_template.ChatTemplateEncoder` (see its module for the rules).

    Raises:
        TokenmillError: a tokenizer that is not a Hugging Face ``tokenizer.json``, no template, bad lines under
            ``on_bad_line: error``, a template that breaks the prefix rule.
    """
    import jinja2

    spec = TokenizerSpec.from_config(tokenizer_config)
    if not is_plain_file(spec):
        raise TokenmillError(f"sft.{name}.chat_template: needs a Hugging Face tokenizer.json (the folder transformers "
                             f"loads), not a {spec.type} tokenizer")
    template = load_chat_template(entry["chat_template"], spec.path, template_date(
        entry.get("template_date", default("sft.*.template_date")), f"sft.{name}.template_date"))
    inputs = resolve_inputs(entry["inputs"], [out_path, loss_mask_path(out_path), sidecar_path(out_path)],
                            [spec.path, template.source])
    # its eod, appended to nothing here, is what the OLMo-core conversion ends each conversation with
    tokenizer = load_tokenizer(spec, tokenizer_config.get("eod"))
    tokenizer.tokenizer.encode_special_tokens = False  # the template's control tokens are tokens, as in transformers
    check_fraction = tokenizer_config.get("check_fraction", default("tokenizers.*.check_fraction"))
    fast = Encoder(tokenizer, engine or tokenizer_config.get("engine", default("tokenizers.*.engine")), fall_back=True,
                   input_bytes=sum(source.size for source in inputs))
    encoder = ChatTemplateEncoder(template, tokenizer.tokenizer, entry.get("train_on", default("sft.*.train_on")),
                                  fast, check_fraction)
    on_bad_line = entry.get("on_bad_line", default("sft.*.on_bad_line"))
    fit = _ChatFit(entry["seq_length"], entry.get("truncation", default("sft.*.truncation")))
    sources = []
    files = [ConversationFile(source) for source in inputs]
    left_outs = [_LeftOut(on_bad_line) for _ in files]
    with PbinWriter(out_path, tokenizer.token_width) as tokens_out:
        with PbinWriter(loss_mask_path(out_path), 1) as mask_out, \
                contextlib.closing(encode_conversations(encoder, files, batch_conversations, workers)) as in_order:
            counts = _write_fitted(in_order, fit, left_outs, tokens_out, mask_out)
        for source, conversations, (documents, tokens, _), left_out in zip(inputs, files, counts, left_outs):
            sources.append(_source_entry(source, len(conversations), documents, tokens, **left_out.entry()))
        special_ids = {key: token_id for key, token in template.special_tokens.items()
                       if (token_id := tokenizer.tokenizer.token_to_id(token)) is not None}
        tokens_out.sidecar = {
            "format": FORMAT_VERSIONS["sft"],
            "layout": LAYOUT_050,
            "loss_mask": Path(mask_out.path).name,
            "loss_mask_file": mask_out.identity,
            "tokenizer": {**tokenizer.sidecar_entry(), "special_tokens": template.special_tokens,
                          "special_ids": special_ids},
            "engine": {"name": fast.name, "reason": fast.reason,
                       "versions": {**fast.versions(), "jinja2": jinja2.__version__}, "check_fraction": check_fraction,
                       "proof": encoder.proof.sidecar_entry(check_fraction, "conversations")},
            "token_width": tokenizer.token_width,
            "chat_template": {"source": template.source, "sha256": template.sha256,
                              "generation_blocks": template.has_generation(), "train_on": encoder.train_on,
                              "date": template.date.isoformat()},
            "seq_length": entry["seq_length"],
            "truncation": fit.truncation,
            "documents": tokens_out.num_documents,
            "tokens": tokens_out.num_tokens,
            "dropped": fit.dropped,
            "truncated": fit.truncated,
            "skipped": skipped_summary(_LeftOut.skipped_lines(left_outs)),
            "sources": sources,
        }
    return {**tokens_out.sidecar, "file": tokens_out.identity}


def _write_fitted(in_order: Iterator[tuple[int, list]], fit: _ChatFit, left_outs: list[_LeftOut],
                  tokens_out: PbinWriter, mask_out: PbinWriter) -> list[list[int]]:
    """Each encoded conversation of ``in_order`` (:func:`encode_conversations`' batches) fitted to the sequence
    length and written to the pair; a bad line or a conversation that does not fit counted in its input's
    ``left_outs``. Returns each input's documents, tokens and lines read."""
    counts = [[0, 0, 0] for _ in left_outs]
    for number, results in in_order:  # one result per line, in order
        kept, left_out = [], left_outs[number]
        for line, result in enumerate(results, start=counts[number][2] + 1):
            if isinstance(result, BadLine):
                left_out.skip(result)
            elif (fitted := fit(*result)) is not None:
                kept.append(fitted)
            else:
                left_out.drop(line, fit.drop_reason)
        counts[number][0] += len(kept)
        counts[number][1] += _write_pairs(kept, tokens_out, mask_out)
        counts[number][2] += len(results)
    return counts


def encode_conversations(encoder: ChatTemplateEncoder, files: list[ConversationFile], batch_conversations: int = 1000,
                         workers: int = 1):
    """Yield ``(input number, results)`` for each batch of ``batch_conversations`` lines of ``files``, in order:
    each line's ``(ids, trained)`` or its :class:`BadLine`, as ``encoder.encode_batch`` gives them. The batches are
    rendered in ``workers`` worker processes (each batch cut among them; never fewer than MIN_WORKER_CONVERSATIONS
    lines a worker; 1: in this process) and encoded
    here, through pack's pool (:class:`_ChatJob`); the results are the same for any count. Close the generator
    (``contextlib.closing``) to stop the processes at once when leaving early.

    Raises:
        TokenmillError: see :meth:`~tokenmill.tokenization.chat_template.ChatTemplateEncoder.encode_batch`; an
            object that cannot be read.
    """
    lines = sum(len(conversations) for conversations in files)
    tasks = ((number, conversations.path, start + 1,
              conversations.line_bytes(start, min(start + batch_conversations, len(conversations))))
             for number, conversations in enumerate(files)
             for start in range(0, len(conversations), batch_conversations))
    with _ChatJob(encoder, min(workers, max(1, lines // MIN_WORKER_CONVERSATIONS))) as job, \
            contextlib.closing(ordered_results(tasks, job, job.workers, lambda: 1)) as in_order:
        yield from in_order


class _LeftOut:
    """The lines of one input that gave no document, each by reason in the order met: *skipped* (bad lines; the
    first raised under ``on_bad_line: error``) and *dropped* (conversations the fit to ``seq_length`` or the mask
    leaves nothing of). One int per line until the input is written."""

    def __init__(self, on_bad_line: str):
        self.on_bad_line = on_bad_line
        self.skipped: dict[str, list[int]] = {}
        self.dropped: dict[str, list[int]] = {}

    def skip(self, bad: BadLine) -> None:
        """Raise ``bad`` under ``on_bad_line: error``, else count it by reason.

        Raises:
            BadLine: ``bad``, under ``on_bad_line: error``.
        """
        if self.on_bad_line == "error":
            raise bad
        self.skipped.setdefault(bad.reason, []).append(bad.line)

    def drop(self, line: int, reason: str) -> None:
        self.dropped.setdefault(reason, []).append(line)

    def entry(self) -> dict:
        """The input's sidecar keys: ``skipped`` and ``dropped`` by reason with their first lines, and ``left_out``,
        every line of both as ``[[first, stop], ...]`` ranges."""
        lines = sorted(line for numbers in (*self.skipped.values(), *self.dropped.values()) for line in numbers)
        return {"skipped": skipped_summary(self.skipped), "dropped": skipped_summary(self.dropped),
                "left_out": index_ranges(np.asarray(lines, dtype=np.int64))}

    @staticmethod
    def skipped_lines(left_outs: list[_LeftOut]) -> dict[str, list[int]]:
        """The skipped lines of all inputs by reason, in input order (the sidecar's top-level ``skipped``)."""
        joined: dict[str, list[int]] = {}
        for left_out in left_outs:
            for reason, lines in left_out.skipped.items():
                joined.setdefault(reason, []).extend(lines)
        return joined


class _ChatJob:
    """The two stages of a batch of conversations for :func:`tokenmill.pack.batches.ordered_results` (pack's pool:
    results strictly in batch order, a few batches in flight): *prepare* parses and renders the batch's lines
    (:meth:`~tokenmill.tokenization.chat_template.ChatRenderer.render_lines`), in ``workers`` worker processes
    when there are several (Jinja holds the GIL: ~70 % of the time on one core otherwise), the batch cut into one
    piece per worker so that all of them render every batch; *finish* tokenizes and masks it in this process
    (:meth:`~tokenmill.tokenization.chat_template.ChatTemplateEncoder.encode_rendered`, whose engines release the GIL).
    Tasks are ``(input number, path, first line, the lines' bytes)``; a result is ``(input number, results)``.

    The processes come from a forkserver (started clean, the template module preloaded; never a fork of this
    process, whose threads may hold locks), each given the renderer once; they are stopped on exit. Forks of this
    process were measured too (bench/RESULTS.md): 10-15 ms to start, but each worker's first render ~80 ms slower
    (the pages it copies, gVisor) and this process slower afterwards (its own first writes to pages it had
    shared), so no faster here, and less safe.
    """

    def __init__(self, encoder: ChatTemplateEncoder, workers: int):
        self.encoder, self.workers = encoder, max(1, workers)
        self.pool = None

    def __enter__(self) -> _ChatJob:
        if self.workers > 1:
            import multiprocessing
            from concurrent.futures import ProcessPoolExecutor

            context = multiprocessing.get_context("forkserver")
            context.set_forkserver_preload(["__main__", "jinja2", "jinja2.ext", "jinja2.sandbox",
                                             "tokenmill.tokenization.chat_template"])
            self.pool = ProcessPoolExecutor(self.workers, mp_context=context, initializer=start_render_worker,
                                            initargs=(self.encoder.renderer,))
        return self

    def __exit__(self, *exc_info) -> None:
        if self.pool is not None:
            self.pool.shutdown(cancel_futures=True)

    def prepare(self, task: tuple[int, str, int, list[bytes]]) -> tuple[int, list]:
        number, path, first_line, lines = task
        if self.pool is None:
            return number, self.encoder.renderer.render_lines(path, first_line, lines)
        step = -(-len(lines) // self.workers)
        pieces = [self.pool.submit(render_in_worker, path, first_line + start, lines[start:start + step])
                  for start in range(0, len(lines), step)]
        return number, [item for piece in pieces for item in piece.result()]

    def finish(self, prepared: tuple[int, list]) -> tuple[int, list]:
        number, rendered = prepared
        return number, self.encoder.encode_rendered(rendered)


class _ChatFit:
    """A rendered conversation fitted to ``seq_length``: ``drop`` leaves a longer one out; ``truncate`` cuts it
    after its last trained run of tokens that fits (whole assistant turns), and drops it when none fits. A
    conversation with nothing trained (no assistant turn the template trains) is dropped. Both are counted, the
    last drop's reason in ``drop_reason``."""

    def __init__(self, seq_length: int, truncation: str):
        self.seq_length, self.truncation = seq_length, truncation
        self.dropped = self.truncated = 0
        self.drop_reason: str | None = None

    def __call__(self, ids: np.ndarray, trained: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
        if len(ids) > self.seq_length:
            # ends of trained runs: positions t where trained[t-1] and not trained[t] (or the end)
            ends = np.flatnonzero(trained & ~np.append(trained[1:], False)) + 1
            ends = ends[ends <= self.seq_length]
            if self.truncation == "drop" or not len(ends):
                self.dropped += 1
                self.drop_reason = DROPPED_LONGER if self.truncation == "drop" else DROPPED_NOTHING_FITS
                return None
            ids, trained = ids[:ends[-1]], trained[:ends[-1]]
            self.truncated += 1
        if not trained.any():
            self.dropped += 1
            self.drop_reason = DROPPED_NOTHING_TRAINED
            return None
        return ids, trained


def _write_conversations(dataset: InstructionDataset, collator: InstructionCollator, tokens_out: PbinWriter,
                         mask_out: PbinWriter, batch_conversations: int, left_out: _LeftOut) -> tuple[int, int]:
    """Write one input's conversations, ``batch_conversations`` lines at a time, to the pair of writers;
    its bad lines and dropped conversations into ``left_out`` (which raises the first bad line under
    ``on_bad_line: error``). Returns the conversations kept and their tokens."""
    documents = tokens = 0
    for start in range(0, len(dataset), batch_conversations):
        kept = []
        for i in range(start, min(start + batch_conversations, len(dataset))):
            try:
                conversation = collator.conversation(dataset[i])
            except BadLine as bad:
                left_out.skip(bad)
                continue
            if conversation is None:
                left_out.drop(i + 1, collator.drop_reason)
            else:
                kept.append(conversation)
        documents, tokens = documents + len(kept), tokens + _write_pairs(kept, tokens_out, mask_out)
    return documents, tokens


def _write_pairs(kept: list[tuple[np.ndarray, np.ndarray]], tokens_out: PbinWriter, mask_out: PbinWriter) -> int:
    """Write conversations' ``(ids, trained)`` to the pair of writers, one write each; returns the tokens."""
    if not kept:
        return 0
    lengths = np.array([len(ids) for ids, _ in kept])
    tokens_out.write(np.concatenate([ids for ids, _ in kept]), lengths)
    mask_out.write(np.concatenate([trained for _, trained in kept]).astype(np.uint8), lengths)
    return int(lengths.sum())


def _sft_sidecar(entry: dict, tokens_out: PbinWriter, mask_out: PbinWriter, tokenizer: TokenizerInfo,
                 dataset: InstructionDataset, collator: InstructionCollator, engine: dict, proof: ProofTally,
                 skipped: dict[str, list[int]], sources: list[SourceRecord]) -> SidecarRecord:
    """The sidecar of an SFT pair: format, both files, tokenizer and special ids, the engine and its proof,
    the template, counts, skipped lines and sources. ``engine``: the one chosen, why, the check fraction."""
    encoder = dataset.encoder
    return {
        "format": FORMAT_VERSIONS["sft"],
        "layout": LAYOUT_050,
        "loss_mask": Path(mask_out.path).name,
        "loss_mask_file": mask_out.identity,
        "tokenizer": {**tokenizer.sidecar_entry(), "special_tokens": entry["special_tokens"],
                      "special_ids": dataset.special_ids},
        "engine": {"name": encoder.name,
                   "reason": engine["reason"] if encoder.name == engine["chosen"] else encoder.reason,
                   "versions": encoder.versions(), "check_fraction": engine["check_fraction"],
                   "checked_messages": sum(source["checked_messages"] for source in sources),
                   "proof": proof.sidecar_entry(engine["check_fraction"], "messages")},
        "token_width": tokenizer.token_width,
        "message_construction": entry["message_construction"],
        "loss_masking_jq_patterns": entry.get("loss_masking_jq_patterns", []),
        "seq_length": entry["seq_length"],
        "truncation": entry.get("truncation", "truncate"),
        "documents": tokens_out.num_documents,
        "tokens": tokens_out.num_tokens,
        "dropped": collator.stats["dropped"],
        "truncated": collator.stats["truncated"],
        "skipped": skipped_summary(skipped),
        "sources": sources,
    }


def _config_entry(config: dict, keys: tuple[str, ...], where: str = ""):
    value = config
    for key in keys:
        if not isinstance(value, dict) or key not in value:
            raise TokenmillError(f"config: missing {'.'.join(filter(None, [where, *keys]))}")
        value = value[key]
    return value


def summary_lines(meta: SidecarRecord, out_path: str | os.PathLike) -> list[str]:
    """What a finished ``sft`` build says: each source's conversations dropped and lines skipped, a line per
    reason with the first line it met, then the counts, the engine's reason and the chat template, in one line."""
    lines = [f"{source['path']}: {kind} {entry['count']} {what}: {reason} (first at line {entry['first_lines'][0]})"
             for source in meta["sources"]
             for kind, what in (("dropped", "conversations"), ("skipped", "lines"))
             for reason, entry in source.get(kind, {}).items()]
    skipped = sum(entry["count"] for entry in meta["skipped"].values())
    checked = (f", {meta['engine']['checked_messages']} messages checked against Hugging Face"
               if "checked_messages" in meta["engine"] else "")
    template = (f"; chat template {meta['chat_template']['source']} (trained: {meta['chat_template']['train_on']}, "
                f"strftime_now: {meta['chat_template']['date']})" if "chat_template" in meta else "")
    return [*lines, f"{out_path}: {meta['documents']} conversations, {meta['tokens']} tokens, {meta['truncated']} "
                    f"truncated, {meta['dropped']} dropped, {skipped} lines skipped; {meta['engine']['reason']}"
                    f"{checked}{template}"]
