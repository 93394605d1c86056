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

The engine (:class:`Encoder`) turns a batch of texts into one flat id array and per-text lengths:

* ``hf``: the ``tokenizers`` package itself (``encode_batch_fast``), ~2.5–5 MB/s per core.
* ``fastokens``: fastokens 0.3 (Apache-2.0, no dependencies), which reimplements the same
  ``tokenizer.json`` pipeline in Rust and returns flat ``uint32`` buffers: 62 MB/s per thread for
  GPT-2 and 161 MB/s for Tekken here (HF: 2.1 and 2.3), with ids equal to HF's on every one of the
  21,639 documents of the 100 MB benchmark corpus (``bench/encoder_compare.py``).
* ``auto`` (the default): fastokens when :func:`fast_engine_refusal` finds nothing in the
  ``tokenizer.json`` outside what it was proven on (byte-level BPE, no normalizer, ByteLevel/Split
  pre-tokenizers, no dropout or byte fallback, plain added tokens), else HF; the reason is logged.
  A file that passes that check but that fastokens still cannot load (e.g. a vocabulary whose ids
  skip a range) also gets HF, with fastokens' error as the reason (:class:`FastEngineUnavailable`).

The fast engine is never trusted blindly: :mod:`tokenmill.pack` re-encodes a sample of every batch
with HF and stops (or falls back to HF) on any difference.

Cost: parsing the JSON file once (~0.1–1 s for 50k–130k vocabularies), twice with the fast engine.
"""

from __future__ import annotations

import hashlib
import itertools
import os
import re
import sys
import tempfile
import threading
import zlib
from dataclasses import dataclass

import numpy as np
import orjson
import tokenizers
from tokenizers import Tokenizer

from tokenmill.errors import TokenmillError

__all__ = ["TokenizerInfo", "load_tokenizer", "token_width_for", "file_sha256", "ENGINES", "FAST_ENGINE_PAYS_BYTES",
           "small_input_reason", "Encoder", "EngineMismatch", "FastEngineUnavailable", "fast_engine_refusal",
           "fast_engine_loading", "preload_fast_engine", "encode_batch_hf", "ProofSampler", "ProofSample", "split_flat",
           "compare_ids", "first_difference"]

ENGINES = ("auto", "hf", "fastokens")
# Loading fastokens takes 0.3-0.7 s (GPT-2) to 1.1-2.2 s (Tekken), about what Hugging Face needs for
# 1-3 MB of text on two threads: below this, auto takes Hugging Face (the reference itself, no proof).
FAST_ENGINE_PAYS_BYTES = 1 << 20


def small_input_reason(engine: str, input_bytes: float, estimate: str = "") -> str | None:
    """Why ``auto`` takes HF for an input of ``input_bytes`` (under :data:`FAST_ENGINE_PAYS_BYTES`:
    the same ids, and HF finishes before fastokens would have loaded), or None where it does not.
    ``estimate`` says how the size was guessed (compressed inputs)."""
    if engine != "auto" or input_bytes >= FAST_ENGINE_PAYS_BYTES:
        return None
    return (f"engine auto: HF, as this input (~{input_bytes / 1e6:.2f} MB of text{estimate}) takes it less time "
            f"than loading fastokens would")


def file_sha256(path: str | os.PathLike, start: int = 0, end: int | None = None,
                stop: threading.Event | None = None) -> str | None:
    """Hex sha256 of a file (or of its bytes ``[start, end)``), read in 8 MiB blocks; None if
    ``stop`` was set before the end (a job stopping does not wait for a 10 GB hash)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        handle.seek(start)
        remaining = (1 << 62) if end is None else end - start
        while remaining > 0 and (block := handle.read(min(8 << 20, remaining))):
            if stop is not None and stop.is_set():
                return None
            digest.update(block)
            remaining -= len(block)
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
        fast_engine_refusal: why the fast engine is not proven for this file, or None
            (see :func:`fast_engine_refusal`).
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
    fast_engine_refusal: str | None = None

    def added_tokens(self) -> list[str]:
        """The added-token strings (the proof checks every text holding one)."""
        return [token.content for token in self.tokenizer.get_added_tokens_decoder().values()]

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
    if os.path.isdir(path):
        raise TokenmillError(f"{path}: is a directory; give the tokenizer.json file in it")
    if not os.path.isfile(path):
        raise TokenmillError(f"{path}: tokenizer file not found")
    with open(path, "rb") as handle:  # read once: hashed, parsed for the facts below, and loaded
        content = handle.read()
    try:
        config = orjson.loads(content)
        # What is read from the parsed file is taken before loading, so that the parsed vocabulary
        # (~50 MB of Python objects for 131k tokens) is freed before the tokenizer's own copy exists.
        facts = _vocab_size_in(config), fast_engine_refusal(config)
        del config
        tokenizer = _hf_from_str(content.decode("utf-8"))
    except Exception as exc:  # tokenizers raises a bare Exception on a malformed file
        raise TokenmillError(f"{path}: not a Hugging Face tokenizer.json ({str(exc).splitlines()[0]})") from None
    except BaseException as exc:
        if not _is_rust_panic(exc):
            raise
        raise TokenmillError(f"{path}: Hugging Face's tokenizers cannot load it (it panicked: "
                             f"{_first_line(exc)})") from None
    ignored_settings = {name: setting for name, setting in (("truncation", tokenizer.truncation),
                                                            ("padding", tokenizer.padding)) if setting}
    tokenizer.no_truncation()
    tokenizer.no_padding()
    vocab_size = facts[0]
    if vocab_size is None:  # a model without a vocabulary in the file: ask the tokenizer
        ids = tokenizer.get_vocab(with_added_tokens=True).values()
        vocab_size = max(ids) + 1 if ids else 0
    eod_id = None
    if eod_token is not None:
        eod_id = tokenizer.token_to_id(eod_token)
        if eod_id is None:
            raise TokenmillError(f"{path}: EOD token {eod_token!r} is not a single token of this tokenizer")
    return TokenizerInfo(tokenizer=tokenizer, path=str(path), sha256=hashlib.sha256(content).hexdigest(),
                         vocab_size=vocab_size, token_width=token_width_for(vocab_size), eod_token=eod_token,
                         eod_id=eod_id, ignored_settings=ignored_settings, pad_id=_pad_id(ignored_settings),
                         fast_engine_refusal=facts[1])


