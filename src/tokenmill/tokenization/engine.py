"""The tokenizer engine: batches of texts in, one flat id array and per-text lengths out.

* ``hf``: the reference library itself: the ``tokenizers`` package (``encode_batch_fast``, ~1.2-2.5 MB/s
  per core) for a ``tokenizer.json``, ``sentencepiece`` or ``tiktoken`` for Megatron's types of them
  (:mod:`tokenmill.tokenization.families`).
* ``fastokens``: fastokens 0.3 (Apache-2.0, no dependencies), which reimplements the same
  ``tokenizer.json`` pipeline in Rust and returns flat ``uint32`` buffers, with ids equal to HF's on
  every one of the 21,639 documents of the 100 MB benchmark corpus (``bench/encoder_compare.py``).
* ``gigatoken``: gigatoken 0.10 (MIT; the optional extra ``tokenmill[gigatoken]``), a byte-level BPE and
  SentencePiece-BPE encoder in Rust with per-thread word caches (bounded: :data:`GIGATOKEN_CACHE_BYTES`).
  It is fed the texts tokenmill's own JSONL reader produced (never a file: its reader stops silently at a
  bad line), as a ``list[str]`` or, where pack's C parser unescaped a batch into one UTF-8 buffer
  (:class:`~tokenmill.inputs.utf8_texts.Utf8Texts`), as an awkward array of strings over that buffer (no str
  per text, nothing encoded to UTF-8 again), one thread per caller (``parallel=False``) except where the caller
  encodes from one thread and asks for its pool (:class:`Encoder`'s ``parallel``), and its awkward
  array is read as one flat ``uint32`` buffer and its offsets, never per text. Its ``BytesSource``
  (one buffer and a separator) was measured no faster (91.0 against 91.4 MB/s of CPU on the 100 MB
  corpus, GPT-2) and cannot hold an empty text or a separator inside one, so it is not used. It
  applies no post-processor and cannot keep control-token strings as text, so it is never chosen for a
  tokenizer whose post-processor adds ids nor for conversations (:func:`gigatoken_refusal`).
* ``auto`` (the default): :func:`choose_engine`, the one choice that ``pack``, ``sft`` and the
  datasets make: HF for an input under :data:`FAST_ENGINE_PAYS_BYTES` (it finishes before a fast engine
  would have loaded), HF where :func:`tokenmill.tokenization.tokenizer.fast_engine_refusal` finds something in
  the ``tokenizer.json`` outside what the fast engines were proven on, else gigatoken where it is installed
  and neither :func:`gigatoken_refusal` nor its speed on the tokenizer's family (:func:`gigatoken_family`)
  is against it, else fastokens; the reason is logged and kept
  in sidecars. A file that passes those checks but that an engine still cannot load, or on whose probes
  (:meth:`Encoder._refuse_probe_differences`) it differs from the reference, gets the next engine
  (gigatoken, fastokens, HF) with that engine's error as the reason (:class:`FastEngineUnavailable`,
  :meth:`Encoder.fall_back`).

The fast engines load in a background thread (:func:`preload_fast_engine`: fastokens 0.3-0.7 s for GPT-2,
1.1-2.2 s for Tekken; gigatoken ~0.5 CPU-s for GPT-2, awkward's import included), which callers start before
their other start-up work. A fast engine is never trusted blindly: :mod:`tokenmill.tokenization.proof`
re-encodes a sample of every batch with HF.

Cost (bench/RESULTS.md, "Choosing the fast encoder"): per thread, HF 2.1 MB/s (GPT-2) and 2.3 (Tekken),
fastokens 61.9 and 161.2: 29x and 70x. gigatoken against fastokens, CPU per byte on one thread over the
100 MB corpus in 4 MiB batches, best of 3 on a busy machine ("A third engine: gigatoken"): 1.13x with GPT-2,
1.42x with Mistral v1's SentencePiece, 0.75x (medians 1.03x) with Tekken, where auto keeps fastokens. (The
proof's budget is sized by the same ratio per byte as a pack measures it, 20 on emoji-dense text to 55 on
GPT-2 prose: :mod:`tokenmill.tokenization.proof`.)
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import threading

import numpy as np
import tokenizers

from tokenmill.errors import TokenmillError
from tokenmill.inputs.utf8_texts import Utf8Texts
from tokenmill.tokenization.families import TokenizerSpec, load_family
from tokenmill.tokenization.tokenizer import (TokenizerInfo, exception_first_line, is_plain_file, is_rust_panic,
                                              spec_of)

__all__ = ["ENGINES", "FAST_ENGINES", "FAST_ENGINE_PAYS_BYTES", "GIGATOKEN_CACHE_BYTES", "choose_engine",
           "gigatoken_installed", "gigatoken_refusal", "gigatoken_family", "preferred_fast_engine", "Encoder",
           "EncoderPickling", "FastEngineUnavailable", "preload_fast_engine", "fast_engine_loading",
           "wait_for_fast_engine", "split_flat"]

ENGINES = ("auto", "hf", "fastokens", "gigatoken")
FAST_ENGINES = ("gigatoken", "fastokens")  # auto's order of preference, each proven per job
# Loading fastokens takes 0.3-0.7 s (GPT-2) to 1.1-2.2 s (Tekken), about what Hugging Face needs for
# 1-3 MB of text on two threads: below this, auto takes Hugging Face (the reference itself, no proof).
FAST_ENGINE_PAYS_BYTES = 1 << 20
# gigatoken's word caches per encoding thread (its default, 512 MiB, would be a whole job's memory on
# two threads); a full cache is wiped and filled again, which never changes an id.
GIGATOKEN_CACHE_BYTES = 64 << 20
_GIGATOKEN_EXTRA = "pip install 'tokenmill[gigatoken]'"


def gigatoken_installed() -> bool:
    """Whether the ``gigatoken`` package (``gigatoken`` or ``gigatoken-cachefix``) can be imported."""
    return importlib.util.find_spec("gigatoken") is not None


def gigatoken_family(info: TokenizerInfo) -> tuple[str, bool]:
    """The family of tokenizer gigatoken's speed was measured on that ``info`` belongs to, and whether gigatoken
    was measured faster than fastokens there (CPU per byte, one thread, 4 MiB batches of the 100 MB corpus,
    best of 3 on a busy machine; bench/RESULTS.md, "A third engine: gigatoken"): byte-level BPE split by GPT-2's
    own regex (GPT-2) 1.13x; SentencePiece BPE with byte fallback (Mistral v1) 1.42x; byte-level BPE split by
    a regex of its own (Tekken; tiktoken vocabularies are converted to that form) 0.75-1.06x, not faster."""
    pre_tokenizer = info.tokenizer.pre_tokenizer
    if info.tokenizer.model.__class__.__name__ == "BPE" and getattr(info.tokenizer.model, "byte_fallback", False):
        return "SentencePiece BPE with byte fallback", True
    if pre_tokenizer.__class__.__name__ == "ByteLevel" and getattr(pre_tokenizer, "use_regex", False):
        return "byte-level BPE split by GPT-2's regex", True
    return "tokenizer of another family (e.g. a Split regex, as Tekken's)", False


def preferred_fast_engine(asked: str, source: str | os.PathLike | TokenizerSpec | None = None) -> str:
    """The fast engine a job asking for ``asked`` loads in the background before its tokenizer is read (a guess
    that saves a load; the encoder loads the engine :func:`choose_engine` chooses in any case): gigatoken where
    asked for, or under ``auto`` where installed and the tokenizer looks like one of the families where it was
    measured faster (:func:`gigatoken_family`: a SentencePiece type, or a ``tokenizer.json`` whose pre-tokenizer
    opens with GPT-2's ``ByteLevel``); else fastokens."""
    if asked == "gigatoken":
        return "gigatoken"
    if asked != "auto" or not gigatoken_installed():
        return "fastokens"
    spec = spec_of(source) if source is not None else None
    if spec is None:
        return "gigatoken"
    if not is_plain_file(spec):
        return "gigatoken" if "SentencePiece" in spec.type or "Llama" in spec.type else "fastokens"
    try:
        with open(spec.path, "rb") as handle:
            head = handle.read()
    except OSError:
        return "fastokens"
    place = head.find(b'"pre_tokenizer"')
    return "gigatoken" if place >= 0 and b'"ByteLevel"' in head[place:place + 80] else "fastokens"


def gigatoken_refusal(info: TokenizerInfo | None, split_special_tokens: bool = False) -> str | None:
    """Why gigatoken cannot give the reference's ids for this tokenizer and use, or None.

    gigatoken encodes with no post-processor, and reads every added-token string in text as its token:
    a tokenizer whose post-processor adds ids (a BOS template) or an encoder that must keep control-token
    strings as text (conversations) is not for it. What it loads and how it reads control, unknown
    and byte spellings is probed when it loads (:meth:`Encoder._refuse_probe_differences`).
    """
    if split_special_tokens:
        return "it cannot keep control-token strings in text as text (split_special_tokens)"
    if info is not None and any(info.post_processor_ids):
        return f"it applies no post-processor, and this one adds the ids {info.post_processor_ids}"
    return None


def choose_engine(asked: str, info: TokenizerInfo | None = None, input_bytes: float | None = None,
                  estimate: str = "", split_special_tokens: bool = False) -> tuple[str, str]:
    """The engine a job uses, ``hf``, ``fastokens`` or ``gigatoken``, and why (one line, logged and kept in
    sidecars).

    ``hf`` asked for is HF. ``auto`` is HF for an input under :data:`FAST_ENGINE_PAYS_BYTES` (the
    same ids, and HF finishes before a fast engine would have loaded) and for a tokenizer file that
    :func:`~tokenmill.tokenization.tokenizer.fast_engine_refusal` refuses, else gigatoken where it is
    installed, :func:`gigatoken_refusal` finds nothing and the tokenizer is of a family where gigatoken was
    measured faster than fastokens (:func:`gigatoken_family`), else fastokens. ``fastokens`` asked
    for is fastokens, even where refused (the reason says so); so is ``gigatoken``, except where it is not
    installed or :func:`gigatoken_refusal` refuses it, which stop the job.

    Args:
        asked: ``auto``, ``hf``, ``fastokens`` or ``gigatoken``.
        info: the loaded tokenizer; None before it is loaded, where a fast engine then means
            "that engine unless the tokenizer file is refused" (pack decides this early whether to
            preload a fast engine).
        input_bytes: the job's input size; None where unknown (the datasets), which never takes
            HF for size.
        estimate: how the size was guessed, for the reason (compressed inputs).
        split_special_tokens: the encoder keeps control-token strings as text (see :class:`Encoder`).

    Raises:
        TokenmillError: an unknown engine; gigatoken asked for where it is not installed or refused.
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
    not_proven = f" (not proven: {refusal})" if refusal else ""
    if asked == "gigatoken":
        if not gigatoken_installed():
            raise TokenmillError(f"engine gigatoken: the gigatoken package is not installed ({_GIGATOKEN_EXTRA})")
        against = gigatoken_refusal(info, split_special_tokens)
        if against:
            raise TokenmillError(f"{info.path if info is not None else 'tokenizer'}: engine gigatoken is not proven "
                                 f"for this tokenizer: {against}; use engine fastokens or auto")
        return "gigatoken", "engine gigatoken" + not_proven
    if asked == "auto" and gigatoken_installed():
        against = gigatoken_refusal(info, split_special_tokens)
        if against is not None:
            return "fastokens", f"engine auto: fastokens, as gigatoken is not for this tokenizer ({against})"
        family, faster = gigatoken_family(info) if info is not None else ("", True)
        if faster:
            return "gigatoken", "engine auto: gigatoken"
        return "fastokens", f"engine auto: fastokens, as gigatoken was not measured faster on a {family}"
    return "fastokens", f"engine {asked}: fastokens" + not_proven


class FastEngineUnavailable(TokenmillError):
    """A fast engine cannot load a ``tokenizer.json`` that Hugging Face loads, or differs from the reference
    on its probes.

    Under ``auto`` its user takes the next engine instead (:meth:`Encoder.fall_back`); where the engine
    was asked for by name, the message stops the job.

    Args:
        path: the tokenizer file.
        cause: the engine's error, one line.
        engine: ``fastokens`` or ``gigatoken``.
    """

    def __init__(self, path: str, cause: str, engine: str = "fastokens"):
        advice = "use engine hf" if engine == "fastokens" else "use engine auto or fastokens"
        super().__init__(f"{path}: {engine} cannot load it ({cause}); {advice}")
        self.path, self.cause, self.engine = path, cause, engine

    def __reduce__(self):  # pickled across worker processes with its fields
        return FastEngineUnavailable, (self.path, self.cause, self.engine)


class Encoder:
    """A tokenizer engine: batches of texts in, one flat id array and per-text lengths out.

    Args:
        info: the loaded tokenizer (its HF ``Tokenizer`` is the reference).
        engine: ``auto``, ``hf``, ``fastokens`` or ``gigatoken``.
        split_special_tokens: special-token strings in texts stay text (for conversations, whose
            data must not smuggle in control tokens): the encoder's ``info`` is then
            :meth:`~tokenmill.tokenization.tokenizer.TokenizerInfo.reading_specials_as_text`'s copy.
        fall_back: under ``auto``, when a fast engine cannot load the tokenizer, take the next one in
            place, on the batch that found it out (for callers that encode in this process). Without it,
            :class:`FastEngineUnavailable` is raised for the caller to fall back (pack re-encodes
            the input with the next engine).
        input_bytes, estimate: the job's input size and how it was guessed, for ``auto``'s choice
            (see :func:`choose_engine`); None where the encoder serves an unknown amount of text.
        parallel: gigatoken splits each batch over its process-wide thread pool (``RAYON_NUM_THREADS``
            threads), for a caller that encodes from one thread (``preprocess-data``); without it gigatoken
            encodes on the calling thread, for callers that run their own encoding threads (pack). fastokens
            always uses its pool. The ids are the same either way.

    Attributes:
        name: the engine in use, ``hf``, ``fastokens`` or ``gigatoken``.
        reason: one line saying why (logged, and kept in the sidecar).

    The choice is :func:`choose_engine`'s, from the ``tokenizer.json`` and the input's size;
    the fast engine itself is loaded in the background (:func:`preload_fast_engine`) and waited for on
    the first batch, which is when a file it cannot load is found out.

    Raises:
        TokenmillError: an unknown engine; gigatoken asked for where it is not installed or not proven.
    """

    def __init__(self, info: TokenizerInfo, engine: str = "auto", split_special_tokens: bool = False,
                 fall_back: bool = False, input_bytes: float | None = None, estimate: str = "",
                 parallel: bool = False):
        self.name, self.reason = choose_engine(engine, info, input_bytes, estimate, split_special_tokens)
        self.parallel = parallel
        self.info = info
        self.engine_asked = engine
        self.fall_back_in_place = fall_back
        self._fast = None
        self.split_special_tokens = split_special_tokens
        if split_special_tokens:
            self.info = info.reading_specials_as_text()
        if self.name in FAST_ENGINES:  # (a no-op where the caller's preload already started it)
            preload_fast_engine(info.spec or info.path, self.name)

    def _fast_tokenizer(self):
        """The fast engine's tokenizer (see :func:`preload_fast_engine`), probed against the reference.

        Raises:
            FastEngineUnavailable: the engine cannot load this ``tokenizer.json``, or differs on a probe.
            TokenmillError: the file no longer holds the bytes that ``info`` was loaded from.
        """
        if self._fast is None:
            key = (self.name, self.info.engine_sha256)
            if (key not in _fast_loads
                    and preload_fast_engine(self.info.spec or self.info.path, self.name) != self.info.engine_sha256):
                raise TokenmillError(f"{self.info.path}: changed since it was loaded "
                                     f"(sha256 {self.info.sha256[:16]}…); "
                                     f"load the tokenizer again")
            loader = _fast_loads[key]
            loader.join()
            if loader.error is not None:  # the engines raise plain exceptions on what they do not support
                raise FastEngineUnavailable(self.info.path, exception_first_line(loader.error), self.name)
            if self.name == "fastokens":
                loader.tokenizer.no_truncation()  # as load_tokenizer does for HF
                loader.tokenizer.no_padding()
            self._refuse_probe_differences(loader.tokenizer)
            self._fast = loader.tokenizer
        return self._fast

    def _refuse_probe_differences(self, fast) -> None:
        """Refuse a fast engine where it reads a spelling differently from the reference: a spelling the
        type's library takes as text (SentencePiece's ``</s>``, ``<0x41>``) read as the special piece, and,
        for gigatoken, any added token's string (which it must read as that token, as HF does): its ids
        would differ in every such document, and the proof samples documents. One probe of each spelling
        between letters, once per encoder (a few thousand ids at most).

        Raises:
            FastEngineUnavailable: the engine and the reference disagree on one of them.
        """
        literal = list(self.info.family.literal_specials if self.info.family else ())
        added = ([token for token in self.info.added_tokens() if token not in literal]
                 if self.name == "gigatoken" else [])
        if not literal and not added:
            return
        probes = [f"a{spelling}b" for spelling in literal + added]
        ids, lengths = self._encode_with(fast, probes, False)
        reference, reference_lengths = self.info.encode_reference(probes, False)
        got, wanted = split_flat(ids, lengths), split_flat(np.asarray(reference), reference_lengths)
        differing = [number for number, (mine, theirs) in enumerate(zip(got, wanted))
                     if not np.array_equal(mine.astype(np.int64), theirs.astype(np.int64))]
        if not differing:
            return
        library, first = self.info.reference_library, differing[0]
        if first < len(literal):
            raise FastEngineUnavailable(self.info.path, f"it reads the text {literal[first]!r} as that piece, which "
                                                        f"{library} encodes as text", self.name)
        raise FastEngineUnavailable(self.info.path, f"it reads the added token {added[first - len(literal)]!r} in text "
                                                    f"as ids other than {library}'s", self.name)

    def fall_back(self, unavailable: FastEngineUnavailable) -> None:
        """Take the next engine from now on (gigatoken, then fastokens, then HF), as ``auto`` does where a fast
        engine cannot load the tokenizer or differs on its probes; the reason (logged, kept in sidecars)
        carries that engine's error.

        Raises:
            FastEngineUnavailable: ``unavailable`` itself, where the engine was asked for by name.
        """
        if self.engine_asked != "auto":
            raise unavailable
        failed, self._fast = self.name, None
        if failed == "gigatoken":
            self.name = "fastokens"
            preload_fast_engine(self.info.spec or self.info.path, "fastokens")
        else:
            self.name = "hf"
        self.reason = (f"engine auto: {'HF' if self.name == 'hf' else self.name}, as {failed} cannot load this "
                       f"tokenizer ({unavailable.cause})")

    def versions(self) -> dict[str, str]:
        """The package versions whose ids this engine produces (recorded in sidecars)."""
        import importlib.metadata  # here, not at the top: 30 ms of a job's start, before its fast engine's load

        versions = {"tokenizers": tokenizers.__version__}
        reference = self.info.family.reference if self.info.family else None
        if reference is not None:
            versions[reference.library] = reference.version()
        if self.name == "fastokens":
            versions["fastokens"] = importlib.metadata.version("fastokens")
        elif self.name == "gigatoken":
            versions["gigatoken"] = _gigatoken_version()
        return versions

    def encode_batch(self, texts: list[str] | Utf8Texts, add_special_tokens: bool) -> tuple[np.ndarray, np.ndarray]:
        """``(ids, lengths)``: every text's ids back to back (uint32 or int64) and ids per text. Texts in one UTF-8
        buffer (:class:`~tokenmill.inputs.utf8_texts.Utf8Texts`) reach gigatoken as they are, an awkward array of
        strings over the buffer (no str per text, nothing encoded again); the other engines get them as str.

        Raises:
            FastEngineUnavailable: the fast engine cannot load the tokenizer, and this encoder does not
                fall back by itself (see the class).
        """
        while self.name in FAST_ENGINES:
            try:
                return self._encode_with(self._fast_tokenizer(), texts, add_special_tokens)
            except FastEngineUnavailable as unavailable:
                if not self.fall_back_in_place:
                    raise
                self.fall_back(unavailable)
        return self.info.encode_reference(texts.strings() if isinstance(texts, Utf8Texts) else texts,
                                          add_special_tokens)

    def _encode_with(self, fast, texts: list[str] | Utf8Texts, add_special_tokens: bool
                     ) -> tuple[np.ndarray, np.ndarray]:
        """The fast engine ``fast``'s flat ids and lengths of ``texts``: C and Rust calls, nothing per text."""
        if self.name == "gigatoken":
            if not len(texts):
                return np.empty(0, np.uint32), np.empty(0, np.int64)
            # gigatoken adds no special tokens (a post-processor that would is refused: gigatoken_refusal)
            return _flat_of(fast.encode_batch(_awkward_strings(texts) if isinstance(texts, Utf8Texts) else texts,
                                              parallel=self.parallel))
        if isinstance(texts, Utf8Texts):
            texts = texts.strings()
        ids, offsets = fast.encode_batch_flat(texts, add_special_tokens=add_special_tokens,
                                              split_special_tokens=self.split_special_tokens)
        return np.frombuffer(ids, dtype="<u4"), np.diff(np.frombuffer(offsets, dtype="<u8")).astype(np.int64)


