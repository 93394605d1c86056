"""The tokenizer engine: batches of texts in, one flat id array and per-text lengths out.

* ``hf``: the reference library itself: the ``tokenizers`` package (``encode_batch_fast``, ~1.2-2.5 MB/s
  per core) for a ``tokenizer.json``, ``sentencepiece`` or ``tiktoken`` for Megatron's types of them
  (:mod:`tokenmill.tokenization.families`).
* ``fastokens``: fastokens 0.3 (Apache-2.0, no dependencies), which reimplements the same
  ``tokenizer.json`` pipeline in Rust and returns flat ``uint32`` buffers, with ids equal to HF's on
  every one of the 21,639 documents of the 100 MB benchmark corpus (``bench/encoder_compare.py``).
* ``auto`` (the default): :func:`choose_engine`, the one choice that ``pack``, ``sft`` and the
  datasets make: HF for an input under :data:`FAST_ENGINE_PAYS_BYTES` (it finishes before fastokens
  would have loaded), HF where :func:`tokenmill.tokenization.tokenizer.fast_engine_refusal` finds something in
  the ``tokenizer.json`` outside what fastokens was proven on, else fastokens; the reason is
  logged and kept in sidecars. A file that passes that check but that fastokens still cannot load
  (e.g. a vocabulary whose ids skip a range) also gets HF, with fastokens' error as the reason
  (:class:`FastEngineUnavailable`, :meth:`Encoder.fall_back_to_hf`).

fastokens loads in a background thread (:func:`preload_fast_engine`: 0.3-0.7 s for GPT-2, 1.1-2.2 s
for Tekken), which callers start before their other start-up work. The fast engine is never
trusted blindly: :mod:`tokenmill.tokenization.proof` re-encodes a sample of every batch with HF.

Cost (bench/RESULTS.md, "Choosing the fast encoder"): per thread, HF 2.1 MB/s (GPT-2) and 2.3 (Tekken),
fastokens 61.9 and 161.2: 29x and 70x. (The proof's budget is sized by the same ratio per byte as a
pack measures it, 20 on emoji-dense text to 55 on GPT-2 prose: :mod:`tokenmill.tokenization.proof`.)
"""

from __future__ import annotations

import hashlib
import os
import threading

import numpy as np
import tokenizers

from tokenmill.errors import TokenmillError
from tokenmill.tokenization.families import TokenizerSpec, load_family
from tokenmill.tokenization.tokenizer import (TokenizerInfo, exception_first_line, is_plain_file, is_rust_panic,
                                              spec_of)

__all__ = ["ENGINES", "FAST_ENGINE_PAYS_BYTES", "choose_engine", "Encoder", "EncoderPickling", "FastEngineUnavailable",
           "preload_fast_engine", "fast_engine_loading", "split_flat"]

ENGINES = ("auto", "hf", "fastokens")
# Loading fastokens takes 0.3-0.7 s (GPT-2) to 1.1-2.2 s (Tekken), about what Hugging Face needs for
# 1-3 MB of text on two threads: below this, auto takes Hugging Face (the reference itself, no proof).
FAST_ENGINE_PAYS_BYTES = 1 << 20


