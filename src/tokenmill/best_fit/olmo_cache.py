"""OLMo-core's packing caches: the three files ``NumpyPackedFSLDataset.prepare()`` (ai2-olmo-core 3.0.0) writes,
byte for byte, under the names its job computes, so that the job finds them and packs nothing.

Facts (``specs/olmo-packing.md``, checked on the peer's own files): for each group of ``source_group_size``
consecutive parts, the job looks in ``{work_dir}/dataset-common/`` for::

    document-indices-{L}-{h}.npy      uint64 (2·D,): each packed document's [start, end) token offsets in the
                                      group's parts back to back, in sorted order (longest first)
    instance-offsets-{L}-{h}.npy      uint64 (2·I,): each instance's [first, stop) into documents-by-instance
    documents-by-instance-{L}-{h}.npy uint64 (D,): the sorted-order document numbers of instance 0, then 1, ...

All three are raw little-endian arrays with no header (the ``.npy`` is only a name). ``h`` is the hex sha256
of, with no separators: for each part of the group, its path exactly as the job spells it and its size in
bytes (decimal), then the long-document strategy (``truncate``/``fragment``), then ``uint64``. The sequence
length is only in the name; the EOS, pad and BOS ids are in neither.

Parts with label masks (an SFT set's, ``tokenmill to-olmo`` of a ``tokenmill sft`` pair: a conversation holds an
EOS per message) take their documents from each part's ``.csv.gz`` instead (its ``start,end`` columns), as a
job told ``use_array_if_local=False`` does; its names then hash, after ``uint64``, ``use_array_if_local=False``
and per part ``metadata=<path as the job spells it>,sha256=<hex sha256 of the .csv.gz bytes>``, and the
fragment names ``label_mask_paths`` (OLMo-core's instances then carry the masks, False on padding).

The packing: documents end at each EOS (included; tokens after a part's last EOS belong to none); long ones
are cut by the strategy (:func:`tokenmill.best_fit.obfd.cut_long_documents`); the pieces are sorted by
``np.argsort(-lengths)`` with numpy's default kind, then packed by OBFD. That sort is not stable, and numpy
orders equal lengths differently by version and CPU (AVX-512, AVX2 or neither): OLMo-core's own files differ
between such machines in ``document-indices`` (which of equal-length documents comes first), never in the
other two. So these files equal what the job would write on the machine that wrote them; a job elsewhere finds
them all the same. The sequence length must be a power of two (OLMo-core asserts it).

Beside them, in ``work_dir``: ``tokenmill-olmo-packing.yaml`` holds the ``NumpyPackedFSLDatasetConfig``
fields that make a job find them (paths, sequence length, dtype, tokenizer ids with ``bos_token_id: null``,
strategy, source group size, work_dir), and ``tokenmill-olmo-packing.meta.json`` what the packing bought
(:func:`tokenmill.best_fit.packed_index.packing_figures`), the files written and the numpy that sorted.

Cost: one read of each part (EOS found in 16 Mi-token blocks), then O(D log D) to sort and O(D log L) to pack;
memory ~80 bytes per document at the peak (10 M documents: under 1 GiB, bench/RESULTS.md).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
from pathlib import Path

import numpy as np
import yaml

from tokenmill.errors import TokenmillError
from tokenmill.files.atomic import atomic_output
from tokenmill.formats.document_blocks import BLOCK_TOKENS
from tokenmill.best_fit.obfd import LONG_DOCUMENT_STRATEGIES, cut_long_documents, pack_best_fit
from tokenmill.best_fit.packed_index import document_figures, sample_figures

__all__ = ["CACHE_FOLDER", "CONFIG_NAME", "SIDECAR_NAME", "olmo_cache_names", "document_ends", "metadata_ranges",
           "write_olmo_packing",
           "write_olmo_packing_for_parts", "olmo_packing_problems"]

CACHE_FOLDER = "dataset-common"
CONFIG_NAME = "tokenmill-olmo-packing.yaml"
SIDECAR_NAME = "tokenmill-olmo-packing.meta.json"
OLMO_PACKING_FORMAT = "tokenmill-olmo-packing/1"
_KINDS = ("document-indices", "instance-offsets", "documents-by-instance")


def olmo_cache_names(job_paths: list[str], sizes: list[int], sequence_length: int, strategy: str,
                     metadata_sha256: list[str] | None = None) -> dict[str, str]:
    """The three file names a job computes for one group of parts (module docstring); with the sha256 of each
    part's ``.csv.gz``, those of a job taking its documents from them (``use_array_if_local=False``)."""
    digest = hashlib.sha256()
    for path, size in zip(job_paths, sizes):
        digest.update(str(path).encode())
        digest.update(str(size).encode())
    digest.update(strategy.encode())
    digest.update(b"uint64")
    if metadata_sha256 is not None:
        digest.update(b"use_array_if_local=False")
        for path, hexdigest in zip(job_paths, metadata_sha256):
            digest.update(f"metadata={path},sha256={hexdigest}".encode())
    return {kind: f"{kind}-{sequence_length}-{digest.hexdigest()}.npy" for kind in _KINDS}