def _awkward_strings(texts: Utf8Texts):
    """An awkward array of strings over the texts' buffer and offsets, no copy (what gigatoken reads as
    ``list[str]``, without a Python object per text)."""
    from awkward import Array
    from awkward.contents import ListOffsetArray, NumpyArray
    from awkward.index import Index64

    return Array(ListOffsetArray(Index64(texts.offsets), NumpyArray(texts.data, parameters={"__array__": "char"}),
                                 parameters={"__array__": "string"}))


def _flat_of(encoded) -> tuple[np.ndarray, np.ndarray]:
    """gigatoken's awkward array of id lists as one flat uint32 array (a view of its buffer) and lengths."""
    layout = encoded.layout
    if type(layout).__name__ == "ListOffsetArray" and type(layout.content).__name__ == "NumpyArray":
        offsets = np.asarray(layout.offsets)
        ids = np.asarray(layout.content.data)[int(offsets[0]):int(offsets[-1])]
        return ids, np.diff(offsets).astype(np.int64)
    import awkward  # another layout (never seen from 0.10): awkward's own flattening

    return (np.asarray(awkward.flatten(encoded, axis=1), dtype=np.uint32),
            np.asarray(awkward.num(encoded, axis=1), dtype=np.int64))


def _gigatoken_version() -> str:
    """The installed gigatoken distribution's version (the bounded-cache ``gigatoken-cachefix`` says so)."""
    import importlib.metadata
    for distribution in ("gigatoken-cachefix", "gigatoken"):
        try:
            return f"{importlib.metadata.version(distribution)}" + (" (cachefix)" if "cachefix" in distribution else "")
        except importlib.metadata.PackageNotFoundError:
            continue
    return "unknown"


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
    """Loads a fast engine's tokenizer from a ``tokenizer.json``'s bytes in the background (both Rust
    loaders release the GIL); gigatoken's then encodes one word, which imports awkward (0.2-0.5 s) here
    instead of in the first batch.

    Not a daemon: a process that exits early (a bad line) waits for the load to end, since killing
    the thread inside Rust aborts the interpreter ("FATAL: exception not rethrown").
    """

    def __init__(self, path: str, content: bytes, engine: str = "fastokens"):
        super().__init__(daemon=False, name=f"{engine}-load-{path}")
        self.content, self.engine, self.tokenizer, self.error = content, engine, None, None

    def run(self) -> None:
        try:
            if self.engine == "gigatoken":
                import gigatoken

                gigatoken.set_max_cache_bytes(GIGATOKEN_CACHE_BYTES)  # for tokenizers built from now on
                tokenizer = gigatoken.Tokenizer.from_json(self.content.decode("utf-8"))
                tokenizer.encode_batch(["warm"], parallel=False)
                self.tokenizer = tokenizer
            else:
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


