"""A model's own chat template: conversations rendered and tokenized as transformers' ``apply_chat_template`` does,
with assistant-only loss masks. The template renders in :mod:`tokenmill.tokenization.template_sandbox` (transformers'
Jinja semantics), a line's conversation is read by :mod:`tokenmill.tokenization.conversations`, and a render's
trained spans become a token mask in :mod:`tokenmill.tokenization.chat_masks`.

Template: ``chat_template: tokenizer`` reads the tokenizer's folder (the folder of its ``tokenizer.json``) as
transformers does: ``chat_template.jinja`` if present, else ``tokenizer_config.json``'s ``chat_template`` (a string,
or named templates: ``tool_use`` for a conversation with tools where there is one, else ``default``); any other
value is the path of a ``.jinja`` file. The template sees ``messages``, ``tools``, ``documents`` (None),
``add_generation_prompt``, ``strftime_now`` and the folder's special tokens (``bos_token``, ``eos_token``,
``unk_token``, ``sep_token``, ``pad_token``, ``cls_token``, ``mask_token`` from ``tokenizer_config.json``, else
``special_tokens_map.json``).

Date: transformers' ``strftime_now(format)`` formats ``datetime.now()``, so a template that writes the date or
time ("Today Date: 26 Jul 2024") renders differently on each day, or second, of a build, and the prefix rule
below compares renders made moments apart. Here it formats one fixed moment, the template's ``date``: the SFT set's
``template_date``, by default :data:`DEFAULT_TEMPLATE_DATE` (2024-07-26 00:00:00), the date Llama 3.1's and
3.2's own templates write when no clock is given (their ``date_string`` fallback), so that the default renders
what those templates render without one. A rebuild on any day is byte-identical, and the moment is recorded in
the sidecar. Cost: every conversation carries that one date; a model meant to see another sets
``template_date``. The moment has no time zone (``%Z``/``%z`` give nothing, as for transformers' naive
``now()``; ``%s``, seconds since 1970, counts it as UTC, not in the host's zone), and month and day names are the
C locale's, as Python leaves them.

Loss mask (which tokens are trained):

* ``train_on: all``: every token.
* A template with ``{% generation %}…{% endgeneration %}``: exactly transformers' ``assistant_masks``
  (``return_assistant_tokens_mask=True``): 1 on every token whose character offsets overlap a generated span.
* Otherwise the prefix rule. For each assistant message ``i``, render ``messages[:i]`` with
  ``add_generation_prompt=True`` (the prompt the model sees) and ``messages[:i+1]``; the assistant's span is the
  text between their ends (its content and what the template closes the turn with, e.g. ``<|im_end|>\\n``).
  Valid only where each such render is a prefix of the whole conversation's render and the span's ends fall on
  token boundaries; a template that breaks it (one that drops earlier ``<think>`` blocks) is refused in one line
  naming the conversation's file, line and turn and the template: never a silently wrong mask.
* ``train_on: last_assistant``: the last assistant span only.

Tokens: the rendered text is tokenized with ``add_special_tokens=False`` and special-token strings parsed as tokens
(as transformers' tokenizer call does), so a BOS appears exactly where the template writes ``{{ bos_token }}``,
once. With a fast engine (fastokens, :mod:`tokenmill.tokenization.engine`) the rendered texts of a batch are
encoded in one call, proven against Hugging Face on a sample as ``pack`` proves documents; otherwise, and for a text
whose mask the ids do not give, Hugging Face ``tokenizers`` encodes with offsets, the library transformers itself
calls.

Cost: one render of the conversation, plus, for the prefix rule, two renders per assistant turn (one where it
is the last message: the render through it is the whole), i.e. renders of about every growing prefix: quadratic in
the turns, ~5 renders for a conversation of 5 messages. With fastokens the renders are ~70 % of the time, on one
core (Jinja holds the GIL). :class:`ChatRenderer` (the render stage alone, which pickles) lets
``tokenmill sft --workers N`` render in N processes while this one encodes
(:func:`tokenmill.pack.sft.encode_conversations`).
Measured by ``bench/chat_template_bench.py`` (bench/RESULTS.md) on 2,000 synthetic 2-to-9-message conversations
(1.06 M tokens) with the GPT-2-based folders of the tests, 2 busy cores, against transformers 5.24.0's
``apply_chat_template(tokenize=True, return_assistant_tokens_mask=True)``: see bench/RESULTS.md for the figures;
the same ids for every conversation, and the same masks where transformers has them.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property, partial
from pathlib import Path
from typing import NamedTuple

import numpy as np

from tokenmill.config import default
from tokenmill.errors import BadLine, TokenmillError
from tokenmill.inputs.text_selection import conversation_record
from tokenmill.tokenization.chat_masks import ByteTable, offsets_mask, piece_masks
from tokenmill.tokenization.conversations import SHAREGPT_ROLES, conversation_of
from tokenmill.tokenization.engine import Encoder
from tokenmill.tokenization.proof import DEFAULT_CHECK_FRACTION, ProofSampler, ProofTally, encode_proven
from tokenmill.tokenization.template_sandbox import sandboxed, strftime_at

__all__ = ["ChatTemplate", "ChatRenderer", "ChatTemplateEncoder", "Rendered", "load_chat_template",
           "chat_template_file", "conversation_of", "start_render_worker", "render_in_worker", "template_date",
           "SHAREGPT_ROLES", "DEFAULT_TEMPLATE_DATE",
           "TRAIN_ON", "SPECIAL_TOKEN_NAMES", "TOKENIZER_TEMPLATE"]

TOKENIZER_TEMPLATE = "tokenizer"  # chat_template: tokenizer — the template of the tokenizer's own folder
TRAIN_ON = ("assistant", "last_assistant", "all")
SPECIAL_TOKEN_NAMES = ("bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token")
# the moment strftime_now formats unless the SFT set's template_date names one (see the module docstring)
DEFAULT_TEMPLATE_DATE = default("sft.*.template_date")
_TEMPLATE_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}([T ][0-9]{2}:[0-9]{2}(:[0-9]{2})?)?")  # the schema's pattern


def template_date(value: str, where: str = "template_date") -> datetime:
    """The moment ``strftime_now`` formats, from ``YYYY-MM-DD``, ``YYYY-MM-DDTHH:MM`` or ``YYYY-MM-DDTHH:MM:SS``
    (a space for the ``T`` too; no time zone): midnight where no time is given.

    Raises:
        TokenmillError: another form, or a date that does not exist (``2026-02-30``), naming ``where``.
    """
    if not isinstance(value, str) or not _TEMPLATE_DATE.fullmatch(value):
        raise TokenmillError(f"{where}: {value!r} is not a date YYYY-MM-DD or a time YYYY-MM-DDTHH:MM[:SS]")
    try:
        return datetime.fromisoformat(value)
    except ValueError as exc:
        raise TokenmillError(f"{where}: {value!r} is not a date ({exc})") from None


@dataclass(frozen=True)
class ChatTemplate:
    """A chat template and what it is rendered with.

    Attributes:
        templates: the Jinja source by name (``default``, and ``tool_use`` where the folder has one).
        source: where it was read: ``<folder>/chat_template.jinja``, ``<folder>/tokenizer_config.json`` or the
            ``.jinja`` path (named in errors).
        special_tokens: the special tokens the template sees, by name (``bos_token``, ...).
        date: the moment ``strftime_now`` formats in every render (module docstring).
    """

    templates: dict[str, str]
    source: str
    special_tokens: dict[str, str] = field(default_factory=dict)
    date: datetime = field(default_factory=lambda: template_date(DEFAULT_TEMPLATE_DATE))

    @cached_property
    def _strftime_now(self):
        return partial(strftime_at, self.date)  # (a partial: the template pickles to render workers)

    @cached_property
    def sha256(self) -> str:
        """sha256 of the templates (JSON, sorted by name) and special tokens: what the sidecar records."""
        text = json.dumps({"templates": self.templates, "special_tokens": self.special_tokens}, sort_keys=True)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def has_generation(self, name: str = "default") -> bool:
        """Whether the template marks assistant text with ``{% generation %}`` (transformers' own test)."""
        return sandboxed(self.templates[name]).has_generation  # the compiled template's test, made once

    def name_for(self, tools: list | None) -> str:
        """The template a conversation is rendered with: ``tool_use`` where it has tools and one exists."""
        return "tool_use" if tools is not None and "tool_use" in self.templates else "default"

    def render(self, messages: list[dict], tools: list | None = None, add_generation_prompt: bool = False,
               name: str = "default") -> tuple[str, list[tuple[int, int]]]:
        """``(text, spans)``: the rendered conversation and the ``[start, end)`` character spans of its
        ``{% generation %}`` blocks, in order (empty for a template without).

        Raises:
            jinja2.TemplateError: what the template raises (``raise_exception``, an undefined call, ...).
        """
        return sandboxed(self.templates[name]).render({
            "messages": messages, "tools": tools, "documents": None, "add_generation_prompt": add_generation_prompt,
            **self.special_tokens, "strftime_now": self._strftime_now})


def _token_string(value: object) -> str | None:
    """A special token as a tokenizer_config.json spells it: a string, or an AddedToken dict's ``content``."""
    if isinstance(value, dict):
        value = value.get("content")
    return value if isinstance(value, str) else None


def _read_json(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise TokenmillError(f"{path}: cannot read it as JSON ({str(exc).splitlines()[0]})") from None
    if not isinstance(data, dict):
        raise TokenmillError(f"{path}: not a JSON object")
    return data


def load_chat_template(chat_template: str, tokenizer_path: str | os.PathLike,
                       date: str | datetime = DEFAULT_TEMPLATE_DATE) -> ChatTemplate:
    """The chat template that ``chat_template`` names, with the tokenizer folder's special tokens.

    Args:
        chat_template: ``tokenizer`` (the template of the tokenizer's folder) or a ``.jinja`` file's path.
        tokenizer_path: the ``tokenizer.json`` (its folder holds ``tokenizer_config.json``), or that folder.
        date: the moment ``strftime_now`` formats, or its text (:func:`template_date`).

    Raises:
        TokenmillError: no template in the folder, an unreadable file, a template that does not compile
            (naming the file and line), a ``date`` that is not one.
    """
    moment = date if isinstance(date, datetime) else template_date(date)
    folder = Path(tokenizer_path) if os.path.isdir(tokenizer_path) else Path(tokenizer_path).parent
    config_path = folder / "tokenizer_config.json"
    config = _read_json(config_path) if config_path.is_file() else {}
    special = {name: token for name in SPECIAL_TOKEN_NAMES
               if (token := _token_string(config.get(name))) is not None}
    legacy_path = folder / "special_tokens_map.json"
    if legacy_path.is_file():
        for name, value in _read_json(legacy_path).items():
            if name in SPECIAL_TOKEN_NAMES and name not in special and _token_string(value) is not None:
                special[name] = _token_string(value)
    if chat_template != TOKENIZER_TEMPLATE:
        source = str(chat_template)
        templates = {"default": _read_text(Path(chat_template))}
    elif (folder / "chat_template.jinja").is_file():
        source = str(folder / "chat_template.jinja")
        templates = {"default": _read_text(folder / "chat_template.jinja")}
    else:
        source = str(config_path)
        value = config.get("chat_template")
        if isinstance(value, list):  # named templates: [{"name": ..., "template": ...}]
            value = {item.get("name"): item.get("template") for item in value if isinstance(item, dict)}
        if isinstance(value, str):
            templates = {"default": value}
        elif isinstance(value, dict) and isinstance(value.get("default"), str):
            templates = {name: text for name, text in value.items() if isinstance(text, str)}
        else:
            raise TokenmillError(f"{folder}: the tokenizer has no chat template (no chat_template.jinja, and "
                                 f"{config_path.name} {'has no string' if config else 'missing or without a'} "
                                 f"chat_template); name a .jinja file with chat_template: PATH")
    template = ChatTemplate(templates, source, special, moment)
    for name, text in templates.items():
        _check_compiles(text, source, name)
    return template


def chat_template_file(chat_template: str | None, tokenizer_path: str | os.PathLike) -> str | None:
    """The file whose edits change what ``chat_template`` renders (for a workflow's inputs), or None for none:
    the ``.jinja`` path itself, else the folder's ``chat_template.jinja`` where it exists, else its
    ``tokenizer_config.json``."""
    if chat_template is None:
        return None
    if chat_template != TOKENIZER_TEMPLATE:
        return str(chat_template)
    folder = Path(tokenizer_path) if os.path.isdir(tokenizer_path) else Path(tokenizer_path).parent
    jinja = folder / "chat_template.jinja"
    return str(jinja if jinja.is_file() else folder / "tokenizer_config.json")


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise TokenmillError(f"{path}: cannot read the chat template ({exc.strerror or exc})") from None


def _check_compiles(text: str, source: str, name: str) -> None:
    import jinja2

    try:
        sandboxed(text)
    except jinja2.TemplateSyntaxError as exc:
        where = f" ({name} template)" if name != "default" else ""
        raise TokenmillError(f"{source}:{exc.lineno}: the chat template{where} does not compile "
                             f"({exc.message})") from None


class Rendered(NamedTuple):
    """A conversation rendered: its text, its trained ``[start, end)`` character spans, whether the prefix rule
    found them (their ends must then be token boundaries), and its file and line."""

    text: str
    spans: list[tuple[int, int]]
    by_prefix: bool
    path: str
    line: int


class ChatRenderer:
    """The render stage of :class:`ChatTemplateEncoder`: conversations → rendered texts and their trained
    character spans. Pure Python (Jinja); it pickles (the template and ``train_on``; compiled again on first use in
    another process), so that ``tokenmill sft --workers N`` renders batches in N worker processes
    (:mod:`tokenmill.pack.sft`).

    Args:
        template: the loaded template.
        train_on: ``assistant``, ``last_assistant`` or ``all``.

    Raises:
        TokenmillError: an unknown ``train_on``.
    """

    def __init__(self, template: ChatTemplate, train_on: str = "assistant"):
        if train_on not in TRAIN_ON:
            raise TokenmillError(f"train_on must be one of {', '.join(TRAIN_ON)}, not {train_on!r}")
        self.template, self.train_on = template, train_on

    def render_batch(self, conversations: list[tuple[dict, str, int]]) -> list[Rendered | BadLine]:
        """Each ``(record, path, line)`` rendered, or the :class:`BadLine` it is (the template raised on it).

        Raises:
            TokenmillError: the prefix rule fails on a conversation (naming file, line, turn and template).
        """
        rendered: list[Rendered | BadLine] = []
        for record, path, line in conversations:
            try:
                rendered.append(Rendered(*self._render(record, path, line), path, line))
            except BadLine as bad:
                rendered.append(bad)
        return rendered

    def render_lines(self, path: str, first_line: int, lines: list[bytes]) -> list[Rendered | BadLine]:
        """:meth:`render_batch` of JSONL lines numbered from ``first_line``, each parsed first
        (:func:`tokenmill.inputs.text_selection.conversation_record`: a line that is not a JSON object is a bad line).

        Raises:
            TokenmillError: see :meth:`render_batch`.
        """
        rendered: list[Rendered | BadLine] = []
        for line, raw in enumerate(lines, start=first_line):
            try:
                rendered.append(Rendered(*self._render(conversation_record(raw, path, line), path, line), path, line))
            except BadLine as bad:
                rendered.append(bad)
        return rendered

    def _render(self, record: dict, path: str, line: int) -> tuple[str, list[tuple[int, int]], bool]:
        """The conversation's text, its trained character spans, and whether the prefix rule found them (so
        their ends must be token boundaries)."""
        import jinja2

        messages, tools = conversation_of(record, path, line)
        name = self.template.name_for(tools)
        try:
            text, spans = self.template.render(messages, tools, name=name)
            if self.train_on == "all":
                return text, [(0, len(text))], False
            by_prefix = not self.template.has_generation(name)
            if by_prefix:
                spans = self._prefix_spans(messages, tools, name, text, path, line)
        except jinja2.TemplateError as exc:
            raise BadLine(path, line, f"the chat template raised: {exc.message or type(exc).__name__}") from None
        except (TypeError, ValueError, KeyError, AttributeError) as exc:
            raise BadLine(path, line, f"the chat template failed: {type(exc).__name__}: "
                                      f"{str(exc).splitlines()[0] if str(exc) else ''}") from None
        if self.train_on == "last_assistant":
            spans = spans[-1:]
        return text, spans, by_prefix

    def _prefix_spans(self, messages: list[dict], tools: list | None, name: str, text: str, path: str,
                      line: int) -> list[tuple[int, int]]:
        spans = []
        for turn, message in enumerate(messages):
            if message.get("role") != "assistant":
                continue
            prompt, _ = self.template.render(messages[:turn], tools, add_generation_prompt=True, name=name)
            # through the last message is the whole conversation, rendered already
            through = text if turn == len(messages) - 1 else self.template.render(messages[:turn + 1], tools,
                                                                                     name=name)[0]
            for part, what in ((prompt, "with the generation prompt"), (through, "")):
                if not text.startswith(part):
                    raise TokenmillError(
                        f"{path}:{line}: turn {turn}: the chat template {self.template.source} renders the "
                        f"conversation up to this assistant turn{' ' + what if what else ''} as text that is not a "
                        f"prefix of the whole conversation's (it rewrites earlier turns, e.g. drops <think> blocks), "
                        f"so the assistant tokens cannot be found; use a template with {{% generation %}} blocks")
            if not through.startswith(prompt):
                raise TokenmillError(f"{path}:{line}: turn {turn}: the chat template {self.template.source}'s "
                                     f"generation prompt is not where the assistant turn starts")
            spans.append((len(prompt), len(through)))
        return spans


# The renderer of a worker process (``sft --workers N``): set once by start_render_worker, used by render_in_worker.
_WORKER_RENDERER: ChatRenderer | None = None


def start_render_worker(renderer: ChatRenderer) -> None:
    """A render worker process's initializer: keep ``renderer`` for :func:`render_in_worker` (its template is
    compiled on first use)."""
    global _WORKER_RENDERER
    _WORKER_RENDERER = renderer


def render_in_worker(path: str, first_line: int, lines: list[bytes]) -> list[Rendered | BadLine]:
    """:meth:`ChatRenderer.render_lines` with the renderer :func:`start_render_worker` gave this process.

    Raises:
        TokenmillError: see :meth:`ChatRenderer.render_batch`.
    """
    return _WORKER_RENDERER.render_lines(path, first_line, lines)


class ChatTemplateEncoder:
    """Conversations → ``(ids, trained)`` through a chat template and a Hugging Face tokenizer.

    Args:
        template: the loaded template.
        tokenizer: a ``tokenizers.Tokenizer`` (special-token strings in the rendered text are read as tokens:
            its ``encode_special_tokens`` must be off, as loading leaves it).
        train_on: ``assistant`` (every assistant turn), ``last_assistant`` or ``all``.
        engine: a fast :class:`~tokenmill.tokenization.engine.Encoder` over the same tokenizer (made with
            ``split_special_tokens=False``), or None for Hugging Face alone. With fastokens, a batch's texts are
            encoded in one call (proven against Hugging Face on ``check_fraction`` of them, as ``pack`` proves its
            documents) and their masks read off the ids' bytes (byte-level BPE) or off pieces cut at span ends;
            a text neither resolves is encoded by Hugging Face with offsets, as without an engine
            (:mod:`tokenmill.tokenization.chat_masks`).
        check_fraction: see :class:`tokenmill.tokenization.proof.ProofSampler`.

    Attributes:
        proof: what the proof checked so far (:class:`tokenmill.tokenization.proof.ProofTally`).
        by_offsets: conversations masked through Hugging Face's offsets (all of them without a fast engine).

    Raises:
        TokenmillError: an unknown ``train_on``.
    """

    def __init__(self, template: ChatTemplate, tokenizer, train_on: str = "assistant", engine: Encoder | None = None,
                 check_fraction: float = DEFAULT_CHECK_FRACTION):
        self.renderer = ChatRenderer(template, train_on)
        self.template, self.train_on = template, train_on
        self.tokenizer = tokenizer
        self.engine = engine
        self.sampler = ProofSampler(engine.info.added_tokens(), check_fraction) if engine is not None else None
        self.proof = ProofTally()
        self.by_offsets = 0
        self._tally_lock = threading.Lock()  # encode_rendered may run in several threads (sft's encode stage)
        # token boundaries read off the fast engine's ids (None: the tokenizer is not byte-level BPE)
        self._byte_table = ByteTable.of(tokenizer) if engine is not None and engine.name != "hf" else None

    def encode_batch(self, conversations: list[tuple[dict, str, int]]) -> list[tuple[np.ndarray, np.ndarray] | BadLine]:
        """Each ``(record, path, line)`` as ``(ids int64, trained bool)``, or the :class:`BadLine` it is: the
        renders (:meth:`ChatRenderer.render_batch`), then :meth:`encode_rendered`.

        A line the template raises on (``raise_exception``, a missing key) is a bad line carrying the template's
        message; a template that breaks the prefix rule raises at once (it is the template that is wrong).

        Raises:
            TokenmillError: the prefix rule fails on a conversation, or an assistant span does not fall on
                token boundaries (naming file, line, turn and template); a fast engine that disagrees with
                Hugging Face (``EngineMismatch``).
        """
        return self.encode_rendered(self.renderer.render_batch(conversations))

    def encode_rendered(self, rendered: list[Rendered | BadLine]) -> list[tuple[np.ndarray, np.ndarray] | BadLine]:
        """The encode stage: each rendered conversation as ``(ids int64, trained bool)``, bad lines passed through,
        in order. Safe in several threads at once (the engines release the GIL; the tallies are locked).

        Raises:
            TokenmillError: an assistant span of the prefix rule that does not fall on token boundaries; a fast
                engine that disagrees with Hugging Face (``EngineMismatch``).
        """
        good = [item for item in rendered if not isinstance(item, BadLine)]
        fast = self._encode_fast(good) if self.engine is not None and self.engine.name != "hf" else [None] * len(good)
        slow = [item for item, result in zip(good, fast) if result is None]
        with self._tally_lock:
            self.by_offsets += len(slow)
        encodings = iter(self.tokenizer.encode_batch([item.text for item in slow], add_special_tokens=False)
                         if slow else [])
        results: list[tuple[np.ndarray, np.ndarray] | BadLine] = []
        fast_results, slow_items = iter(fast), iter(slow)
        for item in rendered:
            if isinstance(item, BadLine):
                results.append(item)
                continue
            result = next(fast_results)
            if result is None:
                text, spans, by_prefix, path, line = next(slow_items)
                encoding = next(encodings)
                result = (np.asarray(encoding.ids, dtype=np.int64),
                          offsets_mask(encoding.offsets, spans, len(text) if by_prefix else None, f"{path}:{line}",
                                       self.template.source))
            results.append(result)
        return results

    def _encode_fast(self, good: list[Rendered]) -> list[tuple[np.ndarray, np.ndarray] | None]:
        """The fast engine's ``(ids, trained)`` of each rendered conversation, or None where its token boundaries
        could not be read off its ids (that one is encoded with offsets instead)."""
        if not good:
            return []
        texts = [item.text for item in good]
        whole, proof = encode_proven(self.engine, texts, False, self.sampler,
                                     [f"{item.path}:{item.line}" for item in good])
        with self._tally_lock:
            self.proof += proof
        if self._byte_table is not None:
            masks = self._byte_table.masks(texts, [item.spans for item in good], [item.by_prefix for item in good],
                                           whole)
            return [None if trained is None else (ids, trained) for ids, trained in zip(whole, masks)]
        return piece_masks(self.engine, texts, [item.spans for item in good], whole)

