"""The one block size: what tokenmill reads, copies, scans or converts at once.

16 Mi units (bytes of a file, or tokens of a token array): big enough that numpy's vectorised work and the
system calls dominate nothing, small enough that a job's memory stays at a few blocks whatever the file's size
(a 512 Mi-token OLMo part, a 100 GB JSONL). Raw-index scans and ``.pbin`` copies take it in bytes; token
conversions in tokens (:data:`tokenmill.formats.document_blocks.BLOCK_TOKENS`).
"""

from __future__ import annotations

__all__ = ["BLOCK"]

#: Units (bytes or tokens) handled at once.
BLOCK = 16 << 20
