"""``tokenmill tokens-in``: a build from tokens already made, without tokenizing: Megatron ``.bin/.idx`` prefixes
(Megatron's ``preprocess_data.py``, ``tokenmill preprocess-data``, an earlier build) or ``.pbin`` files, with
the tokenizer they were made with.

What it writes is what ``pack`` writes for the same tokens, so everything downstream (index caches, blends,
best-fit packing, OLMo-core and datatrove files, ``verify``) takes it as its own:

- ``<prefix>.bin/.idx`` (``--megatron``): the sources' sequences and document boundaries as they are, in order
  (a file of several sequences per document keeps them, as Megatron's GPTDataset indexes sequences), in the
  dtype ``preprocess_data.py`` picks for the tokenizer's vocabulary (a narrower or wider source is cast; one
  source of that dtype gives its own bytes). A ``.pbin`` source gets its EOD doubled where the text ended with
  it, as ``to-megatron`` does.
- ``<out>.pbin``: one document per source document, its sequences joined. A Megatron document ending with two
  EODs (its text ended with one, ``--append-eod`` added another) holds one, and is listed in the sidecar's
  ``eod_in_text``, as ``pack`` writes it; a ``.pbin`` source's list comes from its own sidecar.
- the sidecar: the tokenizer as ``pack`` records it, counts, and per source its path, ``format`` (``megatron``
  or ``pbin``), ``bytes`` and ``sha256`` (of the ``.bin``, or the ``.pbin``), a Megatron source's
  ``index_bytes`` and ``index_sha256`` (its ``.idx``), documents and tokens: ``verify`` names a source edited
  since, and the workflow reruns what depends on it.

Refused in one line naming the file, before any output exists: a missing ``.bin`` or ``.idx``, a foreign or
truncated one (wrong magic, a ``.bin`` shorter or longer than its ``.idx`` says), a dtype that cannot hold the
tokenizer's ids (``uint16`` for a 128K vocabulary) or a float one, an id beyond the vocabulary (tokens made with
another tokenizer), an empty document, and, where the tokenizer has an EOD, a document that does not end with
it (made without ``--append-eod``: ``--no-eod`` takes the documents as they are) or that is the EOD alone (an
empty text, which ``pack`` refuses as a bad line). A ``.pbin`` whose sidecar names another tokenizer (sha256)
is refused too.

Cost: one pass over the sources' tokens in blocks of 16 Mi tokens (checked, then written to both outputs), one
more to hash each source; memory: 16-24 bytes per document for the index arrays. No tokenizer is run: loading
it gives its vocabulary and EOD.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tokenmill import FORMAT_VERSIONS
from tokenmill.errors import TokenmillError
from tokenmill.files.identity import FileIdentity, file_sha256, refuse_inputs_as_outputs
from tokenmill.formats.document_blocks import document_blocks
from tokenmill.formats.mmidx import MMapIndexedDataset, MMapIndexedDatasetBuilder, optimal_dtype, prefix_of
from tokenmill.formats.pbin import LAYOUT_050, PbinFile, PbinWriter, read_sidecar
from tokenmill.formats.sidecar import SidecarRecord, SourceRecord, index_ranges, range_indices, sidecar_path
from tokenmill.progress import Progress
from tokenmill.tokenization.tokenizer import TokenizerInfo, load_tokenizer

__all__ = ["tokens_in", "token_source_files"]


def token_source_files(source: str) -> list[str]:
    """The files a ``tokens`` entry names: a ``.pbin``, or a Megatron prefix's ``.bin`` and ``.idx`` (given as
    the prefix or either file)."""
    if source.endswith(".pbin"):
        return [source]
    prefix = prefix_of(source)
    return [f"{prefix}.bin", f"{prefix}.idx"]


@dataclass
class _Source:
    """One source opened and checked: its documents' token ends, where its tokens lie, what it records."""

    path: str  # the .bin or the .pbin
    kind: str  # its kind of source, one of tokenmill.formats.kinds.TOKENS_READ_IN: "megatron" or "pbin"
    tokens: np.ndarray
    doc_ends: np.ndarray  # each document's end in tokens, from the source's first token
    megatron: MMapIndexedDataset | None = None
    pbin: PbinFile | None = None
    eod_in_text: np.ndarray | None = None  # a .pbin's: documents that kept the text's own EOD


