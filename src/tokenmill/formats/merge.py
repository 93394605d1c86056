"""Merge ``.pbin`` files: their tokens concatenated in order, their sidecars combined (Modalities 0.5.0 layout).

Data sections are block-copied (:func:`tokenmill.formats.pbin.copy_bytes`, 16 MiB blocks); each file's index is
shifted by the data bytes before it (Modalities' own merge shifts by 12 bytes too few; docs/algorithms.md
§5). Parts packed differently (another tokenizer, text pattern, EOD) are refused: their merge would describe one
dataset with two settings. The bad-line policy is no such setting: a part packed under ``error`` has no bad line
and is what ``skip`` makes of it; under ``on_bad_line="error"`` a part with skipped lines is refused instead, as a
fresh pack would have stopped there. The merged sidecar lists the parts, their sources in order, summed counts and
skipped lines, and ``eod_in_text`` ranges shifted to the merged numbering.

Cost: one pass over the parts' bytes, and each part's index unpickled once.
"""

from __future__ import annotations

import os


from tokenmill import FORMAT_VERSIONS
from tokenmill.errors import TokenmillError
from tokenmill.files.identity import refuse_inputs_as_outputs
from tokenmill.formats.pbin import LAYOUT_050, PbinFile, PbinWriter, read_sidecar
from tokenmill.formats.sidecar import SidecarRecord, resolve_sidecar_paths, sidecar_path, skipped_under_error
from tokenmill.progress import Progress

__all__ = ["merge_pbin"]


def merge_pbin(out_path: str | os.PathLike, in_paths: list[str | os.PathLike],
               force: bool = False, on_bad_line: str | None = None) -> SidecarRecord:
    """Concatenate ``.pbin`` files, in the order given, into ``out_path`` (0.5.0 layout).

    Data sections are block-copied; each file's index is shifted by the data bytes before it
    (Modalities' merge shifts by 12 bytes too few; docs/algorithms.md §5). Sidecars, where present,
    are combined into the output's sidecar, which lists the parts; their relative paths are rebased
    onto the output's folder.

    Args:
        out_path: the merged ``.pbin``.
        in_paths: the parts, in order.
        force: replace ``out_path`` if it exists (never when it is one of the parts).
        on_bad_line: ``"error"`` refuses a part whose sidecar lists skipped lines (naming its first one and why);
            ``"skip"`` or None takes the parts as they are.

    Returns:
        The output sidecar.

    Raises:
        TokenmillError: no inputs, an existing output without ``force``, an output that is an
            input, an input that is not a ``.pbin``, differing token widths or tokenizers, a part with skipped
            lines under ``on_bad_line="error"``.
    """
    if not in_paths:
        raise TokenmillError("merge needs at least one input file")
    refuse_inputs_as_outputs([out_path, sidecar_path(out_path)],
                             [*in_paths, *(sidecar_path(path) for path in in_paths)])
    if not force and os.path.exists(out_path):
        raise TokenmillError(f"{out_path}: exists; pass --force to replace it")
    parts = [PbinFile(path) for path in in_paths]
    widths = {part.token_width for part in parts}
    if len(widths) > 1:
        described = ", ".join(f"{part.path}: {part.token_width}" for part in parts)
        raise TokenmillError(f"cannot merge .pbin files with different token widths ({described})")
    # the parts' paths as reached from here: the writer records them relative to the output's folder
    metas = [meta and resolve_sidecar_paths(meta, path) for path, meta in
             ((path, read_sidecar(path)) for path in in_paths)]
    _refuse_unlike_parts(in_paths, metas)
    if on_bad_line == "error":
        for path, meta in zip(in_paths, metas):
            problem = meta and skipped_under_error(meta, path)
            if problem:
                raise TokenmillError(problem)
    token_width = widths.pop()
    with PbinWriter(out_path, token_width) as writer, \
            Progress(f"merge {out_path}", sum(part.layout.data_bytes for part in parts)) as progress:
        for part in parts:
            writer.append_file(part, progress.update)
        writer.sidecar = _merged_sidecar(parts, metas, token_width)
    return {**writer.sidecar, "file": writer.identity}


# What a merged sidecar states once for all parts: parts that differ in any of these would be
# described wrongly (the first part's value for all), so they are refused.
_SHARED_PACK_SETTINGS = ("text", "max_line_bytes")
# (a type's options too: BertWordPieceCase and LowerCase read one vocab.txt of one sha256 and differ)
_SHARED_TOKENIZER_SETTINGS = ("sha256", "eod_id", "add_special_tokens", "type", "tiktoken_pattern",
                              "tiktoken_num_special_tokens", "vocab_size")


