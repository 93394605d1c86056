"""The tokenizer identity a Megatron training job hashes into its cache names, from the job's flags.

A Megatron job builds its tokenizer from its command-line flags, and GPTDataset names every index
cache file after the md5 of a description holding that tokenizer's ``unique_identifiers``. A cache
folder built ahead of time is reused only when its names were hashed with exactly the identifiers
the job's flags produce: every key, every value and the key order (the description is
``json.dumps(..., indent=4)``). This module turns the tokenizer flags of a job into those
identifiers, for two Megatron versions:

* ``"0.19"``: megatron-core 0.19.2 (its ``megatron/training`` and ``megatron/core``);
* ``"main"``: Megatron-LM main as of 2026-08 (commit d98e8a6).

Algorithm (no file is opened, paths are kept exactly as spelled, never resolved; microseconds):

1. Parse the flags with the argument names, types, defaults and ``nargs`` of Megatron's tokenizer
   argument group (no abbreviations; a repeated flag keeps its last value). main also has
   ``--use-gigatoken``; 0.19 refuses it. Any other flag is refused.
2. Build the dict in the order Megatron's ``build_tokenizer`` creates it: ``class`` (the version's
   tokenizer class), ``tokenizer_path``, then the keyword arguments it passes to the tokenizer, in
   its order, each value as Python's ``str()`` (``None`` → ``"None"``, ``True`` → ``"True"``, a list
   → its repr such as ``"['<a>']"``). Only ``tokenizer_path`` of NullTokenizer stays ``null``.

Facts (recorded with the real code of both versions; only ``class`` differs between them, apart
from main's ``use_gigatoken``):

=====================  =============================================================================
class                  0.19: ``megatron.core.tokenizers.text.models.default_tokenizer.DefaultTokenizerText``;
                       main: ``megatron.core.tokenizers.text.text_tokenizer.MegatronTokenizerText``
NullTokenizer          path null; ``vocab_size`` (required: Megatron cannot build it without a non-zero
                       ``--vocab-size``); ``eod_id`` only with ``--null-tokenizer-eod-id``; ``pad_id``
                       (default ``-1``). Its vocab_size is the flag's value, unpadded, and its EOD is
                       ``vocab_size - 1`` unless ``--null-tokenizer-eod-id`` says otherwise.
HuggingFaceTokenizer   path = ``--tokenizer-model``; chat_template, vocab_file, merges_file,
                       additional_special_tokens (``--tokenizer-special-tokens``, default ``[]``),
                       use_fast, trust_remote_code, include_special_tokens; main adds use_gigatoken.
GPT2BPETokenizer       path ``"GPT2BPETokenizer"``; additional_special_tokens, vocab_file, merges_file,
                       use_fast, trust_remote_code, include_special_tokens (+ use_gigatoken on main).
TikTokenizer           path = ``--tokenizer-model``; chat_template, pattern (only with
                       ``--tiktoken-pattern``), vocab_size (only with a non-zero ``--vocab-size``),
                       num_special_tokens, special_tokens (default ``None``).
SentencePieceTokenizer path = ``--tokenizer-model``; chat_template, ignore_extra_whitespaces, legacy,
                       special_tokens; GPTSentencePieceTokenizer and Llama2Tokenizer give the same dict.
=====================  =============================================================================

Flags of the group that never reach the identifiers (``--padded-vocab-size``, ``--vocab-extra-ids``,
``--vocab-size`` for HuggingFaceTokenizer...) are accepted and ignored, as Megatron ignores them.
Refused: other tokenizer types (BERT, multimodal, SFT: not recorded), ``--tokenizer-metadata``
(the class then comes from the metadata file), GPT2BPETokenizer without ``--vocab-file`` and
``--merge-file`` (the job would download GPT-2's files), a type that needs ``--tokenizer-model``
without it.
"""

from __future__ import annotations

import argparse
import shlex
from dataclasses import dataclass

from tokenmill.errors import TokenmillError

