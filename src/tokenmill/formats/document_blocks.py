"""Token files walked in blocks: the one block size, the one walk over whole documents, and the one insert of an
EOD after chosen documents.

A file of billions of tokens is converted, checked or copied :data:`BLOCK_TOKENS` tokens at a time: big enough
that numpy's vectorised work dominates, small enough that memory stays at a few blocks (a 512 Mi-token OLMo part
is never copied whole). Conversions that add or drop tokens per document (a second EOD, datatrove's rules) take
whole documents: :func:`document_blocks` cuts the documents into runs of about that many tokens, never splitting
one, and gives a document longer than a block a run of its own. The bytes written do not depend on where the
cuts fall.

The EOD rule of the formats, in one place (:func:`eod_appended`): a ``.pbin``, as Modalities, appends the EOD
to a document whose own ids do not already end with it, and lists the others in its sidecar's ``eod_in_text``;
Megatron's ``--append-eod`` and datatrove append one whatever the last id is, so converting a ``.pbin`` appends
a second EOD after exactly the listed documents. Pack, ``preprocess-data`` and the two conversions all do it
with this one vectorised insert (O(tokens) per batch).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from tokenmill.files.blocks import BLOCK

__all__ = ["BLOCK_TOKENS", "document_blocks", "eod_appended"]

#: Tokens read, converted, written or compared at once (16 Mi: 32-64 MB of tokens).
BLOCK_TOKENS = BLOCK


def document_blocks(ends: np.ndarray, block_tokens: int | None = None) -> Iterator[tuple[int, int, int, int]]:
    """Runs of whole documents of about ``block_tokens`` tokens (default :data:`BLOCK_TOKENS`), at least one each.

    Args:
        ends: each document's end, in tokens from the first document's start (``np.cumsum`` of the lengths).
        block_tokens: tokens per run; None: :data:`BLOCK_TOKENS` as it is when the walk starts.

    Yields:
        ``(first, stop, start, end)``: documents ``[first, stop)``, which are tokens ``[start, end)``.
    """
    block_tokens = BLOCK_TOKENS if block_tokens is None else block_tokens
    first = 0
    while first < len(ends):
        start = int(ends[first - 1]) if first else 0
        stop = max(first + 1, int(np.searchsorted(ends, start + block_tokens, side="right")))
        yield first, stop, start, int(ends[stop - 1])
        first = stop


def eod_appended(tokens: np.ndarray, lengths: np.ndarray, documents: np.ndarray, eod_id: int,
                 flags: np.ndarray | None = None,
                 flag: int = 1) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """``eod_id`` appended after each of ``documents`` (see the module docstring): one vectorised insert.

    Args:
        tokens, lengths: the documents back to back, ``lengths`` tokens each (not changed).
        documents: which, as positions in ``lengths`` (sorted) or a boolean mask over it.
        eod_id: the id to append.
        flags: one value per token (a loss mask), or None; gets ``flag`` at each appended EOD.

    Returns:
        ``(tokens, lengths, flags)``: new arrays where an EOD was appended (``lengths`` of the same dtype), the
        given ones where ``documents`` is empty.
    """
    documents = np.flatnonzero(documents) if documents.dtype == bool else documents
    if not len(documents):
        return tokens, lengths, flags
    positions = np.cumsum(lengths)[documents]
    tokens = np.insert(tokens, positions, eod_id)
    if flags is not None:
        flags = np.insert(flags, positions, flag)
    lengths = lengths.copy()
    lengths[documents] += 1
    return tokens, lengths, flags
