"""Megatron's tokenizer types as tokenmill tokenizers: each a ``tokenizer.json`` for the fast engine plus the
reference library that Megatron itself encodes with, which the proof re-encodes with.

A Megatron job names its tokenizer by ``--tokenizer-type`` (``specs/megatron-tokenizers.md``). Each type
reads other files and encodes with another library; tokenmill turns each into the one shape its engines
take, a Hugging Face ``tokenizer.json`` (text), and keeps the library as the reference:

=========================  ===========================================  =============  ==================
type                       ``path`` holds                               reference      EOD
=========================  ===========================================  =============  ==================
HuggingFaceTokenizer       a ``tokenizer.json``, or a folder with it     tokenizers     the folder's
                           (and ``tokenizer_config.json``)                              ``eos_token`` [1]
Llama2Tokenizer,           a SentencePiece ``.model``                   sentencepiece  its EOS piece [2]
SentencePieceTokenizer,
GPTSentencePieceTokenizer
TikTokenizer               a tiktoken JSON: Megatron's list of          tiktoken       ``</s>`` = 2
                           ``{rank, token_bytes, token_str}`` or
                           Mistral's tekken dict (its ``vocab``)
GPT2BPETokenizer           a folder with ``vocab.json`` +               tokenizers     ``<|endoftext|>``
                           ``merges.txt``
BertWordPieceLowerCase,    a WordPiece ``vocab.txt``                    tokenizers     ``[SEP]``
BertWordPieceCase
=========================  ===========================================  =============  ==================

[1] As transformers' ``AutoTokenizer`` finds it (4.57 and 5.x), which Megatron's ``tokenizer.eod`` is:
``special_tokens_map.json``'s ``eos_token`` where it has one (``null``: none), else ``tokenizer_config.json``'s, else
the default of its ``tokenizer_class`` (:data:`CLASS_EOS_TOKENS`). A ``tokenizer.json`` alone has none: Megatron
reads a folder.
[2] ``SentencePieceProcessor.eos_id()``: the control piece the trainer named ``eos_piece`` (``</s>``, or another
spelling such as ``<EOS>``); none for a model trained with ``eos_id=-1``.
A type without an EOD packs only with one named or with none asked for
(:func:`tokenmill.tokenization.tokenizer.load_tokenizer`).

Conversions (facts of the formats; measured equal on real files, and proven per job by
:mod:`tokenmill.tokenization.proof`):

* **SentencePiece BPE → BPE**: :mod:`tokenmill.tokenization.sentencepiece_model`.
* **tiktoken → byte-level BPE.** Megatron's TikTokenizer keeps the first ``vocab_size -
  num_special_tokens`` ranks, numbers them after ``num_special_tokens`` specials (``<unk> <s> </s>
  <mask> <pad> <cls> <sep>``, then ``<SPECIAL_7>``...), splits text with the ``v1``/``v2`` regex and
  encodes with ``allowed_special="all"``, so a special's spelling in a text is that special. In
  ``tokenizer.json`` terms: the specials are added tokens, the pre-tokenizer the same regex then
  byte-level, the vocabulary the ranks' bytes in GPT-2's byte alphabet, ``ignore_merges`` (tiktoken
  takes a whole piece that is a token as it is), and a merge for every split of a token into two
  tokens, ranked by the token's rank, then by the halves' ranks.

Cost: a conversion reads the files once and derives merges in O(total token length): ~0.5 s for a
32k SentencePiece model, ~1.5 s for a 130k tiktoken vocabulary, once per process and file content (memoised
by the file's sha256).
"""

from __future__ import annotations

import base64
import functools
import hashlib
import itertools
import os
from dataclasses import dataclass, field, replace

import numpy as np
import orjson

from tokenmill.errors import TokenmillError
from tokenmill.tokenization.sentencepiece_model import (bpe_tokenizer_json, conversion_refusal, eos_piece,
                                                        literal_pieces, read_model)