def document_ends(part: str | os.PathLike, dtype: np.dtype, eos_id: int) -> np.ndarray:
    """Where each document of a part ends (the token after its EOS), int64; a document starts where the one
    before ends. Read in blocks, not mapped: the part's pages are not held."""
    ends = [np.zeros(0, np.int64)]
    with open(part, "rb") as handle:
        first = 0
        while block := handle.read(BLOCK_TOKENS * dtype.itemsize):
            tokens = np.frombuffer(block, dtype=dtype, count=len(block) // dtype.itemsize)
            ends.append(np.flatnonzero(tokens == eos_id).astype(np.int64) + (first + 1))
            first += len(tokens)
    return np.concatenate(ends)


def metadata_ranges(part: str | os.PathLike, tokens: int) -> tuple[np.ndarray, np.ndarray, str]:
    """Each document's ``[start, end)`` in a part as its ``.csv.gz`` lists them (``start,end,...`` per line, as
    OLMo-core reads them), and the sha256 of the ``.csv.gz`` bytes.

    Raises:
        TokenmillError: a missing or unreadable ``.csv.gz``, or a line that is not a range within the part.
    """
    path = Path(str(part).removesuffix(".npy") + ".csv.gz")
    try:
        raw = path.read_bytes()
        lines = gzip.decompress(raw).splitlines()
    except (OSError, EOFError, gzip.BadGzipFile) as exc:
        raise TokenmillError(f"{path}: cannot read ({exc})") from None
    starts, ends = np.empty(len(lines), np.int64), np.empty(len(lines), np.int64)
    for number, line in enumerate(lines):
        try:
            start, end, _ = line.split(b",", 2)
            starts[number], ends[number] = int(start), int(end)
        except ValueError:
            raise TokenmillError(f"{path}:{number + 1}: not a start,end,... line") from None
        if not 0 <= starts[number] < ends[number] <= tokens:
            raise TokenmillError(f"{path}:{number + 1}: [{int(starts[number])}, {int(ends[number])}) is no "
                                 f"document of a part of {tokens} tokens")
    return starts, ends, hashlib.sha256(raw).hexdigest()


def write_olmo_packing(parts: list[str | os.PathLike], work_dir: str | os.PathLike, sequence_length: int,
                       eos_id: int, pad_id: int, vocab_size: int, dtype: str, strategy: str = "truncate",
                       job_paths: list[str] | None = None, source_group_size: int = 1,
                       label_mask_paths: list[str] | None = None) -> dict:
    """Pack ``parts`` as OLMo-core would and write its three files per group into ``work_dir/dataset-common``,
    each atomically, and the config fragment and sidecar beside them. Returns the sidecar.

    Args:
        parts: the token files, in the job's order.
        work_dir: the job's ``work_dir``.
        sequence_length: L, a power of two.
        eos_id, pad_id, vocab_size, dtype: the parts' tokenizer and token dtype (``uint16``/``uint32``).
        strategy: ``truncate`` or ``fragment``.
        job_paths: the parts as the job spells them (hashed into the names); default: ``parts`` as given.
        source_group_size: parts packed together.
        label_mask_paths: the parts' label masks as the job spells them: the documents are then the parts'
            ``.csv.gz`` ranges (module docstring), and the fragment names the masks.

    Raises:
        TokenmillError: L not a power of two, an unknown strategy or dtype, a missing part, or job paths that
            do not match the parts.
    """
    if sequence_length < 1 or sequence_length & (sequence_length - 1):
        raise TokenmillError(f"sequence length {sequence_length}: OLMo-core packs only powers of two "
                             f"(e.g. {1 << max(sequence_length.bit_length() - 1, 0)} or "
                             f"{1 << sequence_length.bit_length()})")
    if strategy not in LONG_DOCUMENT_STRATEGIES:
        raise TokenmillError(f"long-document strategy {strategy!r}: one of {', '.join(LONG_DOCUMENT_STRATEGIES)}")
    if dtype not in ("uint16", "uint32"):
        raise TokenmillError(f"dtype {dtype!r}: OLMo-core's parts are uint16 or uint32")
    if source_group_size < 1:
        raise TokenmillError(f"source group size {source_group_size}: must be at least 1")
    parts = [str(part) for part in parts]
    job_paths = [str(path) for path in (job_paths or parts)]
    if len(job_paths) != len(parts) or (label_mask_paths is not None and len(label_mask_paths) != len(parts)):
        raise TokenmillError(f"{len(job_paths)} job paths and {len(label_mask_paths or parts)} label masks for "
                             f"{len(parts)} parts")
    boundaries = "eos" if label_mask_paths is None else "metadata"
    folder = Path(work_dir) / CACHE_FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    figures, written = [], []
    for names, arrays, group_figures in _packed_groups(parts, job_paths, sequence_length, eos_id, dtype, strategy,
                                                        source_group_size, boundaries):
        for kind in _KINDS:
            with atomic_output(folder / names[kind]) as temporary:
                arrays[kind].tofile(temporary)
            written.append(f"{CACHE_FOLDER}/{names[kind]}")
        figures.append(group_figures)
    fragment = {"paths": job_paths, "sequence_length": sequence_length, "long_doc_strategy": strategy,
                "source_group_size": source_group_size, "dtype": dtype, "work_dir": str(work_dir),
                "tokenizer": {"vocab_size": vocab_size, "eos_token_id": eos_id, "pad_token_id": pad_id,
                              "bos_token_id": None}}
    if label_mask_paths is not None:  # documents from the .csv.gz: the job must be told so
        fragment.update(label_mask_paths=[str(path) for path in label_mask_paths], use_array_if_local=False)
    with atomic_output(Path(work_dir) / CONFIG_NAME) as temporary:
        temporary.write_text("# NumpyPackedFSLDatasetConfig fields (ai2-olmo-core 3.0.0) that find the packing "
                             "in work_dir/dataset-common\n" + yaml.safe_dump(fragment, sort_keys=False),
                             encoding="utf-8")
    sidecar = {"format": OLMO_PACKING_FORMAT, **fragment, "made_from": parts, "boundaries": boundaries,
               "files": written,
               "numpy": np.__version__,
               **_summed(figures, sequence_length)}
    with atomic_output(Path(work_dir) / SIDECAR_NAME) as temporary:
        temporary.write_text(json.dumps(sidecar, indent=1) + "\n", encoding="utf-8")
    return sidecar


def _packed_groups(parts: list[str], job_paths: list[str], sequence_length: int, eos_id: int, dtype: str,
                   strategy: str, source_group_size: int, boundaries: str = "eos"):
    """Per group of parts: the three file names, their arrays (little-endian uint64) and the figures. Each array
    of the documents is let go once used (10 M documents: 80 MB each). ``boundaries``: documents end at each
    EOS (``eos``) or are the ranges of the parts' ``.csv.gz`` (``metadata``)."""
    token_dtype = np.dtype(dtype).newbyteorder("<")
    for first in range(0, len(parts), source_group_size):
        group = range(first, min(first + source_group_size, len(parts)))
        sizes = [_size(parts[k]) for k in group]
        shifts = np.cumsum([0, *sizes[:-1]]) // token_dtype.itemsize  # the group's parts back to back
        metadata_sha256 = None
        if boundaries == "metadata":
            ranges = [metadata_ranges(parts[k], size // token_dtype.itemsize) for k, size in zip(group, sizes)]
            starts = np.concatenate([part_starts + shift for (part_starts, _, _), shift in zip(ranges, shifts)])
            ends = np.concatenate([part_ends + shift for (_, part_ends, _), shift in zip(ranges, shifts)])
            metadata_sha256 = [hexdigest for _, _, hexdigest in ranges]
            del ranges
        else:
            ends_of_parts = [document_ends(parts[k], token_dtype, eos_id) + shift for k, shift in zip(group, shifts)]
            starts = np.concatenate([np.concatenate([[shift], part_ends[:-1]]).astype(np.int64)
                                     for part_ends, shift in zip(ends_of_parts, shifts)])
            ends = np.concatenate(ends_of_parts)
            del ends_of_parts
        figures = document_figures(ends - starts, sequence_length, strategy)
        piece_starts, piece_ends, _ = cut_long_documents(starts, ends, sequence_length, strategy)
        del starts, ends
        packed = pack_best_fit(piece_starts, piece_ends, sequence_length, sort="numpy")
        del piece_ends
        indices = np.empty((len(packed.order), 2), dtype="<u8")
        indices[:, 0] = piece_starts[packed.order]
        del piece_starts
        indices[:, 1] = indices[:, 0] + packed.sorted_lengths
        figures.update(sample_figures(packed.sample_lengths(), sequence_length))
        bounds = packed.sample_offsets
        yield (olmo_cache_names([job_paths[k] for k in group], sizes, sequence_length, strategy, metadata_sha256),
               {"document-indices": indices,
                "instance-offsets": np.stack([bounds[:-1], bounds[1:]], axis=1).astype("<u8"),
                "documents-by-instance": packed.documents_by_sample.astype("<u8", copy=False)},
               figures)


def olmo_packing_problems(work_dir: str | os.PathLike) -> list[str]:
    """Every problem of a work dir :func:`write_olmo_packing` wrote, one line each: a sidecar that is not one,
    a file missing, or one whose bytes are not what the packer makes from the parts it was made from (their
    current bytes; a part changed since gives other names, and the old files are reported missing).
    Cost: the packing again, in memory.
    """
    path = Path(work_dir) / SIDECAR_NAME
    try:
        sidecar = json.loads(path.read_text(encoding="utf-8"))
        if sidecar.get("format") != OLMO_PACKING_FORMAT:
            return [f"{path}: not a {OLMO_PACKING_FORMAT} sidecar"]
        groups = list(_packed_groups(sidecar["made_from"], sidecar["paths"], int(sidecar["sequence_length"]),
                                     int(sidecar["tokenizer"]["eos_token_id"]), sidecar["dtype"],
                                     sidecar["long_doc_strategy"], int(sidecar["source_group_size"]),
                                     sidecar.get("boundaries", "eos")))
    except TokenmillError as exc:
        return [str(exc)]
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        return [f"{path}: unreadable ({exc})"]
    problems = []
    for names, arrays, _ in groups:
        for kind in _KINDS:
            file = Path(work_dir) / CACHE_FOLDER / names[kind]
            if not file.is_file():
                problems.append(f"{file}: missing (the job would pack again)")
            elif file.read_bytes() != arrays[kind].tobytes():
                problems.append(f"{file}: not what the packer makes from {', '.join(sidecar['made_from'])}")
    return problems


def write_olmo_packing_for_parts(folder: str | os.PathLike, work_dir: str | os.PathLike, sequence_length: int,
                                 strategy: str = "truncate", job_path_prefix: str | None = None,
                                 source_group_size: int = 1, pad_id: int | None = None) -> dict:
    """:func:`write_olmo_packing` for a folder of parts (``tokenmill to-olmo``): its ``metadata.json`` names
    the parts, their dtype, EOS and vocabulary size, and whether each has a label mask (an SFT set's: then
    packed by their ``.csv.gz``, the masks named in the fragment); the job spells each part
    ``job_path_prefix/NAME`` (default: ``folder/NAME`` as given); the pad id defaults to the EOS id.

    Raises:
        TokenmillError: a folder without a readable tokenmill ``metadata.json`` (and as :func:`write_olmo_packing`).
    """
    try:
        metadata = json.loads((Path(folder) / "metadata.json").read_bytes())
        names, eos_id = [part["name"] for part in metadata["parts"]], int(metadata["eos_token_id"])
        dtype, vocab_size = str(metadata["dtype"]), int(metadata["vocab_size"])
        masked = bool(metadata.get("label_masks", False))
    except FileNotFoundError:
        raise TokenmillError(f"{folder}: no metadata.json; give a folder of parts that tokenmill to-olmo wrote") \
            from None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise TokenmillError(f"{Path(folder) / 'metadata.json'}: unreadable ({exc})") from None
    prefix = str(folder) if job_path_prefix is None else job_path_prefix
    masks = [os.path.join(prefix, name.removesuffix(".npy") + ".label_mask.npy") for name in names] if masked \
        else None
    return write_olmo_packing([Path(folder) / name for name in names], work_dir, sequence_length, eos_id,
                              eos_id if pad_id is None else pad_id, vocab_size, dtype, strategy,
                              [os.path.join(prefix, name) for name in names], source_group_size, masks)


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError as exc:
        raise TokenmillError(f"{path}: cannot read ({exc.strerror})") from None


def _summed(figures: list[dict], sequence_length: int) -> dict:
    """The groups' figures as one: counts summed, the padding share of all samples."""
    total = {key: sum(figure[key] for figure in figures) for key in figures[0] if key != "padding_share"}
    total["padding_share"] = round(total["padding"] / (total["samples"] * sequence_length), 6) \
        if total["samples"] else 0.0
    return total
