"""Structural checks of every file tokenmill writes, listing each problem found.

What is checked, by kind (told apart by extension, magic bytes and folder):

* raw index ``.idx`` (a pickle): pairs of non-negative ints, lines in increasing order and not
  overlapping; with the JSONL known, every line inside it.
* ``.pbin``: a known layout, the index inside the data and tiling it; with a sidecar: token width,
  document and token counts, every id below the vocabulary size, every document ending with the EOD
  id, the sha256 of each source file that still exists, and the sidecar's ``file`` identity (size,
  index and token hashes). The sidecar's relative paths count from its own folder
  (:func:`tokenmill.formats.sidecar.resolve_sidecar_paths`), so the result does not depend on the working
  directory. Suspicious, though well-formed: documents holding the tokenizer's padding id, many
  documents exactly as long as the longest (cut to a fixed size), or a sidecar from before tokenizer
  truncation/padding were switched off whose tokenizer file sets them. A ``.pbin`` packed without an
  EOD (``--no-eod``) is a warning, not a problem: its documents run together in training, which is
  rarely meant but can be. Under ``on_bad_line="error"`` (the dataset's policy, which the workflow passes), a
  sidecar that lists skipped lines is a problem naming the first: on_bad_line is no part of a pack unit's
  identity, so a unit packed under ``skip`` is kept when the policy becomes ``error``, and refused here.
* Megatron ``<prefix>.bin/.idx`` (``MMIDIDX`` magic): header, sizes, pointers, boundaries, ``.bin`` size.
* datatrove ``NAME.ds`` (or any of its files): ``.ds.index`` strictly increasing, its last entry the
  token count, which is the ``.ds`` size over the token size; ``.ds.metadata`` with that token size,
  count and datatrove's SI spelling of it; ``.ds.loss`` one 0/1 byte per token. Where the metadata
  names a tokenizer file found from the working directory (as datatrove was given it), datatrove's
  rules re-derived from it: the token size from its vocabulary (4 bytes above 65,536 tokens), and
  documents that do not all keep the ids its post-processor adds (a BOS, an EOS before the EOS that
  datatrove appends), which datatrove's ``$A <EOS>`` leaves out (docs/formats.md §9-§10).

Each output format is checked by its row's hooks (:mod:`tokenmill.formats.kinds`): the row that knows the path
checks it, the ``.pbin`` here with its sidecar; what no row knows is a cache folder or a raw index.
* an OLMo folder (``tokenmill to-olmo``): each part's size, its ``csv.gz`` ranges back to back, each
  document ending with the EOS (:func:`tokenmill.formats.olmo.verify_olmo`).
* Megatron files, a ``.ds`` or an OLMo folder against the ``.pbin`` they were made from
  (:func:`made_from_problems`, each format's own check: :mod:`tokenmill.formats.peer_rules`): the dtype and
  token size its sidecar's vocabulary gives by each peer's rule, the ``.ds`` documents datatrove's rule gives
  from the ``.pbin``'s, the OLMo parts its tokens.
* a cache folder (:mod:`tokenmill.verify.index_caches`): descriptions, arrays, one cache per split and dataset.

Cost: a few passes over the tokens of a ``.pbin`` (in 16M-token blocks, one of them sha256) and
one over each source for its hash; for a ``.ds`` whose tokenizer is found, its load (0.2-1.5 s) and
a vectorised look at each document's ends; the rest is O(index size).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Callable

import numpy as np

from tokenmill.errors import TokenmillError
from tokenmill.files.identity import file_sha256
from tokenmill.formats.document_blocks import BLOCK_TOKENS
from tokenmill.formats.kinds import OUTPUT_FORMATS, format_of
from tokenmill.formats.bin_idx import prefix_of
from tokenmill.formats.pbin import PbinFile, file_identity_problem, read_sidecar
from tokenmill.formats.provenance import tokens_per_source
from tokenmill.formats.sidecar import (SidecarRecord, eod_within_note, range_indices, resolve_sidecar_paths,
                                      sidecar_path, skipped_under_error)
from tokenmill.inputs.raw_index import read_index
from tokenmill.best_fit.olmo_cache import SIDECAR_NAME, olmo_packing_problems
from tokenmill.best_fit.packed_blend import packed_blend_problems
from tokenmill.best_fit.packed_index import packed_index_problems
from tokenmill.best_fit.sft_packing import SFT_PACKING_NAMES, sft_best_fit_problems
from tokenmill.verify.exactly_once import changed_source_problems, coverage_problems
from tokenmill.verify.index_caches import verify_cache
from tokenmill.verify.reencode import verify_against_tokenizer

__all__ = ["verify", "made_from_problems", "verify_made_from"]


def _print_warning(message: str) -> None:
    print(message, file=sys.stderr)


def verify(path: str | os.PathLike, jsonl: str | os.PathLike | None = None,
           against_tokenizer: float | None = None, inputs: list[str] | None = None,
           warn: Callable[[str], None] = _print_warning, on_bad_line: str | None = None) -> list[str]:
    """Every problem found in ``path`` (empty: the file is sound).

    Args:
        path: a raw ``.idx``, a ``.pbin``, a Megatron prefix (or its ``.bin``/``.idx``), a datatrove
            ``NAME.ds`` (or one of its files), an OLMo folder (``tokenmill to-olmo``), a cache folder (GPTDataset
            caches, a packed index, or both; a packed blend; an SFT pair's best-fit rows), or an OLMo-core work
            dir of packing caches (``tokenmill best-fit``).
        jsonl: for a raw index, the JSONL it indexes.
        against_tokenizer: for a ``.pbin``, also re-encode this share of its documents from their
            JSONL lines with the Hugging Face tokenizer (see
            :func:`tokenmill.verify.reencode.verify_against_tokenizer`).
        inputs: for a ``.pbin``, the files it must be packed from, in order, each exactly once and
            whole (see :func:`tokenmill.verify.exactly_once.coverage_problems`).
        warn: called with each warning line (``PATH: warning: ...``): what is sound but rarely
            meant, such as a ``.pbin`` packed without an EOD. Default: printed to stderr.
        on_bad_line: for a ``.pbin``, its dataset's policy: ``"error"`` makes a skipped line a problem
            (:func:`tokenmill.formats.sidecar.skipped_under_error`); ``"skip"`` or None counts them only.

    Raises:
        TokenmillError: ``path`` does not exist or is of no known kind.
    """
    path = Path(path)
    kind = format_of(path)
    if kind is not None and kind.check is not None:
        return kind.check(path)
    if kind is not None:  # the .pbin, checked with its sidecar, its inputs and the dataset's policy
        problems = _verify_pbin(path, inputs, warn, on_bad_line)
        if against_tokenizer is not None and not problems:
            problems = verify_against_tokenizer(path, against_tokenizer)[0]
        return problems
    if (path / SIDECAR_NAME).is_file():
        return olmo_packing_problems(path)
    if path.is_dir():
        if (path / SFT_PACKING_NAMES["description"]).is_file():  # an SFT pair's best-fit rows
            return sft_best_fit_problems(path)
        if any(path.glob("blend-*-description.json")):  # a packed blend and its datasets' packed indices
            return packed_blend_problems(path)
        if not any(path.glob("best_fit-*-description.json")):
            return verify_cache(path)
        # a packed index, alone or beside GPTDataset caches
        return (verify_cache(path) if any(path.glob("*-description.txt")) else []) + packed_index_problems(path)
    index_file = Path(f"{prefix_of(path)}.idx")
    if not index_file.exists():
        raise TokenmillError(f"{path}: no such file, .idx or cache folder")
    return _verify_raw_index(index_file, jsonl)


def made_from_problems(pbin_path: str | os.PathLike, paths: list[str | os.PathLike]) -> list[str]:
    """Whether the files among ``paths`` of a format made from a ``.pbin`` (by ``pack`` in its one pass, or
    ``to-megatron`` / ``to-datatrove`` / ``to-olmo``) follow their peers' rules, re-derived from the ``.pbin`` and
    its sidecar: each format's own check (its row's ``made_from``, :mod:`tokenmill.formats.kinds`; Megatron's
    and datatrove's in :mod:`tokenmill.formats.peer_rules`, OLMo-core's :func:`tokenmill.formats.olmo.verify_olmo`).
    The other paths (the ``.pbin``, raw indexes, caches) are left alone. One line per problem. Cost: one pass over
    both files' tokens in 16M-token blocks, per file.

    Raises:
        TokenmillError: an unreadable ``.pbin`` or sidecar.
    """
    meta = read_sidecar(pbin_path) or {}
    if (meta.get("tokenizer") or {}).get("vocab_size") is None:
        PbinFile(pbin_path)  # (an unreadable .pbin says so first)
        return [f"{pbin_path}: no sidecar with the tokenizer's vocabulary size to check its conversions against"]
    return [problem for path in paths if (kind := format_of(path)) is not None and kind.made_from is not None
            for problem in kind.made_from(Path(pbin_path), Path(path))]


def verify_made_from(pbin_path: str | os.PathLike, megatron_prefix: str | os.PathLike | None = None,
                     datatrove_name: str | os.PathLike | None = None,
                     olmo_folder: str | os.PathLike | None = None) -> list[str]:
    """:func:`made_from_problems` of a Megatron prefix, a datatrove ``NAME`` and an OLMo folder (None: left out), each
    named as its own tools name it (``tokenmill verify --made-from`` passes its paths on as given).

    Raises:
        TokenmillError: an unreadable ``.pbin`` or sidecar.
    """
    named = (megatron_prefix, f"{datatrove_name}{OUTPUT_FORMATS['datatrove'].named_by}" if datatrove_name else None,
             olmo_folder)
    return made_from_problems(pbin_path, [path for path in named if path is not None])


def _verify_raw_index(path: Path, jsonl) -> list[str]:
    try:
        lines = read_index(path, jsonl)
    except TokenmillError as exc:
        return [str(exc)]
    ends = lines[:-1, 0] + lines[:-1, 1]
    overlapping = np.flatnonzero(lines[1:, 0] <= ends)  # a line starts after the previous one's "\n"
    if len(overlapping):
        return [f"{path}: line {int(overlapping[0]) + 2} starts at byte {int(lines[overlapping[0] + 1, 0])}, "
                f"inside or right at the end of the line before it"]
    return []


def _verify_pbin(path: Path, inputs: list[str] | None = None,
                 warn: Callable[[str], None] = _print_warning, on_bad_line: str | None = None) -> list[str]:
    try:
        pbin = PbinFile(path)
        offsets, lengths = pbin.doc_offsets, pbin.doc_lengths
    except TokenmillError as exc:
        return [str(exc)]
    problems = []
    if not pbin.documents_tile:
        problems.append(f"{path}: the document index does not tile the data section (gaps or overlaps)")
    try:
        meta = read_sidecar(path)
    except TokenmillError as exc:
        return problems + [str(exc)]
    if meta is None:
        if inputs is not None:
            problems.append(f"{path}: no sidecar, so nothing tells which inputs it was packed from")
        return problems + _suspicious_lengths(path, lengths)
    problems += coverage_problems(path, meta, inputs)
    meta = resolve_sidecar_paths(meta, path)
    if on_bad_line == "error" and (skipped := skipped_under_error(meta, path)):
        problems.append(skipped)
    data_problem = file_identity_problem(path, meta.get("file"), sidecar_path(path), check_data=True)
    if data_problem:
        problems.append(data_problem)
    for key, actual in (("token_width", pbin.token_width), ("documents", pbin.num_documents),
                        ("tokens", pbin.num_tokens)):
        if key in meta and meta[key] != actual:
            problems.append(f"{path}: the sidecar says {key} = {meta[key]}, the file has {actual}")
    problems += _source_token_problems(path, meta.get("sources"), lengths)
    tokenizer = meta.get("tokenizer", {})
    # ids stay below the vocabulary's size, or its highest id + 1 where its ids have gaps (id_limit)
    vocab_size, eod_id = tokenizer.get("id_limit", tokenizer.get("vocab_size")), tokenizer.get("eod_id")
    counted = isinstance(meta.get("eod_within_documents"), int) and eod_id is not None and "loss_mask" not in meta
    eod_count = 0  # the EOD ids of the whole file, where the sidecar counts those inside documents
    if vocab_size is not None or counted:
        for start in range(0, pbin.num_tokens, BLOCK_TOKENS):
            block = pbin.tokens[start:start + BLOCK_TOKENS]
            if counted:
                eod_count += int(np.count_nonzero(block == eod_id))
            if vocab_size is not None and len(block) and int(block.max()) >= vocab_size:
                position = start + int(np.argmax(block >= vocab_size))
                document = int(np.searchsorted(offsets + lengths, position, side="right"))
                problems.append(f"{path}: token id {int(pbin.tokens[position])} of document {document} is beyond "
                                f"the vocabulary of {vocab_size}")
                vocab_size = None  # said once
                if not counted:
                    break
    try:
        empty_texts = range_indices(meta.get("empty_texts", []), len(lengths))
    except TokenmillError as exc:
        return problems + [f"{sidecar_path(path)}: empty_texts: {exc}"]
    problems += _empty_text_problems(path, empty_texts, lengths, eod_id)
    if counted:  # each document ends with one EOD (checked below); the rest lie inside documents
        if eod_count - pbin.num_documents != meta["eod_within_documents"]:
            problems.append(f"{path}: the sidecar says eod_within_documents = {meta['eod_within_documents']}, the "
                            f"file's documents hold {eod_count - pbin.num_documents} EOD ids before their last token")
        elif note := eod_within_note(meta):
            warn(f"{path}: warning: {note}")
    if "loss_mask" in meta:  # an SFT pair: conversations end as their template says, not with an EOD
        problems += _verify_loss_mask(path, meta, pbin)
    elif eod_id is not None and len(lengths):
        last_tokens = pbin.tokens[offsets + lengths - 1]
        missing = np.flatnonzero((last_tokens != eod_id) | (lengths == 0))
        if len(missing):
            problems.append(f"{path}: {len(missing)} documents do not end with the EOD id {eod_id} "
                            f"(first: document {int(missing[0])})")
        if "eod_in_text" in meta:
            problems += _eod_in_text_problems(path, meta["eod_in_text"], pbin, eod_id, empty_texts)
    elif eod_id is None and "eod_id" in tokenizer and len(lengths):
        warn(f"{path}: warning: packed without an EOD (its sidecar's tokenizer.eod_id is null): its documents run "
             f"together in training, and Megatron and Modalities cannot tell where one ends; repack with --eod TOKEN "
             f"unless that is meant")
    problems += changed_source_problems(path, meta)
    return (problems + _suspicious_tokenizer(path, tokenizer, pbin, offsets, lengths)
            + _suspicious_lengths(path, lengths))


def _source_token_problems(path: Path, sources: object, lengths: np.ndarray) -> list[str]:
    """Where every source records its documents and tokens (pack since the sources counted their tokens),
    its documents, in order, hold those tokens."""
    if not isinstance(sources, list) or not all(isinstance(source, dict) and isinstance(source.get("tokens"), int)
                                                and isinstance(source.get("documents"), int) for source in sources):
        return []
    held = tokens_per_source([source["documents"] for source in sources], lengths)
    if held is None:
        return []  # said once, by the document count's own check
    return [f"{path}: its sidecar says {source['path']} gave {source['tokens']} tokens, its documents hold {int(count)}"
            for source, count in zip(sources, held) if source["tokens"] != count][:1]


def _empty_text_problems(path: Path, empty_texts: np.ndarray, lengths: np.ndarray, eod_id: int | None) -> list[str]:
    """The sidecar's ``empty_texts`` (tokens-in's documents of an empty text) against the document lengths: each
    listed document is the EOD alone (nothing without an EOD), and no document unlisted holds nothing."""
    wrong = np.flatnonzero(empty_texts & (lengths > (eod_id is not None)) | ~empty_texts & (lengths == 0))
    if not len(wrong):
        return []
    return [f"{path}: document {int(wrong[0])} holds {int(lengths[wrong[0]])} tokens, but the sidecar's empty_texts "
            f"{'lists' if empty_texts[wrong[0]] else 'does not list'} it as an empty text's ({len(wrong)} such)"]


def _eod_in_text_problems(path: Path, ranges: list, pbin: PbinFile, eod_id: int,
                          empty_texts: np.ndarray) -> list[str]:
    """The sidecar's ``eod_in_text`` against the tokens: a document not listed got its EOD appended, so it
    holds at least one id of its own before it, and that id is not the EOD; but for an empty text's
    (``empty_texts``), the EOD alone."""
    lengths = pbin.doc_lengths
    try:
        listed = range_indices(ranges, len(lengths))
    except TokenmillError as exc:
        return [f"{sidecar_path(path)}: eod_in_text: {exc}"]
    before_last = pbin.tokens[np.maximum(pbin.doc_offsets + lengths - 2, 0)]
    wrong = np.flatnonzero(~listed & ~empty_texts & ((lengths < 2) | (before_last == eod_id)))
    if len(wrong):
        return [f"{path}: {len(wrong)} documents end with two EODs (or are one EOD) but are not in the sidecar's "
                f"eod_in_text (first: document {int(wrong[0])}); the Megatron .bin would lack an EOD"]
    return []


def _verify_loss_mask(path: Path, meta: SidecarRecord, pbin: PbinFile) -> list[str]:
    """An SFT ``.pbin``'s ``.loss_mask.pbin``: its recorded identity, the same documents, flags 0 or 1."""
    mask_path = path.with_name(meta["loss_mask"])
    try:
        mask = PbinFile(mask_path)
    except TokenmillError as exc:
        return [str(exc)]
    problem = file_identity_problem(mask_path, meta.get("loss_mask_file"), sidecar_path(path), check_data=True)
    if problem:
        return [problem]
    if not np.array_equal(mask.doc_lengths, pbin.doc_lengths):
        return [f"{mask_path}: its documents differ from those of {path}"]
    for start in range(0, mask.num_tokens, BLOCK_TOKENS):
        block = mask.tokens[start:start + BLOCK_TOKENS]
        if len(block) and int(block.max()) > 1:
            return [f"{mask_path}: flag {int(block.max())} at token {start + int(np.argmax(block > 1))}; "
                    f"a loss mask holds 0 or 1"]
    return []


