"""The sidecar ``<file>.pbin.meta.json``: the provenance record of every format tokenmill writes (the
``.pbin`` and its conversions, SFT pairs, verify, inspect and the report read it). :class:`SidecarRecord`
declares it, key by key with its JSON type (its ``format`` is its version): pack, merge and sft build one,
``read_sidecar`` returns one, checking the values readers rely on against it (:func:`kind_problem`), and
:func:`record_problems` names a key no one declared.

Sidecar ``<file>.pbin.meta.json`` (ours, never read by Modalities): format versions, tokenizer
identity and hash, vocab size, EOD, token width, counts, sources with size and sha256, skipped
lines by reason, ``eod_in_text`` (below), and ``file``: the ``.pbin``'s ``bytes``, ``data_sha256``
(of the token section)
and ``index_sha256`` (of the index pickle). It holds nothing that varies between two runs on the
same inputs. The writer renames the sidecar into place *before* the ``.pbin``, and
:func:`read_sidecar` checks ``file`` against the ``.pbin`` it sits beside, so a run killed between
the two renames (or a ``.pbin`` replaced by hand) is refused instead of being described by the
wrong sidecar.

Paths in a sidecar (``tokenizer.path``, ``sources[].path``, a merge's ``parts[].path``): an
absolute path is recorded as given; a relative one relative to the sidecar's own folder
(:func:`record_sidecar_paths`, ``os.path.relpath``), so the same inputs and config give the same
bytes wherever the working copy lives, and readers find the files from any working directory
(:func:`resolve_sidecar_paths`). Where a symlinked folder would make ``..`` lead elsewhere (the
recorded path would not name the same file), the absolute path is recorded instead. Sidecars of
older formats (pbin before /4, sft before /3) hold paths relative to the folder pack ran in: readers
try the sidecar's folder, then the current one.

``eod_in_text``: ``[[first, stop], ...]``, sorted half-open ranges of the documents whose own ids
already ended with the EOD id (a text ending in ``<|endoftext|>``, or a post-processor appending the
same EOS), so that, as Modalities does, no second EOD was appended. Megatron's ``preprocess_data.py
--append-eod`` (and datatrove) append one whatever the last id is: the conversion to their formats
adds it back from this list, so each format holds its own peer's bytes. Usually empty; one range
when every document ends so.

``eod_within_documents``: how many EOD ids documents hold before their last token (their own text's: an
ordinary vocabulary token as EOD, such as GPT-2's ``Ċ`` for a newline, or a special one spelled out in the
text); each is where a reader that finds documents by scanning for the EOS (OLMo-core without its csv,
datatrove, a Modalities-style splitter) cuts one in two. Counted per batch by pack (one ``count_nonzero``),
summed by merge; absent without an EOD. :func:`eod_within_note` words the warning that pack, ``verify`` and
the build summary give for a non-zero count.

``empty_texts``: ranges as ``eod_in_text``'s of the documents of an empty text that tokens-in read in: a
document of no sequences, as Megatron's ``preprocess_data.py`` keeps an empty text (``--append-eod`` or
not), is one of no token here and converts back to one of no sequences; a document of the EOD alone stays
that. ``verify`` takes such documents only where listed. Absent (none) in what pack writes, which refuses or
skips an empty text as a bad line.

Cost: a JSON file of a few KB; reading it checks ``file`` against the ``.pbin``'s size, and its paths
cost a ``stat`` or two each.
"""

from __future__ import annotations

import json
import os
import types
import typing
from pathlib import Path
from typing import TypedDict, Union

import numpy as np

from tokenmill import FORMAT_VERSIONS
from tokenmill.errors import TokenmillError
from tokenmill.files.atomic import atomic_output

__all__ = ["SKIPPED_LINES_KEPT", "SidecarRecord", "SourceRecord", "TokenizerRecord", "EngineRecord",
           "ChatTemplateRecord", "FileIdentityRecord", "record_problems", "kind_problem", "sidecar_path",
           "write_sidecar",
           "record_sidecar_paths", "resolve_sidecar_paths", "resolved_against", "index_ranges", "range_indices",
           "skipped_summary", "skipped_under_error", "eod_within_note"]


# ---- The record: every key a writer may put in a sidecar, with its JSON type -----------------------
# One declaration for pack, merge and sft: each writer builds a SidecarRecord, read_sidecar returns one,
# and record_problems (tested on every kind of sidecar the tools write) holds them to it. ``format``
# is its version (tokenmill.FORMAT_VERSIONS: "pbin" or "sft"); a key is absent where the writer had
# nothing to say (total=False), null where the writer says "none".