def check_eod_in_file(path: str | os.PathLike, eod_token: str) -> None:
    """Check, without loading the tokenizer, that ``eod_token`` is one token of ``path``: an added
    token or an entry of the model's vocabulary (what ``token_to_id`` finds). For the workflow's
    planning, which must not pay a tokenizer load per parse; a file of another shape passes here
    and is judged by :func:`load_tokenizer` in the job. Cost: parsing the JSON (~10 ms for GPT-2).

    Raises:
        TokenmillError: a directory, a missing or unparsable file, or a token that is not in it.
    """
    if os.path.isdir(path):
        raise TokenmillError(f"{path}: is a directory; give the tokenizer.json file in it")
    try:
        with open(path, "rb") as handle:
            config = orjson.loads(handle.read())
    except OSError as exc:
        raise TokenmillError(f"{path}: cannot read ({exc.strerror})") from None
    except orjson.JSONDecodeError as exc:
        raise TokenmillError(f"{path}: not a Hugging Face tokenizer.json ({exc})") from None
    added = {token.get("content") for token in config.get("added_tokens") or [] if isinstance(token, dict)}
    vocab = (config.get("model") or {}).get("vocab")
    if isinstance(vocab, list):  # Unigram: [[piece, score], ...]
        vocab = {entry[0] for entry in vocab if isinstance(entry, list) and entry}
    if isinstance(vocab, (dict, set)) and eod_token not in added and eod_token not in vocab:
        raise TokenmillError(f"{path}: EOD token {eod_token!r} is not a single token of this tokenizer")