def _suspicious_tokenizer(path: Path, tokenizer: dict, pbin: PbinFile, offsets: np.ndarray,
                          lengths: np.ndarray) -> list[str]:
    """Signs that the tokenizer's own truncation or padding shaped the documents.

    A sidecar from before tokenmill switched them off lacks ``ignored_settings``: then the tokenizer
    file it names (if it is still the same file) tells whether they were applied.
    """
    if "ignored_settings" in tokenizer:
        pad_id = tokenizer.get("pad_id")
    else:
        settings = _tokenizer_file_settings(tokenizer)
        if settings:
            return [f"{path}: packed with a tokenizer.json whose {' and '.join(sorted(settings))} were applied "
                    f"({tokenizer.get('path')}); documents may be cut or padded: repack it"]
        return []
    if pad_id is None:
        return []
    positions = np.concatenate([start + np.flatnonzero(pbin.tokens[start:start + BLOCK_TOKENS] == pad_id)
                                for start in range(0, pbin.num_tokens, BLOCK_TOKENS)] or [np.empty(0, np.int64)])
    if not len(positions):
        return []
    padded = np.unique(np.searchsorted(offsets + lengths, positions, side="right"))
    return [f"{path}: {len(padded)} documents hold the padding id {pad_id} of the tokenizer "
            f"(first: document {int(padded[0])}): padded text?"]


