"""datatrove's tokenized files, which nanotron's Nanoset reads: writer, reader, and conversion from ``.pbin``.

One dataset ``NAME`` is four files side by side, as datatrove 0.10.1's ``DocumentTokenizer`` writes them
(all integers little-endian; no header, magic or version anywhere)::

    NAME.ds           T × u16, or T × u32   the token ids of every document, back to back; datatrove
                                            ends every document with the EOS id
    NAME.ds.index     N × u64               the end of each document, in tokens from the file start:
                                            [end_0, end_1, ..., end_N-1 = T]; the first start (0) is
                                            not stored, so document i is tokens [end_i-1, end_i)
    NAME.ds.loss      T × u8 (optional)     one flag per token: 1 trained, 0 not (numpy bools); only
                                            with datatrove's save_loss_metadata, here only for an SFT
                                            ``.pbin`` (its ``.loss_mask.pbin``)
    NAME.ds.metadata  UTF-8 text, three lines and no final newline:
                      "<tokenizer name or path>|<token size>\\n<T>\\n<T with an SI prefix>",
                      e.g. "gpt2.tokenizer.json|2\\n39577\\n39.6 kT" or "...|2\\n27\\n27.0 T": the name
                      as it was given to datatrove (a hub name or a path), the count as
                      ``humanize.metric(T, "T")`` writes it: three significant digits (see :func:`si_count`)

Token size: 2 bytes unless the vocabulary has more than 65,536 tokens (datatrove:
``4 if tokenizer.get_vocab_size() > 65536``), then 4. Megatron's ``.bin`` switches to int32 already
from 65,500 (:func:`tokenmill.formats.bin_idx.optimal_dtype`), so vocabularies of 65,500 to 65,536 tokens are
uint16 here and int32 there. The vocabulary is the ``.pbin`` sidecar's ``tokenizer.vocab_size``:
the loaded tokenizer's token count, added tokens included, numbered as Hugging Face numbers them on
load (:mod:`tokenmill.tokenization.tokenizer`), which is the number datatrove's ``get_vocab_size()`` gives.

The documents (docs/formats.md §10): given an ``eos_token``, datatrove replaces the tokenizer's
post-processor by ``$A <EOS>``, so a document is the text's own ids and one EOS it appended: no BOS
or EOS of the tokenizer's own template, and an EOS also when the text already ended with one (as
Megatron's ``--append-eod``). A ``.pbin`` (Modalities' rule) holds the tokenizer's ids with its
post-processor's (the sidecar's ``tokenizer.post_processor_ids``), then the EOD unless they already
ended with it (the sidecar's ``eod_in_text``); :func:`datatrove_documents` turns those into
datatrove's documents, for the conversion and for ``pack --datatrove`` alike.

Reading: ``DatatroveFolderDataset(folder, seq_len, token_size=2)`` walks the folder's ``.ds`` files
(recursively, sorted) and serves windows of ``seq_len + 1`` tokens that do not overlap, looping past
the end; it reads ``.ds.index`` only for position ids. nanotron's ``Nanoset`` takes one such folder
per dataset, with a weight each; it never reads ``.ds.metadata``.

Cost: the conversion copies the token section in 16M-token blocks (a plain copy when the widths
agree, a vectorised cast otherwise; one vectorised mask per block where the post-processor added ids,
one vectorised insert per block with second EODs) and writes 8 bytes of index per document; reading
maps the files and checks the index once (O(documents)).
"""

from __future__ import annotations

import hashlib
import json
import math
import mmap
import os
from pathlib import Path

import numpy as np

from tokenmill.errors import TokenmillError
from tokenmill.files.atomic import AtomicWriter, discard, temporary_name
from tokenmill.files.identity import refuse_inputs_as_outputs
from tokenmill.formats.document_blocks import document_blocks, eod_appended
from tokenmill.formats.dtypes import UINT16_VOCAB_LIMIT
from tokenmill.formats.pbin import PbinFile, read_sidecar
from tokenmill.formats.sidecar import SidecarRecord, range_indices, resolve_sidecar_paths, sidecar_path
from tokenmill.progress import Progress

__all__ = ["DatatroveWriter", "DatatroveFile", "pbin_to_datatrove", "token_size_for", "si_count",
           "metadata_text", "datatrove_paths", "is_datatrove", "UINT16_VOCAB_LIMIT", "datatrove_documents",
           "packed_post_processor_ids", "describe_datatrove"]

