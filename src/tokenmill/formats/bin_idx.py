"""Megatron-LM's indexed dataset (MMIDIDX ``.bin`` + ``.idx``): reader, builder, merge, conversion.

``<prefix>.bin`` holds the token ids of every sequence back to back in one dtype, nothing else.
``<prefix>.idx`` (all integers little-endian, no padding anywhere; docs/formats.md §5)::

    offset 0        9 bytes  magic b"MMIDIDX\\x00\\x00"
    offset 9        u64      version = 1
    offset 17       u8       dtype code (1 uint8, 2 int8, 3 int16, 4 int32, 5 int64, 6 float64,
                             7 float32, 8 uint16)
    offset 18       u64      S = number of sequences
    offset 26       u64      D = number of document boundaries (documents + 1)
    offset 34       S × i32  sequence lengths, in tokens
    34 + 4S         S × i64  sequence pointers: byte offset of each sequence in .bin
    34 + 12S        D × i64  document boundaries [0, end_1, ...]: sequences before each document end

A "document" is a run of sequences; tokenmill writes one sequence per document, as
``preprocess_data.py`` does without sentence splitting. The dtype is uint16 iff the vocabulary has
fewer than 65,500 ids, else int32 (``DType.optimal_dtype``), so the files equal Megatron's bytes.

Costs: reading maps both files (O(1)) and checks the index arrays once (vectorised, O(S));
conversion from ``.pbin`` and merging copy tokens in blocks of 16 Mi (32-64 MiB) — a plain block copy when
the widths agree, one vectorised cast per block otherwise.
"""

from __future__ import annotations

import mmap
import os
import struct
from pathlib import Path

import numpy as np

from tokenmill.errors import TokenmillError
from tokenmill.files.atomic import AtomicWriter, discard, temporary_name
from tokenmill.files.identity import FileIdentity, refuse_inputs_as_outputs
from tokenmill.formats.document_blocks import BLOCK_TOKENS, document_blocks, eod_appended
from tokenmill.formats.dtypes import megatron_dtype_name
from tokenmill.formats.pbin import PbinFile, copy_bytes, read_sidecar
from tokenmill.formats.sidecar import range_indices, sidecar_path
from tokenmill.progress import Progress

__all__ = ["MMapIndexedDataset", "MMapIndexedDatasetBuilder", "optimal_dtype", "pbin_to_megatron",
           "merge_megatron", "DTYPE_CODES", "prefix_of", "is_megatron_index", "is_megatron_dataset",
           "megatron_problems", "describe_megatron", "megatron_document"]

_MAGIC = b"MMIDIDX\x00\x00"
_VERSION = 1
_HEADER = struct.Struct("<9sQBQQ")  # magic, version, dtype code, S, D: 34 bytes

#: Megatron's dtype codes (note 6 = float64, 7 = float32).
DTYPE_CODES = {1: np.uint8, 2: np.int8, 3: np.int16, 4: np.int32, 5: np.int64, 6: np.float64, 7: np.float32,
               8: np.uint16}
_CODE_OF = {np.dtype(dtype): code for code, dtype in DTYPE_CODES.items()}


def optimal_dtype(vocab_size: int) -> np.dtype:
    """uint16 if ``vocab_size < 65500`` else int32, exactly Megatron's threshold (not 65536;
    :mod:`tokenmill.formats.dtypes`)."""
    return np.dtype(megatron_dtype_name(vocab_size))


def _map(path: Path) -> tuple[np.ndarray, FileIdentity]:
    """The whole file as a read-only uint8 array over a memory map (empty files give an empty array),
    and the identity of the file that was mapped."""
    with open(path, "rb") as handle:
        identity = FileIdentity.of(handle.fileno())
        if identity.size == 0:
            return np.empty(0, np.uint8), identity
        return np.frombuffer(mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ), dtype=np.uint8), identity


def _paths(prefix: str | os.PathLike) -> tuple[Path, Path]:
    return Path(f"{prefix}.bin"), Path(f"{prefix}.idx")