# Loads by engine and the sha256 of the bytes loaded, so that a file replaced in place is never served
# from an earlier load of its path; and the latest load started for each path.
_fast_loads: dict[tuple[str, str], _FastLoad] = {}
_latest_fast_load: dict[str, tuple[str, str]] = {}


def preload_fast_engine(source: str | os.PathLike | TokenizerSpec, engine: str = "fastokens") -> str | None:
    """Start loading a fast engine's tokenizer from ``source`` in the background, once per process, engine
    and content.

    ``source`` is a ``tokenizer.json`` or a Megatron tokenizer type, whose conversion
    (:func:`tokenmill.tokenization.families.load_family`, memoised) is what the engine loads.

    Its load is the slowest step of a job's start (fastokens 0.3 s for GPT-2, 1.1 s for Tekken), so
    callers start it before loading the HF tokenizer, hashing inputs and reading indices, which overlap it.

    Args:
        source: the tokenizer.
        engine: ``fastokens`` or ``gigatoken``.

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
    _latest_fast_load[str(path)] = key = (engine, digest)
    if key not in _fast_loads:
        _fast_loads[key] = loader = _FastLoad(str(path), content, engine)
        loader.start()
    return digest


def fast_engine_loading(path: str | os.PathLike) -> bool:
    """Whether a fast engine's tokenizer for ``path`` is still loading in the background."""
    loader = _fast_loads.get(_latest_fast_load.get(str(path), ("", "")))
    return loader is not None and loader.is_alive()


def wait_for_fast_engine(path: str | os.PathLike) -> None:
    """Wait until the fast engine's tokenizer last started loading for ``path`` (if any) has loaded or failed; a
    failure is reported where the tokenizer is needed (:class:`Encoder`), as without the wait."""
    loader = _fast_loads.get(_latest_fast_load.get(str(path), ("", "")))
    if loader is not None:
        loader.join()


def split_flat(tokens: np.ndarray, lengths: np.ndarray, chosen: list[int] | None = None) -> list[np.ndarray]:
    """The id arrays of texts ``chosen`` (default: all) from a flat batch."""
    starts = np.cumsum(lengths) - lengths
    return [tokens[starts[i]:starts[i] + lengths[i]] for i in (range(len(lengths)) if chosen is None else chosen)]