class FileIdentityRecord(TypedDict):
    """A ``.pbin``'s identity: what ``read_sidecar`` checks the file beside it against."""
    bytes: int
    data_sha256: str  # of the token section
    index_sha256: str  # of the index pickle


class ObjectRecord(TypedDict):
    """The version of an input by URL that was read (a scheme of :data:`tokenmill.files.urls.SCHEMES`)."""
    etag: str  # S3's or a web server's ETag ("" where it gives none); a Hub file's LFS sha256 or git blob id
    version_id: str | None
    size: int
    last_modified: str  # a web server's Last-Modified, where it gives one
    revision: str  # a Hub file's commit sha: what its @branch resolved to when the job started


class SkippedRecord(TypedDict):
    """Lines skipped for one reason: their count, and the first :data:`SKIPPED_LINES_KEPT` line numbers."""
    count: int
    first_lines: list[int]


class TokenizerRecord(TypedDict, total=False):
    """The tokenizer: its identity, its EOD, and (a Megatron type) the type's options."""
    path: str
    absolute_path: str  # beside a relative path that leaves the working folder (record_sidecar_paths)
    sha256: str
    vocab_size: int
    id_limit: int  # ids stop below this where the vocabulary has gaps
    eod_token: str | None  # the format's key since version 1 (`eod` in the config, the CLI and the code)
    eod_id: int | None
    pad_id: int | None
    add_special_tokens: bool
    ignored_settings: dict[str, object]  # truncation/padding the tokenizer file set, switched off
    post_processor_ids: dict[str, list[int]]  # "before" / "after" the text
    type: str  # a Megatron --tokenizer-type
    merge_file: str
    tiktoken_pattern: str
    tiktoken_num_special_tokens: int
    reference: str  # the library re-encoding the proof
    special_tokens: dict[str, str]  # an SFT set's
    special_ids: dict[str, int]


class EngineRecord(TypedDict, total=False):
    """The encoder chosen, why, and what the proof against Hugging Face checked."""
    name: str
    reason: str
    versions: dict[str, str]
    check_fraction: float
    on_mismatch: str
    checked_documents: int
    checked_messages: int
    mismatches: int
    proof: dict[str, object]  # tokenmill.tokenization.proof.ProofTally.sidecar_entry


class SourceRecord(TypedDict, total=False):
    """One input (or its byte range, or row groups) in pack order."""
    path: str
    absolute_path: str
    format: str  # its kind (tokenmill.formats.kinds.SOURCE_KINDS); absent for JSONL. "megatron": path is its .bin
    compression: str
    bytes: int
    decompressed_bytes: int
    sha256: str
    index_bytes: int  # a Megatron source's .idx
    index_sha256: str
    loss_mask_dropped: str  # an SFT .pbin read in by tokens-in --drop-loss-mask: its loss mask file, not read
    object: ObjectRecord
    lines: int
    first_line: int
    byte_range: list[int]
    rows: int
    row_groups: int
    first_row: int
    row_group_range: list[int]
    documents: int
    tokens: int
    skipped: dict[str, SkippedRecord]
    dropped: dict[str, SkippedRecord]  # an SFT input's conversations left out by the fit or the mask (not bad lines)
    left_out: list[list[int]]  # an SFT input's lines that gave no document (skipped or dropped): [first, stop) ranges
    engine: str
    checked_documents: int
    checked_messages: int
    mismatch: str  # the proof's difference, where the input was re-encoded with Hugging Face


class PartRecord(TypedDict, total=False):
    """One part of a merge, in order."""
    path: str
    absolute_path: str
    documents: int
    tokens: int


class ChatTemplateRecord(TypedDict, total=False):
    """An SFT set rendered by a chat template: where it was read, its sha256, how the mask was found."""
    source: str
    sha256: str
    generation_blocks: bool  # masks from {% generation %} blocks (else from the prefix rule)
    train_on: str
    date: str  # the moment strftime_now gave every render (ISO 8601, no time zone): template_date