def prefix_of(path: str | os.PathLike) -> str:
    """A Megatron dataset's prefix (``--data-path`` value), also when given as its ``.bin`` or ``.idx``."""
    path = str(path)
    return path[:-4] if path.endswith((".bin", ".idx")) else path


def is_megatron_index(path: str | os.PathLike) -> bool:
    """Whether ``path`` is a file that opens with Megatron's ``.idx`` magic (``MMIDIDX\\x00\\x00``)."""
    try:
        with open(path, "rb") as handle:
            return handle.read(len(_MAGIC)) == _MAGIC
    except OSError:
        return False


def is_megatron_dataset(path: str | os.PathLike) -> bool:
    """Whether ``path`` names a Megatron dataset: its prefix, ``.bin`` or ``.idx``, the ``.idx`` with Megatron's
    magic (a raw line index, also an ``.idx``, has none)."""
    return is_megatron_index(f"{prefix_of(path)}.idx")


def megatron_problems(path: str | os.PathLike) -> list[str]:
    """The problems :class:`MMapIndexedDataset` finds opening a dataset (header, sizes, pointers, boundaries,
    ``.bin`` size), as one line, or none."""
    try:
        MMapIndexedDataset(prefix_of(path))
    except TokenmillError as exc:
        return [str(exc)]
    return []


def describe_megatron(path: str | os.PathLike) -> list[str]:
    """``inspect``'s lines of a Megatron dataset: its prefix, dtype and counts."""
    prefix = prefix_of(path)
    dataset = MMapIndexedDataset(prefix)
    return [f"dataset: {prefix} (Megatron MMIDIDX)", f"dtype: {dataset.dtype.name}",
            f"sequences: {len(dataset)}", f"documents: {dataset.num_documents}",
            f"tokens: {int(dataset.sizes.sum(dtype=np.int64))}"]


def megatron_document(path: str | os.PathLike, document: int) -> np.ndarray:
    """Sequence ``document`` of a Megatron dataset (``to-megatron``'s sequence i is the ``.pbin``'s document i).

    Raises:
        TokenmillError: no such sequence.
    """
    prefix = prefix_of(path)
    dataset = MMapIndexedDataset(prefix)
    if not 0 <= document < len(dataset):
        raise TokenmillError(f"{prefix}: no sequence {document} (it has {len(dataset)})")
    return dataset[document]


def _check_fits(tokens: np.ndarray, dtype: np.dtype, describe_position) -> None:
    """Raise if a token of ``tokens`` does not fit ``dtype``; ``describe_position(i)`` names token i."""
    if not len(tokens) or np.issubdtype(tokens.dtype, dtype):
        return
    limits = np.iinfo(dtype)
    outside = (tokens < limits.min) | (tokens > limits.max)
    if outside.any():
        position = int(np.argmax(outside))
        raise TokenmillError(f"token id {int(tokens[position])} of {describe_position(position)} does not fit "
                             f"{dtype.name} (range {limits.min}..{limits.max})")


