"""Load a Hugging Face ``tokenizer.json`` and derive what the packed formats need from it.

* ``vocab_size``: ``len(tokenizer)`` as Megatron and datatrove count it: the tokens of the loaded
  tokenizer, base vocabulary *and* added tokens (``Tokenizer.get_vocab_size()``). Hugging Face numbers
  an added token that is not in the base vocabulary on load, after the highest id it has, whatever
  id the file declares (GPT-2 with an added token declared at 70,000 has it at 50,257: 50,258 ids).
  Megatron's ``.bin`` dtype and datatrove's token size follow from this number (docs/formats.md §5, §9).
* ``id_limit``: the highest id + 1 of the loaded tokenizer; ``vocab_size`` unless its ids have gaps.
* ``token_width``: bytes per token in a ``.pbin``: 1 if every id < 2**8, 2 if < 2**16, else 4 (from
  ``id_limit``, so every id fits). Modalities sizes tokens from HF ``vocab_size``, which leaves added
  tokens out, so an EOD added above the base vocabulary overflows its token width (docs/formats.md
  §2); we do not copy that. For every tokenizer whose ids fit Modalities' rule this is its width.
* ``post_processor_ids``: the ids the tokenizer's post-processor puts before and after a text's own
  ids (a BOS, an EOS), which datatrove's ``.ds`` leaves out (docs/formats.md §10).
* ``eod_id``: the id of the end-of-document token string, which must be a single token.
* truncation and padding stored in the file are switched off: Megatron and Modalities never cut or
  pad a document, and a ``tokenizer.json`` exported for a classifier (``truncation: 128``,
  ``padding: Fixed``) would otherwise turn every document into 128 tokens without a word. What was
  switched off is kept in ``ignored_settings`` (recorded in sidecars), and ``pad_id`` names the
  padding id so that ``verify`` can flag data that holds it.
* ``fast_engine_refusal``: why fastokens is not proven for the file (read from it here, used by
  :func:`tokenmill.tokenization.engine.choose_engine`), or None.

A tokenizer is named by a path (a ``tokenizer.json``) or by a :class:`~tokenmill.tokenization.families.TokenizerSpec`:
one of Megatron's tokenizer types and its files, which :mod:`tokenmill.tokenization.families` converts to a
``tokenizer.json`` text and whose own library (``sentencepiece``, ``tiktoken``) becomes the reference.

The engine that encodes with this tokenizer is :mod:`tokenmill.tokenization.engine`; the proof that its fast
engine gives the reference's ids is :mod:`tokenmill.tokenization.proof`.

Cost: parsing the JSON file (~0.1–1 s for 50k–130k vocabularies) and Hugging Face's load of it, each once per
process and text (a tokenizer loaded again is the same object); the fast engine loads it once more.
"""

from __future__ import annotations

import collections
import contextlib
import hashlib
import os
import sys
import tempfile
import weakref
from dataclasses import dataclass, replace

import orjson
from tokenizers import Tokenizer

from tokenmill.errors import TokenmillError
from tokenmill.tokenization.families import HF_TYPE, TOKENIZER_JSON_EOD_ABSENT, Family, TokenizerSpec, load_family

__all__ = ["TokenizerInfo", "TYPE_EOD", "NO_TYPE_EOD_ADVICE", "load_tokenizer", "token_width_for",
           "check_eod_in_file", "fast_engine_refusal", "spec_of", "post_processor_ids", "is_plain_file",
           "is_rust_panic", "exception_first_line"]