class SidecarRecord(TypedDict, total=False):
    """``<file>.pbin.meta.json``: see the module docstring."""
    format: str  # the record's version
    layout: str
    file: FileIdentityRecord
    tokenizer: TokenizerRecord
    engine: EngineRecord
    token_width: int
    text: str
    on_bad_line: str  # pbin before /7: the policy (since, its skipped lines say what it did)
    max_line_bytes: int
    allow_duplicate_inputs: bool
    documents: int
    tokens: int
    sources: list[SourceRecord]
    parts: list[PartRecord]
    skipped: dict[str, int] | dict[str, SkippedRecord]  # totals by reason (pack), by reason with lines (sft)
    eod_in_text: list[list[int]]
    eod_within_documents: int  # EOD ids inside documents, before their last token
    empty_texts: list[list[int]]  # tokens-in: documents of an empty text (no token, or the EOD alone)
    loss_mask: str  # an SFT pair's: the mask file's name, its identity
    loss_mask_file: FileIdentityRecord
    message_construction: list[str]
    loss_masking_jq_patterns: list[str]
    chat_template: ChatTemplateRecord
    seq_length: int
    truncation: str
    dropped: int
    truncated: int


def record_problems(value: object, record: object = SidecarRecord, where: str = "") -> list[str]:
    """Each key of ``value`` (a sidecar, as JSON) that its record does not declare (``key.path: not in the
    record``), or whose value is not of the declared JSON type (``key.path must be an integer, not "12"``);
    empty for a sidecar of the record."""
    origin, arguments = typing.get_origin(record), typing.get_args(record)
    if record is object:
        return []
    if origin in (Union, types.UnionType):
        found = [record_problems(value, option, where) for option in arguments]
        if any(not problems for problems in found):
            return []
        # a value of one option's kind is judged by that option (its items), else by the union's kinds
        same_kind = [problems for option, problems in zip(arguments, found) if _fits(value, option)]
        return same_kind[0] if same_kind else [_wrong_type(value, record, where)]
    if not _fits(value, record):
        return [_wrong_type(value, record, where)]
    if typing.is_typeddict(record):
        hints = typing.get_type_hints(record)
        problems = [f"{where}.{key}".lstrip(".") + ": not in the record" for key in value if key not in hints]
        return problems + [problem for key, item in value.items() if key in hints
                           for problem in record_problems(item, hints[key], f"{where}.{key}".lstrip("."))]
    if origin is list:
        return [problem for k, item in enumerate(value)
                for problem in record_problems(item, arguments[0], f"{where}[{k}]")]
    if origin is dict:
        return [problem for key, item in value.items() for problem in record_problems(item, arguments[1],
                                                                                       f"{where}.{key}")]
    return []


def kind_problem(keys: tuple[str, ...], value: object, record: object = SidecarRecord) -> str | None:
    """``key.path must be an integer, not "x"`` where ``value``, found at ``keys`` (``("tokenizer",
    "eod_id")``), is not of the JSON kind ``record`` declares there (its items unchecked); else None.

    Raises:
        KeyError: a key the record does not declare.
    """
    declared = record
    for key in keys:
        declared = typing.get_type_hints(declared)[key]
    return None if _fits(value, declared) else _wrong_type(value, declared, ".".join(keys))


def _fits(value: object, record: object) -> bool:
    """Whether ``value`` is of ``record``'s JSON kind (an object, a list, an integer, ...), its items unchecked."""
    if typing.get_origin(record) in (Union, types.UnionType):
        return any(_fits(value, option) for option in typing.get_args(record))
    if record is object:
        return True
    if record is type(None):
        return value is None
    kind = _kind(record)
    expected = (int, float) if kind is float else kind
    return isinstance(value, expected) and (kind is bool or not isinstance(value, bool))


def _kind(record: object) -> type:
    """The Python type of a declared JSON value: ``dict`` for a record or ``dict[...]``, ``list`` for ``list[...]``."""
    return dict if typing.is_typeddict(record) else typing.get_origin(record) or record


def _json_kind(record: object) -> str:
    if typing.get_origin(record) in (Union, types.UnionType):
        return " or ".join(dict.fromkeys(_json_kind(option) for option in typing.get_args(record)))
    if record is type(None):
        return "null"
    return {dict: "an object", list: "a list", int: "an integer", float: "a number", str: "a string",
            bool: "true or false"}[_kind(record)]


def _wrong_type(value: object, record: object, where: str) -> str:
    return f"{where} must be {_json_kind(record)}, not {json.dumps(value)[:60]}"


SKIPPED_LINES_KEPT = 20  # line numbers listed per reason in a sidecar's skipped lines


def skipped_summary(skipped_lines: dict[str, list[int]]) -> dict[str, dict]:
    """A sidecar's ``skipped``: per reason, the count and the first :data:`SKIPPED_LINES_KEPT` line numbers."""
    return {reason: {"count": len(numbers), "first_lines": numbers[:SKIPPED_LINES_KEPT]}
            for reason, numbers in sorted(skipped_lines.items())}


