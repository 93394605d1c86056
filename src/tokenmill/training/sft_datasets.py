"""Instruction tuning: conversations JSONL → token rows with loss masks, one conversation or packed.

Input: one conversation per line, FastChat style (extra keys allowed)::

    {"conversations": [{"from": "human", "value": "..."}, {"from": "gpt", "value": "..."}, ...],
     "instruction": "...", "role": "..."}

:class:`InstructionDataset` reads a line through the raw index and tokenizes the fields that its jq
patterns name (``.role``, ``.instruction``, ``.conversations``) (an object by URL is streamed forward,
8 MiB per ranged GET, as conversations are taken in order): a string field is one piece, a list
field one piece per element (a turn's ``value``). Special-token strings inside the text stay text
(``encode_special_tokens``), so data cannot inject control tokens; the configured special tokens
(``bos_token``, ``eos_token``, ...) must each be one id of the tokenizer.

:class:`InstructionCollator` lays the pieces out in ``message_construction`` order, each as one
message::

    BOS  "<speaker>: "  <content>  EOS          speaker = the turn's "from", or the field name

and keeps in the loss exactly the content and EOS of the messages that no
``loss_masking_jq_patterns`` output selects (a pattern selects a piece when one of its outputs equals
the piece's value or turn object). BOS and the speaker prefix are never trained.

Label convention: ``labels`` are already shifted for next-token loss — ``labels[t]`` is the target
for the prediction made at position ``t`` (``input_ids[t + 1]`` when that token is trained, else
-100), so a trainer computes ``cross_entropy(logits[:, t], labels[:, t])`` with no further shift.

Conversations longer than ``seq_length``: ``truncation="drop"`` leaves them out; ``"truncate"``
drops trailing messages until the rest fits (whole messages only, so rows never drift out of
alignment) and drops the conversation when nothing trainable is left. Both are counted in
``collator.stats`` (the last drop's reason in ``collator.drop_reason``); so is a conversation with nothing
trained at all (every message masked). With ``pack=True`` whole conversations share a row greedily, never split across
rows; ``position_ids`` restart per conversation and ``cu_seqlens`` (over the flattened batch, padding
as its own segment) keeps attention inside each one. :class:`PackedConversations` serves the rows that
best-fit packing computed once for a whole pair (:mod:`tokenmill.best_fit.sft_packing`). Cost: tokenization
per piece (Rust), O(tokens) per batch in the collator.

Only :func:`collate` (and the collators that call it) needs torch, and imports it when called:
``tokenmill sft`` and any packing never import torch. The datasets are plain map-style datasets
(``__len__``/``__getitem__``), which torch's ``DataLoader`` takes as they are.
"""

from __future__ import annotations

import io
import json
import mmap
import re
import os
from dataclasses import dataclass
from pathlib import Path

from typing import TYPE_CHECKING

import numpy as np

from tokenmill.errors import BadLine, TokenmillError
from tokenmill.files.objects import ObjectFile
from tokenmill.files.source import Source, as_source
from tokenmill.files.urls import full_url, remember
from tokenmill.formats.pbin import PbinFile, file_identity_problem, read_sidecar
from tokenmill.formats.sidecar import sidecar_path
from tokenmill.inputs.raw_index import read_index, scan_lines
from tokenmill.inputs.text_selection import conversation_record
from tokenmill.best_fit.sft_packing import conversations_fingerprint, load_sft_best_fit
from tokenmill.tokenization.engine import Encoder, EncoderPickling
from tokenmill.tokenization.families import TokenizerSpec
from tokenmill.tokenization.proof import DEFAULT_CHECK_FRACTION, ProofSampler, ProofTally, encode_proven
from tokenmill.tokenization.tokenizer import TokenizerInfo, load_tokenizer

if TYPE_CHECKING:
    import torch
    from tokenizers import Tokenizer


__all__ = ["ConversationFile", "InstructionDataset", "InstructionCollator", "PackedInstructionDataset", "collate",
           "loss_mask_path", "PackedConversations", "TRUNCATION_POLICIES", "IGNORE_INDEX", "Piece", "DROPPED_LONGER",
           "DROPPED_NOTHING_FITS", "DROPPED_NOTHING_TRAINED"]

