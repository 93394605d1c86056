"""The Hugging Face ``tokenizers`` library's own batch encoding: the reference ids of a plain ``tokenizer.json``
(the ``hf`` engine, and what the proof compares a fast engine's ids with).

Below both :mod:`~tokenmill.tokenization.tokenizer` (whose reference encoder it is) and
:mod:`~tokenmill.tokenization.engine` (whose ``hf`` engine it is), so that neither imports the other to encode.
"""

from __future__ import annotations

import itertools

import numpy as np
from tokenizers import Tokenizer

__all__ = ["encode_batch_hf"]


def encode_batch_hf(tokenizer: Tokenizer, texts: list[str], add_special_tokens: bool) -> tuple[np.ndarray, np.ndarray]:
    """:meth:`~tokenmill.tokenization.engine.Encoder.encode_batch` with the HF tokenizer itself (no offsets
    computed): ``(ids, lengths)``, every text's ids back to back (int64) and ids per text."""
    encodings = tokenizer.encode_batch_fast(texts, add_special_tokens=add_special_tokens)
    ids_per_text = [encoding.ids for encoding in encodings]
    lengths = np.fromiter(map(len, ids_per_text), dtype=np.int64, count=len(ids_per_text))
    ids = np.fromiter(itertools.chain.from_iterable(ids_per_text), dtype=np.int64, count=int(lengths.sum()))
    return ids, lengths