def _is_rust_panic(exc: BaseException) -> bool:
    """Whether ``exc`` is a Rust panic surfacing in Python (pyo3's ``PanicException``).

    Each pyo3 extension (tokenizers, fastokens) defines its own ``PanicException`` class, derived
    from ``BaseException`` so that ``except Exception`` lets it through; none is importable, so
    it is told by its name.
    """
    kind = type(exc)
    return kind.__name__ == "PanicException" and kind.__module__ == "pyo3_runtime"


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def _hf_from_str(text: str) -> Tokenizer:
    """``Tokenizer.from_str(text)``, with what Rust prints to file descriptor 2 when it panics held back.

    Some files that parse as JSON make the Rust loader panic (a BPE ``continuing_subword_prefix``
    on a byte-level vocabulary: "slice index starts at 2 but ends at 1"). Rust's panic hook then
    prints "thread ... panicked at" and, with ``RUST_BACKTRACE`` set, a backtrace, straight to fd 2,
    before Python sees the exception: the caller's one-line error would come last, under 50 lines
    of Rust. So fd 2 points to a temporary file during the call (~0.1-1 s); what was written there
    is dropped after a panic and copied to the real stderr otherwise (other threads' output in that
    window comes late, never lost).

    Raises:
        Exception: the loader's own error on a malformed file.
        BaseException: pyo3's ``PanicException`` (see :func:`_is_rust_panic`).
    """
    sys.stderr.flush()
    try:
        saved_stderr = os.dup(2)
    except OSError:  # no fd 2 to protect
        return Tokenizer.from_str(text)
    panicked = False
    with tempfile.TemporaryFile() as held:
        os.dup2(held.fileno(), 2)
        try:
            return Tokenizer.from_str(text)
        except BaseException as exc:
            panicked = _is_rust_panic(exc)
            raise
        finally:
            os.dup2(saved_stderr, 2)
            os.close(saved_stderr)
            if not panicked and os.fstat(held.fileno()).st_size:
                held.seek(0)
                with open(2, "wb", closefd=False) as stderr:
                    stderr.write(held.read())


def _vocab_size_in(config: dict) -> int | None:
    """Highest id + 1 over the model's vocabulary and the added tokens, read from the parsed file
    (``tokenizer.get_vocab`` builds a dict of every token: 0.06–0.24 s), or None if the file holds
    no vocabulary."""
    vocab = (config.get("model") or {}).get("vocab")
    if isinstance(vocab, dict) and all(isinstance(token_id, int) for token_id in vocab.values()):
        model_ids = max(vocab.values(), default=-1) + 1
    elif isinstance(vocab, list):  # Unigram: [piece, score] pairs, ids are positions
        model_ids = len(vocab)
    else:
        return None
    added_ids = [token["id"] for token in config.get("added_tokens") or [] if isinstance(token.get("id"), int)]
    return max([model_ids, *(token_id + 1 for token_id in added_ids)])


def _pad_id(ignored_settings: dict) -> int | None:
    """The id the file's padding settings would fill encodings with, or None without padding."""
    return int(ignored_settings["padding"]["pad_id"]) if "padding" in ignored_settings else None


# ---------------------------------------------------------------------------------------------
# Engines

# What the fast engine was proven equal to HF on (GPT-2 and Tekken, whole benchmark corpus and the
# adversarial test file); anything else takes HF under `auto`.
_FAST_PRE_TOKENIZERS = {"ByteLevel", "Split"}
_FAST_POST_PROCESSORS = {None, "ByteLevel"}


