"""Best-fit rows of an SFT set: the conversations of a ``tokenmill sft`` pair packed whole by OBFD into rows of
the set's ``seq_length``.

The conversations are the pair's documents (each already fits a row: ``tokenmill sft`` truncates or drops the
longer ones), packed by :func:`tokenmill.best_fit.obfd.pack_best_fit` (stable sort: the same bytes on every
numpy); the rows keep the order OBFD opened them in (longest conversations first, as OLMo-core's instances):
a trainer shuffles them with its sampler (:class:`tokenmill.training.loader.ResumableSampler`). Files, in a
folder of their own (the workflow's :func:`tokenmill.plan.layout.sft_packing_dir`; docs/formats.md, "SFT best-fit
rows")::

    sft_best_fit-pieces.npy          int64 (C, 3): per conversation (its document number in the pair, 0, its
                                     tokens), the conversations of row 0, then of row 1, ...
    sft_best_fit-sample_offsets.npy  int64 (R + 1,): row k is pieces[offsets[k]:offsets[k + 1]]
    sft_best_fit-description.json    what was packed (the pair, a fingerprint of its conversations' lengths, L)
                                     and what it bought against one conversation per row (written last)

:class:`tokenmill.training.sft_datasets.PackedConversations` serves the rows with the pair's loss mask.

Cost: one read of the ``.pbin`` index (no token is read), O(C log C) to sort and O(C log L) to pack; memory
~100 bytes per conversation.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numpy as np

from tokenmill.errors import TokenmillError
from tokenmill.formats.pbin import PbinFile
from tokenmill.best_fit.obfd import pack_best_fit
from tokenmill.best_fit.packed_index import load_pieces, read_description, sample_figures, write_packing_output

__all__ = ["SFT_PACKING_FORMAT", "SFT_PACKING_NAMES", "conversations_fingerprint", "sft_best_fit_of",
           "build_sft_best_fit", "load_sft_best_fit", "sft_best_fit_problems"]

SFT_PACKING_FORMAT = "tokenmill-sft-best-fit/1"
SFT_PACKING_NAMES = {"pieces": "sft_best_fit-pieces.npy", "sample_offsets": "sft_best_fit-sample_offsets.npy",
                     "description": "sft_best_fit-description.json"}


def conversations_fingerprint(lengths: np.ndarray) -> str:
    """The sha256 of the conversations' lengths (int64, little-endian): another pair packs other rows."""
    return hashlib.sha256(np.ascontiguousarray(lengths, dtype="<i8").tobytes()).hexdigest()


def sft_best_fit_of(pbin: str | os.PathLike, sequence_length: int) -> tuple[dict, dict[str, np.ndarray]]:
    """The description and arrays (``pieces``, ``sample_offsets``) of a pair's rows, computed, not written.

    Raises:
        TokenmillError: an unreadable ``.pbin``, a length under 1, or a conversation longer than it.
    """
    if sequence_length < 1:
        raise TokenmillError(f"sequence length {sequence_length}: must be positive")
    lengths = np.asarray(PbinFile(pbin).doc_lengths, dtype=np.int64)
    long = np.flatnonzero(lengths > sequence_length)
    if len(long):
        raise TokenmillError(f"{pbin}: conversation {int(long[0])} has {int(lengths[long[0]])} tokens, over the "
                             f"rows' {sequence_length} (tokenmill sft's seq_length keeps every conversation in it)")
    conversations = np.flatnonzero(lengths > 0)
    ends = np.cumsum(lengths[conversations])
    packed = pack_best_fit(ends - lengths[conversations], ends, sequence_length)
    order = conversations[packed.order[packed.documents_by_sample]]
    pieces = np.stack([order, np.zeros_like(order), lengths[order]], axis=1).astype(np.int64)
    tokens, count = int(lengths.sum()), len(conversations)
    unpacked = count * sequence_length - tokens
    description = {"format": SFT_PACKING_FORMAT, "pbin": str(pbin), "fingerprint": conversations_fingerprint(lengths),
                   "sequence_length": sequence_length, "conversations": count, "tokens": tokens,
                   **sample_figures(packed.sample_lengths(), sequence_length),
                   "unpacked_padding_share": round(unpacked / (count * sequence_length), 6) if count else 0.0}
    return description, {"pieces": pieces, "sample_offsets": packed.sample_offsets.astype(np.int64)}


def build_sft_best_fit(pbin: str | os.PathLike, folder: str | os.PathLike, sequence_length: int) -> dict:
    """Pack a pair's conversations and write the rows into ``folder`` (module docstring), each file atomically,
    the description last. Returns the description.

    Raises:
        TokenmillError: as :func:`sft_best_fit_of`.
    """
    description, arrays = sft_best_fit_of(pbin, sequence_length)
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    write_packing_output(folder, SFT_PACKING_NAMES, arrays, description)
    return description


def load_sft_best_fit(folder: str | os.PathLike) -> tuple[dict, np.ndarray, np.ndarray]:
    """``(description, pieces, sample_offsets)`` of a folder of SFT rows, the arrays memory-mapped.

    Raises:
        TokenmillError: a missing or unreadable file, or one that is not SFT rows.
    """
    description = read_description(Path(folder) / SFT_PACKING_NAMES["description"], SFT_PACKING_FORMAT,
                                   "no SFT best-fit rows (tokenmill best-fit PAIR.pbin builds them)")
    return (description, *load_pieces(Path(folder), SFT_PACKING_NAMES))


def sft_best_fit_problems(folder: str | os.PathLike) -> list[str]:
    """Every problem of a folder of SFT rows, one line each: a description that is not one, a pair changed
    since, a conversation missing, twice or cut, a row over L tokens, or arrays other than the packer makes.
    Cost: the packing again, in memory."""
    path = Path(folder) / SFT_PACKING_NAMES["description"]
    try:
        description, pieces, offsets = load_sft_best_fit(folder)
        length = int(description["sequence_length"])
        lengths = np.asarray(PbinFile(description["pbin"]).doc_lengths, dtype=np.int64)
        if description["fingerprint"] != conversations_fingerprint(lengths):
            return [f"{path}: {description['pbin']} changed since it was packed"]
        expected, arrays = sft_best_fit_of(description["pbin"], length)
    except TokenmillError as exc:
        return [str(exc)]
    except (KeyError, TypeError, ValueError) as exc:
        return [f"{path}: not an SFT best-fit description ({exc})"]
    problems = []
    totals = np.concatenate([[0], np.cumsum(pieces[:, 2])])[offsets]
    over = np.flatnonzero(np.diff(totals) > length)
    if len(over):
        problems.append(f"{path}: row {int(over[0])} holds {int(np.diff(totals)[over[0]])} tokens, over {length}")
    ids = np.asarray(pieces[:, 0], dtype=np.int64)
    if not ((ids >= 0) & (ids < len(lengths))).all() or \
            not np.array_equal(np.bincount(ids, minlength=len(lengths)), (lengths > 0).astype(np.int64)) or \
            (pieces[:, 1] != 0).any() or not np.array_equal(pieces[:, 2], lengths[ids]):
        problems.append(f"{path}: not every conversation of {description['pbin']} once, whole")
    for key, array in (("pieces", pieces), ("sample_offsets", offsets)):
        if not np.array_equal(array, arrays[key]):
            problems.append(f"{Path(folder) / SFT_PACKING_NAMES[key]}: not what the packer makes from "
                            f"{description['pbin']}")
    if expected != description:
        problems.append(f"{path}: its figures are not the packing's")
    return problems