__all__ = ["HF_TYPE", "CLASS_EOS_TOKENS", "TOKENIZER_JSON_EOD_ABSENT", "SENTENCEPIECE_TYPES", "TYPES",
           "TIKTOKEN_PATTERNS", "TIKTOKEN_SPECIAL_TOKENS",
           "TokenizerSpec", "Family", "load_family", "ReferenceEncoder"]

HF_TYPE = "HuggingFaceTokenizer"
SENTENCEPIECE_TYPES = ("Llama2Tokenizer", "SentencePieceTokenizer", "GPTSentencePieceTokenizer")
WORDPIECE_TYPES = ("BertWordPieceLowerCase", "BertWordPieceCase")
TYPES = (HF_TYPE, *SENTENCEPIECE_TYPES, "TikTokenizer", "GPT2BPETokenizer", *WORDPIECE_TYPES)

# Megatron's two TikTokenizer split patterns (v1 with possessive quantifiers), as regex facts.
TIKTOKEN_PATTERNS = {
    "v1": r"[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]++[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+",
    "v2": (r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+"
           r"|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*"
           r"|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+"),
}
TIKTOKEN_SPECIAL_TOKENS = ("<unk>", "<s>", "</s>", "<mask>", "<pad>", "<cls>", "<sep>")
TIKTOKEN_DEFAULT_VOCAB = 1 << 17
TIKTOKEN_DEFAULT_SPECIALS = 1000


@dataclass(frozen=True)
class TokenizerSpec:
    """A tokenizer as a config or a command names it.

    Args:
        path: the file or folder holding the type's files (see the module docstring).
        type: a Megatron ``--tokenizer-type`` of :data:`TYPES`.
        tiktoken_pattern: TikTokenizer's split pattern, ``v1`` or ``v2``.
        tiktoken_num_special_tokens: TikTokenizer's number of specials before the ranks.
        vocab_size: TikTokenizer's vocabulary size (specials included); None for its default, 2**17.
        merge_file: GPT2BPETokenizer's ``merges.txt`` where ``path`` is its ``vocab.json`` (a folder
            ``path`` holds both).
    """

    path: str
    type: str = HF_TYPE
    tiktoken_pattern: str = "v2"
    tiktoken_num_special_tokens: int = TIKTOKEN_DEFAULT_SPECIALS
    vocab_size: int | None = None
    merge_file: str | None = None

    @classmethod
    def from_config(cls, tokenizer: dict) -> "TokenizerSpec":
        """A config's ``tokenizers.<name>`` entry, or a sidecar's ``tokenizer`` (``type`` null or absent: a
        Hugging Face ``tokenizer.json``)."""
        kind = tokenizer.get("type") or HF_TYPE
        # a sidecar's vocab_size is the tokenizer's: an option only of TikTokenizer, which reads it
        return cls(tokenizer["path"], kind, tokenizer.get("tiktoken_pattern", "v2"),
                   tokenizer.get("tiktoken_num_special_tokens", TIKTOKEN_DEFAULT_SPECIALS),
                   tokenizer.get("vocab_size") if kind == "TikTokenizer" else None, tokenizer.get("merge_file"))

    def options(self) -> dict:
        """What a sidecar records beside the path (only what the type reads)."""
        if self.type == "GPT2BPETokenizer" and self.merge_file is not None:
            return {"type": self.type, "merge_file": self.merge_file}
        if self.type != "TikTokenizer":
            return {"type": self.type}
        return {"type": self.type, "tiktoken_pattern": self.tiktoken_pattern,
                "tiktoken_num_special_tokens": self.tiktoken_num_special_tokens,
                "vocab_size": self.vocab_size or TIKTOKEN_DEFAULT_VOCAB}


