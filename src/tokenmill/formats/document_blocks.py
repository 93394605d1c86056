"""Token files walked in blocks: the one block size, and the one walk over whole documents.

A file of billions of tokens is converted, checked or copied :data:`BLOCK_TOKENS` tokens at a time: big enough
that numpy's vectorised work dominates, small enough that memory stays at a few blocks (a 512 Mi-token OLMo part
is never copied whole). Conversions that add or drop tokens per document (a second EOD, datatrove's rules) take
whole documents: :func:`document_blocks` cuts the documents into runs of about that many tokens, never splitting
one, and gives a document longer than a block a run of its own. The bytes written do not depend on where the
cuts fall.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from tokenmill.files.blocks import BLOCK

__all__ = ["BLOCK_TOKENS", "document_blocks"]

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
