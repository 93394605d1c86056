"""Exactly once: whether a ``.pbin``'s sidecar says that every byte of its inputs was packed once, and
whether those inputs are still the files (or objects) that were packed.

A sidecar lists its ``sources`` in packing order. A file's entries are either one whole-file entry or a
run of byte ranges (the shards of a big file) that must tile it from byte 0 to its end; a Parquet file's
shards are row-group ranges that must tile its row groups. A file listed twice is packed twice, an error
unless the sidecar records ``allow_duplicate_inputs``. A source is the same as when packed if its sha256
(a local file) or its ETag, version and size (an object, one ``HEAD``) are.

Cost: :func:`coverage_problems` is O(sources) with one ``stat`` per file; :func:`changed_source_problems`
reads every local source once to hash it.
"""

from __future__ import annotations

import os

from tokenmill.errors import TokenmillError
from tokenmill.files.identity import file_sha256
from tokenmill.files.objects import pin
from tokenmill.files.source import input_key
from tokenmill.formats.bin_idx import prefix_of
from tokenmill.formats.sidecar import SidecarRecord, SourceRecord, resolve_sidecar_paths, resolved_against, sidecar_path
from tokenmill.inputs.jsonl import source_sha256

__all__ = ["coverage_problems", "changed_source_problems"]


def coverage_problems(path: str | os.PathLike, meta: SidecarRecord, inputs: list[str] | None = None) -> list[str]:
    """Whether a ``.pbin``'s sidecar says that every input byte was packed exactly once (module docstring),
    from files as big as they are now. With ``inputs``, the files packed must be exactly these, in this
    order. ``meta`` is the sidecar as :func:`tokenmill.formats.pbin.read_sidecar` gives it: its relative paths count
    from ``path``'s folder.
    """
    sources = meta.get("sources")
    if sources is None:
        return [] if inputs is None else [f"{path}: its sidecar lists no sources to check against the inputs"]
    malformed = _malformed_sources(sources, meta)
    if malformed:
        return [f"{sidecar_path(path)}: {malformed}"]
    recorded, meta = meta, resolve_sidecar_paths(meta, path)
    sources = meta["sources"]
    problems = []
    counted = sum(source["documents"] for source in sources if "documents" in source)
    if all("documents" in source for source in sources) and counted != meta.get("documents"):
        problems.append(f"{path}: its sources hold {counted} documents, the file {meta.get('documents')}: "
                        f"documents from a file it does not list (a part merged without a sidecar?)")
    runs: list[tuple[str, list[dict]]] = []  # consecutive entries of one file: (path, entries)
    for source in sources:
        if runs and runs[-1][0] == source["path"] and _is_shard(source) and _is_shard(runs[-1][1][-1]):
            runs[-1][1].append(source)
        else:
            runs.append((source["path"], [source]))
    for file_path, entries in runs:
        size = entries[0].get("bytes")
        covered, (_, _, total, unit) = 0, _span(entries[0])  # every entry of one file has its total
        for start, end, _, _ in map(_span, entries):
            if end <= start:  # a shard in which no line starts
                continue
            if start != covered:
                what = "not packed" if start > covered else "packed twice"
                problems.append(f"{path}: {unit} {min(start, covered)}-{max(start, covered)} of {file_path} are {what}")
            covered = end
        if covered != total:
            problems.append(f"{path}: {unit} {covered}-{total} of {file_path} are not packed (of {total})")
        if "object" in entries[0]:  # read by URL: its identity is checked by _object_problems
            continue
        if not os.path.isfile(file_path):
            problems.append(f"{path}: source {file_path} not found ({resolved_against(recorded, path)}); its bytes "
                            f"cannot be checked")
        elif os.path.getsize(file_path) != size:
            problems.append(f"{path}: {file_path} is {os.path.getsize(file_path)} bytes now, {size} when packed")
    packed = [input_key(file_path) for file_path, _ in runs]  # one file however it is spelled or linked
    if meta.get("allow_duplicate_inputs") is not True:
        repeated = sorted({file_path for (file_path, _), key in zip(runs, packed) if packed.count(key) > 1})
        problems += [f"{path}: {file_path} is packed {packed.count(input_key(file_path))} times "
                     f"(allow_duplicate_inputs is off)" for file_path in repeated]
    if inputs is not None and packed != [input_key(file_path) for file_path in inputs]:
        missing = [file_path for file_path in inputs if input_key(file_path) not in packed]
        extra = [file_path for (file_path, _), key in zip(runs, packed)
                 if key not in {input_key(name) for name in inputs}]
        if missing:
            problems.append(f"{path}: {len(missing)} of its {len(inputs)} inputs are not packed in it "
                            f"(first: {missing[0]})")
        if extra:
            problems.append(f"{path}: it packs {len(extra)} files that are not its inputs (first: {extra[0]})")
        if not missing and not extra and len(packed) == len(inputs):
            problems.append(f"{path}: its inputs are packed in another order than given")
    return problems