# The ``eod`` that asks for the tokenizer type's own end-of-document token (Megatron's ``tokenizer.eod``).
TYPE_EOD = "<the type's EOD>"


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
        vocab_size: the loaded tokenizer's number of tokens, added tokens included (``len(tokenizer)``).
        token_width: bytes per token (1, 2 or 4), enough for ``id_limit``.
        eod: the end-of-document token string, or None.
        eod_id: its id, or None.
        ignored_settings: the file's ``truncation`` / ``padding`` settings that loading switched
            off (empty when it had none).
        pad_id: the id the file's (switched off) padding would have filled with, or None.
        fast_engine_refusal: why the fast engine is not proven for this file, or None
            (see :func:`fast_engine_refusal`).
        spec: the tokenizer as named: its Megatron type and files.
        family: the converted type (its ``tokenizer.json`` text and reference library), or None for a
            ``tokenizer.json`` named by path, whose reference is Hugging Face's ``tokenizer`` itself.
        id_limit: the highest id + 1 (``vocab_size`` unless the ids have gaps; None: not known).
        post_processor_ids: ``(before, after)``: the ids the post-processor adds around a single text's
            own ids when special tokens are on (``((), ())`` for none; see :func:`post_processor_ids`).
    """

    tokenizer: Tokenizer
    path: str
    sha256: str
    vocab_size: int
    token_width: int
    eod: str | None
    eod_id: int | None
    ignored_settings: dict
    pad_id: int | None
    fast_engine_refusal: str | None = None
    spec: TokenizerSpec | None = None
    family: Family | None = None
    id_limit: int | None = None
    post_processor_ids: tuple[tuple[int, ...], tuple[int, ...]] = ((), ())

    @property
    def engine_sha256(self) -> str:
        """sha256 of the ``tokenizer.json`` text the engines load (the converted one for a Megatron type)."""
        return self.family.hf_json_sha256 if self.family else self.sha256

    @property
    def reference_library(self) -> str:
        """The package whose ids are the truth for this tokenizer: ``tokenizers``, ``sentencepiece``, ``tiktoken``."""
        reference = self.family.reference if self.family else None
        return reference.library if reference else "tokenizers"

    def encode_reference(self, texts: list[str], add_special_tokens: bool):
        """``(ids, lengths)`` of ``texts`` by the reference library (what Megatron's tokenizer of this type gives)."""
        reference = self.family.reference if self.family else None
        if reference is None:
            from tokenmill.tokenization.hf_reference import encode_batch_hf

            return encode_batch_hf(self.tokenizer, texts, add_special_tokens)
        return reference.encode_batch(texts)

    def reading_specials_as_text(self) -> TokenizerInfo:
        """This tokenizer with a Hugging Face tokenizer of its own that reads special-token strings in texts as
        text (``encode_special_tokens``), for conversations, whose data must not smuggle in control tokens. A copy
        (one parse): the loaded tokenizer is shared by every load of the same text in this process
        (:func:`load_tokenizer`) and never changed. The copy is made once per loaded tokenizer and shared in turn
        (every conversation encoder of a process reads with it; no one changes it either): a copy costs a
        serialisation and a parse, 0.1-0.5 s."""
        own = _specials_as_text.get(self.tokenizer)
        if own is None:
            own = Tokenizer.from_str(self.tokenizer.to_str())
            own.encode_special_tokens = True
            _specials_as_text[self.tokenizer] = own
        return replace(self, tokenizer=own)

    def added_tokens(self) -> list[str]:
        """The added-token strings, and the type's spellings of special pieces that its library reads as text
        (:attr:`Family.literal_specials`): the proof checks excerpts around them."""
        return [*(token.content for token in self.tokenizer.get_added_tokens_decoder().values()),
                *(self.family.literal_specials if self.family else ())]

    def sidecar_entry(self) -> dict:
        """What a sidecar records of this tokenizer (everything a rebuild must reproduce)."""
        before, after = self.post_processor_ids
        entry = {"path": self.path, "sha256": self.sha256, "vocab_size": self.vocab_size,
                 "eod_token": self.eod, "eod_id": self.eod_id, "pad_id": self.pad_id,
                 "ignored_settings": self.ignored_settings,
                 "post_processor_ids": {"before": list(before), "after": list(after)}}
        if self.id_limit not in (None, self.vocab_size):  # ids with gaps: what a reader checks ids against
            entry["id_limit"] = self.id_limit
        if self.family is not None:  # a Megatron type: kept beside the path (a plain tokenizer.json records none)
            entry.update(self.spec.options(), reference=self.reference_library)
        return entry


def spec_of(source: str | os.PathLike | TokenizerSpec) -> TokenizerSpec:
    """``source`` as a :class:`TokenizerSpec` (a path names a Hugging Face tokenizer)."""
    return source if isinstance(source, TokenizerSpec) else TokenizerSpec(str(source))


def is_plain_file(spec: TokenizerSpec) -> bool:
    """Whether ``spec`` is a ``tokenizer.json`` named by path, loaded as it always was (no conversion)."""
    return spec.type == HF_TYPE and not os.path.isdir(spec.path)


# What to do where :data:`TYPE_EOD` finds none: pack's and the config's ways to say it.
NO_TYPE_EOD_ADVICE = "name one (pack --eod TOKEN; the config's eod: TOKEN) or pack without (--no-eod; eod: null)"


def load_tokenizer(source: str | os.PathLike | TokenizerSpec, eod: str | None = None,
                   no_type_eod_advice: str = NO_TYPE_EOD_ADVICE) -> TokenizerInfo:
    """Load a tokenizer and resolve the EOD token.

    Args:
        source: a Hugging Face ``tokenizer.json``, or a Megatron tokenizer type and its files.
        eod: the end-of-document token string (e.g. ``<|endoftext|>``); None for none;
            :data:`TYPE_EOD` for the type's own (:mod:`tokenmill.tokenization.families`), which must exist.
        no_type_eod_advice: what the error says to do where the type has no EOD.

    Truncation and padding stored in the file are switched off (see the module docstring).

    Raises:
        TokenmillError: the file is missing or not a tokenizer, ``eod`` is not one token, or it is
            :data:`TYPE_EOD` and the type has none.
    """
    spec = spec_of(source)
    path, family = spec.path, None
    if is_plain_file(spec):
        if not os.path.isfile(path):
            raise TokenmillError(f"{path}: tokenizer file not found")
        with open(path, "rb") as handle:  # read once: hashed, parsed for the facts below, and loaded
            content = handle.read()
        sha256 = text_sha256 = hashlib.sha256(content).hexdigest()
    else:
        family = load_family(spec)
        # sha256 names the type's files, text_sha256 the tokenizer.json text converted from them
        content, sha256, text_sha256 = family.hf_json.encode("utf-8"), family.sha256, family.hf_json_sha256
    if eod == TYPE_EOD:
        if family is None or family.eod is None:
            raise TokenmillError(f"{path}: {spec.type} names no end-of-document token: "
                                 f"{family.eod_absent if family else TOKENIZER_JSON_EOD_ABSENT}; {no_type_eod_advice}")
        eod = family.eod
    try:
        facts = _file_facts(content, text_sha256)
        tokenizer, ignored_settings = _parsed_tokenizer(content, text_sha256)
    except Exception as exc:  # tokenizers raises a bare Exception on a malformed file
        raise TokenmillError(f"{path}: not a Hugging Face tokenizer.json ({str(exc).splitlines()[0]})") from None
    except BaseException as exc:
        if not is_rust_panic(exc):
            raise
        raise TokenmillError(f"{path}: Hugging Face's tokenizers cannot load it (it panicked: "
                             f"{exception_first_line(exc)})") from None
    vocab_size = tokenizer.get_vocab_size(with_added_tokens=True)  # len(tokenizer): ids as numbered on load
    model_ids = facts[0]
    if model_ids is None:  # a model without a vocabulary in the file: ask the tokenizer
        ids = tokenizer.get_vocab(with_added_tokens=False).values()
        model_ids = max(ids) + 1 if ids else 0
    id_limit = max([model_ids, *(token_id + 1 for token_id in tokenizer.get_added_tokens_decoder())])
    eod_id = None
    if eod is not None:
        eod_id = tokenizer.token_to_id(eod)
        if eod_id is None:
            raise TokenmillError(f"{path}: EOD token {eod!r} is not a single token of this tokenizer"
                                 f"{_eod_advice(tokenizer, eod)}")
    refusal = facts[1]
    if family is not None and family.reference is not None and refusal:
        refusal = None  # a conversion of ours: fastokens is proven on it per job against the type's own library
    return TokenizerInfo(tokenizer=tokenizer, path=str(path), sha256=sha256,
                         vocab_size=vocab_size, token_width=token_width_for(id_limit),
                         eod=eod, eod_id=eod_id, ignored_settings=ignored_settings,
                         pad_id=_pad_id(ignored_settings), fast_engine_refusal=refusal, spec=spec, family=family,
                         id_limit=id_limit,
                         post_processor_ids=post_processor_ids(tokenizer, path))


def check_eod_in_file(path: str | os.PathLike, eod: str) -> bool:
    """Check, without loading the tokenizer, that ``eod`` is one token of ``path``: an added
    token or an entry of the model's vocabulary (what ``token_to_id`` finds); return whether it is an
    added token (False: an ordinary vocabulary entry, which text holds too, such as GPT-2's ``Ċ``, a newline).
    For the workflow's planning, which must not pay a tokenizer load per parse; a file of another shape passes
    here and is judged by :func:`load_tokenizer` in the job. Cost: parsing the JSON once per process and text.

    Raises:
        TokenmillError: a directory, a missing or unparsable file, or a token that is not in it.
    """
    if os.path.isdir(path):
        raise TokenmillError(f"{path}: is a directory; give the tokenizer.json file in it")
    try:
        with open(path, "rb") as handle:
            content = handle.read()
    except OSError as exc:
        raise TokenmillError(f"{path}: cannot read ({exc.strerror})") from None
    added, vocab = _token_strings(content, path)
    if vocab is not None and eod not in added and eod not in vocab:
        try:  # only on the way to an error: the advice needs the tokenizer itself
            advice = _eod_advice(Tokenizer.from_file(str(path)), eod)
        except Exception:  # a file HF cannot load: load_tokenizer says why, in the job
            advice = ""
        raise TokenmillError(f"{path}: EOD token {eod!r} is not a single token of this tokenizer{advice}")
    return eod in added or vocab is None


# The token strings of each tokenizer.json this process checked, by the sha256 of its text (a plan checks every
# tokenizer's EOD, some of them copies of one file).
_token_strings_by_sha256: dict[str, tuple[frozenset, frozenset | None]] = {}


def _token_strings(content: bytes, path: str | os.PathLike) -> tuple[frozenset, frozenset | None]:
    """``(added, vocabulary)``: the added tokens' strings and the model's vocabulary strings (None: the file has
    none to check against) of a ``tokenizer.json`` text, parsed once per process and text.

    Raises:
        TokenmillError: not JSON.
    """
    sha256 = hashlib.sha256(content).hexdigest()
    if sha256 not in _token_strings_by_sha256:
        try:
            config = orjson.loads(content)
        except orjson.JSONDecodeError as exc:
            raise TokenmillError(f"{path}: not a Hugging Face tokenizer.json ({exc})") from None
        added = frozenset(token.get("content") for token in config.get("added_tokens") or []
                          if isinstance(token, dict))
        vocab = (config.get("model") or {}).get("vocab")
        if isinstance(vocab, list):  # Unigram: [[piece, score], ...]
            vocab = frozenset(entry[0] for entry in vocab if isinstance(entry, list) and entry)
        _token_strings_by_sha256[sha256] = added, frozenset(vocab) if isinstance(vocab, (dict, frozenset)) else None
    return _token_strings_by_sha256[sha256]


def _eod_advice(tokenizer: Tokenizer, eod: str) -> str:
    """Which string to give for an EOD text that is not a vocabulary string: the key names a token as the
    vocabulary spells it (GPT-2's byte-level "\\n\\n" is 'ĊĊ'), so that Modalities and Megatron find it too."""
    ids = tokenizer.encode(eod, add_special_tokens=False).ids
    if len(ids) == 1:
        return (f"; the text encodes to the one id {ids[0]}, whose vocabulary string is "
                f"{tokenizer.id_to_token(ids[0])!r}: give that")
    return f" (the text encodes to {len(ids)} ids)"


def is_rust_panic(exc: BaseException) -> bool:
    """Whether ``exc`` is a Rust panic surfacing in Python (pyo3's ``PanicException``).

    Each pyo3 extension (tokenizers, fastokens) defines its own ``PanicException`` class, derived
    from ``BaseException`` so that ``except Exception`` lets it through; none is importable, so
    it is told by its name.
    """
    kind = type(exc)
    return kind.__name__ == "PanicException" and kind.__module__ == "pyo3_runtime"


def exception_first_line(exc: BaseException) -> str:
    """The first line of ``exc``'s message (its class name where it has none)."""
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
        BaseException: pyo3's ``PanicException`` (see :func:`is_rust_panic`).
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
            panicked = is_rust_panic(exc)
            raise
        finally:
            os.dup2(saved_stderr, 2)
            os.close(saved_stderr)
            if not panicked and os.fstat(held.fileno()).st_size:
                held.seek(0)
                with open(2, "wb", closefd=False) as stderr:
                    stderr.write(held.read())


# The facts of each tokenizer.json this process parsed, by the sha256 of its text: what it says stays
# true of the same bytes, so a tokenizer loaded again (the parent and the reference of a job, the tests)
# skips the parse (75 ms for GPT-2, more for 131k tokens) and loads with Hugging Face's only.
_facts_by_sha256: dict[str, tuple[int | None, str | None]] = {}


def _file_facts(content: bytes, sha256: str) -> tuple[int | None, str | None]:
    """``(_model_id_limit, fast_engine_refusal)`` of a ``tokenizer.json`` text, parsed once per process.

    Raises:
        orjson.JSONDecodeError: the text is not JSON.
    """
    if sha256 not in _facts_by_sha256:
        # Taken from the parse alone, before the tokenizer loads, so that the parsed vocabulary (~50 MB of
        # Python objects for 131k tokens) is freed before the tokenizer's own copy exists.
        config = orjson.loads(content)
        _facts_by_sha256[sha256] = _model_id_limit(config), fast_engine_refusal(config)
    return _facts_by_sha256[sha256]


# The Hugging Face tokenizers this process loaded, by the sha256 of their text, with the truncation and padding
# the file set (switched off on load): a tokenizer loaded again (a job's parent and its reference, a notebook,
# the tests' in-process CLI) is the same object, parsed once (0.15 s for GPT-2, ~0.6 s for 131k tokens). No one
# changes a loaded tokenizer (TokenizerInfo.reading_specials_as_text copies). The last 8 used are kept (the least
# recently used goes first: a process that loads one tokenizer often among others keeps it): a process that cycles
# through up to 8 tokenizers (a notebook, the tests' in-process CLI) parses each once; one kept holds ~10-150 MB
# (GPT-2 to a 131k vocabulary), only in a process that loaded that many.
_parsed_by_sha256: collections.OrderedDict[str, tuple[Tokenizer, dict]] = collections.OrderedDict()
_PARSED_KEPT = 8

# TokenizerInfo.reading_specials_as_text's copy of each loaded tokenizer, kept while that tokenizer lives.
_specials_as_text: weakref.WeakKeyDictionary[Tokenizer, Tokenizer] = weakref.WeakKeyDictionary()


def _parsed_tokenizer(content: bytes, sha256: str) -> tuple[Tokenizer, dict]:
    """``(tokenizer, ignored_settings)`` of a ``tokenizer.json`` text, loaded once per process, truncation and
    padding off.

    Raises:
        Exception: Hugging Face's error on a malformed file; BaseException: its panic (see :func:`_hf_from_str`).
    """
    entry = _parsed_by_sha256.get(sha256)
    if entry is not None:
        with contextlib.suppress(KeyError):  # (another thread's load may have dropped it meanwhile)
            _parsed_by_sha256.move_to_end(sha256)  # the most recently used, last
    else:
        tokenizer = _hf_from_str(content.decode("utf-8"))
        ignored_settings = {name: setting for name, setting in (("truncation", tokenizer.truncation),
                                                                ("padding", tokenizer.padding)) if setting}
        tokenizer.no_truncation()
        tokenizer.no_padding()
        while len(_parsed_by_sha256) >= _PARSED_KEPT:
            _parsed_by_sha256.popitem(last=False)
        entry = _parsed_by_sha256.setdefault(sha256, (tokenizer, ignored_settings))
    tokenizer, ignored_settings = entry
    return tokenizer, dict(ignored_settings)


def _model_id_limit(config: dict) -> int | None:
    """Highest id + 1 of the model's own vocabulary, read from the parsed file (``tokenizer.get_vocab``
    builds a dict of every token: 0.06–0.24 s), or None if the file holds no vocabulary.

    Not the added tokens' ids the file declares: Hugging Face keeps those only where they are free
    and in order, and numbers the others itself on load (the loaded tokenizer tells them)."""
    vocab = (config.get("model") or {}).get("vocab")
    if isinstance(vocab, dict) and all(isinstance(token_id, int) for token_id in vocab.values()):
        return max(vocab.values(), default=-1) + 1
    if isinstance(vocab, list):  # Unigram: [piece, score] pairs, ids are positions
        return len(vocab)
    return None


_PROBES = ("a", "Hello world")  # texts with ids of their own in any vocabulary, none of them special


def post_processor_ids(tokenizer: Tokenizer, name: str = "tokenizer") -> tuple[tuple[int, ...], tuple[int, ...]]:
    """``(before, after)``: the ids ``tokenizer``'s post-processor puts around a single text's own ids
    when special tokens are on: a Llama-3 template ``<|begin_of_text|> $A`` gives ``((128000,), ())``,
    Roberta's ``((0,), (2,))``, GPT-2's ByteLevel ``((), ())``. A template adds the same ids to every
    text, so two probe texts tell them: the encoding's special-tokens mask marks the ids the
    post-processor added (not special tokens written in the text), and what lies between must be
    the text's ids without special tokens. The post-processor is applied to the text's own encoding
    (``post_process``), not to a second encode, which BPE dropout would make differ. Cost: two
    encodes of a few characters.

    Raises:
        TokenmillError: a post-processor that adds other ids to different texts, or ids inside them.
    """
    if tokenizer.post_processor is None:
        return (), ()
    found = set()
    for text in _PROBES:
        plain = tokenizer.encode(text, add_special_tokens=False)
        own, encoding = plain.ids, tokenizer.post_process(plain, add_special_tokens=True)
        ids, mask = encoding.ids, encoding.special_tokens_mask
        if not own:
            continue
        before = next((i for i, flag in enumerate(mask) if not flag), len(mask))
        after = next((i for i, flag in enumerate(reversed(mask)) if not flag), 0)
        if ids[before:len(ids) - after] != own:
            raise TokenmillError(f"{name}: its post-processor turns the ids {own} of {text!r} into {ids}: not only "
                                 f"ids before and after them; cannot tell a text's own ids")
        found.add((tuple(ids[:before]), tuple(ids[len(ids) - after:])))
    if len(found) > 1:
        raise TokenmillError(f"{name}: its post-processor adds other ids to other texts ({sorted(found)})")
    return found.pop() if found else ((), ())


def _pad_id(ignored_settings: dict) -> int | None:
    """The id the file's padding settings would fill encodings with, or None without padding."""
    return int(ignored_settings["padding"]["pad_id"]) if "padding" in ignored_settings else None


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
