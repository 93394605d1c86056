"""Human-readable views of tokenmill's files, down to one document or one training sample.

* ``describe(path)``: header, layout, counts and sidecar facts (the EOD among them) of a raw index or a
  ``.pbin``; of a file of another output format (a Megatron dataset, a datatrove ``.ds``, an OLMo folder), the
  lines its row gives (:mod:`tokenmill.formats.kinds`); of a cache folder, each split's cache: samples,
  sequence length, seed and the dataset path it was built for (:mod:`tokenmill.views.cache_folder`); of an SFT
  set's best-fit rows folder (``tokenmill best-fit PAIR.pbin``), its pair, rows, conversations and padding.
* ``show_document(path, i)``: document ``i`` decoded, with the source file and line (or Parquet row) it
  came from, and that line's id (its ``id`` field, or another); of an SFT ``.pbin`` (its sidecar names a loss
  mask) also the conversation's turns as the source line has them (role and text: OpenAI ``messages`` or ShareGPT
  ``conversations``) and its tokens in runs of the loss mask, each run decoded and marked trained or not.
* ``show_sample(prefix, k, cache)``: sample ``k`` of a split, resolved through the cached indices
  into the (sequence, offset, length) pieces it is made of, each with its source file and line; a
  blend's sample first through its ``dataset_index``/``dataset_sample_index`` to the dataset and
  sample it is drawn from; of an SFT best-fit rows folder, row ``k``: its conversations, each with its
  turns and its tokens in runs of the loss mask (as ``show_document``). ``sample_target`` finds the dataset
  and cache folder from a ``.pbin``, a Megatron prefix or a cache folder (with ``--best-fit``, the workflow's
  ``_best_fit`` sibling of the cache folder, where the packed index lies).

Provenance: the ``.pbin`` sidecar lists the sources in order with their document counts and the
line numbers of skipped lines, so document ``i`` maps to a file and a line exactly (when more lines
were skipped than the sidecar lists, the line is reported as unknown); an SFT sidecar lists every line that gave
no conversation, skipped as a bad line or dropped, so its document ``i`` names its own line whatever was left out
before it (:func:`tokenmill.formats.provenance.document_line`). A Megatron dataset written by
``to-megatron`` has the same documents in the same order, so its sequence ``i`` is ``.pbin``
document ``i``. The sidecar's relative paths (tokenizer, sources) count from its own folder
(:func:`tokenmill.formats.sidecar.resolve_sidecar_paths`), so every view is the same from any working directory;
a file that is not found there is named, with where it was looked for, instead of being left out.
Cost: O(1) per document or sample after reading the index; a cache folder's summary maps each
split's shuffle index once.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

from tokenmill.errors import TokenmillError
from tokenmill.formats.kinds import OUTPUT_FORMATS, TOKENS_READ_IN, format_of, source_unit
from tokenmill.formats.bin_idx import MMapIndexedDataset, prefix_of
from tokenmill.formats.pbin import PbinFile, read_sidecar
from tokenmill.formats.provenance import document_line
from tokenmill.formats.sidecar import SidecarRecord, resolve_sidecar_paths, resolved_against
from tokenmill.inputs.raw_index import read_index
from tokenmill.plan.layout import PACKED_FOLDER, build_of, cache_dir, megatron_prefix, packed_index_dir_of, packed_path
from tokenmill.views.cache_folder import cache_descriptions, describe_caches

__all__ = ["describe", "describe_caches", "show_document", "show_sample", "sample_target", "source_of",
           "pbin_of_megatron"]

_SNIPPET = 160


def pbin_of_megatron(prefix: str | os.PathLike) -> Path | None:
    """A build's :func:`~tokenmill.plan.layout.megatron_prefix` (or its ``.bin``/``.idx``, or another file
    :func:`~tokenmill.plan.layout.build_of` reads back) → its :func:`~tokenmill.plan.layout.packed_path` when the
    layout is the workflow's (:mod:`tokenmill.plan`) and that file exists."""
    found = build_of(prefix)
    if found is None:
        return None
    candidate = found[0] / packed_path(found[1])
    return candidate if candidate.exists() else None