def fast_engine_refusal(config: dict) -> str | None:
    """Why the fast engine is not proven for this parsed ``tokenizer.json``, or None if it is.

    Checks the model (BPE without dropout or byte fallback), the normalizer (none), the
    pre-tokenizers (ByteLevel/Split, alone or in a Sequence), the post-processor (none or
    ByteLevel: no template that adds ids) and the added tokens (no lstrip/rstrip/single-word rules).
    """
    model = config.get("model") or {}
    if model.get("type") != "BPE":
        return f"model {model.get('type')!r} is not BPE"
    if model.get("dropout") not in (None, 0, 0.0):
        return "BPE dropout is set"
    if model.get("byte_fallback"):
        return "BPE byte fallback is set"
    if config.get("normalizer") is not None:
        return f"normalizer {config['normalizer'].get('type')!r}"
    pre_tokenizer = config.get("pre_tokenizer") or {}
    steps = pre_tokenizer.get("pretokenizers", []) if pre_tokenizer.get("type") == "Sequence" else [pre_tokenizer]
    unproven = sorted({step.get("type") for step in steps} - _FAST_PRE_TOKENIZERS)
    if not steps or unproven:
        return f"pre-tokenizer {', '.join(map(str, unproven)) or 'none'}"
    post_processor = (config.get("post_processor") or {}).get("type")
    if post_processor not in _FAST_POST_PROCESSORS:
        return f"post-processor {post_processor!r}"
    for token in config.get("added_tokens", []):
        if token.get("lstrip") or token.get("rstrip") or token.get("single_word"):
            return f"added token {token.get('content')!r} has lstrip/rstrip/single_word rules"
    return None


class EngineMismatch(TokenmillError):
    """The fast engine gave other ids than HF for a text (the message names file, line and token)."""


class FastEngineUnavailable(TokenmillError):
    """fastokens cannot load a ``tokenizer.json`` that Hugging Face loads.

    Under ``auto`` its user takes HF instead (:meth:`Encoder.fall_back_to_hf`); under ``fastokens``
    the message stops the job.

    Args:
        path: the tokenizer file.
        cause: fastokens' error, one line.
    """

    def __init__(self, path: str, cause: str):
        super().__init__(f"{path}: fastokens cannot load it ({cause}); use engine hf")
        self.path, self.cause = path, cause

    def __reduce__(self):  # pickled across worker processes with its fields
        return FastEngineUnavailable, (self.path, self.cause)