def _tokenizer_file_settings(tokenizer: dict) -> list[str]:
    """The truncation/padding settings set in the sidecar's tokenizer file, if it is still that file."""
    tokenizer_path = tokenizer.get("path")
    if not isinstance(tokenizer_path, str) or not os.path.isfile(tokenizer_path) \
            or file_sha256(tokenizer_path) != tokenizer.get("sha256"):
        return []
    try:
        with open(tokenizer_path, encoding="utf-8") as handle:
            settings = json.load(handle)
    except (OSError, ValueError):
        return []
    return [key for key in ("truncation", "padding") if isinstance(settings, dict) and settings.get(key)]


_SUSPICIOUS_RUN = 8  # documents of one identical, maximal length that look cut to size


def _suspicious_lengths(path: Path, lengths: np.ndarray) -> list[str]:
    """Many documents exactly as long as the longest one: the mark of truncation to a fixed size."""
    if len(lengths) < _SUSPICIOUS_RUN:
        return []
    longest = int(lengths.max())
    at_longest = int(np.count_nonzero(lengths == longest))
    if at_longest >= max(_SUSPICIOUS_RUN, len(lengths) // 10):
        return [f"{path}: {at_longest} of {len(lengths)} documents are exactly {longest} tokens long, the longest: "
                f"cut to a fixed length by the tokenizer?"]
    return []
