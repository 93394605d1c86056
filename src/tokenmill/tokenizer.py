"""Load a Hugging Face ``tokenizer.json`` and derive what the packed formats need from it.

* ``vocab_size``: the full id range, ``max id + 1`` over the base vocabulary *and* added tokens.
  (Modalities sizes tokens from HF ``vocab_size``, which leaves added tokens out, so an EOD added
  above the base vocabulary overflows its token width; spec modalities §3. We do not copy that.)
* ``token_width``: bytes per token in a ``.pbin``: 1 if every id < 2**8, 2 if < 2**16, else 4.
  For every tokenizer whose ids fit Modalities' rule this is the width Modalities picks.
* ``eod_id``: the id of the end-of-document token string, which must be a single token.
* truncation and padding stored in the file are switched off: Megatron and Modalities never cut or
  pad a document, and a ``tokenizer.json`` exported for a classifier (``truncation: 128``,
  ``padding: Fixed``) would otherwise turn every document into 128 tokens without a word. What was
  switched off is kept in ``ignored_settings`` (recorded in sidecars), and ``pad_id`` names the
  padding id so that ``verify`` can flag data that holds it.

Cost: parsing the JSON file once (~0.1–1 s for 50k–130k vocabularies).
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass

from tokenizers import Tokenizer

from tokenmill.errors import TokenmillError

__all__ = ["TokenizerInfo", "load_tokenizer", "token_width_for", "file_sha256"]


def file_sha256(path: str | os.PathLike) -> str:
    """Hex sha256 of a file, read in 8 MiB blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(8 << 20):
            digest.update(block)
    return digest.hexdigest()


def token_width_for(vocab_size: int) -> int:
    """Bytes per token needed for ids ``0 .. vocab_size-1``: 1, 2 or 4.

    Raises:
        TokenmillError: ids beyond 32 bits.
    """
    for width in (1, 2, 4):
        if vocab_size <= 1 << (8 * width):
            return width
    raise TokenmillError(f"vocabulary of {vocab_size} ids does not fit 4-byte tokens")


@dataclass(frozen=True)
class TokenizerInfo:
    """A loaded tokenizer and the facts derived from it.

    Args:
        tokenizer: the ``tokenizers.Tokenizer``.
        path: the file it was loaded from, as given.
        sha256: hex sha256 of that file.
        vocab_size: highest id + 1, added tokens included.
        token_width: bytes per token (1, 2 or 4).
        eod_token: the end-of-document token string, or None.
        eod_id: its id, or None.
        ignored_settings: the file's ``truncation`` / ``padding`` settings that loading switched
            off (empty when it had none).
        pad_id: the id the file's (switched off) padding would have filled with, or None.
    """

    tokenizer: Tokenizer
    path: str
    sha256: str
    vocab_size: int
    token_width: int
    eod_token: str | None
    eod_id: int | None
    ignored_settings: dict
    pad_id: int | None

    def sidecar_entry(self) -> dict:
        """What a sidecar records of this tokenizer (everything a rebuild must reproduce)."""
        return {"path": self.path, "sha256": self.sha256, "vocab_size": self.vocab_size,
                "eod_token": self.eod_token, "eod_id": self.eod_id, "pad_id": self.pad_id,
                "ignored_settings": self.ignored_settings}


def load_tokenizer(path: str | os.PathLike, eod_token: str | None = None) -> TokenizerInfo:
    """Load ``tokenizer.json`` and resolve the EOD token.

    Args:
        path: a Hugging Face ``tokenizer.json``.
        eod_token: the end-of-document token string (e.g. ``<|endoftext|>``); None for none.

    Truncation and padding stored in the file are switched off (see the module docstring).

    Raises:
        TokenmillError: the file is missing or not a tokenizer, or ``eod_token`` is not one token.
    """
    if not os.path.isfile(path):
        raise TokenmillError(f"{path}: tokenizer file not found")
    try:
        tokenizer = Tokenizer.from_file(str(path))
    except Exception as exc:  # tokenizers raises a bare Exception on a malformed file
        raise TokenmillError(f"{path}: not a Hugging Face tokenizer.json ({str(exc).splitlines()[0]})") from None
    ignored_settings = {name: setting for name, setting in (("truncation", tokenizer.truncation),
                                                            ("padding", tokenizer.padding)) if setting}
    tokenizer.no_truncation()
    tokenizer.no_padding()
    vocab = tokenizer.get_vocab(with_added_tokens=True)
    vocab_size = max(vocab.values()) + 1 if vocab else 0
    eod_id = None
    if eod_token is not None:
        eod_id = tokenizer.token_to_id(eod_token)
        if eod_id is None:
            raise TokenmillError(f"{path}: EOD token {eod_token!r} is not a single token of this tokenizer")
    return TokenizerInfo(tokenizer=tokenizer, path=str(path), sha256=file_sha256(path), vocab_size=vocab_size,
                         token_width=token_width_for(vocab_size), eod_token=eod_token, eod_id=eod_id,
                         ignored_settings=ignored_settings, pad_id=_pad_id(ignored_settings))


def _pad_id(ignored_settings: dict) -> int | None:
    """The id the file's padding settings would fill encodings with, or None without padding."""
    return int(ignored_settings["padding"]["pad_id"]) if "padding" in ignored_settings else None