def _refuse_unlike_parts(in_paths: list, metas: list[dict | None]) -> None:
    """Refuse to merge parts whose sidecars disagree on how their tokens were made, or a part without
    a sidecar beside parts with one (its documents would come from files no sidecar lists).

    Raises:
        TokenmillError: naming the two parts and the setting.
    """
    known = [(path, meta) for path, meta in zip(in_paths, metas) if meta]
    if known and len(known) < len(in_paths):
        bare = next(path for path, meta in zip(in_paths, metas) if not meta)
        raise TokenmillError(f"{bare}: has no sidecar, unlike {known[0][0]}; cannot tell which files its documents "
                             f"come from (merge parts that all have one, or none)")
    for path, meta in known[1:]:
        first_path, first = known[0]
        settings = [(key, meta.get(key), first.get(key)) for key in _SHARED_PACK_SETTINGS]
        settings += [(f"tokenizer {key}", meta.get("tokenizer", {}).get(key), first.get("tokenizer", {}).get(key))
                     for key in _SHARED_TOKENIZER_SETTINGS]
        for key, value, first_value in settings:
            if value != first_value:
                raise TokenmillError(f"{path}: packed with {key} {value!r}, {first_path} with {first_value!r}; "
                                     f"cannot merge parts made differently")


def _merged_sidecar(parts: list[PbinFile], metas: list[SidecarRecord | None], token_width: int) -> SidecarRecord:
    """The sidecar of a merge: shared tokenizer facts, summed counts, sources and parts in order."""
    known = [meta for meta in metas if meta]
    meta: SidecarRecord = {
        "format": FORMAT_VERSIONS["pbin"],
        "layout": LAYOUT_050,
        "token_width": token_width,
        "documents": sum(part.num_documents for part in parts),
        "tokens": sum(part.num_tokens for part in parts),
        "parts": [{"path": str(part.path), "documents": part.num_documents, "tokens": part.num_tokens}
                  for part in parts],
    }
    if known:
        for key in ("tokenizer", *_SHARED_PACK_SETTINGS):
            if key in known[0]:
                meta[key] = known[0][key]
        meta["sources"] = [source for m in known for source in m.get("sources", [])]
        # a file in two parts is a duplicate the merge makes: allowed only where every part allows them
        meta["allow_duplicate_inputs"] = all(m.get("allow_duplicate_inputs") is True for m in known)
        engines = [m["engine"] for m in known if isinstance(m.get("engine"), dict)]
        if engines:
            names = sorted({engine.get("name") for engine in engines} - {None})
            meta["engine"] = {"name": "+".join(names), "reason": "; ".join(sorted({engine.get("reason", "")
                                                                                   for engine in engines})),
                              "checked_documents": sum(engine.get("checked_documents", 0) for engine in engines),
                              "mismatches": sum(engine.get("mismatches", 0) for engine in engines)}
        skipped: dict[str, int] = {}
        for m in known:
            for reason, count in m.get("skipped", {}).items():
                skipped[reason] = skipped.get(reason, 0) + count
        meta["skipped"] = skipped
        first_document, eod_in_text, empty_texts = 0, [], []
        for part, part_meta in zip(parts, metas):
            eod_in_text += [[first + first_document, stop + first_document]
                            for first, stop in (part_meta or {}).get("eod_in_text", [])]
            empty_texts += [[first + first_document, stop + first_document]
                            for first, stop in (part_meta or {}).get("empty_texts", [])]
            first_document += part.num_documents
        meta["eod_in_text"] = _joined_ranges(eod_in_text)
        if empty_texts:
            meta["empty_texts"] = _joined_ranges(empty_texts)
        within = [m.get("eod_within_documents") for m in metas if m is not None]
        if len(within) == len(metas) and all(isinstance(count, int) for count in within):
            meta["eod_within_documents"] = sum(within)
    return meta


def _joined_ranges(ranges: list[list[int]]) -> list[list[int]]:
    """Sorted ranges with the touching ones joined (a range cut by a part boundary is one again)."""
    joined: list[list[int]] = []
    for first, stop in ranges:
        if joined and joined[-1][1] == first:
            joined[-1][1] = stop
        else:
            joined.append([first, stop])
    return joined
