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
- the sidecar: the tokenizer as ``pack`` records it, counts, ``eod_within_documents`` (the EOD ids inside
  the ``.pbin``'s documents, before their last token, counted and warned about as ``pack`` does: a reader
  that finds documents by scanning for the EOS cuts them there), and per source its path, ``format``
  (``megatron`` or ``pbin``), ``bytes`` and ``sha256`` (of the ``.bin``, or the ``.pbin``), a Megatron
  source's ``index_bytes`` and ``index_sha256`` (its ``.idx``), documents and tokens: ``verify`` names a
  source edited since, and the workflow reruns what depends on it.

Megatron's empty documents are taken: ``preprocess_data.py`` keeps an empty text as a document of no
sequences (``--append-eod`` appends no EOD to it), which the ``.pbin`` holds as a document of no token and
lists in the sidecar's ``empty_texts``, and which converts back to one of no sequences, so the ``.bin/.idx``
written (or converted from the ``.pbin``) equal the source's bytes. A document of the EOD alone (what
another writer may make of an empty text) is listed there too and kept as it is.

Refused in one line naming the file, before any output exists: a missing ``.bin`` or ``.idx``, a foreign or
truncated one (wrong magic, a ``.bin`` shorter or longer than its ``.idx`` says), a source named twice (the
same file under another spelling or through a link: the same device and inode, as ``pack`` refuses an input),
a dtype that cannot hold the tokenizer's ids (``uint16`` for a 128K vocabulary) or a float one, an id beyond
the vocabulary (tokens made with another tokenizer), where the tokenizer has an EOD a non-empty document that
does not end with it (made without ``--append-eod``: ``--no-eod`` takes the documents as they are), and an SFT
``.pbin`` (its sidecar names a loss mask), whose mask tokens-in cannot carry: ``--drop-loss-mask`` takes its
tokens alone, trained on whole, and records the mask dropped per source. A ``.pbin`` whose sidecar names
another tokenizer (sha256) is refused too.

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
from tokenmill.files.identity import FileIdentity, file_sha256, named_twice, refuse_inputs_as_outputs
from tokenmill.formats.document_blocks import document_blocks, eod_appended
from tokenmill.formats.bin_idx import MMapIndexedDataset, MMapIndexedDatasetBuilder, optimal_dtype, prefix_of
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
    empty_texts: np.ndarray | None = None  # a .pbin's: documents of an empty text its sidecar lists
    loss_mask: str | None = None  # an SFT .pbin's: its loss mask file, not read (--drop-loss-mask)

    @property
    def empty_text_documents(self) -> np.ndarray:
        """Its documents of an empty text: those of no token (Megatron's of no sequences), and those a ``.pbin``'s
        sidecar lists (the EOD alone)."""
        empty = np.diff(self.doc_ends, prepend=0) == 0
        if self.empty_texts is not None:
            empty[self.empty_texts] = True
        return np.flatnonzero(empty)

    @property
    def identity(self) -> FileIdentity:
        """The identity of its ``.bin`` or ``.pbin`` (the same file under two names is one source)."""
        return self.megatron.bin_identity if self.megatron is not None else self.pbin.identity