class MMapIndexedDataset:
    """Memory-mapped reader of ``<prefix>.bin/.idx``.

    Args:
        prefix: the path without ``.bin``/``.idx``.

    Both files are opened once; pickled, the dataset carries only the prefix and the files'
    identities, and the copy re-maps them, refusing files rebuilt since.

    Attributes:
        dtype: token dtype.
        sequence_lengths: int32 tokens per sequence (a view of the ``.idx``).
        sequence_pointers: int64 byte offset of each sequence in ``.bin``.
        document_indices: int64 document boundaries in sequences, ``[0, ..., S]``.

    Raises:
        TokenmillError: a missing, truncated, foreign or inconsistent file, naming it and the offset.
    """

    def __init__(self, prefix: str | os.PathLike):
        self.prefix = str(prefix)
        self.bin_path, self.idx_path = _paths(prefix)
        # Each file is opened and mapped once, here: later reads never go back to the paths.
        try:
            index, self.idx_identity = _map(self.idx_path)
            tokens, self.bin_identity = _map(self.bin_path)
        except OSError as exc:
            raise TokenmillError(f"{exc.filename}: cannot read ({exc.strerror})") from None
        idx_size, bin_size = self.idx_identity.size, self.bin_identity.size
        header = index[:_HEADER.size].tobytes()
        if len(header) < _HEADER.size:
            raise TokenmillError(f"{self.idx_path}: {idx_size} bytes, too short for an MMIDIDX header (34 bytes)")
        magic, version, dtype_code, num_sequences, num_boundaries = _HEADER.unpack(header)
        if magic != _MAGIC:
            raise TokenmillError(f"{self.idx_path}: not a Megatron .idx (bytes 0-8 are {magic!r}, expected {_MAGIC!r})")
        if version != _VERSION:
            raise TokenmillError(f"{self.idx_path}: version {version} at byte 9, only version 1 exists")
        if dtype_code not in DTYPE_CODES:
            raise TokenmillError(f"{self.idx_path}: unknown dtype code {dtype_code} at byte 17")
        expected_size = _HEADER.size + 12 * num_sequences + 8 * num_boundaries
        if idx_size not in (expected_size, expected_size + num_sequences):  # + optional int8 modes
            raise TokenmillError(f"{self.idx_path}: header says {num_sequences} sequences and {num_boundaries} "
                                 f"boundaries ({expected_size} bytes) but the file has {idx_size} bytes")
        self.dtype = np.dtype(DTYPE_CODES[dtype_code])
        # Plain ndarrays over mmap buffers: np.memmap's slicing overhead dominates small random reads.
        lengths_end = _HEADER.size + 4 * num_sequences
        pointers_end = lengths_end + 8 * num_sequences
        self.sequence_lengths = index[_HEADER.size:lengths_end].view("<i4")
        self.sequence_pointers = index[lengths_end:pointers_end].view("<i8")
        self.document_indices = index[pointers_end:pointers_end + 8 * num_boundaries].view("<i8")
        self._check_consistency(bin_size)
        self._tokens = tokens.view(self.dtype)

    def __getstate__(self) -> dict:
        # A DataLoader worker re-maps the files instead of receiving a copy of every token.
        return {"prefix": self.prefix, "identities": (self.idx_identity, self.bin_identity)}

    def __setstate__(self, state: dict) -> None:
        self.__init__(state["prefix"])
        for identity, now, path in zip(state["identities"], (self.idx_identity, self.bin_identity),
                                       (self.idx_path, self.bin_path)):
            identity.require_same(now, path)

    def _check_consistency(self, bin_size: int) -> None:
        lengths, pointers, boundaries = self.sequence_lengths, self.sequence_pointers, self.document_indices
        itemsize = self.dtype.itemsize
        if len(lengths) and lengths.min() < 0:
            raise TokenmillError(f"{self.idx_path}: sequence {int(np.argmin(lengths))} has a negative length")
        expected_pointers = np.cumsum(lengths, dtype=np.int64) * itemsize - lengths.astype(np.int64) * itemsize
        if not np.array_equal(pointers, expected_pointers):
            bad = int(np.argmax(pointers != expected_pointers))
            raise TokenmillError(f"{self.idx_path}: pointer of sequence {bad} is {int(pointers[bad])}, "
                                 f"but the lengths before it put it at {int(expected_pointers[bad])}")
        if not len(boundaries) or boundaries[0] != 0 or boundaries[-1] != len(lengths) \
                or np.any(np.diff(boundaries) < 0):
            raise TokenmillError(f"{self.idx_path}: document boundaries are not a non-decreasing run from 0 to "
                                 f"{len(lengths)} sequences")
        data_bytes = int(lengths.sum(dtype=np.int64)) * itemsize
        if data_bytes != bin_size:
            raise TokenmillError(f"{self.bin_path}: {bin_size} bytes, but {self.idx_path} describes {data_bytes} "
                                 f"bytes of {self.dtype.name} tokens")

    def __len__(self) -> int:
        return len(self.sequence_lengths)

    @property
    def sizes(self) -> np.ndarray:
        """Tokens per sequence (Megatron's name)."""
        return self.sequence_lengths

    @property
    def num_documents(self) -> int:
        return len(self.document_indices) - 1

    def get(self, i: int, offset: int = 0, length: int | None = None) -> np.ndarray:
        """Tokens ``[offset, offset + length)`` of sequence ``i`` as a view, reading nothing else."""
        start = int(self.sequence_pointers[i]) // self.dtype.itemsize + offset
        stop = start - offset + int(self.sequence_lengths[i]) if length is None else start + length
        return self._tokens[start:stop]

    def tokens_at(self, start: int, count: int) -> np.ndarray:
        """``count`` tokens from token ``start`` of the ``.bin`` (sequences lie back to back), a view."""
        return self._tokens[start:start + count]

    def __getitem__(self, i: int) -> np.ndarray:
        return self.get(i)


