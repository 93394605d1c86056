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
* an OLMo folder (``tokenmill to-olmo``): each part's size, its ``csv.gz`` ranges back to back, each
  document ending with the EOS (:func:`tokenmill.formats.olmo.verify_olmo`).
* Megatron files, a ``.ds`` or an OLMo folder against the ``.pbin`` they were made from
  (:func:`verify_made_from`): the dtype and token size its sidecar's vocabulary gives by each peer's
  rule, the ``.ds`` documents datatrove's rule gives from the ``.pbin``'s, the OLMo parts its tokens.
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
from tokenmill.formats.datatrove import (DatatroveFile, datatrove_documents, datatrove_paths, is_datatrove,
                                         packed_post_processor_ids, token_size_for)
from tokenmill.formats.document_blocks import BLOCK_TOKENS, document_blocks
from tokenmill.formats.dtypes import MEGATRON_UINT16_BELOW, UINT16_VOCAB_LIMIT
from tokenmill.formats.mmidx import MMapIndexedDataset, is_megatron_index, optimal_dtype, prefix_of
from tokenmill.formats.olmo import is_olmo_folder, verify_olmo
from tokenmill.formats.pbin import PbinFile, file_identity_problem, read_sidecar
from tokenmill.formats.provenance import tokens_per_source
from tokenmill.formats.sidecar import (SidecarRecord, eod_within_note, range_indices, resolve_sidecar_paths,
                                      sidecar_path, skipped_under_error)
from tokenmill.inputs.raw_index import read_index
from tokenmill.packing.olmo_cache import SIDECAR_NAME, olmo_packing_problems
from tokenmill.packing.packed_blend import packed_blend_problems
from tokenmill.packing.packed_index import packed_index_problems
from tokenmill.packing.sft_packing import SFT_PACKING_NAMES, sft_best_fit_problems
from tokenmill.tokenization.tokenizer import load_tokenizer
from tokenmill.verify.exactly_once import changed_source_problems, coverage_problems
from tokenmill.verify.index_caches import verify_cache
from tokenmill.verify.reencode import verify_against_tokenizer

__all__ = ["verify", "verify_made_from"]


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
    if is_olmo_folder(path):
        return verify_olmo(path)
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
    if is_datatrove(path):
        return _verify_datatrove(path)
    if path.suffix == ".pbin":
        problems = _verify_pbin(path, inputs, warn, on_bad_line)
        if against_tokenizer is not None and not problems:
            problems = verify_against_tokenizer(path, against_tokenizer)[0]
        return problems
    prefix = Path(prefix_of(path))
    index_file = prefix.with_name(prefix.name + ".idx")
    if not index_file.exists():
        raise TokenmillError(f"{path}: no such file, .idx or cache folder")
    if is_megatron_index(index_file):
        return _checked(lambda: MMapIndexedDataset(prefix))
    return _verify_raw_index(index_file, jsonl)


def _checked(action) -> list[str]:
    try:
        action()
    except TokenmillError as exc:
        return [str(exc)]
    return []


def _verify_datatrove(path: Path) -> list[str]:
    """A datatrove dataset's structure, then datatrove's rules re-derived from the tokenizer its
    ``.ds.metadata`` names, where that is a Hugging Face ``tokenizer.json`` found from here, as datatrove
    would load it (a hub name, a moved file, or the model file of a Megatron tokenizer type: not checked)."""
    try:
        dataset = DatatroveFile(path)
    except TokenmillError as exc:
        return [str(exc)]
    name = (dataset.metadata or {}).get("tokenizer")
    if not name or not os.path.isfile(name):
        return []
    try:
        tokenizer = load_tokenizer(name)
    except TokenmillError:  # not a file datatrove could load either
        return []
    problems = []
    expected = token_size_for(tokenizer.vocab_size)
    if dataset.token_size != expected:
        problems.append(f"{dataset.paths['.ds']}: {dataset.token_size}-byte tokens, but datatrove writes "
                        f"{expected}-byte tokens for {name} ({tokenizer.vocab_size} tokens; 4 bytes above "
                        f"{UINT16_VOCAB_LIMIT:,})")
    if dataset.loss is None:  # an SFT dataset keeps its conversations as they are
        problems += _kept_post_processor_ids(dataset, name, tokenizer.post_processor_ids,
                                             set(tokenizer.tokenizer.get_added_tokens_decoder()))
    return problems