IGNORE_INDEX = -100
_OBJECT_BUFFER_BYTES = 8 << 20  # a conversation object's read-ahead: one ranged GET per 8 MiB
TRUNCATION_POLICIES = ("drop", "truncate")
# Why a conversation that is not a bad line gives no document ("dropped", counted by reason with its lines)
DROPPED_LONGER = "longer than seq_length (truncation: drop)"
DROPPED_NOTHING_FITS = "longer than seq_length, and no trained part fits it (truncation: truncate)"
DROPPED_NOTHING_TRAINED = "nothing trained (no assistant turn the template trains, or every message masked)"


def _special_ids(tokenizer, special_tokens: dict[str, str]) -> dict[str, int]:
    ids = {}
    for key, token in special_tokens.items():
        token_id = tokenizer.token_to_id(token)
        if token_id is None:
            raise TokenmillError(f"special_tokens.{key}: {token!r} is not a single token of the tokenizer")
        ids[key] = token_id
    return ids


def _compile(pattern: str, what: str):
    import jq

    try:
        return jq.compile(pattern)
    except ValueError as exc:
        raise TokenmillError(f"{what}: {pattern!r} is not valid jq ({str(exc).splitlines()[0]})") from None


@dataclass
class Piece:
    """One message to be: its speaker prefix tokens, its content tokens, and the JSON value it came from."""

    prefix_ids: list[int]
    ids: list[int]
    value: object


class ConversationFile:
    """The lines of a conversations JSONL file (or object by URL), each read and parsed on access.

    Args:
        jsonl: the file or object, or either resolved (:class:`tokenmill.files.source.Source`).
        index: its raw index (scanned now if None).

    Raises:
        TokenmillError: an unreadable file or index.
    """

    def __init__(self, jsonl: str | os.PathLike | Source, index: str | os.PathLike | None = None):
        self.source = as_source(jsonl)
        self.path = self.source.name
        self.lines = read_index(index, self.path) if index is not None else scan_lines(self.source)
        self._mapped = None

    def __len__(self) -> int:
        return len(self.lines)

    def __getstate__(self) -> dict:
        # A map or an open object does not pickle: reopened on use. An object's full URL goes with it (in memory,
        # to a DataLoader worker): a worker started fresh has none of this process's URLs to request it by.
        return {**self.__dict__, "_mapped": None, "_url": full_url(self.path) if self.source.is_url else None}

    def __setstate__(self, state: dict) -> None:
        url = state.pop("_url", None)
        if url is not None:
            remember(url)
        self.__dict__.update(state)

    def record(self, i: int) -> dict:
        """The parsed JSON object of line ``i``.

        Raises:
            TokenmillError: not a JSON object.
        """
        return conversation_record(self.line_bytes(i, i + 1)[0], self.path, i + 1)

    def line_bytes(self, start: int, stop: int) -> list[bytes]:
        """The bytes of lines ``start`` to ``stop - 1`` (0-based), unparsed.

        Raises:
            TokenmillError: an object that cannot be read.
        """
        if self._mapped is None:
            if self.source.is_url:
                # An object is read forward through an 8 MiB buffer (one ranged GET per refill), as conversations
                # are taken in order; a jump outside the buffer costs one GET.
                self._mapped = io.BufferedReader(ObjectFile(self.source.identity), _OBJECT_BUFFER_BYTES)
            else:
                with open(self.path, "rb") as handle:
                    self._mapped = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
        lines = []
        for offset, length in self.lines[start:stop].tolist():
            if self.source.is_url:
                self._mapped.seek(offset)
                lines.append(self._mapped.read(length))
            else:
                lines.append(self._mapped[offset:offset + length])
        return lines