_TOKEN_DTYPES = {2: np.dtype("<u2"), 4: np.dtype("<u4")}
_INDEX_DTYPE = np.dtype("<u8")
_SUFFIXES = (".ds", ".ds.index", ".ds.loss", ".ds.metadata")


def token_size_for(vocab_size: int) -> int:
    """Bytes per token datatrove uses for a vocabulary of ``vocab_size`` tokens (``get_vocab_size()``,
    added tokens included): 2, or 4 above 65,536."""
    return 4 if vocab_size > UINT16_VOCAB_LIMIT else 2


PostProcessorIds = tuple[tuple[int, ...], tuple[int, ...]]  # (before, after) a text's own ids


def datatrove_documents(tokens: np.ndarray, lengths: np.ndarray, eod_id: int | None,
                        doubled: np.ndarray | None = None, added: PostProcessorIds = ((), ()),
                        loss: np.ndarray | None = None,
                        first_document: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Documents packed by Modalities' rule → the documents datatrove's ``DocumentTokenizer`` writes.

    A packed document is ``before + own + after`` (the tokenizer's ids with its post-processor's
    ``added`` around the text's own), then the EOD, except the documents ``doubled`` (0-based in the
    batch), whose ids already ended with it. datatrove, given the EOD as ``eos_token``, writes
    ``own + [EOD]``. So ``before`` and ``after`` are dropped (one vectorised mask) and the documents
    ``doubled`` get their EOD (one vectorised insert); a batch without either is returned as it is.
    Without an EOD (``eod_id`` None) datatrove keeps the tokenizer's post-processor: nothing changes.

    Args:
        tokens, lengths: the packed documents back to back, ``lengths`` tokens each.
        loss: one flag per token, kept for the kept tokens (an added EOD is trained).
        first_document: the number of the batch's first document, for messages.

    Returns:
        ``(tokens, lengths, loss)`` of datatrove's documents.

    Raises:
        TokenmillError: a document that does not hold ``before`` and ``after`` where the rule puts
            them (packed with other special-token settings than the sidecar says?).
    """
    if eod_id is None:
        return tokens, lengths, loss
    before, after = (np.asarray(ids, dtype=np.int64) for ids in added)
    doubled = np.empty(0, np.int64) if doubled is None else np.asarray(doubled, dtype=np.int64)
    if len(before) or len(after):
        ends = np.cumsum(lengths)
        appended = np.ones(len(lengths), bool)
        appended[doubled] = False
        own_end = ends - appended  # where the tokenizer's ids end: before an appended EOD
        short = np.flatnonzero(own_end - (ends - lengths) < len(before) + len(after))
        if len(short):
            raise TokenmillError(f"document {first_document + int(short[0])} is shorter than the ids its tokenizer's "
                                 f"post-processor adds ({before.tolist()} before, {after.tolist()} after)")
        drop = np.concatenate([((ends - lengths)[:, None] + np.arange(len(before))).ravel(),
                               (own_end[:, None] - len(after) + np.arange(len(after))).ravel()])
        expected = np.concatenate([np.tile(before, len(lengths)), np.tile(after, len(lengths))])
        wrong = np.flatnonzero(tokens[drop] != expected)
        if len(wrong):
            document = int(np.searchsorted(ends, drop[wrong[0]], side="right"))
            raise TokenmillError(f"document {first_document + document} does not hold the ids its tokenizer's "
                                 f"post-processor adds ({before.tolist()} before its own, {after.tolist()} after) "
                                 f"where they belong: packed with other special-token settings?")
        keep = np.ones(len(tokens), bool)
        keep[drop] = False
        tokens, lengths = tokens[keep], lengths - (len(before) + len(after))
        loss = None if loss is None else loss[keep]
    return eod_appended(tokens, lengths, doubled, eod_id, loss)  # an added EOD is trained


def packed_post_processor_ids(meta: SidecarRecord, pbin_path: str | os.PathLike) -> PostProcessorIds:
    """The ids of a ``.pbin``'s tokenizer's post-processor that its documents hold, which datatrove's
    documents leave out: the sidecar's ``tokenizer.post_processor_ids`` where it packed with special
    tokens on and an EOD (none for an SFT ``.pbin``, whose conversations stay as they are).

    A sidecar written before tokenmill recorded them: the tokenizer file it names tells them, where
    its post-processor adds ids at all (a ``post_processor`` other than none or ``ByteLevel``); a
    file that is gone, or another type's, is taken to add none. Cost: nothing, or for such an old
    sidecar one JSON parse of the tokenizer file (~0.1 s for GPT-2) and, with a template, a load.

    Raises:
        TokenmillError: an old sidecar whose tokenizer file adds ids but is no longer the file packed with.
    """
    tokenizer = meta.get("tokenizer") or {}
    if "loss_mask" in meta or tokenizer.get("eod_id") is None or tokenizer.get("add_special_tokens") is False:
        return (), ()
    recorded = tokenizer.get("post_processor_ids")
    if isinstance(recorded, dict):
        return tuple(recorded.get("before", ())), tuple(recorded.get("after", ()))
    path = resolve_sidecar_paths(meta, pbin_path)["tokenizer"].get("path")
    if tokenizer.get("type") is not None or not isinstance(path, str) or not os.path.isfile(path):
        return (), ()
    with open(path, "rb") as handle:
        content = handle.read()
    try:
        processor = json.loads(content).get("post_processor")
    except (ValueError, AttributeError):
        return (), ()
    if not isinstance(processor, dict) or processor.get("type") == "ByteLevel":
        return (), ()
    if hashlib.sha256(content).hexdigest() != tokenizer.get("sha256"):
        raise TokenmillError(f"{path}: no longer the tokenizer {pbin_path} was packed with (sha256 differs), and its "
                             f"sidecar predates the record of the ids its post-processor adds; repack it")
    from tokenizers import Tokenizer

    from tokenmill.tokenization.tokenizer import post_processor_ids

    return post_processor_ids(Tokenizer.from_str(content.decode("utf-8")), path)


def si_count(count: int) -> str:
    """``count`` as datatrove's ``.ds.metadata`` writes it (``humanize.metric(count, unit="T")``).

    Three significant digits with an SI prefix: ``0.00 T``, ``27.0 T``, ``999 T``, ``1.00 kT``,
    ``39.6 kT``, ``504 kT``, ``1.23 MT``. The arithmetic follows the float steps that produce those
    bytes: the count divided by the power of 1000 below it, rounded to 3 digits at formatting, and
    moved to the next prefix when rounding reaches 1000 (999,999 → ``1.00 MT``).

    Raises:
        ValueError: a negative count, or one of 10**33 or more (written another way by humanize).
    """
    if count < 0 or count >= 10 ** 33:
        raise ValueError(f"token count {count} is outside 0 .. 10**33")
    exponent = math.floor(math.log10(count)) if count else 0  # the power of ten of the leading digit
    first_bucket = exponent // 3 * 3
    value = count / 10 ** first_bucket
    decimals = 2 - exponent % 3
    if exponent < 30 and round(value, decimals) >= 10 ** (exponent % 3 + 1):  # 9.995 rounds up to 10.0
        exponent += 1
        value /= 10 ** (exponent // 3 * 3 - first_bucket)
        decimals = 2 - exponent % 3
    prefix = "kMGTPEZYRQ"[exponent // 3 - 1] if exponent >= 3 else ""
    return f"{value:.{decimals}f} {prefix}T"


def metadata_text(tokenizer_name: str, token_size: int, count: int) -> str:
    """The contents of ``NAME.ds.metadata`` (no final newline, as datatrove writes it)."""
    return f"{tokenizer_name}|{token_size}\n{count}\n{si_count(count)}"


def is_datatrove(path: str | os.PathLike) -> bool:
    """Whether ``path`` names one of a datatrove dataset's files (by its suffix: datatrove's files have no magic)."""
    return str(path).endswith(_SUFFIXES)


def describe_datatrove(path: str | os.PathLike) -> list[str]:
    """``inspect``'s lines of a datatrove dataset (given by any of its files): token size, counts, loss flags,
    metadata."""
    dataset = DatatroveFile(path)
    metadata = dataset.metadata
    lines = [f"dataset: {dataset.paths['.ds']} (datatrove/nanotron .ds)", f"token size: {dataset.token_size} bytes",
             f"documents: {dataset.num_documents}", f"tokens: {dataset.num_tokens}",
             f"loss flags: {'none' if dataset.loss is None else f'{int(dataset.loss.sum())} tokens trained'}"]
    if metadata:
        lines.append(f"metadata: tokenizer {metadata['tokenizer']!r}, {metadata['tokens_si']}")
    return lines


def datatrove_paths(name: str | os.PathLike) -> dict[str, Path]:
    """``DIR/NAME`` (or ``DIR/NAME.ds``) → its four files, by suffix (``.ds``, ``.ds.index``, ...)."""
    name = str(name)
    for suffix in sorted(_SUFFIXES, key=len, reverse=True):
        if name.endswith(suffix):
            name = name[:-len(suffix)]
            break
    return {suffix: Path(name + suffix) for suffix in _SUFFIXES}


class DatatroveWriter(AtomicWriter):
    """Writes ``NAME.ds``, ``.ds.index``, ``.ds.metadata`` (and ``.ds.loss``) under temporary names.

    Finishing (leaving the ``with`` block) writes the index and the metadata and renames the files
    into place, ``NAME.ds`` last: a reader globbing ``*.ds`` never finds one without its index. A
    ``NAME.ds.loss`` left by an earlier build is removed when this one has no loss flags.

    Args:
        name: ``DIR/NAME``; the folder must exist.
        token_size: 2 or 4 (see :func:`token_size_for`).
        tokenizer_name: the first field of ``.ds.metadata``.
        with_loss: also write ``NAME.ds.loss`` (every :meth:`add_batch` then gives ``loss``).

    Raises:
        TokenmillError: the files cannot be created.
    """

    def __init__(self, name: str | os.PathLike, token_size: int, tokenizer_name: str, with_loss: bool = False):
        if token_size not in _TOKEN_DTYPES:
            raise ValueError(f"token size must be 2 or 4, not {token_size}")
        self.paths = datatrove_paths(name)
        self.output_name = str(self.paths[".ds"])
        self.token_size, self.dtype, self.tokenizer_name = token_size, _TOKEN_DTYPES[token_size], tokenizer_name
        self._temporaries = {suffix: temporary_name(path) for suffix, path in self.paths.items()
                             if with_loss or suffix != ".ds.loss"}
        self._tokens = self._loss = None
        try:
            self._tokens = open(self._temporaries[".ds"], "wb")
            if with_loss:
                self._loss = open(self._temporaries[".ds.loss"], "wb")
        except OSError as exc:
            discard(self._tokens, *self._temporaries.values())
            raise TokenmillError(f"{self.output_name}: cannot write ({exc.strerror})") from None
        self._ends: list[np.ndarray] = []
        self.num_tokens = 0

    @property
    def num_documents(self) -> int:
        return sum(len(ends) for ends in self._ends)

    def add_batch(self, tokens: np.ndarray, lengths: np.ndarray, eod_id: int | None = None,
                  doubled: np.ndarray | None = None, loss: np.ndarray | None = None,
                  added: PostProcessorIds = ((), ())) -> None:
        """Append documents packed by Modalities' rule, lying back to back in ``tokens``, ``lengths``
        tokens each, as datatrove writes them (:func:`datatrove_documents`): without the ids ``added``
        by the tokenizer's post-processor, and with one more ``eod_id`` after the documents at the
        batch positions ``doubled`` (those whose own ids already ended with it: datatrove appends its
        EOS all the same).

        Args:
            loss: with ``with_loss``, one 0/1 flag per token of ``tokens``; an added EOD is trained.

        Raises:
            TokenmillError: a token id that does not fit the token size, or a document without the
                post-processor's ids (naming the document).
            ValueError: lengths that do not add up to the tokens, or loss flags missing or not wanted.
        """
        tokens, lengths = np.asarray(tokens), np.asarray(lengths, dtype=np.int64)
        if int(lengths.sum()) != len(tokens):
            raise ValueError("document lengths do not add up to the tokens")
        if (loss is None) != (self._loss is None) or (loss is not None and len(loss) != len(tokens)):
            raise ValueError("loss flags must come with every batch, one per token, exactly when the writer has them")
        try:
            tokens, lengths, loss = datatrove_documents(tokens, lengths, eod_id, doubled, added, loss,
                                                        first_document=self.num_documents)
        except TokenmillError as exc:
            raise TokenmillError(f"{self.output_name}: {exc}") from None
        limit = np.iinfo(self.dtype).max
        if len(tokens) and (int(tokens.min()) < 0 or int(tokens.max()) > limit):
            position = int(np.argmax((tokens < 0) | (tokens > limit)))
            document = self.num_documents + int(np.searchsorted(np.cumsum(lengths), position, side="right"))
            raise TokenmillError(f"{self.output_name}: token id {int(tokens[position])} of document {document} does "
                                 f"not fit {self.token_size}-byte tokens")
        self._tokens.write(np.ascontiguousarray(tokens, dtype=self.dtype).data)
        if loss is not None:
            self._loss.write(np.ascontiguousarray(loss, dtype=np.uint8).data)
        self._ends.append(self.num_tokens + np.cumsum(lengths))
        self.num_tokens += len(tokens)

    def mark(self) -> tuple:
        """A point to :meth:`rewind` to: everything added after it can be taken back."""
        return self._tokens.tell(), self._loss.tell() if self._loss else None, len(self._ends), self.num_tokens

    def rewind(self, mark: tuple) -> None:
        """Drop every document added since ``mark`` (used to re-encode an input another way)."""
        tokens_position, loss_position, batches, self.num_tokens = mark
        for handle, position in ((self._tokens, tokens_position), (self._loss, loss_position)):
            if handle is not None:
                handle.seek(position)
                handle.truncate()
        del self._ends[batches:]

    def finish(self) -> None:
        """Write ``.ds.index`` and ``.ds.metadata``, flush everything, rename into place (``.ds`` last)."""
        for handle in filter(None, (self._tokens, self._loss)):
            handle.flush()
            os.fsync(handle.fileno())
            handle.close()
        ends = np.concatenate([np.empty(0, np.int64), *self._ends])
        # .ds.index: u64 per document, its end in tokens (cumulative); datatrove stores no count and no 0
        self._temporaries[".ds.index"].write_bytes(ends.astype(_INDEX_DTYPE).tobytes())
        self._temporaries[".ds.metadata"].write_bytes(
            metadata_text(self.tokenizer_name, self.token_size, self.num_tokens).encode("utf-8"))
        if ".ds.loss" not in self._temporaries:  # an earlier build's flags would be read with these tokens
            self.paths[".ds.loss"].unlink(missing_ok=True)
        for suffix in (".ds.loss", ".ds.index", ".ds.metadata", ".ds"):
            if suffix in self._temporaries:
                os.replace(self._temporaries[suffix], self.paths[suffix])

    def abort(self) -> None:
        """Close and delete every temporary; never raises."""
        discard(self._tokens, *self._temporaries.values())
        discard(self._loss)


def _map(path: Path, dtype: np.dtype) -> np.ndarray:
    """The whole file as a read-only array of ``dtype`` (empty files give an empty array).

    Raises:
        TokenmillError: unreadable, or its size is not a whole number of items.
    """
    try:
        with open(path, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            if size % dtype.itemsize:
                raise TokenmillError(f"{path}: {size} bytes, not a whole number of {dtype.itemsize}-byte items")
            if not size:
                return np.empty(0, dtype)
            return np.frombuffer(mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ), dtype=dtype)
    except OSError as exc:
        raise TokenmillError(f"{path}: cannot read ({exc.strerror})") from None


class DatatroveFile:
    """Reader of one datatrove dataset ``NAME.ds`` (+ ``.ds.index``, ``.ds.metadata``, ``.ds.loss``), checked.

    The token size comes from ``.ds.metadata``, else from ``token_size``, else from the index: the
    ``.ds`` holds as many tokens as the last index entry says, so its size divided by that count.

    Args:
        name: ``DIR/NAME``, or any of its four files.
        token_size: bytes per token when the dataset has no ``.ds.metadata``.

    Attributes:
        tokens: the token ids (a view of the mapped ``.ds``).
        ends: each document's end in tokens (a view of the mapped ``.ds.index``).
        loss: the per-token flags of ``.ds.loss``, or None.
        metadata: ``{"tokenizer", "token_size", "tokens", "tokens_si"}`` of ``.ds.metadata``, or None.

    Raises:
        TokenmillError: a missing ``.ds`` or ``.ds.index``; an index that is not increasing or whose last
            entry is not the token count; a ``.ds.metadata`` or ``.ds.loss`` that disagrees with them.
    """

    def __init__(self, name: str | os.PathLike, token_size: int | None = None):
        self.paths = datatrove_paths(name)
        ds, index = self.paths[".ds"], self.paths[".ds.index"]
        self.ends = _map(index, _INDEX_DTYPE)
        self.metadata = self._read_metadata()
        size = self._size(ds)
        count = int(self.ends[-1]) if len(self.ends) else 0
        if self.metadata is not None:
            token_size = self.metadata["token_size"]
        elif token_size is None:
            token_size = size // count if count and size // count in _TOKEN_DTYPES else 2
        if token_size not in _TOKEN_DTYPES:
            raise TokenmillError(f"{self.paths['.ds.metadata']}: token size {token_size}; datatrove writes 2 or 4")
        self.token_size, self.dtype = token_size, _TOKEN_DTYPES[token_size]
        if size != count * token_size:
            raise TokenmillError(f"{ds}: {size} bytes, but {index} ends at token {count} ({count * token_size} "
                                 f"bytes of {token_size}-byte tokens)")
        self._check_index(index)
        self.tokens = _map(ds, self.dtype)
        self.loss = self._read_loss()
        if self.metadata is not None:
            self._check_metadata()

    @staticmethod
    def _size(path: Path) -> int:
        try:
            return path.stat().st_size
        except OSError as exc:
            raise TokenmillError(f"{path}: cannot read ({exc.strerror})") from None

    def _check_index(self, index: Path) -> None:
        ends = self.ends
        if len(ends) and (ends[0] == 0 or np.any(ends[1:] <= ends[:-1])):
            bad = 0 if ends[0] == 0 else int(np.argmax(ends[1:] <= ends[:-1])) + 1
            raise TokenmillError(f"{index}: entry {bad} is {int(ends[bad])}, not after the entry before it "
                                 f"(document ends must increase: an empty or misordered document)")

    def _read_metadata(self) -> dict | None:
        path = self.paths[".ds.metadata"]
        if not path.exists():
            return None
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise TokenmillError(f"{path}: cannot read ({exc})") from None
        lines = text.split("\n")
        name, bar, size = lines[0].rpartition("|")
        if len(lines) != 3 or not bar or size not in ("2", "4") or not lines[1].isdigit():
            raise TokenmillError(f"{path}: not datatrove metadata ('<tokenizer>|<2 or 4>', a token count and the "
                                 f"count with an SI prefix, on three lines): {text[:120]!r}")
        return {"tokenizer": name, "token_size": int(size), "tokens": int(lines[1]), "tokens_si": lines[2]}

    def _check_metadata(self) -> None:
        path, metadata = self.paths[".ds.metadata"], self.metadata
        if metadata["tokens"] != self.num_tokens:
            raise TokenmillError(f"{path}: says {metadata['tokens']} tokens, {self.paths['.ds']} holds "
                                 f"{self.num_tokens}")
        if metadata["tokens_si"] != si_count(self.num_tokens):
            raise TokenmillError(f"{path}: writes the count as {metadata['tokens_si']!r}, datatrove writes "
                                 f"{si_count(self.num_tokens)!r}")

    def _read_loss(self) -> np.ndarray | None:
        path = self.paths[".ds.loss"]
        if not path.exists():
            return None
        loss = _map(path, np.dtype(np.uint8))
        if len(loss) != self.num_tokens:
            raise TokenmillError(f"{path}: {len(loss)} flags for {self.num_tokens} tokens (one byte per token)")
        if len(loss) and int(loss.max()) > 1:
            raise TokenmillError(f"{path}: flag {int(loss.max())} at token {int(np.argmax(loss > 1))}; flags are "
                                 f"0 or 1")
        return loss

    @property
    def num_tokens(self) -> int:
        return int(self.ends[-1]) if len(self.ends) else 0

    @property
    def num_documents(self) -> int:
        return len(self.ends)

    def document(self, i: int) -> np.ndarray:
        """Tokens of document ``i``.

        Raises:
            TokenmillError: no such document.
        """
        if not 0 <= i < len(self.ends):
            raise TokenmillError(f"{self.paths['.ds']}: no document {i} (it has {len(self.ends)})")
        return self.tokens[int(self.ends[i - 1]) if i else 0:int(self.ends[i])]


def _tokenizer_as_reached_from_here(meta: SidecarRecord, pbin_path: str | os.PathLike) -> str:
    """The sidecar's tokenizer path (recorded from the sidecar's folder) as the working directory
    reaches it; an absolute one as recorded."""
    recorded = meta["tokenizer"]["path"]
    if os.path.isabs(recorded):
        return recorded
    return os.path.relpath(resolve_sidecar_paths(meta, pbin_path)["tokenizer"]["path"])


def pbin_to_datatrove(pbin_path: str | os.PathLike, name: str | os.PathLike, tokenizer_name: str | None = None,
                      vocab_size: int | None = None) -> dict:
    """Convert a ``.pbin`` into datatrove's ``NAME.ds`` files: the bytes datatrove's ``DocumentTokenizer``
    (``shuffle_documents=False``) writes for the same documents and tokenizer.

    Documents lose the ids the tokenizer's post-processor added (:func:`packed_post_processor_ids`), and
    those whose own ids already ended with the EOD (the sidecar's ``eod_in_text``) get a second one
    (:func:`datatrove_documents`). An SFT ``.pbin`` (its sidecar names a ``loss_mask``) keeps its
    conversations as they are and gets ``NAME.ds.loss`` from its ``.loss_mask.pbin``.

    Args:
        pbin_path: the packed file.
        name: ``DIR/NAME`` of the output (the folder is created).
        tokenizer_name: the metadata's tokenizer field; default: the sidecar's tokenizer path as
            reached from the working directory (as the pack command was given it, run from here).
        vocab_size: picks the token size; default: the sidecar's ``tokenizer.vocab_size``.

    Returns:
        ``{"documents", "tokens", "token_size", "loss"}``.

    Raises:
        TokenmillError: no vocabulary size or tokenizer name known, documents that do not tile the
            data, a token id that does not fit, a document without its post-processor's ids, a loss
            mask that does not match, or an output that is an input.
    """
    paths = datatrove_paths(name)
    meta = read_sidecar(pbin_path) or {}
    tokenizer = meta.get("tokenizer", {})
    mask_path = Path(pbin_path).with_name(meta["loss_mask"]) if "loss_mask" in meta else None
    refuse_inputs_as_outputs(paths.values(), [pbin_path, sidecar_path(pbin_path), *filter(None, [mask_path])])
    vocab_size = vocab_size if vocab_size is not None else tokenizer.get("vocab_size")
    if tokenizer_name is None and tokenizer.get("path") is not None:
        tokenizer_name = _tokenizer_as_reached_from_here(meta, pbin_path)
    if vocab_size is None or tokenizer_name is None:
        raise TokenmillError(f"{pbin_path}: no sidecar with the tokenizer's path and vocabulary size; pass "
                             f"--tokenizer-name and --vocab-size")
    pbin = PbinFile(pbin_path)
    if not pbin.documents_tile:
        raise TokenmillError(f"{pbin_path}: documents do not tile the data section; cannot convert it")
    mask = PbinFile(mask_path) if mask_path else None
    if mask is not None and not np.array_equal(mask.doc_lengths, pbin.doc_lengths):
        raise TokenmillError(f"{mask_path}: its documents differ from those of {pbin_path}")
    lengths = pbin.doc_lengths
    try:
        doubled = range_indices(meta.get("eod_in_text", []), len(lengths))
    except TokenmillError as exc:
        raise TokenmillError(f"{sidecar_path(pbin_path)}: eod_in_text: {exc}") from None
    added = packed_post_processor_ids(meta, pbin_path)
    token_size = token_size_for(int(vocab_size))
    paths[".ds"].parent.mkdir(parents=True, exist_ok=True)
    with DatatroveWriter(name, token_size, tokenizer_name, with_loss=mask is not None) as writer, \
            Progress(f"to-datatrove {pbin_path}", pbin.layout.data_bytes) as progress:
        for first, stop, start, end in document_blocks(np.cumsum(lengths)):
            writer.add_batch(np.asarray(pbin.tokens[start:end]), lengths[first:stop], tokenizer.get("eod_id"),
                             np.flatnonzero(doubled[first:stop]),
                             None if mask is None else np.asarray(mask.tokens[start:end]), added)
            progress.update((end - start) * pbin.token_width, stop - first)
    return {"documents": len(lengths), "tokens": writer.num_tokens, "token_size": token_size,
            "loss": mask is not None}