def source_of(meta: SidecarRecord | None, document: int) -> tuple[str, int | None] | None:
    """(source file, 1-based line or None if unknown) of a ``.pbin`` document, from its sidecar; of tokens read
    in (``tokens-in``: a Megatron ``.bin`` or a ``.pbin``), the 0-based document of that file."""
    if not meta or "sources" not in meta:
        return None
    for source in meta["sources"]:
        if document < source["documents"] and source.get("format") in TOKENS_READ_IN:
            return source["path"], document
        if document < source["documents"]:
            if "loss_mask" in meta and "left_out" not in source and (meta.get("dropped") or meta.get("skipped")):
                return source["path"], None  # an SFT sidecar before /4: which lines were left out is not known
            # a shard's lines (a Parquet shard's rows) are numbered as in its whole file
            return source["path"], document_line(source, document)
        document -= source["documents"]
    return None


def _origin(meta: SidecarRecord | None, document: int) -> tuple[str, str] | None:
    """(source file, ``line N``) of a ``.pbin`` document (``row N`` of a Parquet file, ``line unknown``)."""
    origin = source_of(meta, document)
    if origin is None:
        return None
    unit = source_unit({source.get("format") for source in meta["sources"] if source["path"] == origin[0]})
    return origin[0], f"{unit} {origin[1] if origin[1] is not None else 'unknown'}"


def _sidecar(pbin_path: Path | None) -> dict | None:
    """The sidecar of ``pbin_path`` with its paths as reached from here, or None."""
    meta = read_sidecar(pbin_path) if pbin_path else None
    return resolve_sidecar_paths(meta, pbin_path) if meta else None


def _decoder(meta: SidecarRecord | None, tokenizer_path: str | None, pbin_path: Path | None) -> tuple:
    """``(decode, None)``, or ``(None, why there is no text)`` when no tokenizer file is known or found."""
    path = tokenizer_path or (meta or {}).get("tokenizer", {}).get("path")
    if not path:
        return None, "no tokenizer known: pass --tokenizer tokenizer.json"
    if not os.path.exists(path):
        where = "as given" if tokenizer_path else resolved_against(meta, pbin_path)
        return None, f"tokenizer not found: {path}, {where}; pass --tokenizer tokenizer.json"
    from tokenmill.tokenization.families import TokenizerSpec
    from tokenmill.tokenization.tokenizer import load_tokenizer

    recorded = TokenizerSpec.from_config({**(meta or {}).get("tokenizer", {}), "path": path})
    tokenizer = load_tokenizer(path if tokenizer_path else recorded).tokenizer
    return (lambda ids: tokenizer.decode([int(i) for i in ids], skip_special_tokens=False)), None


def _eod_line(meta: SidecarRecord) -> str:
    """What ends each document: the EOD, or why nothing does."""
    tokenizer = meta.get("tokenizer", {})
    if "loss_mask" in meta:
        return "eod: none appended (instruction tuning: each conversation ends as its template says)"
    if tokenizer.get("eod_id") is None:
        return ("eod: none (packed with --no-eod): documents run together in training, nothing marks where one "
                "ends")
    return f"eod: {tokenizer.get('eod_token')!r} = id {tokenizer['eod_id']}, ending every document"


def _snippet(text: str) -> str:
    text = json.dumps(text, ensure_ascii=False)[1:-1]
    return text if len(text) <= _SNIPPET else text[:_SNIPPET] + f"... ({len(text)} chars)"


def describe(path: str | os.PathLike) -> list[str]:
    """Header and counts of a ``.pbin``, a raw ``.idx``, a file of another output format (its row's lines), a
    cache folder or an SFT set's best-fit rows, one fact per line.

    Raises:
        TokenmillError: unreadable or of no known kind.
    """
    path = Path(path)
    if path.is_dir() and _is_sft_rows(path):
        return _describe_sft_rows(path)
    kind = format_of(path)
    if kind is not None:  # its row's lines; the .pbin's here, with its sidecar
        return kind.describe(path) if kind.describe is not None else _describe_pbin(path)
    if path.is_dir():
        return describe_caches(path)
    index_file = Path(f"{prefix_of(path)}.idx")
    lines = read_index(index_file)
    lengths = lines[:, 1]
    return [f"file: {index_file} (raw line index)", f"lines: {len(lines)}",
            f"line bytes: min {int(lengths.min()) if len(lines) else 0}, max {int(lengths.max()) if len(lines) else 0}"]