def _kept_post_processor_ids(dataset: DatatroveFile, name: str, added: tuple, added_tokens: set[int]) -> list[str]:
    """The mark of documents packed with the tokenizer's post-processor on and an EOS appended after it:
    every document starts with its ``before`` ids and ends with its ``after`` ids, then one added token
    (the EOS), the same for all. datatrove's documents (``$A <EOS>``) hold neither; without an
    ``eos_token`` datatrove keeps the post-processor but appends nothing, so no such EOS follows."""
    before, after = (np.asarray(ids, dtype=np.int64) for ids in added)
    ends = dataset.ends.astype(np.int64)
    if not len(ends) or not (len(before) or len(after)):
        return []
    lengths = np.diff(ends, prepend=0)
    if lengths.min() < len(before) + len(after) + 1:
        return []
    tokens, last = dataset.tokens, dataset.tokens[ends - 1]
    if len(np.unique(last)) != 1 or int(last[0]) not in added_tokens:
        return []
    heads = tokens[(ends - lengths)[:, None] + np.arange(len(before))]
    tails = tokens[(ends - 1 - len(after))[:, None] + np.arange(len(after))]
    if not (np.all(heads == before) and np.all(tails == after)):
        return []
    return [f"{dataset.paths['.ds']}: all {len(ends)} documents keep the ids {name}'s post-processor adds "
            f"({before.tolist()} before the text's, {after.tolist()} after) before their EOS {int(last[0])}; "
            f"datatrove's DocumentTokenizer replaces the post-processor by '$A <EOS>' and writes the text's ids "
            f"and one EOS"]


def verify_made_from(pbin_path: str | os.PathLike, megatron_prefix: str | os.PathLike | None = None,
                     datatrove_name: str | os.PathLike | None = None,
                     olmo_folder: str | os.PathLike | None = None) -> list[str]:
    """Whether Megatron's ``.bin`` and datatrove's ``.ds`` made from a ``.pbin`` (by ``pack`` in its one
    pass, or ``to-megatron`` / ``to-datatrove``) follow their peers' rules, re-derived from the
    ``.pbin`` and its sidecar: the ``.bin`` dtype Megatron's ``preprocess_data.py`` picks for the
    sidecar's ``tokenizer.vocab_size`` (uint16 below 65,500 tokens, else int32), and its documents and
    tokens those of the ``.pbin`` (one more EOD per document of ``eod_in_text``); the ``.ds`` token
    size datatrove picks (4 bytes above 65,536) and its documents as datatrove writes them from the
    ``.pbin``'s (:func:`tokenmill.formats.datatrove.datatrove_documents`: the post-processor's ids left out,
    one EOS); OLMo-core's parts the ``.pbin``'s tokens and documents (:func:`tokenmill.formats.olmo.verify_olmo`).
    One line per problem. Cost: one pass over both files' tokens in 16M-token blocks.

    Raises:
        TokenmillError: an unreadable ``.pbin`` or sidecar.
    """
    pbin_path = Path(pbin_path)
    pbin, meta = PbinFile(pbin_path), read_sidecar(pbin_path) or {}
    tokenizer = meta.get("tokenizer") or {}
    vocab_size = tokenizer.get("vocab_size")
    if vocab_size is None:
        return [f"{pbin_path}: no sidecar with the tokenizer's vocabulary size to check its conversions against"]
    problems = []
    if megatron_prefix is not None:
        try:
            dataset, expected = MMapIndexedDataset(megatron_prefix), optimal_dtype(vocab_size)
            doubled = int(range_indices(meta.get("eod_in_text", []), pbin.num_documents).sum())
            # an empty text's EOD (Modalities' rule) is not Megatron's, whose document of it holds no sequence
            dropped = int(pbin.doc_lengths[range_indices(meta.get("empty_texts", []), pbin.num_documents)].sum())
        except TokenmillError as exc:
            return [str(exc)]
        if dataset.dtype != expected:
            problems.append(f"{megatron_prefix}.bin: {dataset.dtype.name} tokens, but Megatron's preprocess_data.py "
                            f"writes {expected.name} for the vocabulary of {vocab_size} tokens of {pbin_path}'s "
                            f"sidecar (uint16 below {MEGATRON_UINT16_BELOW:,})")
        # (with the right dtype) its documents are the .pbin's, each with one more EOD where its text ended with one
        elif dataset.num_documents != pbin.num_documents:
            problems.append(f"{megatron_prefix}.idx: {dataset.num_documents} documents, {pbin_path} has "
                            f"{pbin.num_documents}")
        elif "eod_in_text" in meta and (tokens := int(dataset.sequence_lengths.sum(dtype=np.int64))) != \
                pbin.num_tokens + doubled - dropped:
            problems.append(f"{megatron_prefix}.bin: {tokens} tokens, but {pbin_path}'s {pbin.num_tokens} and the "
                            f"{doubled} EODs its texts ended with"
                            + (f", less the {dropped} EODs of its empty texts," if dropped else "")
                            + f" make {pbin.num_tokens + doubled - dropped}")
    if datatrove_name is not None:
        problems += _datatrove_made_from(pbin_path, pbin, meta, datatrove_name)
    if olmo_folder is not None:
        problems += verify_olmo(olmo_folder, pbin_path)
    return problems