__all__ = ["VERSIONS", "DEFAULT_VERSION", "SUPPORTED_TYPES", "JobTokenizer", "parse_versions", "split_flags",
           "add_tokenizer_flags", "FlagParser",
           "job_tokenizer_identifiers", "job_tokenizer", "null_tokenizer_flags"]

VERSIONS = {"0.19": "megatron-core 0.19.2", "main": "Megatron-LM main (2026-08)"}
# 0.19 is the default: it is the released megatron-core on PyPI, which a job built from a pinned wheel
# runs; main moves weekly and renamed the tokenizer class once already.
DEFAULT_VERSION = "0.19"
_CLASS = {"0.19": "megatron.core.tokenizers.text.models.default_tokenizer.DefaultTokenizerText",
          "main": "megatron.core.tokenizers.text.text_tokenizer.MegatronTokenizerText"}
_SENTENCEPIECE = ("SentencePieceTokenizer", "GPTSentencePieceTokenizer", "Llama2Tokenizer")
SUPPORTED_TYPES = ("NullTokenizer", "HuggingFaceTokenizer", "GPT2BPETokenizer", "TikTokenizer", *_SENTENCEPIECE)
_TIKTOKEN_DEFAULT_VOCAB = 2**17  # TikTokenizer's vocab_size when the job gives no --vocab-size


@dataclass(frozen=True)
class JobTokenizer:
    """One tokenizer identity a cache folder is named for.

    Attributes:
        version: the Megatron version (a key of :data:`VERSIONS`), or None for identifiers given as
            they are, whose version and flags are unknown.
        flags: the job's tokenizer flags, or None when unknown.
        identifiers: the ``unique_identifiers`` hashed into the cache names.
        vocab_size: the job tokenizer's ``vocab_size`` where the flags alone fix it (NullTokenizer,
            TikTokenizer), else None (it comes from the tokenizer's files).
    """

    version: str | None
    flags: tuple[str, ...] | None
    identifiers: dict
    vocab_size: int | None = None

    @property
    def flag_text(self) -> str | None:
        """The flags as one shell-quoted line, or None."""
        return None if self.flags is None else shlex.join(self.flags)


class FlagParser(argparse.ArgumentParser):
    """argparse that reports a bad flag as one TokenmillError line instead of exiting."""

    def error(self, message: str):
        names = [name for action in self._actions for name in action.option_strings]
        raise TokenmillError(f"Megatron tokenizer flags: {message}; supported: {', '.join(names)}")


def _parser(version: str) -> FlagParser:
    """Megatron's tokenizer argument group: the same names, types, defaults and nargs."""
    return add_tokenizer_flags(FlagParser(prog="megatron", allow_abbrev=False, add_help=False), version)


def add_tokenizer_flags(parser: argparse.ArgumentParser, version: str) -> argparse.ArgumentParser:
    """Add the tokenizer argument group of Megatron ``version`` to ``parser`` (and return it)."""
    group = parser.add_argument_group("tokenizer")
    group.add_argument("--tokenizer-type")
    group.add_argument("--tokenizer-model")
    group.add_argument("--tokenizer-metadata")
    group.add_argument("--vocab-size", type=int)
    group.add_argument("--padded-vocab-size", type=int)
    group.add_argument("--no-pad-vocab-size", "--disable-pad-vocab-size", action="store_true")
    group.add_argument("--vocab-file")
    group.add_argument("--merge-file")
    group.add_argument("--vocab-extra-ids", type=int, default=0)
    group.add_argument("--tokenizer-special-tokens", nargs="+")
    group.add_argument("--tiktoken-pattern", choices=("v1", "v2"))
    group.add_argument("--tiktoken-num-special-tokens", type=int, default=1000)
    group.add_argument("--tokenizer-sentencepiece-legacy", action="store_true")
    group.add_argument("--no-tokenizer-sentencepiece-ignore-extra-whitespaces",
                        "--disable-tokenizer-sentencepiece-ignore-extra-whitespaces", action="store_false",
                        dest="sentencepiece_ignore_extra_whitespaces")
    group.add_argument("--tokenizer-hf-no-use-fast", action="store_true")
    group.add_argument("--tokenizer-hf-no-include-special-tokens", action="store_true")
    group.add_argument("--trust-remote-code", action="store_true")
    group.add_argument("--null-tokenizer-eod-id", type=int)
    group.add_argument("--null-tokenizer-pad-id", type=int, default=-1)
    group.add_argument("--chat-template")
    if version == "main":
        group.add_argument("--use-gigatoken", action="store_true")
    return parser


