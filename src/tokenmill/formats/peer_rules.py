"""The peers' rules, re-derived: whether Megatron's and datatrove's files follow what their own tools would write,
checked against the ``.pbin`` they were made from (``verify --made-from``: the hooks ``made_from`` of their rows in
:mod:`tokenmill.formats.kinds`), and a datatrove dataset alone against the tokenizer its metadata names.

* Megatron's ``.bin/.idx``: the dtype ``preprocess_data.py`` picks for the sidecar's ``tokenizer.vocab_size``
  (uint16 below 65,500 tokens, else int32), and its documents and tokens those of the ``.pbin`` (one more EOD per
  document of ``eod_in_text``, none for an empty text).
* datatrove's ``.ds``: the token size datatrove picks (4 bytes above 65,536), and its documents as datatrove writes
  them from the ``.pbin``'s (:func:`tokenmill.formats.datatrove.datatrove_documents`: the post-processor's ids left
  out, one EOS). Alone, where its ``.ds.metadata`` names a ``tokenizer.json`` found from the working directory (as
  datatrove was given it): the token size from its vocabulary, and documents that do not all keep the ids its
  post-processor adds (a BOS, an EOS before the EOS that datatrove appends), which datatrove's ``$A <EOS>`` leaves
  out (docs/formats.md §9-§10).

Each returns one line per problem (an unreadable file: its one-line error).

Cost: one pass over both files' tokens in 16M-token blocks; a tokenizer's load (0.2-1.5 s) for a ``.ds`` alone.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from tokenmill.errors import TokenmillError
from tokenmill.formats.datatrove import DatatroveFile, datatrove_documents, packed_post_processor_ids, token_size_for
from tokenmill.formats.document_blocks import document_blocks
from tokenmill.formats.dtypes import MEGATRON_UINT16_BELOW, UINT16_VOCAB_LIMIT
from tokenmill.formats.bin_idx import MMapIndexedDataset, optimal_dtype, prefix_of
from tokenmill.formats.pbin import PbinFile, read_sidecar
from tokenmill.formats.sidecar import range_indices

__all__ = ["megatron_made_from", "datatrove_made_from", "datatrove_problems"]


def megatron_made_from(pbin_path: str | os.PathLike, path: str | os.PathLike) -> list[str]:
    """A Megatron dataset (its prefix, ``.bin`` or ``.idx``) against Megatron's rules applied to the ``.pbin`` it
    was made from: dtype, documents, tokens."""
    prefix = prefix_of(path)
    pbin, meta = PbinFile(pbin_path), read_sidecar(pbin_path) or {}
    vocab_size = meta["tokenizer"]["vocab_size"]
    try:
        dataset, expected = MMapIndexedDataset(prefix), optimal_dtype(vocab_size)
        doubled = int(range_indices(meta.get("eod_in_text", []), pbin.num_documents).sum())
        # an empty text's EOD (Modalities' rule) is not Megatron's, whose document of it holds no sequence
        dropped = int(pbin.doc_lengths[range_indices(meta.get("empty_texts", []), pbin.num_documents)].sum())
    except TokenmillError as exc:
        return [str(exc)]
    if dataset.dtype != expected:
        return [f"{prefix}.bin: {dataset.dtype.name} tokens, but Megatron's preprocess_data.py writes "
                f"{expected.name} for the vocabulary of {vocab_size} tokens of {pbin_path}'s sidecar (uint16 below "
                f"{MEGATRON_UINT16_BELOW:,})"]
    # (with the right dtype) its documents are the .pbin's, each with one more EOD where its text ended with one
    if dataset.num_documents != pbin.num_documents:
        return [f"{prefix}.idx: {dataset.num_documents} documents, {pbin_path} has {pbin.num_documents}"]
    if "eod_in_text" in meta and (tokens := int(dataset.sequence_lengths.sum(dtype=np.int64))) != \
            pbin.num_tokens + doubled - dropped:
        return [f"{prefix}.bin: {tokens} tokens, but {pbin_path}'s {pbin.num_tokens} and the {doubled} EODs its "
                f"texts ended with" + (f", less the {dropped} EODs of its empty texts," if dropped else "")
                + f" make {pbin.num_tokens + doubled - dropped}"]
    return []


def datatrove_made_from(pbin_path: str | os.PathLike, name: str | os.PathLike) -> list[str]:
    """A ``.ds`` (given by any of its files) against datatrove's rules applied to the ``.pbin`` it was made from:
    token size, documents, each document's tokens."""
    pbin_path = Path(pbin_path)
    pbin, meta = PbinFile(pbin_path), read_sidecar(pbin_path) or {}
    try:
        dataset = DatatroveFile(name)
        added = packed_post_processor_ids(meta, pbin_path)
        doubled = range_indices(meta.get("eod_in_text", []), pbin.num_documents)
    except TokenmillError as exc:
        return [str(exc)]
    ds = dataset.paths[".ds"]
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


def datatrove_problems(path: str | os.PathLike) -> list[str]:
    """A datatrove dataset's structure, then datatrove's rules re-derived from the tokenizer its
    ``.ds.metadata`` names, where that is a Hugging Face ``tokenizer.json`` found from here, as datatrove
    would load it (a hub name, a moved file, or the model file of a Megatron tokenizer type: not checked)."""
    from tokenmill.tokenization.tokenizer import load_tokenizer  # (a tokenizer's import only where one is read)

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