class Encoder:
    """A tokenizer engine: batches of texts in, one flat id array and per-text lengths out.

    Args:
        info: the loaded tokenizer (its HF ``Tokenizer`` is the reference).
        engine: ``auto``, ``hf`` or ``fastokens``.
        split_special_tokens: special-token strings in texts stay text (for conversations, whose
            data must not smuggle in control tokens); sets ``encode_special_tokens`` on
            ``info.tokenizer``, which HF then applies everywhere.
        fall_back: under ``auto``, when fastokens cannot load the tokenizer, take HF in place, on
            the batch that found it out (for callers that encode in this process). Without it,
            :class:`FastEngineUnavailable` is raised for the caller to fall back (pack, whose
            worker processes each hold an encoder, re-encodes the input with HF).

    Attributes:
        name: the engine in use, ``hf`` or ``fastokens``.
        reason: one line saying why (logged, and kept in the sidecar).

    The choice is made from the ``tokenizer.json`` alone; fastokens itself is loaded in the
    background (:func:`preload_fast_engine`) and waited for on the first batch, which is when a
    file it cannot load is found out.

    Raises:
        TokenmillError: an unknown engine.
    """

    def __init__(self, info: TokenizerInfo, engine: str = "auto", split_special_tokens: bool = False,
                 fall_back: bool = False):
        if engine not in ENGINES:
            raise TokenmillError(f"engine must be one of {ENGINES}, not {engine!r}")
        self.info = info
        self.engine_asked = engine
        self.fall_back = fall_back
        self._fast = None
        self.split_special_tokens = split_special_tokens
        if split_special_tokens:
            info.tokenizer.encode_special_tokens = True
        if engine == "hf":
            self.name, self.reason = "hf", "engine hf asked for"
            return
        refusal = info.fast_engine_refusal
        if refusal and engine == "auto":
            self.name, self.reason = "hf", f"engine auto: HF, as fastokens is not proven for this tokenizer ({refusal})"
            return
        self.name = "fastokens"
        self.reason = f"engine {engine}: fastokens" + (f" (not proven: {refusal})" if refusal else "")

    def _fast_tokenizer(self):
        """fastokens' tokenizer (see :func:`preload_fast_engine`), with truncation and padding off.

        Raises:
            FastEngineUnavailable: fastokens cannot load this ``tokenizer.json``.
            TokenmillError: the file no longer holds the bytes that ``info`` was loaded from.
        """
        if self._fast is None:
            if self.info.sha256 not in _fast_loads and preload_fast_engine(self.info.path) != self.info.sha256:
                raise TokenmillError(f"{self.info.path}: changed since it was loaded (sha256 {self.info.sha256[:16]}…); "
                                     f"load the tokenizer again")
            loader = _fast_loads[self.info.sha256]
            loader.join()
            if loader.error is not None:  # fastokens raises plain exceptions on what it does not support
                raise FastEngineUnavailable(self.info.path, _first_line(loader.error))
            self._fast = loader.tokenizer
            self._fast.no_truncation()  # as load_tokenizer does for HF
            self._fast.no_padding()
        return self._fast

    def fall_back_to_hf(self, unavailable: FastEngineUnavailable) -> None:
        """Take HF from now on, as ``auto`` does where fastokens cannot load the tokenizer; the
        reason (logged, kept in sidecars) carries fastokens' error.

        Raises:
            FastEngineUnavailable: ``unavailable`` itself, where fastokens was asked for by name.
        """
        if self.engine_asked != "auto":
            raise unavailable
        self.name, self._fast = "hf", None
        self.reason = f"engine auto: HF, as fastokens cannot load this tokenizer ({unavailable.cause})"

    def versions(self) -> dict[str, str]:
        """The package versions whose ids this engine produces (recorded in sidecars)."""
        versions = {"tokenizers": tokenizers.__version__}
        if self.name == "fastokens":
            import importlib.metadata  # 25 ms of imports: only where a sidecar needs it

            versions["fastokens"] = importlib.metadata.version("fastokens")
        return versions

    def encode_batch(self, texts: list[str], add_special_tokens: bool) -> tuple[np.ndarray, np.ndarray]:
        """``(ids, lengths)``: every text's ids back to back (uint32 or int64) and ids per text.

        Raises:
            FastEngineUnavailable: fastokens cannot load the tokenizer, and this encoder does not
                fall back by itself (see the class).
        """
        fast = None
        if self.name == "fastokens":
            try:
                fast = self._fast_tokenizer()
            except FastEngineUnavailable as unavailable:
                if not self.fall_back:
                    raise
                self.fall_back_to_hf(unavailable)
        if fast is None:
            return encode_batch_hf(self.info.tokenizer, texts, add_special_tokens)
        ids, offsets = fast.encode_batch_flat(texts, add_special_tokens=add_special_tokens,
                                              split_special_tokens=self.split_special_tokens)
        return np.frombuffer(ids, dtype="<u4"), np.diff(np.frombuffer(offsets, dtype="<u8")).astype(np.int64)

    def encode_proven(self, texts: list[str], add_special_tokens: bool, sampler: "ProofSampler",
                      locations: list[str]) -> tuple[list[np.ndarray], int]:
        """Each text's ids (int64), with the fast engine's proof sample re-encoded by HF and compared.

        Args:
            texts: what to encode.
            add_special_tokens: let the post-processor add its ids.
            sampler: chooses the texts (and excerpts) to prove; ignored by the HF engine.
            locations: ``file:line`` of each text, for the error.

        Returns:
            (ids per text, how many texts were checked against HF).

        Raises:
            EngineMismatch: ``file:line: fast encoder disagrees with the tokenizer at token K``.
        """
        tokens, lengths = self.encode_batch(texts, add_special_tokens)
        ids = [chunk.astype(np.int64) for chunk in split_flat(tokens, lengths)]
        if self.name == "hf":
            return ids, 0
        proof = ProofSample.of(texts, sampler, self.info.tokenizer, add_special_tokens)
        return ids, proof.check(self, tokens, lengths, locations, add_special_tokens)