def parse_versions(values: list[str] | str | None) -> tuple[str, ...]:
    """``["0.19,main"]``, ``["main", "0.19"]`` or ``"main"`` → the versions, once each, in the order of
    :data:`VERSIONS` (so the same set gives the same folder and hand-off bytes); None or empty →
    ``(DEFAULT_VERSION,)``.

    Raises:
        TokenmillError: a version that is not one of :data:`VERSIONS`.
    """
    if isinstance(values, str):
        values = [values]
    versions = []
    for value in values or []:
        for version in (part.strip() for part in value.split(",")):
            if version not in VERSIONS:
                raise TokenmillError(f"Megatron version {version!r}: supported are "
                                     f"{', '.join(f'{key} ({name})' for key, name in VERSIONS.items())}")
            if version not in versions:
                versions.append(version)
    return tuple(version for version in VERSIONS if version in versions) or (DEFAULT_VERSION,)


def split_flags(args: str | list[str]) -> list[str]:
    """One string is split as a shell would (``shlex``); a list is taken as it is.

    Raises:
        TokenmillError: unbalanced quotes.
    """
    if not isinstance(args, str):
        return [str(arg) for arg in args]
    try:
        return shlex.split(args)
    except ValueError as exc:
        raise TokenmillError(f"Megatron tokenizer flags {args!r}: {exc}") from None