class MMapIndexedDatasetBuilder(AtomicWriter):
    """Writes ``<prefix>.bin/.idx`` under temporary names; :meth:`finalize` renames both.

    Args:
        prefix: the output path without extension.
        dtype: token dtype (see :func:`optimal_dtype`); Megatron's builder defaults to int32.
    """

    def __init__(self, prefix: str | os.PathLike, dtype=np.int32):
        self.prefix = self.output_name = str(prefix)
        self.dtype = np.dtype(dtype)
        if self.dtype not in _CODE_OF:
            raise ValueError(f"dtype {self.dtype} has no Megatron code")
        self.bin_path, self.idx_path = _paths(prefix)
        self._tmp_bin = temporary_name(self.bin_path)
        self._tmp_idx: Path | None = None
        try:
            self._bin = open(self._tmp_bin, "wb")
        except OSError as exc:
            raise TokenmillError(f"{self.bin_path}: cannot write ({exc.strerror})") from None
        self._lengths: list[np.ndarray] = []
        self._boundaries: list[np.ndarray] = []
        self._num_sequences = 0
        self._pending_document = 0  # sequences added by add_item since the last boundary

    def add_document(self, tokens, lengths) -> None:
        """Append one document: ``tokens`` split into sequences of ``lengths`` tokens.

        Raises:
            TokenmillError: a token does not fit the dtype (Megatron would wrap it silently).
        """
        tokens = np.asarray(tokens)
        lengths = np.asarray(lengths, dtype=np.int64)
        document = self.num_documents
        _check_fits(tokens, self.dtype, lambda position: f"document {document}")
        self._append_sequences(tokens, lengths)
        self._boundaries.append(np.array([self._num_sequences], np.int64))

    def add_documents(self, tokens, lengths) -> None:
        """Append one-sequence documents of ``lengths`` tokens, lying back to back in ``tokens``; a document of
        0 tokens is one of no sequences, as Megatron keeps an empty text.

        Raises:
            TokenmillError: a token does not fit the dtype.
        """
        tokens, lengths = np.asarray(tokens), np.asarray(lengths, dtype=np.int64)
        first = self.num_documents
        ends = np.cumsum(lengths)
        _check_fits(tokens, self.dtype,
                    lambda position: f"document {first + int(np.searchsorted(ends, position, side='right'))}")
        before = self._num_sequences
        self._append_sequences(tokens, lengths[lengths > 0])
        self._boundaries.append(before + np.cumsum(lengths > 0, dtype=np.int64))

    def add_sequences(self, tokens: np.ndarray, sequence_lengths: np.ndarray,
                      sequences_per_document: np.ndarray) -> None:
        """Append documents of several sequences each (``preprocess_data.py``'s JSON lists): ``tokens``
        back to back, ``sequence_lengths`` tokens per sequence, ``sequences_per_document`` sequences per
        document (0 for an empty document, which Megatron keeps as one of no sequences).

        Raises:
            TokenmillError: a token does not fit the dtype.
        """
        tokens, sequence_lengths = np.asarray(tokens), np.asarray(sequence_lengths, dtype=np.int64)
        first = self.num_documents
        ends = np.cumsum(sequence_lengths)
        document_of_sequence = np.repeat(np.arange(len(sequences_per_document)), sequences_per_document)

        def describe(position: int) -> str:
            return f"document {first + int(document_of_sequence[np.searchsorted(ends, position, side='right')])}"

        _check_fits(tokens, self.dtype, describe)
        before = self._num_sequences
        self._append_sequences(tokens, sequence_lengths)
        self._boundaries.append(before + np.cumsum(sequences_per_document, dtype=np.int64))

    def add_batch(self, tokens: np.ndarray, lengths: np.ndarray, eod_id: int | None = None,
                  doubled: np.ndarray | None = None, empty_texts: np.ndarray | None = None) -> None:
        """Append a batch of ``.pbin`` documents (``tokens`` back to back, ``lengths`` each), with one more
        ``eod_id`` after the documents at the batch positions ``doubled``: those whose own ids already
        ended with it, which Megatron's ``--append-eod`` ends with two (see :func:`pbin_to_megatron`); the
        documents at ``empty_texts`` (an empty text's: the EOD alone, or nothing) as documents of no sequences.

        Raises:
            TokenmillError: a token does not fit the dtype.
        """
        lengths = np.asarray(lengths, dtype=np.int64)
        if empty_texts is not None and len(empty_texts):
            # Megatron appends no EOD to an empty text: the .pbin's (Modalities' rule) is dropped
            ends = np.cumsum(lengths)
            tokens = np.delete(tokens, ends[empty_texts[lengths[empty_texts] > 0]] - 1)
            lengths = lengths.copy()
            lengths[empty_texts] = 0
        if doubled is not None:
            tokens, lengths, _ = eod_appended(tokens, lengths, np.asarray(doubled), eod_id)
        self.add_documents(tokens, lengths)

    def mark(self) -> tuple:
        """A point to :meth:`rewind` to: everything added after it can be taken back."""
        return self._bin.tell(), len(self._lengths), len(self._boundaries), self._num_sequences

    def rewind(self, mark: tuple) -> None:
        """Drop every document added since ``mark`` (used to re-encode an input another way)."""
        position, lengths, boundaries, self._num_sequences = mark
        self._bin.seek(position)
        self._bin.truncate()
        del self._lengths[lengths:], self._boundaries[boundaries:]

    def add_item(self, tokens) -> None:
        """Append one sequence to the current document (close it with :meth:`end_document`)."""
        tokens = np.asarray(tokens)
        _check_fits(tokens, self.dtype, lambda position: f"document {self.num_documents}")
        self._append_sequences(tokens, np.array([len(tokens)], np.int64))
        self._pending_document += 1

    def end_document(self) -> None:
        """Close the document that :meth:`add_item` calls have been filling."""
        self._boundaries.append(np.array([self._num_sequences], np.int64))
        self._pending_document = 0

    def _append_sequences(self, tokens: np.ndarray, lengths: np.ndarray) -> None:
        if int(lengths.sum()) != len(tokens):
            raise ValueError("sequence lengths do not add up to the tokens")
        self._bin.write(np.ascontiguousarray(tokens, dtype=self.dtype).data)
        self._lengths.append(lengths)
        self._num_sequences += len(lengths)

    @property
    def num_documents(self) -> int:
        return sum(len(boundaries) for boundaries in self._boundaries)

    def add_index(self, prefix: str | os.PathLike) -> None:
        """Append another dataset (merging): its sequences, its boundaries shifted, its ``.bin`` copied.

        Raises:
            TokenmillError: the other dataset is unreadable or has another dtype.
        """
        other = MMapIndexedDataset(prefix)
        if other.dtype != self.dtype:
            raise TokenmillError(f"{other.idx_path}: dtype {other.dtype.name}, but the merge writes "
                                 f"{self.dtype.name}; refusing to cast")
        with open(other.bin_path, "rb") as source:
            copy_bytes(source, self._bin, os.path.getsize(other.bin_path))
        self._lengths.append(np.array(other.sequence_lengths, dtype=np.int64))
        self._boundaries.append(np.array(other.document_indices[1:], dtype=np.int64) + self._num_sequences)
        self._num_sequences += len(other)

    def add_documents_from_file(self, source, offset: int, doc_lengths: np.ndarray, source_dtype,
                                on_copied=None) -> None:
        """Append one-sequence documents whose tokens lie back to back in an open file at ``offset`` (one of
        0 tokens: no sequence, as :meth:`add_documents`).

        Tokens are block-copied when ``source_dtype`` is the output dtype, else cast block by block;
        the caller has checked that they fit. ``on_copied`` (progress) gets the source bytes of each block.
        """
        source_dtype = np.dtype(source_dtype)
        num_tokens = int(np.sum(doc_lengths))
        if source_dtype == self.dtype:
            source.seek(offset)
            copy_bytes(source, self._bin, num_tokens * self.dtype.itemsize, on_copied=on_copied)
        else:
            for start in range(0, num_tokens, BLOCK_TOKENS):
                count = min(BLOCK_TOKENS, num_tokens - start)
                source.seek(offset + start * source_dtype.itemsize)
                self._bin.write(np.fromfile(source, dtype=source_dtype, count=count).astype(self.dtype).data)
                if on_copied is not None:
                    on_copied(count * source_dtype.itemsize)
        doc_lengths = np.asarray(doc_lengths, dtype=np.int64)
        self._lengths.append(doc_lengths[doc_lengths > 0])
        self._boundaries.append(self._num_sequences + np.cumsum(doc_lengths > 0, dtype=np.int64))
        self._num_sequences += int(np.count_nonzero(doc_lengths))

    def finish(self) -> None:
        """Same as :meth:`finalize`."""
        self.finalize()

    def finalize(self) -> None:
        """Write the ``.idx`` and rename both files into place (``.bin`` first, then ``.idx``)."""
        if self._pending_document:
            self.end_document()
        self._bin.flush()
        os.fsync(self._bin.fileno())
        self._bin.close()
        lengths = np.concatenate(self._lengths) if self._lengths else np.empty(0, np.int64)
        if len(lengths) and lengths.max() > np.iinfo(np.int32).max:
            raise TokenmillError(f"{self.idx_path}: a sequence of {int(lengths.max())} tokens exceeds int32 lengths")
        boundaries = np.concatenate([np.zeros(1, np.int64), *self._boundaries])
        pointers = np.cumsum(lengths) * self.dtype.itemsize - lengths * self.dtype.itemsize
        self._tmp_idx = tmp_idx = temporary_name(self.idx_path)
        with open(tmp_idx, "wb") as handle:
            handle.write(_HEADER.pack(_MAGIC, _VERSION, _CODE_OF[self.dtype], len(lengths), len(boundaries)))
            handle.write(lengths.astype("<i4").tobytes())  # sequence lengths, int32
            handle.write(pointers.astype("<i8").tobytes())  # sequence byte pointers into .bin, int64
            handle.write(boundaries.astype("<i8").tobytes())  # document boundaries, int64
        os.replace(self._tmp_bin, self.bin_path)
        os.replace(tmp_idx, self.idx_path)

    def abort(self) -> None:
        """Close and delete the temporary ``.bin`` (and ``.idx``, if finishing had begun it); never
        raises (closing after a failed flush fails again)."""
        discard(self._bin, self._tmp_bin, self._tmp_idx)