def _describe_pbin(path: Path) -> list[str]:
    """A ``.pbin``'s layout and counts, and its sidecar's tokenizer, EOD, skipped lines and sources."""
    pbin, meta = PbinFile(path), _sidecar(path)
    lines = [f"file: {path}", f"layout: {pbin.layout.name} (data at byte {pbin.layout.data_offset}, "
                              f"{pbin.layout.data_bytes} bytes)",
             f"token width: {pbin.token_width} bytes", f"documents: {pbin.num_documents}",
             f"tokens: {pbin.num_tokens}"]
    if not meta:
        return lines
    tokenizer = meta.get("tokenizer", {})

    def found(entry: dict) -> str:  # (an object, recorded with its version, is looked up by verify, not here)
        file = str(entry.get("path"))
        return file if "object" in entry or os.path.exists(file) else \
            f"{file} (not found, {resolved_against(meta, path)})"

    kind = f", {tokenizer['type']} (as {tokenizer.get('reference')} encodes)" if tokenizer.get("type") else ""
    lines += [f"tokenizer: {found(tokenizer)} "
              f"(sha256 {str(tokenizer.get('sha256'))[:16]}...), vocab {tokenizer.get('vocab_size')}{kind}",
              _eod_line(meta), f"skipped lines: {meta.get('skipped', {}) or 'none'}"]
    return lines + [f"source: {found(s)} ({s['bytes']} bytes, {s['documents']} documents)"
                    for s in meta.get("sources", [])]


def _is_sft_rows(folder: Path) -> bool:
    from tokenmill.best_fit.sft_packing import SFT_PACKING_NAMES

    return (folder / SFT_PACKING_NAMES["description"]).is_file()


def _sft_rows(folder: Path) -> tuple[dict, np.ndarray, np.ndarray, Path]:
    """A folder of SFT rows: ``(description, pieces, sample_offsets, its pair's .pbin)``; the pair as the
    description names it, else (a folder moved with its pair) the file of that name beside the folder."""
    from tokenmill.best_fit.sft_packing import load_sft_best_fit

    description, pieces, offsets = load_sft_best_fit(folder)
    pbin = Path(str(description.get("pbin")))
    if not pbin.exists() and (folder.parent / pbin.name).exists():
        pbin = folder.parent / pbin.name
    return description, pieces, offsets, pbin


def _describe_sft_rows(folder: Path) -> list[str]:
    description, pieces, offsets, pbin = _sft_rows(folder)
    rows, length = len(offsets) - 1, description.get("sequence_length")
    return [f"SFT best-fit rows: {folder} (of {pbin}{'' if pbin.exists() else ', not found'})",
            f"rows: {rows} of {length} tokens, {len(pieces)} conversations, {description.get('tokens')} tokens",
            f"padding: {description.get('padding')} tokens ({100 * description.get('padding_share', 0):.1f}%; one "
            f"conversation per row would pad {100 * description.get('unpacked_padding_share', 0):.1f}%)"]


def _packed_row(pieces: np.ndarray, offsets: np.ndarray, row: int, pbin_path: Path | None,
                tokenizer_path: str | None, refusal: str) -> tuple[list, SidecarRecord | None, object, str | None]:
    """Row ``row`` of packed ``pieces``/``offsets`` as ``(pieces as lists, the .pbin's sidecar, decode, why no
    text)``; ``refusal`` raised where there is no such row."""
    if not 0 <= row < len(offsets) - 1:
        raise TokenmillError(refusal)
    meta = _sidecar(pbin_path)
    return (pieces[offsets[row]:offsets[row + 1]].tolist(), meta, *_decoder(meta, tokenizer_path, pbin_path))