class ReferenceEncoder:
    """The library a Megatron job encodes with, for a type other than Hugging Face's.

    Attributes:
        library: its package name (recorded with its version in sidecars).
    """

    library = ""

    def encode_batch(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """``(ids, lengths)``: every text's ids back to back (int64) and ids per text."""
        ids_per_text = self.encode_lists(texts)
        lengths = np.fromiter(map(len, ids_per_text), dtype=np.int64, count=len(ids_per_text))
        ids = np.fromiter(itertools.chain.from_iterable(ids_per_text), dtype=np.int64, count=int(lengths.sum()))
        return ids, lengths

    def encode_lists(self, texts: list[str]) -> list[list[int]]:
        raise NotImplementedError

    def version(self) -> str:
        import importlib.metadata

        return importlib.metadata.version(self.library)


class _SentencePieceReference(ReferenceEncoder):
    library = "sentencepiece"

    def __init__(self, content: bytes):
        import sentencepiece

        self.processor = sentencepiece.SentencePieceProcessor(model_proto=content)

    def encode_lists(self, texts: list[str]) -> list[list[int]]:
        return self.processor.encode(texts)


class _TiktokenReference(ReferenceEncoder):
    library = "tiktoken"

    def __init__(self, pattern: str, ranks: dict[bytes, int], specials: dict[str, int]):
        import tiktoken

        self.encoding = tiktoken.Encoding(name="tokenmill", pat_str=pattern, mergeable_ranks=ranks,
                                          special_tokens=specials)

    def encode_lists(self, texts: list[str]) -> list[list[int]]:
        return [self.encoding.encode(text, allowed_special="all") for text in texts]


@dataclass
class Family:
    """A tokenizer type loaded: what :func:`tokenmill.tokenization.tokenizer.load_tokenizer` builds its tokenizer from.

    Args:
        spec: what was asked for.
        hf_json: the ``tokenizer.json`` text the engines load.
        sha256: hex sha256 of the files read (several: of their names and bytes).
        eod: the type's end-of-document token as Megatron takes it, or None.
        eod_absent: why ``eod`` is None (where the type looked for one), for the error that asks for one.
        literal_specials: strings the type's library encodes as text that name special pieces of the converted
            vocabulary (SentencePiece's ``</s>``, ``<0x41>``): where a fast engine must be checked (the proof's
            risky spots) and where one that reads them as the pieces is refused.
        reference: the library Megatron encodes with, or None where that is Hugging Face's (``hf_json``).
    """

    spec: TokenizerSpec
    hf_json: str
    sha256: str
    eod: str | None
    reference: ReferenceEncoder | None = field(default=None, repr=False)
    eod_absent: str = ""
    literal_specials: tuple[str, ...] = ()

    @functools.cached_property
    def hf_json_sha256(self) -> str:
        """sha256 of the converted text: what an engine loaded from it is known by (one file converted
        with other options is another tokenizer)."""
        return hashlib.sha256(self.hf_json.encode("utf-8")).hexdigest()


# Conversions of single-file types by their options and the file's sha256: a job loads its tokenizer in the
# background for the fast engine and again for the reference, and converts once; so does a process that
# loads copies of one file (the tests' in-process CLI).
_converted: dict[tuple, Family] = {}


def load_family(spec: TokenizerSpec) -> Family:
    """Read ``spec``'s files and convert them (see the module docstring), once per process and file version.

    Raises:
        TokenmillError: an unknown type, a missing or malformed file, or a model that cannot be converted.
    """
    if spec.type not in TYPES:
        raise TokenmillError(f"tokenizer type {spec.type!r}: supported are {', '.join(TYPES)}")
    try:
        if os.path.isdir(spec.path) or spec.merge_file is not None:
            key = None  # several files: converted each time (cheap: no merges to derive)
        else:
            with open(spec.path, "rb") as handle:
                key = (replace(spec, path=""), hashlib.sha256(handle.read()).hexdigest())
    except OSError:
        key = None  # the loader reports it
    if key in _converted:
        return replace(_converted[key], spec=spec)
    loader = {"TikTokenizer": _load_tiktoken, "GPT2BPETokenizer": _load_gpt2_bpe, HF_TYPE: _load_hf_folder,
              **dict.fromkeys(SENTENCEPIECE_TYPES, _load_sentencepiece),
              **dict.fromkeys(WORDPIECE_TYPES, _load_wordpiece)}[spec.type]
    family = loader(spec)
    if key is not None:
        _converted[key] = family
    return family


def _read(path: str, what: str) -> bytes:
    if os.path.isdir(path):
        raise TokenmillError(f"{path}: is a directory; give the {what} file")
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except FileNotFoundError:
        raise TokenmillError(f"{path}: {what} not found") from None
    except OSError as exc:
        raise TokenmillError(f"{path}: cannot read ({exc.strerror})") from None


TOKENIZER_JSON_EOD_ABSENT = ("a tokenizer.json alone names no EOS (Megatron's HuggingFaceTokenizer reads the "
                             "eos_token of a folder's tokenizer_config.json)")

# The EOS a transformers tokenizer class gives when the folder's files name none (the classes' ``__init__``
# defaults); a class not listed has none.
CLASS_EOS_TOKENS = {"GPT2Tokenizer": "<|endoftext|>", "GPT2TokenizerFast": "<|endoftext|>",
                    "GPTNeoXTokenizerFast": "<|endoftext|>", "Qwen2Tokenizer": "<|endoftext|>",
                    "Qwen2TokenizerFast": "<|endoftext|>", "LlamaTokenizer": "</s>", "LlamaTokenizerFast": "</s>",
                    "T5Tokenizer": "</s>", "T5TokenizerFast": "</s>"}


def _load_hf_folder(spec: TokenizerSpec) -> Family:
    """A ``tokenizer.json``, or a folder with one and, for its EOD, the EOS transformers finds (module docstring)."""
    if not os.path.isdir(spec.path):
        content = _read(spec.path, "tokenizer file")
        return Family(spec, content.decode("utf-8", "replace"), hashlib.sha256(content).hexdigest(), None,
                      eod_absent=TOKENIZER_JSON_EOD_ABSENT)
    content = _read(os.path.join(spec.path, "tokenizer.json"), "tokenizer.json")
    config = _json_object_in(spec.path, "tokenizer_config.json")
    special_tokens = _json_object_in(spec.path, "special_tokens_map.json")
    tokenizer_class = config.get("tokenizer_class")
    # transformers: special_tokens_map.json's entry wins (null too), then tokenizer_config.json's, then the class's
    if "eos_token" in special_tokens:
        eod, absent = _eos_token_of(special_tokens), "its special_tokens_map.json sets eos_token to null"
    elif "eos_token" in config:
        eod, absent = _eos_token_of(config), "its tokenizer_config.json sets eos_token to null"
    else:
        eod = CLASS_EOS_TOKENS.get(tokenizer_class) if isinstance(tokenizer_class, str) else None
        absent = (f"neither its tokenizer_config.json nor special_tokens_map.json names an eos_token, and its "
                  f"tokenizer_class {tokenizer_class!r} has no default one")
    return Family(spec, content.decode("utf-8", "replace"), hashlib.sha256(content).hexdigest(), eod,
                  eod_absent=absent)


def _json_object_in(folder: str, name: str) -> dict:
    """The JSON object of ``folder/name``, or {} where there is no such file.

    Raises:
        TokenmillError: a file that is not a JSON object.
    """
    path = os.path.join(folder, name)
    if not os.path.isfile(path):
        return {}
    try:
        value = orjson.loads(_read(path, name))
    except orjson.JSONDecodeError:
        value = None
    if not isinstance(value, dict):
        raise TokenmillError(f"{path}: not a JSON object")
    return value


def _eos_token_of(config: dict) -> str | None:
    """A config's ``eos_token``: a string, or an added token's ``{"content": ...}``; None where there is none."""
    eos = config.get("eos_token")
    eos = eos.get("content") if isinstance(eos, dict) else eos
    return eos if isinstance(eos, str) and eos else None


# ---- SentencePiece ---------------------------------------------------------------------------------------------

def _load_sentencepiece(spec: TokenizerSpec) -> Family:
    content = _read(spec.path, "SentencePiece model")
    try:
        pieces, settings = read_model(content)
    except (ValueError, UnicodeDecodeError) as exc:
        raise TokenmillError(f"{spec.path}: not a SentencePiece model ({exc})") from None
    if not pieces:
        raise TokenmillError(f"{spec.path}: not a SentencePiece model (no pieces)")
    refusal = conversion_refusal(pieces, settings)
    if refusal:
        raise TokenmillError(f"{spec.path}: {spec.type} model cannot be converted for tokenmill's engines: {refusal}")
    return Family(spec, bpe_tokenizer_json(pieces, settings["byte_fallback"]), hashlib.sha256(content).hexdigest(),
                  eos_piece(pieces, settings), _SentencePieceReference(content),
                  eod_absent=f"the model has no EOS (no control piece {settings['eos_piece']!r}, its eos_piece: "
                             f"sentencepiece's eos_id() is -1)", literal_specials=literal_pieces(pieces))


# ---- tiktoken --------------------------------------------------------------------------------------------------

@functools.lru_cache(maxsize=1)
def _byte_alphabet() -> list[str]:
    """GPT-2's printable stand-in for each byte (the byte-level pre-tokenizer's alphabet)."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    alphabet, extra = {}, 0
    for byte in range(256):
        if byte in printable:
            alphabet[byte] = chr(byte)
        else:
            alphabet[byte] = chr(256 + extra)
            extra += 1
    return [alphabet[byte] for byte in range(256)]


def _tiktoken_ranks(spec: TokenizerSpec) -> tuple[list[bytes], str]:
    """The ranks' bytes in rank order, from Megatron's list or Mistral's tekken dict, and the file's sha256."""
    content = _read(spec.path, "tiktoken vocabulary")
    try:
        vocab = orjson.loads(content)
    except orjson.JSONDecodeError as exc:
        raise TokenmillError(f"{spec.path}: not JSON ({exc})") from None
    if isinstance(vocab, dict) and isinstance(vocab.get("vocab"), list):  # Mistral's tekken file
        vocab = vocab["vocab"]
    if not isinstance(vocab, list):
        raise TokenmillError(f"{spec.path}: not a tiktoken vocabulary (a list of {{rank, token_bytes, token_str}}, "
                             f"or a tekken file's dict with one under 'vocab')")
    ranks = []
    for index, entry in enumerate(vocab):
        try:
            if entry["rank"] != index:
                raise ValueError(f"rank {entry['rank']} at position {index}")
            ranks.append(base64.b64decode(entry["token_bytes"], validate=True))
        except (KeyError, TypeError, ValueError) as exc:
            raise TokenmillError(f"{spec.path}: entry {index} is not a {{rank, token_bytes}} entry ({exc})") from None
        if index < 256 and ranks[-1] != bytes([index]):
            raise TokenmillError(f"{spec.path}: rank {index} is not the single byte {index}")
    return ranks, hashlib.sha256(content).hexdigest()


_HASH_BASE = 0x100000001B3  # odd, so invertible modulo 2**64
_LENGTH_MIX = 0x9E3779B97F4A7C15


def _token_splits(tokens: list[bytes]) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """``(token, left, right)``: every split of a token into two non-empty tokens, ``tokens[token] ==
    tokens[left] + tokens[right]``, ordered by token, then left, then right (the merges' order); None where two
    tokens share a key (a duplicate, or a hash collision), for the caller to split them one by one.

    Each token and each of its prefixes and suffixes is known by a polynomial hash of its bytes modulo 2**64 mixed
    with its length, computed for every cut at once (prefix sums; a suffix is the whole less its prefix, times the
    base's inverse), and looked up among the tokens' keys by binary search. With the tokens' keys distinct, a
    split found is exact unless a prefix or suffix that is no token shares a token's key: each found split is
    then checked against the bytes themselves. Cost: O(total length · log tokens) in numpy, ~0.4 s for 130k
    tiktoken ranks (a dict lookup per cut in Python: ~1.2 s)."""
    lengths = np.fromiter(map(len, tokens), np.int64, len(tokens))
    total = int(lengths.sum())
    if total == 0:
        none = np.empty(0, np.int64)
        return none, none, none
    starts = np.cumsum(lengths) - lengths
    owner = np.repeat(np.arange(len(tokens)), lengths)
    position = np.arange(total) - starts[owner]
    longest = int(lengths.max())
    powers, inverses = np.empty(longest + 1, np.uint64), np.empty(longest + 1, np.uint64)
    power, inverse, base_inverse = 1, 1, pow(_HASH_BASE, -1, 1 << 64)
    for exponent in range(longest + 1):
        powers[exponent], inverses[exponent] = power, inverse
        power, inverse = power * _HASH_BASE % (1 << 64), inverse * base_inverse % (1 << 64)
    with np.errstate(over="ignore"):  # uint64 arithmetic wraps: modulo 2**64 on purpose
        sums = np.cumsum(np.frombuffer(b"".join(tokens), np.uint8).astype(np.uint64) * powers[position])
        prefix = sums - np.where(starts > 0, sums[np.maximum(starts - 1, 0)], np.uint64(0))[owner]
        whole = np.zeros(len(tokens), np.uint64)
        ends = starts + lengths - 1
        whole[lengths > 0] = prefix[ends[lengths > 0]]

        def key(hashes: np.ndarray, sizes: np.ndarray) -> np.ndarray:
            return hashes ^ (sizes.astype(np.uint64) * np.uint64(_LENGTH_MIX))

        token_keys = key(whole, lengths)
        order = np.argsort(token_keys, kind="stable")
        sorted_keys = token_keys[order]
        if bool(np.any(sorted_keys[1:] == sorted_keys[:-1])):
            return None

        def find(keys: np.ndarray) -> np.ndarray:
            at = np.minimum(np.searchsorted(sorted_keys, keys), len(sorted_keys) - 1)
            return np.where(sorted_keys[at] == keys, order[at], -1)

        cut = position + 1  # a cut after each byte but a token's last
        inside = cut < lengths[owner]
        cut, token, left_hash = cut[inside], owner[inside], prefix[inside]
        left = find(key(left_hash, cut))
        has_left = left >= 0
        cut, token, left_hash, left = cut[has_left], token[has_left], left_hash[has_left], left[has_left]
        right = find(key((whole[token] - left_hash) * inverses[cut], lengths[token] - cut))
    found = right >= 0
    token, left, right = token[found], left[found], right[found]
    exact = np.fromiter((tokens[whole_] == tokens[left_] + tokens[right_] for whole_, left_, right_ in
                         zip(token.tolist(), left.tolist(), right.tolist())), bool, len(token))
    token, left, right = token[exact], left[exact], right[exact]
    ranked = np.lexsort((right, left, token))
    return token[ranked], left[ranked], right[ranked]


def _load_tiktoken(spec: TokenizerSpec) -> Family:
    if spec.tiktoken_pattern not in TIKTOKEN_PATTERNS:
        raise TokenmillError(f"tiktoken pattern {spec.tiktoken_pattern!r}: Megatron knows v1 and v2")
    vocab_size = spec.vocab_size or TIKTOKEN_DEFAULT_VOCAB
    specials_count = spec.tiktoken_num_special_tokens
    if not len(TIKTOKEN_SPECIAL_TOKENS) <= specials_count < vocab_size:
        raise TokenmillError(f"TikTokenizer: {specials_count} special tokens must be at least "
                             f"{len(TIKTOKEN_SPECIAL_TOKENS)} and fewer than the vocabulary size {vocab_size}")
    ranks, sha256 = _tiktoken_ranks(spec)
    ranks = ranks[:vocab_size - specials_count]
    if len(ranks) < vocab_size - specials_count:  # Megatron's own check: every id up to vocab_size exists
        raise TokenmillError(f"{spec.path}: {len(ranks)} ranks, fewer than vocab_size {vocab_size} - "
                             f"{specials_count} special tokens")
    specials = [*TIKTOKEN_SPECIAL_TOKENS,
                *(f"<SPECIAL_{index}>" for index in range(len(TIKTOKEN_SPECIAL_TOKENS), specials_count))]
    alphabet = dict(enumerate(_byte_alphabet()))
    pieces = [token.decode("latin-1").translate(alphabet) for token in ranks]
    splits = _token_splits(ranks)
    if splits is None:  # two ranks' keys alike: each piece's splits looked up one by one
        rank_of = {piece: rank for rank, piece in enumerate(pieces)}
        merges = []
        for piece in pieces:
            found = sorted((rank_of[piece[:cut]], rank_of[piece[cut:]]) for cut in range(1, len(piece))
                           if piece[:cut] in rank_of and piece[cut:] in rank_of)
            merges += [(pieces[left], pieces[right]) for left, right in found]
    else:
        _, lefts, rights = splits
        merges = list(zip(map(pieces.__getitem__, lefts.tolist()), map(pieces.__getitem__, rights.tolist())))
    # The specials are in the vocabulary too: Hugging Face renumbers an added token whose id the model
    # lacks, and fastokens loads no vocabulary with a gap.
    vocab = {token: index for index, token in enumerate(specials)}
    vocab.update((piece, rank + specials_count) for rank, piece in enumerate(pieces))
    if len(vocab) != vocab_size:
        raise TokenmillError(f"{spec.path}: a rank's bytes spell one of Megatron's special tokens")
    config = {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": [{"id": index, "content": token, "single_word": False, "lstrip": False, "rstrip": False,
                          "normalized": False, "special": True} for index, token in enumerate(specials)],
        "normalizer": None,
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": TIKTOKEN_PATTERNS[spec.tiktoken_pattern]},
             "behavior": "Isolated", "invert": False},
            {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}]},
        "post_processor": None,
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False, "ignore_merges": True,
                  "vocab": vocab, "merges": merges},
    }
    reference = _TiktokenReference(TIKTOKEN_PATTERNS[spec.tiktoken_pattern],
                                   {token: rank + specials_count for rank, token in enumerate(ranks)},
                                   {token: index for index, token in enumerate(specials)})
    return Family(spec, orjson.dumps(config).decode("utf-8"), sha256, "</s>", reference)


# ---- GPT-2 BPE and WordPiece (Megatron wraps Hugging Face's own) ----------------------------------------------

def _load_gpt2_bpe(spec: TokenizerSpec) -> Family:
    from tokenizers.implementations import ByteLevelBPETokenizer

    if spec.merge_file is None:
        vocab_file, merge_file = os.path.join(spec.path, "vocab.json"), os.path.join(spec.path, "merges.txt")
    else:
        vocab_file, merge_file = spec.path, spec.merge_file
    digest = hashlib.sha256()
    for name, path in (("vocab.json", vocab_file), ("merges.txt", merge_file)):
        content = _read(path, f"GPT-2 {name}")
        digest.update(f"{name}\0{len(content)}\0".encode())
        digest.update(content)
    try:
        tokenizer = ByteLevelBPETokenizer(vocab_file, merge_file)
    except Exception as exc:  # tokenizers raises bare Exceptions on malformed files
        raise TokenmillError(f"{spec.path}: not GPT-2 BPE files ({str(exc).splitlines()[0]})") from None
    tokenizer.add_special_tokens(["<|endoftext|>"])
    return Family(spec, tokenizer.to_str(), digest.hexdigest(), "<|endoftext|>")


def _load_wordpiece(spec: TokenizerSpec) -> Family:
    """BERT's WordPiece from its ``vocab.txt``: its post-processor adds ``[CLS]``/``[SEP]`` to every text,
    as Megatron's BERT types do (each JSON list element included), and ``[SEP]`` is their EOD."""
    from tokenizers.implementations import BertWordPieceTokenizer

    content = _read(spec.path, "WordPiece vocab.txt")
    try:
        tokenizer = BertWordPieceTokenizer(spec.path, lowercase=spec.type == "BertWordPieceLowerCase")
    except Exception as exc:
        raise TokenmillError(f"{spec.path}: not a WordPiece vocab.txt ({str(exc).splitlines()[0]})") from None
    return Family(spec, tokenizer.to_str(), hashlib.sha256(content).hexdigest(), "[SEP]")