def pbin_to_megatron(pbin_path: str | os.PathLike, prefix: str | os.PathLike, vocab_size: int | None = None) -> dict:
    """Convert a ``.pbin`` to ``<prefix>.bin/.idx``: each document one sequence, EOD included.

    A document whose own ids already ended with the EOD (the sidecar's ``eod_in_text``) gets a
    second one, as Megatron's ``preprocess_data.py --append-eod`` writes it; the ``.pbin``, like
    Modalities, holds one. An empty text's (the sidecar's ``empty_texts``: the EOD alone) is a document of
    no sequences, as ``preprocess_data.py`` keeps an empty text.

    Args:
        pbin_path: the packed file.
        prefix: output prefix.
        vocab_size: picks the dtype; default: the ``.pbin`` sidecar's ``tokenizer.vocab_size``.

    Returns:
        ``{"documents", "tokens", "dtype"}``.

    Raises:
        TokenmillError: no vocabulary size known, documents that do not tile the data, a token id
            that does not fit the dtype (naming the document), or an output that is the input.
    """
    refuse_inputs_as_outputs(_paths(prefix), [pbin_path, sidecar_path(pbin_path)])
    pbin = PbinFile(pbin_path)
    meta = read_sidecar(pbin_path) or {}
    if vocab_size is None:
        if "vocab_size" not in meta.get("tokenizer", {}):
            raise TokenmillError(f"{pbin_path}: no sidecar with the vocabulary size; pass it explicitly")
        vocab_size = int(meta["tokenizer"]["vocab_size"])
    dtype = optimal_dtype(vocab_size)
    lengths = pbin.doc_lengths
    if not pbin.documents_tile:
        raise TokenmillError(f"{pbin_path}: documents do not tile the data section; cannot convert it")
    if not np.can_cast(pbin.dtype, dtype):
        # Only a narrowing or a sign change (u4 → i4) can lose ids: check them block by block.
        ends = np.cumsum(lengths)
        for start in range(0, pbin.num_tokens, BLOCK_TOKENS):
            _check_fits(pbin.tokens[start:start + BLOCK_TOKENS], dtype,
                        lambda position, start=start: f"{pbin_path} document "
                                                      f"{int(np.searchsorted(ends, start + position, side='right'))}")
    second_eod, empty_texts = (_listed(meta, key, pbin_path, len(lengths)) for key in ("eod_in_text", "empty_texts"))
    with MMapIndexedDatasetBuilder(prefix, dtype) as builder, pbin.open_data() as source, \
            Progress(f"to-megatron {pbin_path}", pbin.layout.data_bytes) as progress:
        if not second_eod.any() and not empty_texts.any():  # the usual case: a block copy
            builder.add_documents_from_file(source, pbin.layout.data_offset, lengths, pbin.dtype, progress.update)
        else:
            _add_documents_doubling_eod(builder, pbin, second_eod, empty_texts, meta["tokenizer"].get("eod_id"),
                                        progress.update)
    tokens = pbin.num_tokens + int(second_eod.sum()) - int(lengths[empty_texts].sum())
    return {"documents": len(lengths), "tokens": tokens, "dtype": dtype.name}