@dataclass
class ProofSample:
    """What of a batch the fast engine must match, with Hugging Face's ids for it.

    Built from the texts alone (:meth:`of`), so it can be computed ahead of the fast encoder.

    Args:
        documents: indices of the texts proven whole.
        reference: HF's ``(ids, lengths)`` of those texts.
        excerpts: ``(text index, line)`` pairs proven on their own.
        excerpt_reference: HF's ``(ids, lengths)`` of those lines, or None without excerpts.
    """

    documents: list[int]
    reference: tuple[np.ndarray, np.ndarray]
    excerpts: list[tuple[int, str]]
    excerpt_reference: tuple[np.ndarray, np.ndarray] | None

    @classmethod
    def of(cls, texts: list[str], sampler: "ProofSampler", hf: Tokenizer, add_special_tokens: bool) -> "ProofSample":
        """The sampler's choice of ``texts``, encoded with ``hf``."""
        documents, excerpts = sampler.choose(texts)
        reference = encode_batch_hf(hf, [texts[i] for i in documents], add_special_tokens)
        excerpt_reference = (encode_batch_hf(hf, [line for _, line in excerpts], add_special_tokens)
                             if excerpts else None)
        return cls(documents, reference, excerpts, excerpt_reference)

    def check(self, encoder: "Encoder", tokens: np.ndarray, lengths: np.ndarray, locations: list[str],
              add_special_tokens: bool) -> int:
        """Compare the fast engine's flat ids of the whole batch (and its encoding of the excerpts)
        with the reference; returns how many texts were checked.

        Raises:
            EngineMismatch: naming ``locations[i]`` and the first differing token.
        """
        compare_ids([locations[i] for i in self.documents], split_flat(tokens, lengths, self.documents),
                    split_flat(*self.reference), "")
        if self.excerpts:
            fast = encoder.encode_batch([line for _, line in self.excerpts], add_special_tokens)
            compare_ids([locations[i] for i, _ in self.excerpts], split_flat(*fast),
                        split_flat(*self.excerpt_reference), " of a line with rare code points")
        return len(self.documents) + len({i for i, _ in self.excerpts})


class _FastLoad(threading.Thread):
    """Loads fastokens' tokenizer from a ``tokenizer.json``'s bytes in the background (its Rust
    loader releases the GIL).

    Not a daemon: a process that exits early (a bad line) waits for the load to end, since killing
    the thread inside Rust aborts the interpreter ("FATAL: exception not rethrown").
    """

    def __init__(self, path: str, content: bytes):
        super().__init__(daemon=False, name=f"fastokens-load-{path}")
        self.content, self.tokenizer, self.error = content, None, None

    def run(self) -> None:
        try:
            import fastokens

            self.tokenizer = fastokens.Tokenizer.from_json_str(self.content.decode("utf-8"))
        except Exception as exc:  # reported by Encoder when the tokenizer is needed
            self.error = exc
        except BaseException as exc:  # a Rust panic: a refusal like any other, not a thread traceback
            if not _is_rust_panic(exc):
                raise
            self.error = exc
        finally:
            self.content = None


# Loads by the sha256 of the bytes loaded, so that a file replaced in place is never served from an
# earlier load of its path; and the latest load started for each path.
_fast_loads: dict[str, _FastLoad] = {}
_latest_fast_load: dict[str, str] = {}