def _datatrove_made_from(pbin_path: Path, pbin: PbinFile, meta: SidecarRecord, name: str | os.PathLike) -> list[str]:
    """A ``.ds`` against datatrove's rules applied to the ``.pbin`` it was made from (see :func:`verify_made_from`)."""
    ds = datatrove_paths(name)[".ds"]
    try:
        dataset = DatatroveFile(name)
        added = packed_post_processor_ids(meta, pbin_path)
        doubled = range_indices(meta.get("eod_in_text", []), pbin.num_documents)
    except TokenmillError as exc:
        return [str(exc)]
    tokenizer = meta["tokenizer"]
    expected = token_size_for(tokenizer["vocab_size"])
    if dataset.token_size != expected:
        return [f"{ds}: {dataset.token_size}-byte tokens, but datatrove writes {expected}-byte tokens for the "
                f"vocabulary of {tokenizer['vocab_size']} tokens of {pbin_path}'s sidecar (4 bytes above "
                f"{UINT16_VOCAB_LIMIT:,})"]
    if dataset.num_documents != pbin.num_documents:
        return [f"{ds}: {dataset.num_documents} documents, {pbin_path} has {pbin.num_documents}"]
    if "loss_mask" in meta:
        added = ((), ())
    lengths = pbin.doc_lengths
    for first, stop, start, end in document_blocks(np.cumsum(lengths)):
        try:
            tokens, block_lengths, _ = datatrove_documents(
                np.asarray(pbin.tokens[start:end], dtype=np.int64), lengths[first:stop],
                tokenizer.get("eod_id"), np.flatnonzero(doubled[first:stop]), added, first_document=first)
        except TokenmillError as exc:
            return [f"{pbin_path}: {exc}"]
        ds_start = int(dataset.ends[first - 1]) if first else 0
        expected_ends = ds_start + np.cumsum(block_lengths)
        written = dataset.tokens[ds_start:ds_start + len(tokens)]
        differs = np.flatnonzero(dataset.ends[first:stop] != expected_ends)
        if len(written) == len(tokens):
            differs = np.union1d(differs, np.searchsorted(expected_ends, np.flatnonzero(written != tokens),
                                                          side="right"))
        if len(differs) or len(written) != len(tokens):
            document = first + int(differs[0]) if len(differs) else first
            before, after = added
            return [f"{ds}: document {document} is not what datatrove writes for document {document} of {pbin_path} "
                    f"(the text's ids without its post-processor's {list(before)} before and {list(after)} after, "
                    f"then one EOS {tokenizer.get('eod_id')})"]
    return []


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