def _listed(meta: dict, key: str, pbin_path: str | os.PathLike, documents: int) -> np.ndarray:
    """A sidecar's ranges of documents (``eod_in_text``, ``empty_texts``) as a mask over them.

    Raises:
        TokenmillError: ranges out of order or beyond the documents, naming the sidecar and the key.
    """
    try:
        return range_indices(meta.get(key, []), documents)
    except TokenmillError as exc:
        raise TokenmillError(f"{sidecar_path(pbin_path)}: {key}: {exc}") from None


def _add_documents_doubling_eod(builder: MMapIndexedDatasetBuilder, pbin: PbinFile, second_eod: np.ndarray,
                                empty_texts: np.ndarray, eod_id: int | None, on_copied) -> None:
    """Append every document of ``pbin``, with one more ``eod_id`` after those flagged in ``second_eod`` and
    those flagged in ``empty_texts`` as documents of no sequences: whole documents in blocks
    (:func:`~tokenmill.formats.document_blocks.document_blocks`), each block one vectorised insert."""
    lengths = pbin.doc_lengths
    for first, stop, start, end in document_blocks(np.cumsum(lengths)):
        builder.add_batch(np.asarray(pbin.tokens[start:end]), lengths[first:stop], eod_id,
                          np.flatnonzero(second_eod[first:stop]), np.flatnonzero(empty_texts[first:stop]))
        on_copied((end - start) * pbin.dtype.itemsize)


