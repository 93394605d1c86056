"""What a file is by its first bytes: compressed (gzip, zstd, xz, bzip2, zip), Parquet, or neither (plain JSONL),
for a local file or an object by URL. A compressed or Parquet input is read as a stream; a raw index exists only
for plain JSONL (:func:`refuse_compressed`); a bad line that is compressed data says so
(:func:`tokenmill.inputs.text_selection.describe_json_error`).
"""

from __future__ import annotations

import os

from tokenmill.errors import TokenmillError
from tokenmill.files.remote import read_all
from tokenmill.files.source import Source, as_source, compression_of

__all__ = ["compression_of", "described", "head_bytes", "refuse_compressed"]


def described(compression: str) -> str:
    """``gzip-compressed data``, or ``a Parquet file``."""
    return "a Parquet file" if compression == "parquet" else f"{compression}-compressed data"


def head_bytes(path: str | os.PathLike | Source, count: int = 8) -> bytes:
    """The first ``count`` bytes of a file, or of an object by URL (:mod:`tokenmill.files.objects`).

    Raises:
        TokenmillError: unreadable (naming it).
    """
    return read_all(as_source(path).open(0, count))


def refuse_compressed(path: str | os.PathLike | Source) -> None:
    """Stop at once on a compressed file given where plain JSONL is needed.

    Raises:
        TokenmillError: the file starts with the magic bytes of a compression format.
    """
    source = as_source(path)
    compression = source.compression
    if compression:
        raise TokenmillError(f"{source.name}: {described(compression)}: a raw index (byte offsets, as Modalities' "
                             f"MemMapDataset reads them) exists only for plain JSONL; `tokenmill pack` reads "
                             f"the file directly{'' if compression == 'parquet' else ', or decompress it first'}")
