"""OLMo-core's token files (dolma's layout), converted from a ``.pbin``: raw token arrays, a per-document
``csv.gz``, and a small ``metadata.json``.

Layout written into the output folder (facts from OLMo-core 3.0.0 and dolma; docs/formats.md)::

    part-00000.npy      raw little-endian token ids with no header (OLMo-core maps it with np.memmap; not a
                        NumPy .npy despite the name): the documents back to back, each ending with the EOS id;
                        uint16 where the vocabulary has at most 65,536 ids, else uint32
    part-00000.csv.gz   one line per document of the part, "start,end,id,src,loc": its tokens [start, end) in
                        the part, its id (the JSON field ``id_field`` of its line where present, else its line
                        number), its source file as the sidecar records it, and its line (a Parquet file's row)
    part-00000.label_mask.npy
                        of an SFT set (tokenmill sft): one byte per token, 1 where the token is a label
                        (trained), as OLMo-core's label_mask_paths read it (np.bool_)
    metadata.json       format, dtype, EOS id (no BOS after it: null), vocabulary size, tokenizer sha256,
                        how many conversations got the EOS appended, and per part its tokens and documents

OLMo-core finds documents by their EOS. An SFT set rendered by a model's chat template mostly does not end a
conversation with it (ChatML ends with ``<|im_end|>\n``, Gemma with ``<end_of_turn>\n``), and a template whose
EOS closes every turn (ChatML's ``<|im_end|>``, Llama 3's ``<|eot_id|>``) would have each conversation cut at every
turn. So for such a set the EOS is the tokenizer's ``eod`` where set (else the template's ``eos_token``); a
conversation holding it before its end is refused in one line; one not ending with it gets it appended in the parts,
with label 0 (the template did not write it; open-instruct's OLMo-core templates end the last turn with it
themselves). The ``.pbin`` pair keeps transformers' ids.

A part holds at most ``max_tokens`` tokens (512 Mi by default, as dolma's), never a document split in two
(a longer document gets a part of its own). The ``.gz`` has no timestamp and no file name, so the same
``.pbin`` gives the same bytes. Every file is written under a temporary name and renamed; parts of an
earlier conversion beyond the new count are removed.

:func:`verify_olmo` checks a folder's parts against its ``metadata.json`` and, given the ``.pbin`` it was
made from, against that file's tokens and documents (``tokenmill verify DIR --made-from PBIN``).

Cost: the tokens are copied once, part by part (a widening cast where the ``.pbin`` stores 1 byte per
token); each source's lines are read once where ids are taken from a JSON field. Verifying reads the
parts and the ``.pbin`` once.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import os
import re
from pathlib import Path

import numpy as np

from tokenmill import FORMAT_VERSIONS
from tokenmill.config import default
from tokenmill.errors import TokenmillError
from tokenmill.files.atomic import atomic_output
from tokenmill.formats.document_blocks import BLOCK_TOKENS as _BLOCK_TOKENS  # a 512 Mi-token part: never whole
from tokenmill.formats.dtypes import UINT16_VOCAB_LIMIT
from tokenmill.formats.pbin import PbinFile, read_sidecar
from tokenmill.formats.provenance import document_lines, field_values
from tokenmill.formats.sidecar import SidecarRecord, SourceRecord, resolve_sidecar_paths

__all__ = ["DEFAULT_MAX_TOKENS", "olmo_dtype", "pbin_to_olmo", "is_olmo_folder", "verify_olmo",
           "describe_olmo"]

DEFAULT_MAX_TOKENS = default("datasets.*.olmo_max_tokens")  # dolma's cap per file, 512 Mi: 1 GiB of uint16
# What this module writes (a user's other files in the folder stay)
_PART_NAME = re.compile(r"part-[0-9]{5}\.(npy|csv\.gz|label_mask\.npy)")


def olmo_dtype(vocab_size: int) -> np.dtype:
    """The token dtype an OLMo-core config names for a vocabulary: uint16 up to 65,536 ids, else uint32."""
    return np.dtype("<u2") if vocab_size <= UINT16_VOCAB_LIMIT else np.dtype("<u4")


def _ids(source: SourceRecord, lines: list[int] | None, id_field: str | None, meta: SidecarRecord) -> list[str]:
    """Each document's id: its line's ``id_field`` where the line has it, else its line number."""
    if lines is None:
        return [""] * source.get("documents", 0)
    if not id_field:
        return [str(number) for number in lines]
    values = field_values(source, lines, id_field, meta.get("max_line_bytes", 1 << 62))
    return [str(number) if value is None else value for number, value in zip(lines, values)]


def _csv_field(value: str) -> str:
    """A CSV field, quoted where it holds a comma, a quote or a line break."""
    return f'"{value.replace(chr(34), chr(34) * 2)}"' if any(c in value for c in ',"\n\r') else value


def pbin_to_olmo(pbin_path: str | os.PathLike, out_dir: str | os.PathLike, max_tokens: int = DEFAULT_MAX_TOKENS,
                 id_field: str | None = "id") -> dict:
    """Write the OLMo-core token files of a ``.pbin`` into ``out_dir`` (see the module docstring); of an SFT
    ``.pbin`` (``tokenmill sft``), each part's label mask too.

    Returns:
        The ``metadata.json`` contents.

    Raises:
        TokenmillError: no sidecar, documents that do not end with an EOD (OLMo-core finds documents by it),
            an unreadable source where ids are read from it, or ``max_tokens`` under 1.
    """
    if max_tokens < 1:
        raise TokenmillError(f"max tokens per part must be at least 1, not {max_tokens}")
    pbin_path, out_dir = Path(pbin_path), Path(out_dir)
    if not pbin_path.is_file():
        raise TokenmillError(f"{pbin_path}: no such .pbin")
    if out_dir.exists() and not out_dir.is_dir():
        raise TokenmillError(f"{out_dir}: is a file; give the folder to write the parts into")
    meta = read_sidecar(pbin_path)
    if not meta or "tokenizer" not in meta or "sources" not in meta:
        raise TokenmillError(f"{pbin_path}: no sidecar with its tokenizer and sources (pack writes one)")
    meta = resolve_sidecar_paths(meta, pbin_path)
    pbin, eos = PbinFile(pbin_path), _eos(pbin_path, meta)
    mask = PbinFile(pbin_path.with_name(meta["loss_mask"])) if "loss_mask" in meta else None
    pbin_ends = np.cumsum(pbin.doc_lengths.astype(np.int64))
    appended = _appended_eos(pbin_path, pbin, pbin_ends, eos, conversations="chat_template" in meta)
    ends = pbin_ends + np.cumsum(appended)  # each document's end in the parts' stream
    rows = _rows(pbin_path, meta, id_field, len(ends))
    dtype = olmo_dtype(int(meta["tokenizer"]["vocab_size"]))

    out_dir.mkdir(parents=True, exist_ok=True)
    written = [_write_part(out_dir / f"part-{number:05d}", pbin, mask, ends, appended, first, stop, rows, dtype,
                           eos)
               for number, (first, stop) in enumerate(_part_documents_ranges(ends, max_tokens))]
    suffixes = (".npy", ".csv.gz", *([".label_mask.npy"] if mask is not None else []))
    kept = {f"{Path(part['name']).stem}{suffix}" for part in written for suffix in suffixes}
    for stale in out_dir.glob("part-*"):  # an earlier conversion's parts beyond this one's, and nothing else
        if _PART_NAME.fullmatch(stale.name) and stale.name not in kept:
            stale.unlink()
    metadata = {"format": FORMAT_VERSIONS["olmo"], "dtype": dtype.name, "eos_token_id": int(eos),
                "bos_token_id": None, "vocab_size": int(meta["tokenizer"]["vocab_size"]),
                "tokenizer_sha256": meta["tokenizer"].get("sha256"), "max_tokens": max_tokens, "id_field": id_field,
                "label_masks": mask is not None, "documents": len(ends), "appended_eos": int(appended.sum()),
                "tokens": int(ends[-1]) if len(ends) else 0, "parts": written}
    with atomic_output(out_dir / "metadata.json") as temporary:
        temporary.write_text(json.dumps(metadata, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return metadata


def _appended_eos(pbin_path: Path, pbin: PbinFile, ends: np.ndarray, eos: int, conversations: bool) -> np.ndarray:
    """Per document, whether the parts append the EOS after it: never for a pack's documents or an SFT set
    rendered by the config (each must end with its EOD, as before); for the conversations of an SFT set rendered
    by the model's chat template, where the template did not end them with it (ChatML's
    ``<|im_end|>\\n``, Gemma's ``<end_of_turn>\\n``). OLMo-core finds documents by their EOS, so a conversation
    must hold it at its end and nowhere inside (first is harmless: GPT-2's BOS is its EOS): one holding it inside
    (a template that writes the EOS after every turn) is refused, as OLMo-core would cut the conversation there.
    Cost: one pass over the tokens, 16 Mi at a time.

    Raises:
        TokenmillError: a document without its EOD; a chat-template conversation holding the EOS before its end.
    """
    last = np.asarray(pbin.tokens[ends - 1]) if len(ends) else np.zeros(0, dtype=np.int64)
    if not conversations:
        if (last != eos).any():
            raise TokenmillError(f"{pbin_path}: a document does not end with the EOD id {eos}")
        return np.zeros(len(ends), dtype=bool)
    total = int(ends[-1]) if len(ends) else 0
    starts = np.concatenate([[0], ends[:-1]])  # an EOS first (GPT-2's BOS is its EOS) cuts nothing off
    for start in range(0, total, _BLOCK_TOKENS):
        found = np.flatnonzero(np.asarray(pbin.tokens[start:min(start + _BLOCK_TOKENS, total)]) == eos) + start
        inside = found[np.isin(found, ends - 1, invert=True) & np.isin(found, starts, invert=True)]
        if len(inside):
            document = int(np.searchsorted(ends, inside[0], side="right"))
            at = int(inside[0] - (ends[document - 1] if document else 0))
            raise TokenmillError(f"{pbin_path}: conversation {document} holds the EOS id {eos} at its token {at}, "
                                 f"before its end: OLMo-core finds documents by their EOS and would cut it there; "
                                 f"give the tokenizer an eod its chat template does not write (e.g. <|endoftext|>)")
    return last != eos


def _eos(pbin_path: Path, meta: SidecarRecord) -> int:
    """The id that ends every document: the EOD a pack appended, or an SFT set's ``eos_token``.

    Raises:
        TokenmillError: packed without one.
    """
    tokenizer = meta["tokenizer"]
    eos = tokenizer.get("eod_id")
    if eos is None and "loss_mask" in meta:
        eos = (tokenizer.get("special_ids") or {}).get("eos_token")
    if eos is None:
        raise TokenmillError(f"{pbin_path}: packed without an EOD; OLMo-core finds documents by their EOS: pack "
                             f"with --eod")
    return int(eos)


def _rows(pbin_path: Path, meta: SidecarRecord, id_field: str | None, documents: int) -> list[tuple[str, str, str]]:
    """``(id, src, loc)`` of every document, in order.

    Raises:
        TokenmillError: sources that do not hold the file's documents; a source unreadable for ids.
    """
    rows = []
    for source in meta["sources"]:
        lines = document_lines(source)
        ids = _ids(source, lines, id_field, meta)
        rows += [(ids[k], source["path"], "" if lines is None else str(lines[k]))
                 for k in range(source.get("documents", 0))]
    if len(rows) != documents:
        raise TokenmillError(f"{pbin_path}: its sidecar's sources hold {len(rows)} documents, the file {documents}")
    return rows


def _part_documents_ranges(ends: np.ndarray, max_tokens: int) -> list[tuple[int, int]]:
    """Documents ``[first, stop)`` of each part: up to ``max_tokens`` tokens, at least one document."""
    parts, start = [], 0
    while start < len(ends):
        base = int(ends[start - 1]) if start else 0
        stop = max(int(np.searchsorted(ends, base + max_tokens, side="right")), start + 1)
        parts.append((start, stop))
        start = stop
    return parts


def _write_part(stem: Path, pbin: PbinFile, mask: PbinFile | None, ends: np.ndarray, appended: np.ndarray,
                first: int, stop: int, rows: list[tuple[str, str, str]], dtype: np.dtype, eos: int) -> dict:
    """Documents ``[first, stop)`` as ``stem.npy``, ``stem.csv.gz`` and (an SFT set's) ``stem.label_mask.npy``;
    returns the part's entry of ``metadata.json``."""
    base, end = (int(ends[first - 1]) if first else 0), int(ends[stop - 1])
    before = int(appended[:first].sum())  # EOS appended before this part: the .pbin's stream is that much shorter
    after = [int(at) for at in ends[first:stop][appended[first:stop]] - 1 - base]  # where the part appends one
    span = (base - before, end - before - len(after))
    _write_blocks(stem.with_name(f"{stem.name}.npy"), pbin.tokens, *span, lambda block: block.astype(dtype), after,
                  eos)
    if mask is not None:  # one byte per token, 1 where it is a label: OLMo-core's bool label_mask; an appended EOS
        # is not trained (the template did not write it)
        _write_blocks(stem.with_name(f"{stem.name}.label_mask.npy"), mask.tokens, *span,
                      lambda block: (block != 0).astype(np.uint8), after, 0)
    starts = np.concatenate([[0], ends[first:stop - 1] - base])
    text = "".join(f"{int(s)},{int(e)},{_csv_field(rows[k][0])},{_csv_field(rows[k][1])},{rows[k][2]}\n"
                   for k, s, e in zip(range(first, stop), starts, ends[first:stop] - base))
    buffer = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buffer, mtime=0) as archive:
        archive.write(text.encode("utf-8"))
    with atomic_output(stem.with_name(f"{stem.name}.csv.gz")) as temporary:
        temporary.write_bytes(buffer.getvalue())
    return {"name": f"{stem.name}.npy", "tokens": end - base, "documents": stop - first}


def _write_blocks(path: Path, values: np.ndarray, start: int, end: int, convert, inserted: list[int] = (),
                  value: int = 0) -> None:
    """``convert(values[start:end])`` to ``path`` (atomically), 16 Mi values at a time: a 512 Mi-token part
    never holds a second copy of itself in memory; with ``value`` written at each position of ``inserted``
    (positions in the output, ascending)."""
    inserted = np.asarray(inserted, dtype=np.int64)
    inserted_before = inserted - np.arange(len(inserted))  # each one's position in values[start:end]: after it
    with atomic_output(path) as temporary, open(temporary, "wb") as handle:
        for block_start in range(start, max(end, start + 1) if len(inserted) else end, _BLOCK_TOKENS):
            block_end = min(block_start + _BLOCK_TOKENS, end)
            block = convert(np.asarray(values[block_start:block_end]))
            last = block_end >= end
            here = inserted_before[(inserted_before > block_start - start) & (inserted_before <= block_end - start)
                                   | (last & (inserted_before > block_end - start))] if len(inserted) else ()
            if len(here):
                block = np.insert(block, here - (block_start - start), np.asarray(value, dtype=block.dtype))
            handle.write(block.tobytes())


def is_olmo_folder(path: str | os.PathLike) -> bool:
    """Whether ``path`` is a folder this module wrote (its ``metadata.json`` names the format)."""
    metadata = Path(path) / "metadata.json"
    if not metadata.is_file():
        return False
    try:
        return json.loads(metadata.read_bytes()).get("format", "").startswith("tokenmill-olmo/")
    except (ValueError, AttributeError):
        return False


def describe_olmo(folder: str | os.PathLike) -> list[str]:
    """``inspect``'s lines of an OLMo folder, from its ``metadata.json``: dtype, EOS, counts and parts.

    Raises:
        TokenmillError: an unreadable ``metadata.json``.
    """
    try:
        metadata = json.loads((Path(folder) / "metadata.json").read_bytes())
        parts = metadata["parts"]
        lines = [f"dataset: {folder} (OLMo-core token files, {metadata['format']})", f"dtype: {metadata['dtype']}",
                 f"eos: id {metadata['eos_token_id']}, ending every document", f"documents: {metadata['documents']}",
                 f"tokens: {metadata['tokens']}", f"parts: {len(parts)}"
                 + (", with label masks" if metadata.get("label_masks") else "")]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise TokenmillError(f"{folder}/metadata.json: unreadable ({exc})") from None
    return lines


def _part_rows(part_csv: Path) -> tuple[np.ndarray, list[tuple[str, str, str]]]:
    """The ``(start, end)`` token range and the ``(id, src, loc)`` of each document of a part, from its
    ``csv.gz``.

    Raises:
        TokenmillError: a missing or unreadable file, or a row that is not ``start,end,id,src,loc`` with
            integer bounds.
    """
    try:
        with gzip.open(part_csv, "rt", encoding="utf-8", newline="") as handle:
            rows = list(csv.reader(handle))
    except (OSError, EOFError, UnicodeDecodeError, csv.Error) as exc:
        raise TokenmillError(f"{part_csv}: unreadable ({getattr(exc, 'strerror', None) or exc})") from None
    if any(len(row) != 5 for row in rows):
        raise TokenmillError(f"{part_csv}: a row that is not start,end,id,src,loc")
    try:
        ranges = np.array([(int(row[0]), int(row[1])) for row in rows], dtype=np.int64).reshape(-1, 2)
    except ValueError:
        raise TokenmillError(f"{part_csv}: a row whose start or end is not an integer") from None
    return ranges, [(row[2], row[3], row[4]) for row in rows]


def _same_tokens(ours: np.ndarray, theirs: np.ndarray) -> bool:
    return all(np.array_equal(ours[start:start + _BLOCK_TOKENS], theirs[start:start + _BLOCK_TOKENS])
               for start in range(0, len(ours), _BLOCK_TOKENS))


def _without_appended(tokens: np.ndarray, documents: np.ndarray, appended: np.ndarray | None, document_base: int,
                      pbin: PbinFile, token_base: int) -> tuple[np.ndarray, np.ndarray]:
    """A part's tokens less the EOS it appended to conversations, and the ``.pbin`` tokens they must equal."""
    if appended is None:
        return tokens, pbin.tokens[token_base:token_base + len(tokens)]
    at = documents[appended[document_base:document_base + len(documents)], 1] - 1
    before = int(appended[:document_base].sum())
    kept = np.delete(np.asarray(tokens), at)
    return kept, pbin.tokens[token_base - before:token_base - before + len(kept)]


def _row_key(row: tuple[str, str, str]) -> tuple[str, str, str]:
    """What a row must hold: its id, its source's file name (its folder as reached from where it was
    converted) and its line."""
    return row[0], os.path.basename(row[1]), row[2]


def _expected_rows(pbin_path: Path, id_field: str | None, documents: int) -> list[tuple[str, str, str]] | str:
    """The ``(id, src, loc)`` rows a conversion of ``pbin_path`` writes, or why they cannot be known here."""
    meta = read_sidecar(pbin_path)
    if not meta or "sources" not in meta:
        return f"{pbin_path}: no sidecar to check the parts' id,src,loc against"
    try:
        return _rows(pbin_path, resolve_sidecar_paths(meta, pbin_path), id_field, documents)
    except (TokenmillError, OSError) as exc:
        return f"{pbin_path}: the parts' ids cannot be checked: {exc}"


def verify_olmo(folder: str | os.PathLike, made_from: str | os.PathLike | None = None) -> list[str]:
    """Every problem of an OLMo folder: each part's size a whole number of its dtype's tokens and equal to
    ``metadata.json``'s count; its ``csv.gz`` one row per document, ranges back to back from 0 to the part's
    end, each document ending with the EOS id. With ``made_from`` (the ``.pbin`` it was converted from),
    also: the parts' tokens, in order, are the ``.pbin``'s token stream, their documents its documents, and
    each row's id, src and loc what the conversion writes (its sources read for ids). One line per problem.
    Cost: one pass over the parts' tokens; with ``made_from``, one read of each source for the ids.

    Raises:
        TokenmillError: an unreadable ``metadata.json`` or ``.pbin``.
    """
    folder = Path(folder)
    try:
        metadata = json.loads((folder / "metadata.json").read_bytes())
        dtype, eos, parts = np.dtype(metadata["dtype"]).newbyteorder("<"), metadata["eos_token_id"], metadata["parts"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise TokenmillError(f"{folder}/metadata.json: unreadable ({exc})") from None
    pbin = PbinFile(made_from) if made_from is not None else None
    pbin_ends = np.cumsum(pbin.doc_lengths.astype(np.int64)) if pbin is not None else None
    appended = None
    if pbin is not None and metadata.get("appended_eos"):  # conversations the parts end with an appended EOS
        appended = np.asarray(pbin.tokens[pbin_ends - 1]) != eos if len(pbin_ends) else np.zeros(0, dtype=bool)
        pbin_ends = pbin_ends + np.cumsum(appended)
    expected_rows = _expected_rows(Path(made_from), metadata.get("id_field"), len(pbin_ends)) if pbin else None
    problems, token_base, document_base = [], 0, 0
    for part in parts:
        npy = folder / part["name"]
        where = f"{npy}"
        if not npy.is_file():
            problems.append(f"{where}: missing")
            continue
        if npy.stat().st_size != part["tokens"] * dtype.itemsize:
            problems.append(f"{where}: {npy.stat().st_size} bytes, but metadata.json says {part['tokens']} "
                            f"{dtype.name} tokens")
            continue
        tokens = np.memmap(npy, dtype=dtype, mode="r") if part["tokens"] else np.zeros(0, dtype)
        label_mask = npy.with_name(npy.name[:-len(".npy")] + ".label_mask.npy")
        if metadata.get("label_masks") and (not label_mask.is_file() or label_mask.stat().st_size != len(tokens)):
            problems.append(f"{label_mask}: not one byte per token of {npy.name} ({len(tokens)})")
        try:
            documents, rows = _part_rows(npy.with_name(npy.name[:-len(".npy")] + ".csv.gz"))
        except TokenmillError as exc:
            problems.append(str(exc))
            continue
        if len(documents) != part["documents"] or (len(documents) and (
                documents[0, 0] != 0 or (documents[1:, 0] != documents[:-1, 1]).any()
                or documents[-1, 1] != len(tokens) or (documents[:, 1] <= documents[:, 0]).any())):
            problems.append(f"{where[:-len('.npy')]}.csv.gz: its rows are not {part['documents']} documents back to "
                            f"back over the part's {len(tokens)} tokens")
            continue
        if len(documents) and (tokens[documents[:, 1] - 1] != eos).any():
            problems.append(f"{where}: a document does not end with the EOS id {eos}")
        if pbin is not None:
            stop = document_base + len(documents)
            expected_ends = pbin_ends[document_base:stop] - token_base if stop <= len(pbin_ends) else None
            if expected_ends is None or not np.array_equal(documents[:, 1], expected_ends):
                problems.append(f"{where}: its documents are not documents {document_base}..{stop - 1} of {made_from}")
            elif not _same_tokens(*_without_appended(tokens, documents, appended, document_base, pbin, token_base)):
                problems.append(f"{where}: its tokens differ from those of {made_from} at its documents "
                                f"{document_base}..{stop - 1}")
            elif isinstance(expected_rows, list) and list(map(_row_key, rows)) != list(
                    map(_row_key, expected_rows[document_base:stop])):
                k = next(k for k, row in enumerate(rows) if _row_key(row) != _row_key(expected_rows[document_base + k]))
                problems.append(f"{where[:-len('.npy')]}.csv.gz: row {k + 1} says id,src,loc = {','.join(rows[k])}, "
                                f"but document {document_base + k} of {made_from} is "
                                f"{','.join(expected_rows[document_base + k])}")
            elif isinstance(expected_rows, str) and not problems:
                problems.append(expected_rows)
        token_base, document_base = token_base + len(tokens), document_base + len(documents)
    if pbin is not None and not problems and (document_base != len(pbin_ends)):
        problems.append(f"{folder}: {document_base} documents, but {made_from} holds {len(pbin_ends)}")
    return problems