def merge_megatron(out_prefix: str | os.PathLike, prefixes: list[str | os.PathLike], force: bool = False) -> dict:
    """Concatenate MMIDIDX datasets in the order given, as Megatron's ``add_index`` does.

    Args:
        out_prefix: the merged dataset.
        prefixes: the parts, in order.
        force: replace the output if it exists (never when it is one of the parts).

    Raises:
        TokenmillError: no inputs, an existing output without ``force``, an output that is an
            input, an unreadable input, or parts of different tokenizers (:func:`_refuse_unlike_datasets`).
    """
    if not prefixes:
        raise TokenmillError("merge needs at least one input")
    refuse_inputs_as_outputs(_paths(out_prefix), [path for prefix in prefixes for path in _paths(prefix)])
    existing = [str(path) for path in _paths(out_prefix) if path.exists()]
    if existing and not force:
        raise TokenmillError(f"{existing[0]}: exists; pass --force to replace it")
    first = MMapIndexedDataset(prefixes[0])
    _refuse_unlike_datasets([first, *map(MMapIndexedDataset, prefixes[1:])])
    with MMapIndexedDatasetBuilder(out_prefix, first.dtype) as builder:
        for prefix in prefixes:
            builder.add_index(prefix)
    merged = MMapIndexedDataset(out_prefix)
    return {"documents": merged.num_documents, "sequences": len(merged), "dtype": merged.dtype.name}