def _sft_row(folder: Path, row: int, tokenizer_path: str | None) -> list[str]:
    """Row ``row`` of a folder of SFT rows: its conversations, each with its source line, turns and trained
    tokens (:func:`_conversation_lines`)."""
    description, pieces, offsets, pbin_path = _sft_rows(folder)
    members, meta, decode, no_text = _packed_row(pieces, offsets, row, pbin_path, tokenizer_path,
                                                 f"{folder}: {len(offsets) - 1} SFT rows, no row {row}")
    pbin = PbinFile(pbin_path)
    length = int(description["sequence_length"])
    used = sum(count for _, _, count in members)
    lines = [f"row {row} of {folder} (seq {length}): {len(members)} conversations, {used} tokens, "
             f"{length - used} padding"]
    if not decode:
        lines.append(f"  text: ({no_text})")
    for document, _, count in members:
        origin = _origin(meta, document)
        lines.append(f"  conversation {document}: {count} tokens"
                     + (f", from {origin[0]} {origin[1]}" if origin else ""))
        if meta and "loss_mask" in meta:
            lines += [f"    {line}" for line in _conversation_lines(pbin_path, meta, document, pbin.document(document),
                                                                   decode, origin)]
    return lines


def _document_id(source: str, line: int, id_field: str) -> str | None:
    """The ``id_field`` of line (Parquet row) ``line`` of a source, or None where the line lacks it or
    the source cannot be read from here. Cost: a read of the source up to that line."""
    from tokenmill.inputs.jsonl import iter_lines
    from tokenmill.formats.provenance import field_keys, value_of

    keys = field_keys(id_field)
    try:
        return next((value_of(text, keys) for number, text in iter_lines(source) if number == line), None)
    except (OSError, TokenmillError):
        return None


def show_document(path: str | os.PathLike, document: int, tokenizer_path: str | None = None,
                  id_field: str = "id") -> list[str]:
    """Document ``document`` of a ``.pbin`` or of a dataset of another output format whose row reads documents
    (Megatron's, datatrove's): length, ids, text, source and line, and the line's ``id_field`` where it has one
    (a format of other documents than the ``.pbin``'s, datatrove's, names no source; decoding it needs
    ``tokenizer_path``).

    Raises:
        TokenmillError: unreadable file or a document number out of range.
    """
    path = Path(path)
    kind = format_of(path)
    if kind is None or kind.document is None:
        raise TokenmillError(f"{path}: no dataset whose documents inspect --doc reads (the formats "
                             f"{', '.join(name for name, row in OUTPUT_FORMATS.items() if row.document)})")
    tokens = kind.document(path, document)
    pbin_path = path  # the .pbin behind its documents: itself, the build's beside a format of the same documents
    if kind.made_from_pbin:
        pbin_path = pbin_of_megatron(path) if kind.same_documents else None
    meta = _sidecar(pbin_path)
    lines = [f"document {document}: {len(tokens)} tokens", f"ids: {tokens[:12].tolist()}"
                                                          f"{' ...' if len(tokens) > 12 else ''}"]
    decode, no_text = _decoder(meta, tokenizer_path, pbin_path)
    lines.append(f"text: {_snippet(decode(tokens))}" if decode else f"text: ({no_text})")
    origin = _origin(meta, document)
    if origin:
        lines.append(f"source: {origin[0]}, {origin[1]}")
        line = source_of(meta, document)[1]
        document_id = _document_id(origin[0], line, id_field) if line and id_field else None
        if document_id is not None:  # named "id", with its field where that is another
            lines.append(f"id: {document_id}" if id_field in ("id", ".id") else f"id ({id_field}): {document_id}")
    if meta and "loss_mask" in meta and pbin_path is not None:
        lines += _conversation_lines(pbin_path, meta, document, tokens, decode, origin)
    return lines