def skipped_under_error(meta: dict, path: str | os.PathLike) -> str | None:
    """The one line refusing ``path`` (a ``.pbin``, or a part of one) under ``on_bad_line: error`` where its
    sidecar's sources list skipped lines: the first such source, its first skipped line (a Parquet file's row) and
    why, where a fresh build under ``error`` stops. None where nothing was skipped: the file is then, byte for
    byte, what ``error`` makes too."""
    for source in meta.get("sources") or []:
        skipped = {reason: entry for reason, entry in (source.get("skipped") or {}).items() if entry["first_lines"]}
        if skipped:
            first, reason = min((entry["first_lines"][0], reason) for reason, entry in skipped.items())
            count = sum(entry["count"] for entry in skipped.values())
            where = f"{source['path']}: row {first}" if source.get("format") == "parquet" else \
                f"{source['path']}:{first}"
            return (f"{path}: {where}: {reason}: skipped (lines skipped in that file: {count}), but on_bad_line "
                    f"is error, which stops at that line: fix or remove it, or set on_bad_line: skip")
    return None


def eod_within_note(meta: dict) -> str | None:
    """The warning for a sidecar whose documents hold the EOD id before their end (its
    ``eod_within_documents``), naming the count and the EOD; None where they hold none or it says nothing."""
    count = meta.get("eod_within_documents")
    if not isinstance(count, int) or isinstance(count, bool) or count <= 0:
        return None
    tokenizer = meta.get("tokenizer") if isinstance(meta.get("tokenizer"), dict) else {}
    return (f"the EOD {tokenizer.get('eod_token')!r} (id {tokenizer.get('eod_id')}) occurs {count:,} times inside "
            f"documents' own tokens: a reader that finds documents by scanning for the EOS (OLMo-core without its "
            f"csv, datatrove) cuts them there")


def index_ranges(indices: np.ndarray) -> list[list[int]]:
    """Sorted distinct indices as half-open ranges ``[[first, stop], ...]`` (the sidecar's
    ``eod_in_text``): ``[0, 1, 2, 7]`` → ``[[0, 3], [7, 8]]``."""
    indices = np.asarray(indices, dtype=np.int64)
    if not len(indices):
        return []
    breaks = np.flatnonzero(np.diff(indices) != 1) + 1
    firsts = indices[np.concatenate([[0], breaks])]
    lasts = indices[np.concatenate([breaks - 1, [len(indices) - 1]])]
    return [[int(first), int(last) + 1] for first, last in zip(firsts, lasts)]


def range_indices(ranges: list[list[int]], count: int) -> np.ndarray:
    """The indices of :func:`index_ranges` ranges as a boolean mask over ``count`` items.

    Raises:
        TokenmillError: a range that is not sorted, empty, or beyond ``count``.
    """
    mask = np.zeros(count, dtype=bool)
    previous_stop = 0
    if not isinstance(ranges, list) or not all(isinstance(pair, list) and len(pair) == 2
                                               and all(isinstance(n, int) for n in pair) for pair in ranges):
        raise TokenmillError(f"{str(ranges)[:60]} is not a list of [first, stop] ranges")
    for first, stop in ranges:
        if not previous_stop <= first < stop <= count:
            raise TokenmillError(f"range [{first}, {stop}) is out of order or beyond the {count} documents")
        mask[first:stop] = True
        previous_stop = stop
    return mask


def sidecar_path(pbin_path: str | os.PathLike) -> Path:
    """``x.pbin`` → ``x.pbin.meta.json``."""
    return Path(f"{pbin_path}.meta.json")