def document_end_token(dataset: MMapIndexedDataset) -> int | None:
    """The id every non-empty document of ``dataset`` ends with (its EOD, where it was packed with one); -1 where
    they end differently (packed without one); None where fewer than two documents cannot tell. Cost: one
    gather of a token per document."""
    last_sequences = dataset.document_indices[1:] - 1
    last_sequences = last_sequences[(last_sequences >= 0) & (dataset.sequence_lengths[last_sequences] > 0)]
    if len(last_sequences) < 2:
        return None
    positions = (dataset.sequence_pointers[last_sequences] // dataset.dtype.itemsize
                 + dataset.sequence_lengths[last_sequences] - 1)
    ends = np.unique(dataset._tokens[positions])
    return int(ends[0]) if len(ends) == 1 else -1


def _refuse_unlike_datasets(datasets: list[MMapIndexedDataset]) -> None:
    """Refuse parts that another tokenizer made, as far as Megatron's files tell (they name no tokenizer): another
    dtype (another vocabulary size class), or documents that end otherwise (another EOD: GPT-2's 50256 beside
    BERT's [SEP] 102; or an EOD beside none). Parts of two tokenizers with one dtype and one EOD id cannot be told
    apart here.

    Raises:
        TokenmillError: naming both parts and what differs.
    """
    def described(end: int) -> str:
        return "without an EOD (documents end with different ids)" if end < 0 else f"with EOD id {end}"

    first = datasets[0]
    known = [(dataset, end) for dataset in datasets if (end := document_end_token(dataset)) is not None]
    for dataset in datasets[1:]:
        if dataset.dtype != first.dtype:
            raise TokenmillError(f"{dataset.idx_path}: dtype {dataset.dtype.name}, {first.idx_path}: "
                                 f"{first.dtype.name}; parts of different tokenizers cannot be merged")
    for (dataset, end), (other, other_end) in zip(known, known[1:]):
        if end != other_end:
            raise TokenmillError(f"{other.prefix}: packed {described(other_end)}, {dataset.prefix} "
                                 f"{described(end)}; parts of different tokenizers or EODs cannot be merged")