def _conversation_lines(pbin_path: Path, meta: SidecarRecord, document: int, tokens: np.ndarray, decode,
                        origin: tuple[str, str] | None) -> list[str]:
    """An SFT document's turns as its source line has them (role and text), then its tokens in runs of the same
    loss-mask flag, each run's text decoded: what the model is trained to produce and what it only reads."""
    from tokenmill.training.sft_datasets import loss_mask_path

    lines = []
    line = source_of(meta, document)[1] if origin else None
    turns = _turns(origin[0], line) if line else None
    if turns:
        lines.append(f"turns ({len(turns)}, as the source line has them):")
        lines += [f"  {number} {role}: {_snippet(text)}" for number, (role, text) in enumerate(turns)]
    mask_path = loss_mask_path(pbin_path)
    try:
        trained = PbinFile(mask_path).document(document).astype(bool)
    except (OSError, TokenmillError) as error:
        return [*lines, f"loss mask: cannot read {mask_path} ({str(error).splitlines()[0]})"]
    if len(trained) != len(tokens):
        return [*lines, f"loss mask: {mask_path} has {len(trained)} flags for this document's {len(tokens)} tokens"]
    cuts = [0, *(np.flatnonzero(np.diff(trained.astype(np.int8))) + 1).tolist(), len(tokens)]
    lines.append(f"loss mask: {int(trained.sum())} of {len(tokens)} tokens trained, in {len(cuts) - 1} runs:")
    for start, end in zip(cuts, cuts[1:]):
        if start == end:
            continue
        text = _snippet(decode(tokens[start:end])) if decode else "(no text)"
        lines.append(f"  tokens {start}-{end - 1} {'trained' if trained[start] else 'not trained'}: {text}")
    return lines


def _turns(source: str, line: int) -> list[tuple[str, str]] | None:
    """``(role, text)`` of each turn of a source line's ``messages`` (OpenAI) or ``conversations`` (ShareGPT), or
    None where the line has neither or cannot be read from here; a turn's content parts joined, its tool calls
    shown as JSON."""
    from tokenmill.inputs.jsonl import iter_lines

    try:
        text = next((text for number, text in iter_lines(source) if number == line), None)
        record = json.loads(text) if text is not None else None
    except (OSError, TokenmillError, ValueError):
        return None
    if not isinstance(record, dict):
        return None
    turns = record.get("messages") if isinstance(record.get("messages"), list) else record.get("conversations")
    if not isinstance(turns, list):
        return None
    shown = []
    for turn in turns:
        if not isinstance(turn, dict):
            return None
        role = turn.get("role", turn.get("from"))
        content = turn.get("content", turn.get("value"))
        if isinstance(content, list):  # parts: their text
            content = "".join(part.get("text", "") if isinstance(part, dict) else str(part) for part in content)
        text = content if isinstance(content, str) else ""
        if turn.get("tool_calls"):
            text += (" " if text else "") + "tool calls: " + json.dumps(turn["tool_calls"], ensure_ascii=False)
        shown.append((str(role), text))
    return shown


def sample_target(path: str | os.PathLike, cache: str | os.PathLike | None = None, seq_length: int | None = None,
                  seed: int | None = None) -> tuple[Path | None, Path]:
    """(Megatron prefix or None, cache folder) that ``inspect PATH --sample K`` reads.

    ``path`` is a cache folder (its descriptions name the dataset), a Megatron prefix or a ``.pbin``
    of the workflow's layout (:func:`~tokenmill.plan.layout.packed_path` →
    :func:`~tokenmill.plan.layout.megatron_prefix`); without ``cache`` the folder is the workflow's
    :func:`~tokenmill.plan.layout.cache_dir`.

    Raises:
        TokenmillError: a ``.pbin`` without its Megatron dataset, or no way to find the cache folder.
    """
    path = Path(path)
    if path.is_dir() and cache is None:
        return None, path
    if cache is not None and not Path(cache).is_dir():
        raise TokenmillError(f"{cache}: no such cache folder")
    if not path.exists() and not path.with_name(path.name + ".idx").exists():
        raise TokenmillError(f"{path}: no such .pbin, Megatron dataset or cache folder")
    found, kind = build_of(path), format_of(path)
    if kind is not None and not kind.made_from_pbin:  # the .pbin: its build's Megatron dataset
        if found is None:
            raise TokenmillError(f"{path}: samples come from its Megatron dataset; give its prefix (this .pbin is "
                                 f"not in the workflow's {PACKED_FOLDER}/ to find it by)")
        prefix = found[0] / megatron_prefix(found[1])
        if not prefix.with_name(prefix.name + ".idx").exists():
            raise TokenmillError(f"{path}: samples come from its Megatron dataset, and {prefix}.idx does not exist")
    else:
        prefix = Path(prefix_of(path))
    if cache is None:
        if seq_length is None or seed is None or found is None:
            raise TokenmillError(f"--sample needs a cache folder: --cache, or --seq-length and --seed to find the "
                                 f"workflow's {cache_dir('<name>', '<L>', '<S>')}")
        cache = found[0] / cache_dir(found[1], seq_length, seed)
    return prefix, Path(cache)