def preload_fast_engine(path: str | os.PathLike) -> str | None:
    """Start loading fastokens' tokenizer from ``path`` in the background, once per process and content.

    Its load is the slowest step of a job's start (0.3 s for GPT-2, 1.1 s for Tekken), so callers
    start it before loading the HF tokenizer, hashing inputs and reading indices, which overlap it.

    Returns:
        The sha256 of the bytes being loaded, or None where the file cannot be read (left for
        :func:`load_tokenizer` to report).
    """
    try:
        with open(path, "rb") as handle:
            content = handle.read()
    except OSError:
        return None
    digest = hashlib.sha256(content).hexdigest()
    _latest_fast_load[str(path)] = digest
    if digest not in _fast_loads:
        _fast_loads[digest] = loader = _FastLoad(str(path), content)
        loader.start()
    return digest


def fast_engine_loading(path: str | os.PathLike) -> bool:
    """Whether fastokens' tokenizer for ``path`` is still loading in the background."""
    loader = _fast_loads.get(_latest_fast_load.get(str(path), ""))
    return loader is not None and loader.is_alive()


def encode_batch_hf(tokenizer: Tokenizer, texts: list[str], add_special_tokens: bool) -> tuple[np.ndarray, np.ndarray]:
    """:meth:`Encoder.encode_batch` with the HF tokenizer itself (no offsets computed)."""
    encodings = tokenizer.encode_batch_fast(texts, add_special_tokens=add_special_tokens)
    ids_per_text = [encoding.ids for encoding in encodings]
    lengths = np.fromiter(map(len, ids_per_text), dtype=np.int64, count=len(ids_per_text))
    ids = np.fromiter(itertools.chain.from_iterable(ids_per_text), dtype=np.int64, count=int(lengths.sum()))
    return ids, lengths


# ---------------------------------------------------------------------------------------------
# Proof: which documents of a batch are re-encoded with HF

# Code points where encoders most often disagree: outside the BMP (emoji, rare CJK: UTF-16
# surrogates in some implementations) and combining marks (Unicode table versions differ).
_RISKY_CODE_POINTS = re.compile("[\U00010000-\U0010FFFF\u0300-\u036F\u1AB0-\u1AFF\u1DC0-\u1DFF"
                                "\u20D0-\u20FF\uFE20-\uFE2F]")


_ALWAYS_CHECKED_CHARACTERS = 1 << 20


class ProofSampler:
    """Chooses, deterministically, what of a batch the fast engine must prove equal to HF.

    Whole documents: every text containing an added-token string (special tokens in text are where
    engines differ most), every text of a million characters or more (where regex backtracking
    limits bite), and a ``fraction`` of the rest chosen by a hash of the text (CRC-32 of its UTF-8).
    Excerpts: of every other text with a code point outside the BMP or a combining mark (Unicode
    table versions differ there), each of its lines holding one, encoded on their own by both
    engines — the same test of those code points in context at a fraction of the cost (such texts
    are 2.5 % of the benchmark corpus's bytes, their lines 0.1 %). The choice depends on each text
    alone, never on batches or worker counts, so the sidecar's counts are reproducible.
    ``fraction=1`` checks every document whole.

    Args:
        added_tokens: the tokenizer's added-token strings.
        fraction: the share of other texts to check, in ``[0, 1]``.

    Raises:
        TokenmillError: a fraction outside ``[0, 1]``.
    """

    def __init__(self, added_tokens: list[str], fraction: float):
        if not 0 <= fraction <= 1:
            raise TokenmillError(f"check fraction must lie in [0, 1], not {fraction}")
        self.fraction = fraction
        self._hash_limit = int(fraction * (1 << 32))
        self._added_patterns = _added_token_patterns(added_tokens)

    def choose(self, texts: list[str]) -> tuple[list[int], list[tuple[int, str]]]:
        """``(documents, excerpts)``: indices of the texts to check whole, ascending, and
        ``(text index, line)`` pairs of the excerpts to check."""
        if self.fraction >= 1:
            return list(range(len(texts))), []
        documents, excerpts = [], []
        for i, text in enumerate(texts):
            if len(text) >= _ALWAYS_CHECKED_CHARACTERS or self._holds_added_token(text) \
                    or zlib.crc32(text.encode("utf-8", "surrogatepass")) < self._hash_limit:
                documents.append(i)
            elif not text.isascii() and _RISKY_CODE_POINTS.search(text):
                excerpts += [(i, line) for line in text.split("\n") if _RISKY_CODE_POINTS.search(line)]
        return documents, excerpts

    def _holds_added_token(self, text: str) -> bool:
        return any(first in text and pattern.search(text) for first, pattern in self._added_patterns)