def choose_engine(asked: str, info: TokenizerInfo | None = None, input_bytes: float | None = None,
                  estimate: str = "") -> tuple[str, str]:
    """The engine a job uses, ``hf`` or ``fastokens``, and why (one line, logged and kept in sidecars).

    ``hf`` asked for is HF. ``auto`` is HF for an input under :data:`FAST_ENGINE_PAYS_BYTES` (the
    same ids, and HF finishes before fastokens would have loaded) and for a tokenizer file that
    :func:`~tokenmill.tokenization.tokenizer.fast_engine_refusal` refuses, else fastokens. ``fastokens`` asked
    for is fastokens, even where refused (the reason says so).

    Args:
        asked: ``auto``, ``hf`` or ``fastokens``.
        info: the loaded tokenizer; None before it is loaded, where ``fastokens`` then means
            "fastokens unless the tokenizer file is refused" (pack decides this early whether to
            preload fastokens).
        input_bytes: the job's input size; None where unknown (the datasets), which never takes
            HF for size.
        estimate: how the size was guessed, for the reason (compressed inputs).

    Raises:
        TokenmillError: an unknown engine.
    """
    if asked not in ENGINES:
        raise TokenmillError(f"engine must be one of {ENGINES}, not {asked!r}")
    if asked == "hf":
        return "hf", "engine hf asked for"
    if asked == "auto" and input_bytes is not None and input_bytes < FAST_ENGINE_PAYS_BYTES:
        return "hf", (f"engine auto: HF, as this input (~{input_bytes / 1e6:.2f} MB of text{estimate}) takes it "
                      f"less time than loading fastokens would")
    refusal = info.fast_engine_refusal if info is not None else None
    if refusal and asked == "auto":
        return "hf", f"engine auto: HF, as fastokens is not proven for this tokenizer ({refusal})"
    return "fastokens", f"engine {asked}: fastokens" + (f" (not proven: {refusal})" if refusal else "")


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
            data must not smuggle in control tokens): the encoder's ``info`` is then
            :meth:`~tokenmill.tokenization.tokenizer.TokenizerInfo.reading_specials_as_text`'s copy.
        fall_back: under ``auto``, when fastokens cannot load the tokenizer, take HF in place, on
            the batch that found it out (for callers that encode in this process). Without it,
            :class:`FastEngineUnavailable` is raised for the caller to fall back (pack re-encodes
            the input with HF).
        input_bytes, estimate: the job's input size and how it was guessed, for ``auto``'s choice
            (see :func:`choose_engine`); None where the encoder serves an unknown amount of text.

    Attributes:
        name: the engine in use, ``hf`` or ``fastokens``.
        reason: one line saying why (logged, and kept in the sidecar).

    The choice is :func:`choose_engine`'s, from the ``tokenizer.json`` and the input's size;
    fastokens itself is loaded in the background (:func:`preload_fast_engine`) and waited for on
    the first batch, which is when a file it cannot load is found out.

    Raises:
        TokenmillError: an unknown engine.
    """

    def __init__(self, info: TokenizerInfo, engine: str = "auto", split_special_tokens: bool = False,
                 fall_back: bool = False, input_bytes: float | None = None, estimate: str = ""):
        self.name, self.reason = choose_engine(engine, info, input_bytes, estimate)
        self.info = info
        self.engine_asked = engine
        self.fall_back = fall_back
        self._fast = None
        self.split_special_tokens = split_special_tokens
        if split_special_tokens:
            self.info = info.reading_specials_as_text()

    def _fast_tokenizer(self):
        """fastokens' tokenizer (see :func:`preload_fast_engine`), with truncation and padding off.

        Raises:
            FastEngineUnavailable: fastokens cannot load this ``tokenizer.json``.
            TokenmillError: the file no longer holds the bytes that ``info`` was loaded from.
        """
        if self._fast is None:
            if (self.info.engine_sha256 not in _fast_loads
                    and preload_fast_engine(self.info.spec or self.info.path) != self.info.engine_sha256):
                raise TokenmillError(f"{self.info.path}: changed since it was loaded "
                                     f"(sha256 {self.info.sha256[:16]}…); "
                                     f"load the tokenizer again")
            loader = _fast_loads[self.info.engine_sha256]
            loader.join()
            if loader.error is not None:  # fastokens raises plain exceptions on what it does not support
                raise FastEngineUnavailable(self.info.path, exception_first_line(loader.error))
            loader.tokenizer.no_truncation()  # as load_tokenizer does for HF
            loader.tokenizer.no_padding()
            self._refuse_literal_specials(loader.tokenizer)
            self._fast = loader.tokenizer
        return self._fast

    def _refuse_literal_specials(self, fast) -> None:
        """Refuse fastokens where it reads a spelling the type's library takes as text (SentencePiece's
        ``</s>``, ``<0x41>``) as the special piece: its ids would differ in every such document, and the proof
        samples documents. One probe of each spelling between letters, once per encoder (a few hundred ids).

        Raises:
            FastEngineUnavailable: fastokens and the reference disagree on one of them.
        """
        literal = self.info.family.literal_specials if self.info.family else ()
        if not literal:
            return
        probes = [f"a{spelling}b" for spelling in literal]
        ids, offsets = fast.encode_batch_flat(probes, add_special_tokens=False, split_special_tokens=False)
        fast_lengths = np.diff(np.frombuffer(offsets, dtype="<u8")).astype(np.int64)
        reference, lengths = self.info.encode_reference(probes, False)
        fast_ids = np.split(np.frombuffer(ids, dtype="<u4").astype(np.int64), np.cumsum(fast_lengths)[:-1])
        wanted = np.split(np.asarray(reference, np.int64), np.cumsum(lengths)[:-1])
        differing = [spelling for spelling, got, want in zip(literal, fast_ids, wanted)
                     if not np.array_equal(got, want)]
        if differing:
            raise FastEngineUnavailable(self.info.path, f"it reads the text {differing[0]!r} as that piece, which "
                                                        f"{self.info.reference_library} encodes as text")

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
        reference = self.info.family.reference if self.info.family else None
        if reference is not None:
            versions[reference.library] = reference.version()
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
            return self.info.encode_reference(texts, add_special_tokens)
        ids, offsets = fast.encode_batch_flat(texts, add_special_tokens=add_special_tokens,
                                              split_special_tokens=self.split_special_tokens)
        return np.frombuffer(ids, dtype="<u4"), np.diff(np.frombuffer(offsets, dtype="<u8")).astype(np.int64)


class EncoderPickling:
    """What a dataset holding an :class:`Encoder` (``encoder``, over ``info``) and a memory map of its
    file (``_mapped``) needs to be sent to DataLoader worker processes: fastokens' tokenizer and a
    map do not pickle, so each worker maps the file again and loads its own engine, the same one.
    """

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_mapped"] = None
        state["encoder"] = (self.encoder.engine_asked, self.encoder.split_special_tokens)
        return state

    def __setstate__(self, state: dict) -> None:
        engine, split_special_tokens = state.pop("encoder")
        self.__dict__.update(state)
        self.encoder = Encoder(self.info, engine, split_special_tokens=split_special_tokens, fall_back=True)


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
            if not is_rust_panic(exc):
                raise
            self.error = exc
        finally:
            self.content = None


# Loads by the sha256 of the bytes loaded, so that a file replaced in place is never served from an
# earlier load of its path; and the latest load started for each path.
_fast_loads: dict[str, _FastLoad] = {}
_latest_fast_load: dict[str, str] = {}


def preload_fast_engine(source: str | os.PathLike | TokenizerSpec) -> str | None:
    """Start loading fastokens' tokenizer from ``source`` in the background, once per process and content.

    ``source`` is a ``tokenizer.json`` or a Megatron tokenizer type, whose conversion
    (:func:`tokenmill.tokenization.families.load_family`, memoised) is what fastokens loads.

    Its load is the slowest step of a job's start (0.3 s for GPT-2, 1.1 s for Tekken), so callers
    start it before loading the HF tokenizer, hashing inputs and reading indices, which overlap it.

    Returns:
        The sha256 of the bytes being loaded, or None where the file cannot be read (left for
        :func:`load_tokenizer` to report).
    """
    spec = spec_of(source)
    path = spec.path
    if is_plain_file(spec):
        try:
            with open(path, "rb") as handle:
                content = handle.read()
        except OSError:
            return None
        digest = hashlib.sha256(content).hexdigest()
    else:
        try:
            family = load_family(spec)
        except TokenmillError:  # left for load_tokenizer to report
            return None
        content, digest = family.hf_json.encode("utf-8"), family.hf_json_sha256
    _latest_fast_load[str(path)] = digest
    if digest not in _fast_loads:
        _fast_loads[digest] = loader = _FastLoad(str(path), content)
        loader.start()
    return digest


def fast_engine_loading(path: str | os.PathLike) -> bool:
    """Whether fastokens' tokenizer for ``path`` is still loading in the background."""
    loader = _fast_loads.get(_latest_fast_load.get(str(path), ""))
    return loader is not None and loader.is_alive()


def split_flat(tokens: np.ndarray, lengths: np.ndarray, chosen: list[int] | None = None) -> list[np.ndarray]:
    """The id arrays of texts ``chosen`` (default: all) from a flat batch."""
    starts = np.cumsum(lengths) - lengths
    return [tokens[starts[i]:starts[i] + lengths[i]] for i in (range(len(lengths)) if chosen is None else chosen)]