def _local_prefix(dataset_path: str, cache: Path) -> Path:
    """The Megatron dataset a cache description names, here: for a cache folder of the workflow's layout,
    the same name in its own Megatron folder (whose ``.pbin`` and sidecar give each document's text and
    source), else the path as hashed (how the training job spells it, e.g. on a cluster file system, where a
    copy of the files may lie without them)."""
    candidates = [Path(dataset_path)]
    found = build_of(cache) or build_of(cache.resolve())  # as given where it shows the layout: paths as spelled
    if found is not None:  # cache_dir(build, L, S) → megatron folder/<the hashed path's name>
        candidates.insert(0, found[0] / Path(megatron_prefix("")).parent / Path(dataset_path).name)
    existing = [candidate for candidate in candidates if candidate.with_name(candidate.name + ".idx").exists()]
    if existing:
        spelled = Path(dataset_path).with_name(Path(dataset_path).name + ".idx")
        if spelled.exists() and os.path.samefile(spelled, existing[0].with_name(existing[0].name + ".idx")):
            return Path(dataset_path)  # the same files: as the description spells them
        return existing[0]
    raise TokenmillError(f"{cache}: its dataset {dataset_path} is not here (looked for "
                         f"{' and '.join(f'{candidate}.idx' for candidate in candidates)}); name it: "
                         f"tokenmill inspect PREFIX --sample K --cache {cache}")