# Above this many distinct first characters, one `in` pass per character would cost more than the
# trie regex's own scan.
_MOST_FIRST_CHARACTERS = 8


def _added_token_patterns(added_tokens: list[str]) -> list[tuple[str, re.Pattern]]:
    """``(first character, regex)`` pairs that together find any of ``added_tokens`` in a text.

    Python's regex engine tests a pattern opening with an alternation at every position (0.74 s per
    100 MB with Tekken's 1,000 tokens), but skips ahead to a pattern's literal first character on
    its own. So the tokens are grouped by first character, each group a literal followed by its
    suffixes' trie, behind an ``in`` test (a memchr) for that character: 0.15 s for Tekken's two
    groups. With many first characters, one trie regex (first character ``""``: always searched).
    """
    tokens = [token for token in added_tokens if token]
    if not tokens:
        return []
    groups: dict[str, list[str]] = {}
    for token in tokens:
        groups.setdefault(token[0], []).append(token[1:])
    if len(groups) > _MOST_FIRST_CHARACTERS:
        return [("", re.compile(_alternation(tokens)))]
    return [(first, re.compile(re.escape(first) + _alternation(suffixes))) for first, suffixes in sorted(groups.items())]


def _alternation(words: list[str]) -> str:
    """A regex matching any of ``words``, as a trie (one branch per distinct next character), so a
    thousand special tokens cost one character test per position instead of a thousand."""
    trie: dict = {}
    for word in words:
        node = trie
        for character in word:
            node = node.setdefault(character, {})
        node[""] = {}

    def pattern(node: dict) -> str:
        branches = [re.escape(character) + pattern(child) for character, child in sorted(node.items()) if character]
        if not branches:
            return ""
        body = branches[0] if len(branches) == 1 else f"(?:{'|'.join(branches)})"
        return f"(?:{body})?" if "" in node else body

    return pattern(trie)


def split_flat(tokens: np.ndarray, lengths: np.ndarray, chosen: list[int] | None = None) -> list[np.ndarray]:
    """The id arrays of texts ``chosen`` (default: all) from a flat batch."""
    starts = np.cumsum(lengths) - lengths
    return [tokens[starts[i]:starts[i] + lengths[i]] for i in (range(len(lengths)) if chosen is None else chosen)]


def compare_ids(locations: list[str], fast: list[np.ndarray], reference: list[np.ndarray], what: str) -> None:
    """Raise at the first pair of id arrays that differ.

    Raises:
        EngineMismatch: ``LOCATION: fast encoder disagrees with the tokenizer at token K`` + ``what``.
    """
    if [len(ids) for ids in fast] == [len(ids) for ids in reference] and \
            (not fast or np.array_equal(np.concatenate(fast), np.concatenate(reference))):
        return  # all equal, found in one pass; else look for the first difference text by text
    for location, ids, expected in zip(locations, fast, reference):
        position = first_difference(ids, expected)
        if position is not None:
            got = int(ids[position]) if position < len(ids) else "end"
            wanted = int(expected[position]) if position < len(expected) else "end"
            raise EngineMismatch(f"{location}: fast encoder disagrees with the tokenizer at token "
                                 f"{position}{what} (fastokens {got}, Hugging Face {wanted})")


def first_difference(ids: np.ndarray, reference: np.ndarray) -> int | None:
    """The first token position where ``ids`` and ``reference`` differ (length included), or None."""
    common = min(len(ids), len(reference))
    differing = np.flatnonzero(ids[:common].astype(np.int64) != reference[:common].astype(np.int64))
    if len(differing):
        return int(differing[0])
    return None if len(ids) == len(reference) else common