class InstructionDataset(EncoderPickling):
    """Conversations of a JSONL file, tokenized field by field on access.

    Args:
        jsonl: the conversations file.
        tokenizer: path of a Hugging Face ``tokenizer.json``, a Megatron tokenizer type, or a tokenizer
            already loaded (:func:`tokenmill.pack.sft.write_sft` loads it once for all its inputs).
        jq_patterns: the fields to tokenize, as plain paths (``.role``, ``.conversations``); the
            field name (after the dot) is what ``message_construction`` refers to.
        special_tokens: e.g. ``{"bos_token": "<s>", "eos_token": "</s>"}``; each must be one id.
        index: raw index of ``jsonl`` (scanned now if None).
        speaker_template: the text before each message's content; ``{speaker}`` is the turn's
            ``from`` or the field name. Default ``"{speaker}: "``.
        engine: ``hf`` (default), ``auto`` or ``fastokens`` (see :class:`tokenmill.tokenization.engine.Encoder`);
            a conversation's messages are encoded in one call, and a fast engine is proven on
            ``check_fraction`` of the messages and on excerpts around their added-token strings and
            rare code points (see :mod:`tokenmill.tokenization.proof`).
        check_fraction: see :class:`tokenmill.tokenization.proof.ProofSampler`.

    Attributes:
        checked: messages re-encoded with HF so far, whole or through an excerpt (0 with the HF engine).
        proof: what the proof checked so far (:class:`tokenmill.tokenization.proof.ProofTally`).

    Raises:
        TokenmillError: unreadable files, a special token that is not one id, a pattern that is not a
            plain field path; on access, a line that is not a conversation (naming file and line), or
            one on which the fast engine disagrees with HF.
    """

    def __init__(self, jsonl: str | os.PathLike | Source, tokenizer: str | os.PathLike | TokenizerSpec | TokenizerInfo,
                 jq_patterns: list[str],
                 special_tokens: dict[str, str], index: str | os.PathLike | None = None,
                 speaker_template: str = "{speaker}: ", engine: str = "hf",
                 check_fraction: float = DEFAULT_CHECK_FRACTION):
        self.file = ConversationFile(jsonl, index)
        self.path, self.lines = self.file.path, self.file.lines
        self.info = tokenizer if isinstance(tokenizer, TokenizerInfo) else load_tokenizer(tokenizer)
        # Control-token strings in data stay text (HF's encode_special_tokens, fastokens' split_special_tokens).
        self.encoder = Encoder(self.info, engine, split_special_tokens=True, fall_back=True)
        self.sampler = ProofSampler(self.info.added_tokens(), check_fraction)
        self.checked = 0
        self.proof = ProofTally()
        self.special_tokens = dict(special_tokens)
        self.special_ids = _special_ids(self.tokenizer, special_tokens)
        self.fields = []
        for pattern in jq_patterns:
            if not (pattern.startswith(".") and pattern[1:].isidentifier()):
                raise TokenmillError(f"jq_patterns: {pattern!r} must name a field, like .conversations")
            self.fields.append(pattern[1:])
        self.speaker_template = speaker_template
        self._prefixes: dict[str, list[int]] = {}
        self._mapped = None

    @property
    def tokenizer(self) -> Tokenizer:
        """The Hugging Face tokenizer that reads special-token strings as text (the encoder's own copy)."""
        return self.encoder.info.tokenizer

    def __len__(self) -> int:
        return len(self.lines)

    def _error(self, i: int, reason: str) -> BadLine:
        return BadLine(self.path, i + 1, reason)

    def record(self, i: int) -> dict:
        """The parsed JSON object of line ``i``.

        Raises:
            TokenmillError: not a JSON object.
        """
        return self.file.record(i)

    def __getitem__(self, i: int) -> dict:
        """``{"path", "line", "record", "special_tokens", "special_ids", "pieces": {field: [Piece, ...]}}``
        for line ``i``."""
        i = range(len(self))[i]
        record = self.record(i)
        messages = []  # (field, speaker, text, the JSON value it came from), in order
        for field in self.fields:
            value = record.get(field)
            if isinstance(value, str):
                messages.append((field, field, value, value))
            elif isinstance(value, list):
                if not value:
                    raise self._error(i, f"empty {field!r}")
                for number, turn in enumerate(value):
                    if not isinstance(turn, dict) or not isinstance(turn.get("from"), str) \
                            or not isinstance(turn.get("value"), str):
                        raise self._error(i, f"{field}[{number}] needs string 'from' and 'value'")
                    messages.append((field, turn["from"], turn["value"], turn))
            else:
                raise self._error(i, f"no string or list {field!r}")
        ids, proof = encode_proven(self.encoder, [text for _, _, text, _ in messages], False, self.sampler,
                                   [f"{self.path}:{i + 1}"] * len(messages))
        self.checked += proof.checked
        self.proof += proof
        pieces = {field: [] for field in self.fields}
        for (field, speaker, _, value), message_ids in zip(messages, ids):
            pieces[field].append(Piece(self._prefix(speaker), message_ids.tolist(), value))
        return {"path": self.path, "line": i + 1, "record": record, "special_tokens": self.special_tokens,
                "special_ids": self.special_ids, "pieces": pieces}

    def _encode(self, text: str) -> list[int]:
        return self.tokenizer.encode(text, add_special_tokens=False).ids

    def _prefix(self, speaker: str) -> list[int]:
        if speaker not in self._prefixes:
            self._prefixes[speaker] = self._encode(self.speaker_template.format(speaker=speaker))
        return self._prefixes[speaker]