def show_sample(prefix: str | os.PathLike | None, sample: int, cache: str | os.PathLike, split: str = "train",
                tokenizer_path: str | None = None, best_fit: str | None = None) -> list[str]:
    """Sample ``sample`` of a split: the pieces of sequences it is made of, decoded, with their sources.

    A blend cache folder traces the blend's sample to the dataset and sample it is drawn from first.

    Args:
        prefix: the Megatron dataset, or None to take it from the cache's description.
        sample: the sample number as the trainer sees it (before the shuffle index maps it).
        cache: the folder with the split's GPTDataset or BlendedDataset cache.
        split: ``train``, ``valid`` or ``test``.
        best_fit: the sample of the split's packed index of this long-document strategy instead
            (:mod:`tokenmill.best_fit.packed_index`); in a packed blend's folder, traced to its dataset's first
            (:mod:`tokenmill.best_fit.packed_blend`).

    Raises:
        TokenmillError: no (or more than one) cache of that split in ``cache``, or ``sample`` out of range.
    """
    from tokenmill.megatron.index_cache import load_cache

    cache = Path(cache)
    if prefix is None and _is_sft_rows(cache):
        return _sft_row(cache, sample, tokenizer_path)
    if best_fit is not None:
        return _packed_sample(prefix, sample, _packed_folder(cache, split, best_fit), split, best_fit, tokenizer_path)
    blends = cache_descriptions(cache, "BlendedDataset", split)
    if len(blends) > 1:
        raise TokenmillError(f"{cache}: {len(blends)} BlendedDataset {split} caches; expected one")
    if blends and prefix is None:
        (description_path, text), = blends
        arrays = load_cache(cache, text, split, ("dataset_index", "dataset_sample_index"), "BlendedDataset")
        if arrays is None:
            raise TokenmillError(f"{description_path}: its dataset_index/dataset_sample_index files are missing")
        if not 0 <= sample < len(arrays["dataset_index"]):
            raise TokenmillError(f"{cache}: the {split} blend has {len(arrays['dataset_index'])} samples, "
                                 f"no sample {sample}")
        part, part_sample = int(arrays["dataset_index"][sample]), int(arrays["dataset_sample_index"][sample])
        part_identifiers = json.loads(text)["datasets"][part]
        matches = [(path, gpt_text)
                   for path, gpt_text in cache_descriptions(cache, "GPTDataset", split, every_name=True)
                   if json.loads(gpt_text) == part_identifiers]
        if not matches:
            raise TokenmillError(f"{description_path}: no GPTDataset cache of its dataset {part} in {cache}")
        dataset_path = part_identifiers["dataset_path"]
        return ([f"sample {sample} of the {split} blend = dataset {part} ({dataset_path}), its sample {part_sample}"]
                + _gpt_sample(_local_prefix(dataset_path, cache), part_sample, cache, matches[0][1], split,
                              tokenizer_path))
    gpts = cache_descriptions(cache, "GPTDataset", split)
    if not gpts:
        raise TokenmillError(f"{cache}: no GPTDataset {split} cache (no *-GPTDataset-{split}-description.txt)")
    if len(gpts) > 1:
        from tokenmill.verify.index_caches import duplicate_caches

        raise TokenmillError(duplicate_caches(cache).get(("GPTDataset", split))
                             or f"{cache}: {len(gpts)} GPTDataset {split} caches; expected exactly one")
    text = gpts[0][1]
    if prefix is None:
        prefix = _local_prefix(json.loads(text)["dataset_path"], cache)
    return _gpt_sample(Path(prefix), sample, cache, text, split, tokenizer_path)


def _packed_folder(cache: Path, split: str, strategy: str) -> Path:
    """Where a split's packed index (or packed blend) of ``strategy`` lies: ``cache`` where it holds one, else
    the workflow's ``_best_fit`` sibling of a cache folder (:func:`tokenmill.plan.packed_index_dir_of`)."""
    from tokenmill.best_fit.packed_blend import packed_blend_names
    from tokenmill.best_fit.packed_index import packed_index_names

    names = (packed_index_names(strategy, split)["description"], packed_blend_names(strategy, split)["description"])
    sibling = packed_index_dir_of(cache)
    if sibling is None or any((cache / name).is_file() for name in names):
        return cache
    return sibling


def _packed_sample(prefix: str | os.PathLike | None, sample: int, cache: Path, split: str, strategy: str,
                   tokenizer_path: str | None) -> list[str]:
    from tokenmill.best_fit.packed_blend import dataset_folder, load_packed_blend, packed_blend_names
    from tokenmill.best_fit.packed_index import document_token_ranges, load_packed_index

    if prefix is None and (cache / packed_blend_names(strategy, split)["description"]).is_file():
        blend, dataset_index, dataset_sample_index = load_packed_blend(cache, strategy, split)
        if not 0 <= sample < len(dataset_index):
            raise TokenmillError(f"{cache}: the {split} packed blend has {len(dataset_index)} samples, no sample "
                                 f"{sample}")
        part, part_sample = int(dataset_index[sample]), int(dataset_sample_index[sample])
        return ([f"sample {sample} of the {split} packed blend = dataset {part} "
                 f"({blend['datasets'][part]['dataset']}), its packed sample {part_sample}"]
                + _packed_sample(None, part_sample, dataset_folder(cache, part), split, strategy, tokenizer_path))
    description, pieces, offsets = load_packed_index(cache, strategy, split)
    prefix = Path(prefix if prefix is not None else description["dataset"])
    dataset = MMapIndexedDataset(prefix)
    members, meta, decode, no_text = _packed_row(
        pieces, offsets, sample, pbin_of_megatron(prefix), tokenizer_path,
        f"{cache}: the {split} packed index has {len(offsets) - 1} samples, no sample {sample}")
    length = int(description["sequence_length"])
    used = sum(count for _, _, count in members)
    lines = [f"sample {sample} of {split}, best fit (seq {length}, seed {description['seed']}, "
             f"{strategy}): {len(members)} documents, {used} tokens, "
             f"{length - used} padding"]
    if not decode:
        lines.append(f"  text: ({no_text})")
    starts, sizes = document_token_ranges(dataset)  # documents, not sequences: a document may hold several
    for document, offset, count in members:
        origin = _origin(meta, document)
        where = f", from {origin[0]} {origin[1]}" if origin else ""
        size = int(sizes[document])
        whole = "whole" if count == size else f"tokens {offset}-{offset + count - 1} of {size}"
        lines.append(f"  document {document}: {count} tokens ({whole}){where}")
        if decode:
            lines.append(f"    {_snippet(decode(dataset.tokens_at(int(starts[document]) + offset, count)))}")
    return lines