def job_tokenizer(version: str, args: str | list[str]) -> JobTokenizer:
    """The identity a job of ``version`` with tokenizer flags ``args`` hashes (see the module docstring).

    Raises:
        TokenmillError: an unknown version, flag or tokenizer type, or flags with which that Megatron
            version builds no tokenizer (or one whose identifiers were never recorded).
    """
    if version not in VERSIONS:
        parse_versions([version])  # raises, naming the supported versions
    argv = split_flags(args)
    if version != "main" and "--use-gigatoken" in argv:
        raise TokenmillError("--use-gigatoken: megatron-core 0.19 has no such flag (Megatron-LM main has it); "
                             "drop it or name version main")
    flags = _parser(version).parse_args(argv)
    kind = flags.tokenizer_type
    if kind not in SUPPORTED_TYPES:
        raise TokenmillError(f"Megatron tokenizer flags: --tokenizer-type {kind or '(missing)'} is not supported; "
                             f"supported: {', '.join(SUPPORTED_TYPES)}")
    if flags.tokenizer_metadata is not None:
        raise TokenmillError("Megatron tokenizer flags: --tokenizer-metadata is not supported (the tokenizer class "
                             "then comes from that file); give the job's other tokenizer flags")
    identifiers = {"class": _CLASS[version], "tokenizer_path": None}
    vocab_size = None
    if kind == "NullTokenizer":
        if not flags.vocab_size:  # Megatron passes no vocab_size then, and the tokenizer cannot be built
            raise TokenmillError("Megatron tokenizer flags: NullTokenizer needs a non-zero --vocab-size")
        vocab_size = flags.vocab_size
        identifiers["vocab_size"] = str(flags.vocab_size)
        if flags.null_tokenizer_eod_id is not None:
            identifiers["eod_id"] = str(flags.null_tokenizer_eod_id)
        identifiers["pad_id"] = str(flags.null_tokenizer_pad_id)
        return JobTokenizer(version, tuple(argv), identifiers, vocab_size)
    if kind == "GPT2BPETokenizer":
        if flags.vocab_file is None or flags.merge_file is None:
            raise TokenmillError("Megatron tokenizer flags: GPT2BPETokenizer needs --vocab-file and --merge-file "
                                 "(without them the job downloads GPT-2's files, whose identity is not recorded)")
        identifiers["tokenizer_path"] = kind
        identifiers["additional_special_tokens"] = str(flags.tokenizer_special_tokens or [])
        _add_hf_options(identifiers, flags, version, with_files=True)
        return JobTokenizer(version, tuple(argv), identifiers)
    if flags.tokenizer_model is None:
        raise TokenmillError(f"Megatron tokenizer flags: {kind} needs --tokenizer-model")
    identifiers["tokenizer_path"] = flags.tokenizer_model
    identifiers["chat_template"] = str(flags.chat_template)
    if kind == "HuggingFaceTokenizer":
        identifiers["vocab_file"] = str(flags.vocab_file)
        identifiers["merges_file"] = str(flags.merge_file)
        identifiers["additional_special_tokens"] = str(flags.tokenizer_special_tokens or [])
        _add_hf_options(identifiers, flags, version, with_files=False)
    elif kind == "TikTokenizer":
        if flags.tiktoken_pattern:
            identifiers["pattern"] = flags.tiktoken_pattern
        if flags.vocab_size:
            identifiers["vocab_size"] = str(flags.vocab_size)
        vocab_size = flags.vocab_size or _TIKTOKEN_DEFAULT_VOCAB
        identifiers["num_special_tokens"] = str(flags.tiktoken_num_special_tokens)
        identifiers["special_tokens"] = str(flags.tokenizer_special_tokens)
    else:  # the SentencePiece types
        identifiers["ignore_extra_whitespaces"] = str(flags.sentencepiece_ignore_extra_whitespaces)
        identifiers["legacy"] = str(flags.tokenizer_sentencepiece_legacy)
        identifiers["special_tokens"] = str(flags.tokenizer_special_tokens)
    return JobTokenizer(version, tuple(argv), identifiers, vocab_size)


def _add_hf_options(identifiers: dict, flags: argparse.Namespace, version: str, with_files: bool) -> None:
    """The Hugging Face loader options, in build_tokenizer's order (GPT2BPETokenizer also names its files)."""
    if with_files:
        identifiers["vocab_file"] = str(flags.vocab_file)
        identifiers["merges_file"] = str(flags.merge_file)
    identifiers["use_fast"] = str(not flags.tokenizer_hf_no_use_fast)
    identifiers["trust_remote_code"] = str(flags.trust_remote_code)
    identifiers["include_special_tokens"] = str(not flags.tokenizer_hf_no_include_special_tokens)
    if version == "main":
        identifiers["use_gigatoken"] = str(flags.use_gigatoken)


def job_tokenizer_identifiers(version: str, args: str | list[str]) -> dict:
    """``unique_identifiers`` of the tokenizer that Megatron ``version`` builds from the job flags ``args``
    (one shell-quoted string or a list), key order included.

    Raises:
        TokenmillError: as :func:`job_tokenizer`.
    """
    return job_tokenizer(version, args).identifiers


def null_tokenizer_flags(vocab_size: int, eod_id: int | None = None) -> list[str]:
    """The flags of a NullTokenizer job for data of ``vocab_size`` ids whose end-of-document id is
    ``eod_id``: ``--null-tokenizer-eod-id`` only where Megatron's default EOD (``vocab_size - 1``)
    differs, so that the job's ``tokenizer.eod`` is the data's (eod-mask-loss, reset-position-ids)."""
    flags = ["--tokenizer-type", "NullTokenizer", "--vocab-size", str(vocab_size)]
    if eod_id is not None and eod_id != vocab_size - 1:
        flags += ["--null-tokenizer-eod-id", str(eod_id)]
    return flags