class InstructionCollator:
    """Turns dataset items into ``input_ids``, ``labels``, ``attention_mask`` (+ packing tensors).

    Args:
        message_construction: field names in prompt order, e.g. ``["role", "instruction", "conversations"]``.
        loss_masking_jq_patterns: pieces these select are left out of the loss.
        special_tokens: the special tokens by role; ``bos_token`` and ``eos_token`` frame every
            message. Their ids come with each item from :class:`InstructionDataset`, whose tokens
            must be these: an item made with another ``bos_token``/``eos_token`` is refused.
        seq_length: tokens per row.
        pack: several whole conversations per row.
        truncation: ``"drop"`` or ``"truncate"`` (whole trailing messages).

    Raises:
        TokenmillError: a pattern that does not compile, missing ``bos_token``/``eos_token``, or an
            unknown truncation policy; on a batch, an item lacking a field of ``message_construction``
            or made with other special tokens.
    """

    def __init__(self, message_construction: list[str], loss_masking_jq_patterns: list[str],
                 special_tokens: dict[str, str], seq_length: int, pack: bool = False, truncation: str = "truncate"):
        for key in ("bos_token", "eos_token"):
            if key not in special_tokens:
                raise TokenmillError(f"special_tokens: {key} is required")
        if truncation not in TRUNCATION_POLICIES:
            raise TokenmillError(f"truncation must be one of {TRUNCATION_POLICIES}, not {truncation!r}")
        self.special_tokens = dict(special_tokens)
        self.message_construction = message_construction
        # A pattern like `.conversations | select(.from == "human")` (the seed config's spelling) is
        # applied to each element of the list field when jq refuses it on the list itself.
        self.masks = []
        for pattern in loss_masking_jq_patterns:
            per_element = re.sub(r"^\.(\w+)\s*\|", r".\1[] |", pattern)
            self.masks.append((pattern, _compile(pattern, "loss_masking_jq_patterns"),
                               _compile(per_element, "loss_masking_jq_patterns") if per_element != pattern else None))
        self.seq_length = seq_length
        self.pack = pack
        self.truncation = truncation
        self.eos: int | None = None  # learnt from the items: the padding id
        self.stats = {"conversations": 0, "dropped": 0, "truncated": 0}
        self.drop_reason: str | None = None  # why conversation() last returned None

    def conversation(self, item: dict) -> tuple[np.ndarray, np.ndarray] | None:
        """Tokens and per-token "trained" flags of one conversation, truncated per policy (None: dropped, the reason
        in ``drop_reason``)."""
        record = item["record"]
        selected = set()
        for pattern, program, per_element in self.masks:
            try:
                try:
                    outputs = program.input_value(record).all()
                except ValueError:
                    if per_element is None:
                        raise
                    outputs = per_element.input_value(record).all()
            except ValueError as exc:
                raise BadLine(item["path"], item["line"], f"loss masking pattern {pattern!r} fails "
                                                          f"({str(exc).splitlines()[0]})") from None
            selected.update(json.dumps(out, sort_keys=True) for out in outputs)
        # The ids travel with the item; the strings say they are the ids of the tokens configured here
        # (an item without strings was built by hand and is taken as it is).
        for key in ("bos_token", "eos_token"):
            if key in item.get("special_tokens", {}) and item["special_tokens"][key] != self.special_tokens[key]:
                raise TokenmillError(f"special_tokens.{key}: the collator's {self.special_tokens[key]!r}, but "
                                     f"{item['path']}:{item['line']} was tokenized with "
                                     f"{item['special_tokens'][key]!r}")
        bos, eos = item["special_ids"]["bos_token"], item["special_ids"]["eos_token"]
        self.eos = eos
        messages = []
        for name in self.message_construction:
            if name not in item["pieces"]:
                raise TokenmillError(f"message_construction: {name!r} is not among the dataset's fields "
                                     f"{sorted(item['pieces'])}")
            for piece in item["pieces"][name]:
                framing = [bos] + piece.prefix_ids
                trained = json.dumps(piece.value, sort_keys=True) not in selected
                messages.append((framing + piece.ids + [eos],
                                 [False] * len(framing) + [trained] * (len(piece.ids) + 1)))
        kept = len(messages)
        total = sum(len(tokens) for tokens, _ in messages)
        if total > self.seq_length:
            if self.truncation == "drop":
                self.stats["dropped"] += 1
                self.drop_reason = DROPPED_LONGER
                return None
            while kept and total > self.seq_length:
                kept -= 1
                total -= len(messages[kept][0])
            self.stats["truncated"] += 1
        tokens = np.array([t for message, _ in messages[:kept] for t in message], dtype=np.int64)
        trained = np.array([f for _, flags in messages[:kept] for f in flags], dtype=bool)
        if not trained.any():
            self.stats["dropped"] += 1
            self.drop_reason = DROPPED_NOTHING_FITS if kept < len(messages) else DROPPED_NOTHING_TRAINED
            return None
        return tokens, trained

    def __call__(self, items: list[dict]) -> dict[str, torch.Tensor]:
        self.stats["conversations"] += len(items)
        conversations = [c for c in map(self.conversation, items) if c is not None]
        return collate(conversations, self.seq_length, self.pack, self.eos if self.eos is not None else 0)