def _malformed_sources(sources: object, meta: SidecarRecord) -> str | None:
    """What is wrong with the types of a sidecar's ``sources`` (hand-edited?), or None."""
    def pair(value: object) -> bool:
        return isinstance(value, list) and len(value) == 2 and all(isinstance(n, int) for n in value)

    if not isinstance(sources, list):
        return "sources: not a list"
    for k, source in enumerate(sources):
        if not isinstance(source, dict) or not isinstance(source.get("path"), str) \
                or not isinstance(source.get("bytes"), int):
            return f"sources[{k}]: needs a path and bytes"
        for key in ("byte_range", "row_group_range"):
            if key in source and not pair(source[key]):
                return f"sources[{k}].{key}: {source[key]!r} is not [start, end]"
    if "allow_duplicate_inputs" in meta and not isinstance(meta["allow_duplicate_inputs"], bool):
        return f"allow_duplicate_inputs: {meta['allow_duplicate_inputs']!r} is not true or false"
    return None


def _is_shard(source: SourceRecord) -> bool:
    return "byte_range" in source or "row_group_range" in source


def _span(source: SourceRecord) -> tuple[int, int, int, str]:
    """``(start, end, total, unit)``: the part of its file a sidecar source entry packed, a byte range of
    a JSONL file or a row-group range of a Parquet file (the whole file where the entry has none)."""
    if source.get("format") == "parquet":
        total = source.get("row_groups")
        return (*source.get("row_group_range", (0, total)), total, "row groups")
    return (*source.get("byte_range", (0, source.get("bytes"))), source.get("bytes"), "bytes")


def changed_source_problems(path: str | os.PathLike, meta: SidecarRecord) -> list[str]:
    """The sources of a ``.pbin`` (``meta``: its sidecar, paths resolved) that changed since they were packed:
    a local file whose sha256 differs, an object replaced under its URL. A file that is gone is
    :func:`coverage_problems`' finding; malformed sources are too."""
    sources = meta.get("sources", [])
    if _malformed_sources(sources, meta) is not None:
        return []
    problems = []
    for source in sources:
        if isinstance(source.get("object"), dict):  # read by URL, pinned to the version recorded
            problems += _object_problems(path, source)
        elif "sha256" in source and os.path.isfile(source["path"]) and source_sha256(source) != source["sha256"]:
            problems.append(f"{path}: source {source['path']} has changed since it was packed (sha256 differs)")
        if "index_sha256" in source:  # a Megatron prefix read in (tokens-in): its .idx too
            index = f"{prefix_of(source['path'])}.idx"
            if not os.path.isfile(index):
                problems.append(f"{path}: source {index} not found; its bytes cannot be checked")
            elif file_sha256(index) != source["index_sha256"]:
                problems.append(f"{path}: source {index} has changed since it was read (sha256 differs)")
    return problems


def _object_problems(path: str | os.PathLike, source: SourceRecord) -> list[str]:
    """A source read from object storage against the object under its URL now (one ``HEAD``): replaced
    (another ETag or version, or size) is a stale input, like a local file whose sha256 differs."""
    recorded = source["object"]
    try:
        now = pin(source["path"])  # the version read below, should its bytes be hashed
    except TokenmillError as exc:
        return [f"{path}: source {exc}"]
    if (now.etag, now.size) == (recorded.get("etag"), recorded.get("size")) and \
            (not recorded.get("version_id") or now.version_id == recorded["version_id"]) and \
            (not recorded.get("last_modified") or now.last_modified == recorded["last_modified"]):
        return []
    # Another ETag for the same size may be the same bytes uploaded another way (in parts, or not): the
    # sha256 of what was packed decides, at the cost of reading them again.
    if now.size == recorded.get("size") and "sha256" in source and source_sha256(source) == source["sha256"]:
        return []
    return [f"{path}: source {source['path']} has changed since it was packed (ETag {recorded.get('etag')} → "
            f"{now.etag}, {recorded.get('size')} → {now.size} bytes)"]