def tokens_in(sources: list[str], out_path: str | os.PathLike, tokenizer: str | os.PathLike | object,
              eod: str | None, add_special_tokens: bool = True,
              megatron_prefix: str | os.PathLike | None = None) -> SidecarRecord:
    """Write ``out_path`` (a ``.pbin`` and its sidecar) and, with ``megatron_prefix``, Megatron's ``.bin/.idx``
    from existing tokens (module docstring).

    Args:
        sources: Megatron prefixes (or their ``.bin``/``.idx``) and ``.pbin`` files, in order.
        out_path: the ``.pbin`` to write.
        tokenizer: what :func:`tokenmill.tokenization.tokenizer.load_tokenizer` takes: the tokenizer the tokens
            were made with (its vocabulary and EOD are checked against them; nothing is encoded).
        eod: its end-of-document token (:data:`tokenmill.tokenization.tokenizer.TYPE_EOD`: the type's); None: the
            documents carry none and are taken as they are.
        add_special_tokens: recorded in the sidecar as ``pack`` records it (the tokens' post-processor ids).
        megatron_prefix: also write ``<prefix>.bin/.idx``.

    Returns:
        The sidecar written.

    Raises:
        TokenmillError: no sources, an output that is a source, a bad source (module docstring), one line
            naming the file.
    """
    if not sources:
        raise TokenmillError("tokens-in needs at least one .bin/.idx prefix or .pbin")
    outputs = [out_path, sidecar_path(out_path)]
    if megatron_prefix is not None:
        outputs += [f"{megatron_prefix}.bin", f"{megatron_prefix}.idx"]
    refuse_inputs_as_outputs(outputs, [file for source in sources for file in token_source_files(source)])
    info = load_tokenizer(tokenizer, eod)
    opened = [_open(source, info) for source in sources]
    total_bytes = sum(int(source.doc_ends[-1]) * source.tokens.dtype.itemsize if len(source.doc_ends) else 0
                      for source in opened)
    records: list[SourceRecord] = []
    kept_eod: list[np.ndarray] = []
    documents = 0
    with contextlib.ExitStack() as stack:  # closed in reverse: Megatron's files, then the .pbin and its sidecar
        writer = stack.enter_context(PbinWriter(out_path, info.token_width))
        megatron = stack.enter_context(MMapIndexedDatasetBuilder(megatron_prefix, optimal_dtype(info.vocab_size))) \
            if megatron_prefix is not None else None
        progress = stack.enter_context(Progress(f"tokens-in {out_path}", total_bytes))
        for source in opened:
            before = writer.num_tokens
            kept_eod.append(_copy(source, info, writer, megatron, progress) + documents)
            documents += len(source.doc_ends)
            records.append(_record(source, len(source.doc_ends), writer.num_tokens - before))
        writer.sidecar = {
            "format": FORMAT_VERSIONS["pbin"],
            "layout": LAYOUT_050,
            "tokenizer": {**info.sidecar_entry(), "add_special_tokens": add_special_tokens},
            "token_width": info.token_width,
            "documents": writer.num_documents,
            "tokens": writer.num_tokens,
            "sources": records,
            "eod_in_text": index_ranges(np.concatenate(kept_eod) if kept_eod else np.empty(0, np.int64)),
        }
    return {**writer.sidecar, "file": writer.identity}


def _open(source: str, info: TokenizerInfo) -> _Source:
    """A source opened and checked whole where it costs O(documents): dtype, empty documents, EODs.

    Raises:
        TokenmillError: a missing, foreign, truncated or unfit source (module docstring).
    """
    if source.endswith(".pbin"):
        return _open_pbin(source, info)
    prefix = prefix_of(source)
    for path in (f"{prefix}.idx", f"{prefix}.bin"):
        if not os.path.isfile(path):
            raise TokenmillError(f"{path}: no such file (a Megatron prefix {prefix} names {prefix}.bin and "
                                 f"{prefix}.idx)")
    dataset = MMapIndexedDataset(prefix)
    dtype = dataset.dtype
    if dtype.kind not in "iu":
        raise TokenmillError(f"{dataset.idx_path}: {dtype.name} tokens, not token ids")
    limit = info.id_limit or info.vocab_size
    if np.iinfo(dtype).max < limit - 1:
        raise TokenmillError(f"{dataset.bin_path}: {dtype.name} tokens hold ids up to {np.iinfo(dtype).max:,}, but "
                             f"{info.path} has {limit:,}: not made with this tokenizer (or its ids wrapped)")
    sequence_ends = np.concatenate([[0], np.cumsum(dataset.sequence_lengths, dtype=np.int64)])
    doc_ends = sequence_ends[dataset.document_indices[1:]]
    tokens = dataset.tokens_at(0, int(sequence_ends[-1]))
    opened = _Source(str(dataset.bin_path), "megatron", tokens, doc_ends, megatron=dataset)
    _check_documents(opened, str(dataset.idx_path), info)
    return opened


def _open_pbin(path: str, info: TokenizerInfo) -> _Source:
    if not os.path.isfile(path):
        raise TokenmillError(f"{path}: no such file")
    pbin = PbinFile(path)
    if not pbin.documents_tile:
        raise TokenmillError(f"{path}: the document index does not tile the data section (gaps or overlaps)")
    meta = read_sidecar(path) or {}
    made_with = (meta.get("tokenizer") or {}).get("sha256")
    if made_with is not None and made_with != info.sha256:
        raise TokenmillError(f"{path}: packed with another tokenizer (sidecar sha256 {made_with[:12]}…, "
                             f"{info.path} has {info.sha256[:12]}…)")
    lengths = pbin.doc_lengths.astype(np.int64)
    opened = _Source(path, "pbin", pbin.tokens, np.cumsum(lengths), pbin=pbin)
    if "eod_in_text" in meta:
        opened.eod_in_text = np.flatnonzero(range_indices(meta["eod_in_text"], len(lengths)))
    _check_documents(opened, path, info)
    return opened