def tokens_in(sources: list[str], out_path: str | os.PathLike, tokenizer: str | os.PathLike | object,
              eod: str | None, add_special_tokens: bool = True,
              megatron_prefix: str | os.PathLike | None = None, drop_loss_mask: bool = False) -> SidecarRecord:
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
        drop_loss_mask: read an SFT ``.pbin``'s tokens without its loss mask (recorded per source); without it
            such a source is refused.

    Returns:
        The sidecar written.

    Raises:
        TokenmillError: no sources, an output that is a source, a source named twice, a bad source (module
            docstring), one line naming the file.
    """
    if not sources:
        raise TokenmillError("tokens-in needs at least one .bin/.idx prefix or .pbin")
    outputs = [out_path, sidecar_path(out_path)]
    if megatron_prefix is not None:
        outputs += [f"{megatron_prefix}.bin", f"{megatron_prefix}.idx"]
    refuse_inputs_as_outputs(outputs, [file for source in sources for file in token_source_files(source)])
    info = load_tokenizer(tokenizer, eod)
    opened = [_open(source, info, drop_loss_mask) for source in sources]
    twice = named_twice(sources, {given: source.identity for given, source in zip(sources, opened)})
    if twice is not None:
        raise TokenmillError(f"{twice[0]}: is the source {twice[1]} again (the same file) and its documents would be "
                             f"written twice; name it once")
    total_bytes = sum(int(source.doc_ends[-1]) * source.tokens.dtype.itemsize if len(source.doc_ends) else 0
                      for source in opened)
    records: list[SourceRecord] = []
    kept_eod: list[np.ndarray] = []
    empty: list[np.ndarray] = []  # per source: its documents of an empty text, numbered in the output
    documents = eod_within = 0
    with contextlib.ExitStack() as stack:  # closed in reverse: Megatron's files, then the .pbin and its sidecar
        writer = stack.enter_context(PbinWriter(out_path, info.token_width))
        megatron = stack.enter_context(MMapIndexedDatasetBuilder(megatron_prefix, optimal_dtype(info.vocab_size))) \
            if megatron_prefix is not None else None
        progress = stack.enter_context(Progress(f"tokens-in {out_path}", total_bytes))
        for source in opened:
            before = writer.num_tokens
            kept, within = _copy(source, info, writer, megatron, progress)
            kept_eod.append(kept + documents)
            empty.append(source.empty_text_documents + documents)
            eod_within += within
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
            **({"eod_within_documents": eod_within} if info.eod_id is not None else {}),
            **({"empty_texts": index_ranges(np.concatenate(empty))} if any(map(len, empty)) else {}),
        }
    return {**writer.sidecar, "file": writer.identity}


def _open(source: str, info: TokenizerInfo, drop_loss_mask: bool) -> _Source:
    """A source opened and checked whole where it costs O(documents): dtype, empty documents, EODs.

    Raises:
        TokenmillError: a missing, foreign, truncated or unfit source (module docstring).
    """
    if source.endswith(".pbin"):
        return _open_pbin(source, info, drop_loss_mask)
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


def _open_pbin(path: str, info: TokenizerInfo, drop_loss_mask: bool) -> _Source:
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
    if "loss_mask" in meta and not drop_loss_mask:
        raise TokenmillError(f"{path}: an SFT .pbin: tokens-in reads its tokens only, and its loss mask "
                             f"({meta['loss_mask']}) would be lost (every token trained on); pass --drop-loss-mask "
                             f"to take its tokens without it")
    lengths = pbin.doc_lengths.astype(np.int64)
    opened = _Source(path, "pbin", pbin.tokens, np.cumsum(lengths), pbin=pbin, loss_mask=meta.get("loss_mask"))
    for key in ("eod_in_text", "empty_texts"):
        if key in meta:
            setattr(opened, key, np.flatnonzero(range_indices(meta[key], len(lengths))))
    _check_documents(opened, path, info)
    return opened


def _check_documents(source: _Source, where: str, info: TokenizerInfo) -> None:
    """With an EOD, every document ends with it, but a Megatron document of no token (an empty text, which
    ``preprocess_data.py`` keeps as one of no sequences, ``--append-eod`` or not).

    Raises:
        TokenmillError: the first document that does not, or a Megatron document of the EOD alone (no text
            gives it), naming ``where`` and its number.
    """
    if info.eod_id is None:
        return
    lengths = np.diff(source.doc_ends, prepend=0)
    unended = np.flatnonzero(lengths == 0) if source.kind == "pbin" else np.empty(0, np.int64)
    filled = np.flatnonzero(lengths)
    unended = np.union1d(unended, filled[np.asarray(source.tokens[source.doc_ends[filled] - 1]) != info.eod_id])
    if len(unended):
        first = int(unended[0])
        ending = f"ends with id {int(source.tokens[source.doc_ends[first] - 1])}, not" if lengths[first] else \
            "holds no token, not even"
        raise TokenmillError(
            f"{where}: document {first} {ending} the EOD {info.eod!r} (id {info.eod_id}) ({len(unended)} such): "
            f"made without --append-eod, or with another EOD? With no EOD (tokens-in --no-eod; the config's eod: null) "
            f"its documents are taken as they are")
    alone = np.flatnonzero(lengths == 1) if source.kind == "megatron" else np.empty(0, np.int64)
    if len(alone):
        raise TokenmillError(
            f"{where}: document {int(alone[0])} is the EOD alone ({len(alone)} such), which no text gives: "
            f"preprocess_data.py --append-eod writes an empty text as a document of no sequences (taken) and an EOD "
            f"only after a text's ids; with --no-eod its documents are taken as they are")


def _copy(source: _Source, info: TokenizerInfo, writer: PbinWriter, megatron: MMapIndexedDatasetBuilder | None,
          progress: Progress) -> tuple[np.ndarray, int]:
    """Append a source's documents to the ``.pbin`` (and Megatron's files), block by block, checking each
    token against the vocabulary; return its documents (0-based in it) that kept the text's own EOD, and the
    EOD ids its ``.pbin`` documents hold before their last token (as ``pack`` counts them)."""
    eod_id = info.eod_id
    kept: list[np.ndarray] = []
    eod_within = 0
    pbin_doubled, empty = (np.zeros(len(source.doc_ends), bool) for _ in range(2))
    if source.eod_in_text is not None:
        pbin_doubled[source.eod_in_text] = True
    empty[source.empty_text_documents] = True
    for first, stop, start, end in document_blocks(source.doc_ends):
        block = np.asarray(source.tokens[start:end])
        lengths = np.diff(source.doc_ends[first:stop], prepend=start)
        _check_ids(source, info, block, lengths, first)
        empty_texts = np.flatnonzero(empty[first:stop])
        if source.kind == "megatron":
            if megatron is not None:
                sequences = source.megatron.document_indices[first:stop + 1]
                megatron.add_sequences(block, np.asarray(source.megatron.sequence_lengths[sequences[0]:sequences[-1]]),
                                       np.diff(sequences))
            doubled, pbin_block, pbin_lengths = _as_pbin_documents(block, lengths, empty_texts, eod_id)
        else:
            doubled = np.flatnonzero(pbin_doubled[first:stop])
            if megatron is not None:
                megatron.add_batch(block, lengths, eod_id, doubled if eod_id is not None else None, empty_texts)
            pbin_block, pbin_lengths = block, lengths
        writer.write(pbin_block, pbin_lengths)
        if eod_id is not None:  # each document ends with one EOD (checked when opened, given to empty texts)
            eod_within += int(np.count_nonzero(pbin_block == eod_id)) - len(pbin_lengths)
        kept.append(doubled + first)
        progress.update(len(block) * block.dtype.itemsize, stop - first)
    return (np.concatenate(kept) if kept else np.empty(0, np.int64)), eod_within


def _check_ids(source: _Source, info: TokenizerInfo, block: np.ndarray, lengths: np.ndarray, first: int) -> None:
    """Every id of a block of documents (the first numbered ``first``) lies in the tokenizer's vocabulary.

    Raises:
        TokenmillError: the first id beyond it, naming the source and its document.
    """
    limit = info.id_limit or info.vocab_size
    if len(block) and (int(block.max()) >= limit or (block.dtype.kind == "i" and int(block.min()) < 0)):
        position = int(np.argmax((block >= limit) | (block < 0)))
        document = first + int(np.searchsorted(np.cumsum(lengths), position, side="right"))
        raise TokenmillError(f"{source.path}: token id {int(block[position])} of document {document} is beyond "
                             f"the vocabulary of {limit:,} of {info.path} (made with another tokenizer?)")


def _as_pbin_documents(block: np.ndarray, lengths: np.ndarray, empty_texts: np.ndarray,
                       eod_id: int | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Megatron's documents (``--append-eod``) as the ``.pbin`` holds them, Modalities' rule: a document ending
    with two EODs (its text ended with one) holds one, and an empty text (no token) the EOD alone. Returns the
    documents that kept the text's own EOD (0-based in the block), the tokens and their lengths."""
    if eod_id is None:
        return np.empty(0, np.int64), block, lengths
    ends = np.cumsum(lengths)
    doubled = np.flatnonzero(lengths >= 2)
    doubled = doubled[block[ends[doubled] - 2] == eod_id]
    if len(doubled):  # the EOD --append-eod added after the text's own is not the .pbin's
        lengths = lengths.copy()
        lengths[doubled] -= 1
        block = np.delete(block, ends[doubled] - 1)
    block, lengths, _ = eod_appended(block, lengths, empty_texts, eod_id)
    return doubled, block, lengths


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
                  "sha256": _sha256(Path(source.path), source.pbin.identity),
                  **({"loss_mask_dropped": source.loss_mask} if source.loss_mask is not None else {})}
    return {**record, "documents": documents, "tokens": tokens}


def _sha256(path: Path, identity: FileIdentity) -> str:
    """The sha256 of a source file that must still be the one read (not replaced or rewritten since)."""
    try:
        digest = file_sha256(path)
    except OSError as exc:
        raise TokenmillError(f"{path}: cannot read ({exc.strerror})") from None
    identity.check(path)
    return digest