def write_sidecar(pbin_path: str | os.PathLike, meta: dict) -> None:
    """Write the sidecar of ``pbin_path`` atomically, keys sorted so reruns give the same bytes."""
    with atomic_output(sidecar_path(pbin_path)) as tmp_path:
        tmp_path.write_text(json.dumps(meta, indent=2, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")


# The first format of each sidecar kind whose relative paths count from the sidecar's folder.
_PATHS_FROM_SIDECAR_FOLDER = {FORMAT_VERSIONS["pbin"].rpartition("/")[0]: 4,
                              FORMAT_VERSIONS["sft"].rpartition("/")[0]: 3}


def _paths_from_sidecar_folder(meta: dict) -> bool:
    """Whether ``meta``'s relative paths count from its own folder (else from where pack ran)."""
    kind, _, version = str(meta.get("format", "")).rpartition("/")
    return version.isdigit() and int(version) >= _PATHS_FROM_SIDECAR_FOLDER.get(kind, 1 << 30)


def _map_sidecar_paths(meta: dict, change) -> dict:
    """A copy of ``meta`` with ``change`` applied to every entry that records a path (the tokenizer,
    sources, parts): ``change(entry)`` gives the new entry (the rest shared)."""
    meta = dict(meta)
    if isinstance(meta.get("tokenizer"), dict) and isinstance(meta["tokenizer"].get("path"), str):
        meta["tokenizer"] = change(meta["tokenizer"])
    for key in ("sources", "parts"):
        if isinstance(meta.get(key), list):
            meta[key] = [change(entry) if isinstance(entry, dict) and isinstance(entry.get("path"), str) else entry
                         for entry in meta[key]]
    return meta


def _sidecar_folder(pbin_path: str | os.PathLike) -> str:
    return os.path.dirname(os.fspath(pbin_path))


def record_sidecar_paths(meta: dict, pbin_path: str | os.PathLike) -> dict:
    """``meta`` with its paths as the sidecar of ``pbin_path`` records them: absolute ones as given,
    relative ones (relative to the working directory) made relative to the sidecar's folder.

    The relative path is textual (``os.path.relpath``); where a symlink on the way makes it name
    another file, the absolute path is recorded instead. A relative path that leaves the working
    directory (``../../c/edge.jsonl``) is recorded absolute as well (``absolute_path``), so that a
    data folder moved without that file still finds it (:func:`resolve_sidecar_paths`); such a
    sidecar then depends on where the file lies, as the file itself does. Cost: a ``stat`` or two per path.
    """
    folder = _sidecar_folder(pbin_path)

    def record_path(path: str) -> str:
        if os.path.isabs(path):
            return path
        relative = os.path.relpath(path, folder or os.curdir)
        try:
            if os.path.exists(path) and not os.path.samefile(os.path.join(folder, relative), path):
                return os.path.abspath(path)
        except OSError:  # the relative spelling leads nowhere: `..` out of a symlinked folder
            return os.path.abspath(path)
        return relative

    def record(entry: dict) -> dict:
        path = entry["path"]
        if "object" in entry:  # read by URL: its name, as given
            return entry
        recorded = {**entry, "path": record_path(path)}
        if not os.path.isabs(recorded["path"]) and os.path.normpath(path).split(os.sep)[0] == os.pardir:
            recorded["absolute_path"] = os.path.abspath(path)
        return recorded

    return _map_sidecar_paths(meta, record)


def resolve_sidecar_paths(meta: dict, pbin_path: str | os.PathLike) -> dict:
    """``meta`` (as :func:`read_sidecar` gives it) with its paths as the current process reaches them.

    A relative path counts from the sidecar's folder; in a sidecar of an older format (which
    recorded paths relative to the folder pack ran in), from the sidecar's folder where that file
    exists, else as recorded (from the working directory); where neither exists but the recorded
    ``absolute_path`` does (a data folder moved away from an input outside it), from that. A path
    that exists nowhere is resolved against the sidecar's folder: :func:`resolved_against` says
    where that was, for the message. Cost: a ``stat`` or two per path.
    """
    folder = _sidecar_folder(pbin_path)
    old_format = not _paths_from_sidecar_folder(meta)

    def resolve(path: str) -> str:
        if os.path.isabs(path):
            return path
        joined = os.path.join(folder, path)
        normal = os.path.normpath(joined)
        if os.path.exists(joined):
            # the short spelling where it is the same file (a `..` after a symlinked folder is not)
            return normal if os.path.exists(normal) and os.path.samefile(joined, normal) else joined
        if old_format and os.path.exists(path):
            return path
        return normal

    def resolve_entry(entry: dict) -> dict:
        if "object" in entry:  # read by URL: its name, as given
            return entry
        path = resolve(entry["path"])
        absolute = entry.get("absolute_path")
        if not os.path.exists(path) and isinstance(absolute, str) and os.path.exists(absolute):
            path = absolute
        return {**entry, "path": path}

    return _map_sidecar_paths(meta, resolve_entry)


def resolved_against(meta: dict | None, pbin_path: str | os.PathLike) -> str:
    """Where the relative paths of ``pbin_path``'s sidecar were looked for, for a "not found" message."""
    folder = _sidecar_folder(pbin_path) or os.curdir
    if meta is not None and not _paths_from_sidecar_folder(meta):
        older = f"of format {meta['format']}" if meta.get("format") else "without a format"
        return (f"resolved against {folder}, then {os.getcwd()}: a sidecar {older} names paths relative to where "
                f"it was written; rebuild it to make them relative to its folder")
    return f"resolved against {folder}"


# What readers take from a sidecar, and the JSON types it must have (None: may be null).