def _check_documents(source: _Source, where: str, info: TokenizerInfo) -> None:
    """No empty document; with an EOD, every document ends with it and is more than the EOD alone (a Megatron
    source's: ``--append-eod`` appends one to every text, and a text is never empty).

    Raises:
        TokenmillError: the first document that does not, naming ``where`` and its number.
    """
    ends = source.doc_ends
    lengths = np.diff(ends, prepend=0)
    empty = np.flatnonzero(lengths == 0)
    if len(empty):
        raise TokenmillError(f"{where}: document {int(empty[0])} is empty ({len(empty)} such); a .pbin holds no "
                             f"empty document")
    if info.eod_id is None or not len(ends):
        return
    last = np.asarray(source.tokens[ends - 1])
    unended = np.flatnonzero(last != info.eod_id)
    if len(unended):
        raise TokenmillError(
            f"{where}: document {int(unended[0])} ends with id {int(last[unended[0]])}, not the EOD {info.eod!r} "
            f"(id {info.eod_id}) ({len(unended)} such): made without --append-eod, or with another EOD? With no EOD "
            f"(tokens-in --no-eod; the config's eod: null) its documents are taken as they are")
    if source.kind == "megatron":
        alone = np.flatnonzero(lengths == 1)
        if len(alone):
            raise TokenmillError(f"{where}: document {int(alone[0])} is the EOD alone (an empty text, {len(alone)} "
                                 f"such), which pack refuses as a bad line")


def _copy(source: _Source, info: TokenizerInfo, writer: PbinWriter, megatron: MMapIndexedDatasetBuilder | None,
          progress: Progress) -> np.ndarray:
    """Append a source's documents to the ``.pbin`` (and Megatron's files), block by block, checking each
    token against the vocabulary; return its documents (0-based in it) that kept the text's own EOD."""
    limit = info.id_limit or info.vocab_size
    eod_id = info.eod_id
    kept: list[np.ndarray] = []
    pbin_doubled = np.zeros(len(source.doc_ends), bool)
    if source.eod_in_text is not None:
        pbin_doubled[source.eod_in_text] = True
    for first, stop, start, end in document_blocks(source.doc_ends):
        block = np.asarray(source.tokens[start:end])
        lengths = np.diff(source.doc_ends[first:stop], prepend=start)
        if len(block) and (int(block.max()) >= limit or (block.dtype.kind == "i" and int(block.min()) < 0)):
            position = int(np.argmax((block >= limit) | (block < 0)))
            document = first + int(np.searchsorted(np.cumsum(lengths), position, side="right"))
            raise TokenmillError(f"{source.path}: token id {int(block[position])} of document {document} is beyond "
                                 f"the vocabulary of {limit:,} of {info.path} (made with another tokenizer?)")
        if source.kind == "megatron":
            ends = np.cumsum(lengths)
            doubled = np.flatnonzero((lengths >= 2) & (block[np.maximum(ends - 2, 0)] == eod_id)) \
                if eod_id is not None else np.empty(0, np.int64)
            if megatron is not None:
                dataset = source.megatron
                sequences = dataset.document_indices[first:stop + 1]
                megatron.add_sequences(block, np.asarray(dataset.sequence_lengths[sequences[0]:sequences[-1]]),
                                       np.diff(sequences))
            if len(doubled):  # the EOD --append-eod added after the text's own is not the .pbin's
                pbin_lengths = lengths.copy()
                pbin_lengths[doubled] -= 1
                writer.write(np.delete(block, ends[doubled] - 1), pbin_lengths)
            else:
                writer.write(block, lengths)
        else:
            doubled = np.flatnonzero(pbin_doubled[first:stop])
            if megatron is not None:
                megatron.add_batch(block, lengths, eod_id, doubled if eod_id is not None else None)
            writer.write(block, lengths)
        kept.append(doubled + first)
        progress.update(len(block) * block.dtype.itemsize, stop - first)
    return np.concatenate(kept) if kept else np.empty(0, np.int64)


def _record(source: _Source, documents: int, tokens: int) -> SourceRecord:
    """A source as the sidecar records it: its files' sizes and sha256, checked unchanged since opened."""
    if source.kind == "megatron":
        dataset = source.megatron
        record: SourceRecord = {"path": str(dataset.bin_path), "format": "megatron",
                                "bytes": dataset.bin_identity.size,
                                "sha256": _sha256(dataset.bin_path, dataset.bin_identity),
                                "index_bytes": dataset.idx_identity.size,
                                "index_sha256": _sha256(dataset.idx_path, dataset.idx_identity)}
    else:
        record = {"path": source.path, "format": "pbin", "bytes": source.pbin.identity.size,
                  "sha256": _sha256(Path(source.path), source.pbin.identity)}
    return {**record, "documents": documents, "tokens": tokens}


def _sha256(path: Path, identity: FileIdentity) -> str:
    """The sha256 of a source file that must still be the one read (not replaced or rewritten since)."""
    try:
        digest = file_sha256(path)
    except OSError as exc:
        raise TokenmillError(f"{path}: cannot read ({exc.strerror})") from None
    identity.check(path)
    return digest