def collate(conversations: list[tuple[np.ndarray, np.ndarray]], seq_length: int, pack: bool,
            pad_id: int) -> dict[str, torch.Tensor]:
    """Rows of ``seq_length`` from (tokens, trained flags) conversations that already fit a row.

    Returns ``input_ids``, ``labels`` (shifted, -100 where not trained), ``attention_mask``, and with
    ``pack`` also ``position_ids`` and ``cu_seqlens``; padding is ``pad_id``, never attended or trained.
    """
    import torch  # only here: packing conversations must not need torch

    rows: list[list[tuple[np.ndarray, np.ndarray]]] = []
    for conversation in conversations:
        if pack and rows and sum(len(t) for t, _ in rows[-1]) + len(conversation[0]) <= seq_length:
            rows[-1].append(conversation)
        else:
            rows.append([conversation])
    shape = (len(rows), seq_length)
    input_ids = np.full(shape, pad_id, dtype=np.int64)
    labels = np.full(shape, IGNORE_INDEX, dtype=np.int64)
    attention_mask = np.zeros(shape, dtype=np.int64)
    position_ids = np.zeros(shape, dtype=np.int64)
    segment_lengths = []
    for row, parts in enumerate(rows):
        start = 0
        for tokens, trained in parts:
            end = start + len(tokens)
            input_ids[row, start:end] = tokens
            attention_mask[row, start:end] = 1
            position_ids[row, start:end] = np.arange(len(tokens))
            # label at t is the target of the prediction made at t: token t+1 if it is trained
            labels[row, start:end - 1] = np.where(trained[1:], tokens[1:], IGNORE_INDEX)
            segment_lengths.append(len(tokens))
            start = end
        if start < seq_length:
            segment_lengths.append(seq_length - start)
    batch = {"input_ids": torch.from_numpy(input_ids), "labels": torch.from_numpy(labels),
             "attention_mask": torch.from_numpy(attention_mask)}
    if pack:
        batch["position_ids"] = torch.from_numpy(position_ids)
        batch["cu_seqlens"] = torch.from_numpy(np.concatenate([[0], np.cumsum(segment_lengths)]).astype(np.int32))
    return batch


# ---------------------------------------------------------------------------------------------
# Pre-tokenized path: <name>.pbin (tokens) + <name>.loss_mask.pbin (1 byte per token: 1 = trained)

def loss_mask_path(pbin_path: str | os.PathLike) -> Path:
    """``x.pbin`` → ``x.loss_mask.pbin``: the per-token trained flags, same document index."""
    pbin_path = Path(pbin_path)
    return pbin_path.with_name(pbin_path.name.removesuffix(".pbin") + ".loss_mask.pbin")