def _check_cache_of(dataset: MMapIndexedDataset, prefix: Path, cache: Path, text: str, split: str,
                    arrays: dict) -> None:
    """Refuse a cache built for another dataset: its fingerprint (tokenmill's caches), else its
    document index reaching past the dataset (a cache Megatron built)."""
    from tokenmill.megatron.index_cache import cache_fingerprint, dataset_fingerprint

    fingerprint = cache_fingerprint(cache, text, split)
    if fingerprint is not None and fingerprint != dataset_fingerprint(dataset):
        raise TokenmillError(f"{cache}: its {split} cache was built from another dataset than {prefix} "
                             f"(its fingerprint differs); name the cache folder of {prefix}")
    document_index = arrays["document_index"]
    if len(document_index) and int(document_index.max()) >= len(dataset):
        raise TokenmillError(f"{cache}: its {split} cache names sequence {int(document_index.max())}, {prefix} "
                             f"has {len(dataset)}: it was built from another dataset")


def _gpt_sample(prefix: Path, sample: int, cache: Path, text: str, split: str,
                tokenizer_path: str | None) -> list[str]:
    from tokenmill.megatron.index_cache import load_cache
    from tokenmill.megatron.sample_pieces import sample_pieces

    identifiers = json.loads(text)
    arrays = load_cache(cache, text, split)
    if arrays is None:
        raise TokenmillError(f"{cache}: the {split} cache of {identifiers['dataset_path']} misses index files")
    dataset = MMapIndexedDataset(prefix)
    _check_cache_of(dataset, prefix, cache, text, split, arrays)
    samples = len(arrays["shuffle_index"])
    if not 0 <= sample < samples:
        raise TokenmillError(f"{cache}: the {split} split has {samples} samples, no sample {sample}")
    pbin_path = pbin_of_megatron(prefix)
    meta = _sidecar(pbin_path)
    decode, no_text = _decoder(meta, tokenizer_path, pbin_path)
    lines = [f"sample {sample} of {split} (seq {identifiers['sequence_length']}, seed {identifiers['random_seed']}) "
             f"= built sample {int(arrays['shuffle_index'][sample])}"]
    if not decode:
        lines.append(f"  text: ({no_text})")
    # extra=1: Megatron's add_extra_token, which the cache's sample_index assumes (as Nanoset's default)
    pieces = sample_pieces(arrays["document_index"], arrays["sample_index"], arrays["shuffle_index"], dataset.sizes,
                           sample, extra=1)
    for sequence, offset, length in pieces:
        origin = _origin(meta, sequence)
        where = f", from {origin[0]} {origin[1]}" if origin else ""
        # which tokens of which sequence (a Megatron sequence is the .pbin document of that number)
        lines.append(f"  sequence {sequence}: tokens {offset}-{offset + length - 1} of its "
                     f"{int(dataset.sizes[sequence])} ({length} tokens){where}")
        if decode:
            lines.append(f"    {_snippet(decode(dataset.get(sequence, offset, length)))}")
    return lines