class PackedInstructionDataset:
    """Conversations pre-tokenized by :func:`tokenmill.pack.sft.write_sft`: item i is ``(tokens, trained)`` arrays.

    Feed items to :func:`collate` (``dataset.collate(items)``) for the same tensors as the lazy path.

    Args:
        pbin: the tokens file; its ``.loss_mask.pbin`` sibling must hold the same documents.
        pack: several conversations per row.

    Raises:
        TokenmillError: a missing or mismatched loss-mask file, or no sidecar.
    """

    def __init__(self, pbin: str | os.PathLike, pack: bool = False):
        self.tokens = PbinFile(pbin)
        self.trained = PbinFile(loss_mask_path(pbin))
        if not np.array_equal(self.tokens.doc_lengths, self.trained.doc_lengths):
            raise TokenmillError(f"{loss_mask_path(pbin)}: its documents differ from those of {pbin}")
        meta = read_sidecar(pbin)
        if not meta or "seq_length" not in meta:
            raise TokenmillError(f"{pbin}: no SFT sidecar (seq_length, special ids)")
        if "loss_mask_file" in meta:
            problem = file_identity_problem(loss_mask_path(pbin), meta["loss_mask_file"], sidecar_path(pbin),
                                            check_data=False)
            if problem:
                raise TokenmillError(problem)
        self.seq_length = meta["seq_length"]
        # the padding id: the eos_token (a chat template's folder may name none: 0, never attended or trained)
        self.eos = meta["tokenizer"].get("special_ids", {}).get("eos_token", 0)
        self.pack = pack

    def __len__(self) -> int:
        return self.tokens.num_documents

    def __getitem__(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        return self.tokens.document(i).astype(np.int64), self.trained.document(i).astype(bool)

    def collate(self, items: list[tuple[np.ndarray, np.ndarray]]) -> dict[str, torch.Tensor]:
        """Rows as :class:`InstructionCollator` makes them."""
        return collate(items, self.seq_length, self.pack, self.eos)


class PackedConversations:
    """The best-fit rows of a pre-tokenized pair (:mod:`tokenmill.best_fit.sft_packing`) as fixed-length items
    shaped like :class:`tokenmill.training.packed_samples.PackedSamples`' items, so that
    :func:`tokenmill.training.loader.collate_samples` and ``ResumableSampler`` take them unchanged:

    * ``tokens``: the row's conversations back to back, then the pair's padding id (its ``eos_token``) up to L
      (``input_ids``, in a Hugging Face trainer's words);
    * ``labels``: shifted as :func:`collate` shifts them, ``labels[t] = tokens[t + 1]`` where that token is
      trained in the same conversation, else -100 (every conversation's last token and the padding too);
    * ``loss_mask``: float 1.0 where ``labels`` is not -100;
    * ``position_ids``: restarting at 0 at each conversation and at the padding;
    * ``cu_seqlens``: int32 boundaries of the conversations, then the padding as one more segment, ending at L.

    A row's tokens and labels equal what :func:`collate` (``pack=True``) makes of the same conversations in
    one row.

    Args:
        pbin: the tokens ``.pbin`` of the pair (``tokenmill sft``).
        folder: its best-fit rows (``tokenmill best-fit PAIR.pbin``).

    Raises:
        TokenmillError: as :class:`PackedInstructionDataset`, no rows, or rows packed from another pair.
    """

    def __init__(self, pbin: str | os.PathLike, folder: str | os.PathLike):
        self.pairs = PackedInstructionDataset(pbin)
        self.description, self.pieces, self.sample_offsets = load_sft_best_fit(folder)
        if self.description.get("fingerprint") != conversations_fingerprint(self.pairs.tokens.doc_lengths):
            raise TokenmillError(f"{folder}: its rows were packed from another pair than {pbin}; pack it again")
        self.sequence_length = int(self.description["sequence_length"])

    def __len__(self) -> int:
        return len(self.sample_offsets) - 1

    def __getitem__(self, k: int) -> dict[str, torch.Tensor]:
        import torch

        if not 0 <= k < len(self):
            raise IndexError(f"row {k} of {len(self)}")
        length = self.sequence_length
        tokens = np.full(length, self.pairs.eos, dtype=np.int64)
        labels = np.full(length, IGNORE_INDEX, dtype=np.int64)
        bounds = [0]
        for conversation in self.pieces[self.sample_offsets[k]:self.sample_offsets[k + 1], 0]:
            ids, trained = self.pairs[int(conversation)]
            start, end = bounds[-1], bounds[-1] + len(ids)
            tokens[start:end] = ids
            labels[start:end - 1] = np.where(trained[1:], ids[1:], IGNORE_INDEX)
            bounds.append(end)
        bounds = np.array(bounds, dtype=np.int64)
        position_ids = np.arange(length, dtype=np.int64) - np.repeat(bounds, np.diff(np.append(bounds, length)))
        cu_seqlens = np.append(bounds, length) if bounds[-1] < length else bounds
        return {"tokens": torch.from_numpy(tokens), "labels": torch.from_numpy(labels),
                "loss_mask": torch.from_numpy((labels != IGNORE_INDEX).astype(np.float32)),
                "position_ids": torch.from_numpy(position_ids),
                "cu_seqlens": torch.from_numpy(cu_seqlens.astype(np.int32))}
