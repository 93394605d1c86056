"""Megatron GPTDataset indices — document, sample and shuffle index — and their cache files.

The arrays, dtypes, ``.npy`` bytes, description text and md5 equal megatron-core 0.19's
``GPTDataset`` for the same inputs (docs/algorithms.md §1–§2, docs/formats.md §6), so a folder of
them can be handed to Megatron as ``--data-cache-path`` and training starts without building anything.

Worked example (megatron-core's own output): sizes ``[20, 50, 60, 30, 100, 5]``, seq 30, extra
token 1, one epoch, document_index ``[0..5]``. Sample k covers tokens ``[30k, 30k + 31)`` of the
sequences concatenated in document_index order; row k = (position in document_index, offset) of
token ``30k``::

    sample_index = [(0,0), (1,10), (1,40), (2,20), (2,50), (3,20), (4,20), (4,50), (4,80)]

(8 samples = (265 − 1) // 30; sample 3 is tokens 20..59 of sequence 2 plus 0 of sequence 3.)

Algorithm and cost, per split:

1. ``split``: ``"969,30,1"`` → weights normalised in float64 → book-ends ``[(0, .969), ...]`` →
   sequence ranges ``[round(start·N), round(end·N))`` with Python's banker's rounding.
2. epochs E: the smallest E with ``E·T ≥ num_samples·seq + extra`` (T = tokens per epoch).
3. document_index: the split's sequence ids repeated E times, int32, one ``RandomState(seed)``
   shuffle over all epochs — or, when the final epoch is "separate" (fewer than 80 % of an epoch's
   samples are needed from it), a shuffle of the first E−1 epochs then one of the last.
4. sample_index: sample k starts at token ``k·seq`` of the stream; Megatron's walk over the
   document_index, in C (``_kernels.c``): O(E·n + samples), ~3 ms for 1e8 tokens × 4 epochs.
5. shuffle_index: ``arange(n)`` shuffled (uint32, or int64 past 2**32−2), in two parts when the final
   epoch is separate. The same RandomState continues from step 3.

Memory is that of the arrays themselves (~4 bytes per sequence per epoch + 12 bytes per sample).

Megatron names cache files after its description only, so a cache built before the dataset was
repacked looks valid to it. tokenmill keeps Megatron's names and adds, per split, a fingerprint of
the ``.idx`` it was built from, ``<md5>-GPTDataset-<split>-tokenmill_fingerprint.json``:
``{"idx_bytes", "sizes_sha256"}`` (sha256 of the sequence lengths and document boundaries, O(S)).
A cache whose fingerprint differs is rebuilt (its description is removed first and written last,
so a killed rebuild leaves a cache that is rebuilt again, never one that looks complete); a cache
without one (built by Megatron) is used as it is.

One folder can serve several Megatron versions at once: their tokenizer identities differ (the class
string at least), so their names differ, but the arrays are the same bytes. The caches are built for
the first identity and then named for the others by hard links (:func:`alias_gpt_cache`), a copy
where links are refused.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import shutil
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tokenmill import _kernels
from tokenmill.atomic import atomic_output
from tokenmill.errors import TokenmillError
from tokenmill.megatron_tokenizer import DEFAULT_VERSION, job_tokenizer_identifiers, null_tokenizer_flags

__all__ = ["SPLIT_NAMES", "parse_split", "normalise", "split_matrix", "split_ranges", "num_epochs", "GPTIndexSpec",
           "GPTIndices", "build_gpt_indices", "build_document_index", "build_sample_index",
           "build_shuffle_index", "description", "gpt_identifiers", "cache_file_names", "write_cache", "load_cache",
           "load_npy", "null_tokenizer_identifiers", "dataset_fingerprint", "read_fingerprint", "cache_fingerprint",
           "retokenize", "link_cache", "alias_gpt_cache", "check_sampling", "num_samples_for_epochs",
           "build_gpt_cache"]

SPLIT_NAMES = ("train", "valid", "test")
_SEPARATE_FINAL_EPOCH_THRESHOLD = 0.80
_CLASS = "GPTDataset"
_FINGERPRINT = "tokenmill_fingerprint.json"


# ---------------------------------------------------------------------------------------------
# Splits (docs/algorithms.md §1)

def parse_split(split: str) -> list[float]:
    """``"969,30,1"`` → normalised float64 weights ``[0.969, 0.03, 0.001]``.

    Every ``[.0-9]+`` in the string is a weight (so ``"80/10/10"`` works), right-padded to three.

    Raises:
        TokenmillError: more than three weights, a non-number, or all weights zero.
    """
    try:
        weights = [float(match) for match in re.findall(r"[.0-9]+", split)]
    except ValueError:
        weights = []
    if not weights:
        raise TokenmillError(f"split {split!r}: not a list of numbers")
    if len(weights) > len(SPLIT_NAMES):
        raise TokenmillError(f"split {split!r}: at most {len(SPLIT_NAMES)} weights (train, valid, test)")
    weights += [0.0] * (len(SPLIT_NAMES) - len(weights))
    if not sum(weights) > 0:
        raise TokenmillError(f"split {split!r}: the weights add up to zero")
    return normalise(weights)


def normalise(weights: list[float]) -> list[float]:
    """Weights divided by their float64 sum, as Python floats (Megatron's ``normalize``)."""
    weights = np.array(weights, dtype=np.float64)
    return (weights / np.sum(weights)).tolist()


def split_matrix(weights: list[float]) -> list[tuple[float, float] | None]:
    """Book-ends of each split as Megatron computes them (running Python sum from the int 0)."""
    ends = [0]
    for weight in weights:
        ends.append(ends[-1] + weight)
    return [(start, end) if end > start else None for start, end in zip(ends[:-1], ends[1:])]


def split_ranges(matrix: list[tuple[float, float] | None], num_sequences: int) -> list[np.ndarray | None]:
    """The sequence ids of each split: ``arange(round(start·N), round(end·N))`` as int32."""
    ranges = []
    for bookends in matrix:
        if bookends is None:
            ranges.append(None)
            continue
        begin = int(round(bookends[0] * float(num_sequences)))
        end = int(round(bookends[1] * float(num_sequences)))
        ranges.append(np.arange(begin, end, dtype=np.int32))
    return ranges


# ---------------------------------------------------------------------------------------------
# Index arrays (docs/algorithms.md §2)

def num_epochs(tokens_per_epoch: int, num_samples: int | None, seq_length: int, extra: int) -> int:
    """Smallest E ≥ 1 with ``E·T ≥ num_samples·seq + extra`` (1 when num_samples is None)."""
    if num_samples is None:
        return 1
    requested = num_samples * seq_length + extra
    return max(1, -(-requested // tokens_per_epoch))


def build_document_index(documents: np.ndarray, epochs: int, random_state: np.random.RandomState,
                         separate_final_epoch: bool) -> np.ndarray:
    """``documents`` repeated ``epochs`` times (int32), shuffled as one array or as E−1 + 1."""
    if not separate_final_epoch or epochs == 1:
        document_index = np.tile(documents.astype(np.int32), epochs)
        random_state.shuffle(document_index)
        return document_index
    first = build_document_index(documents, epochs - 1, random_state, False)
    last = build_document_index(documents, 1, random_state, False)
    return np.concatenate((first, last))


def build_sample_index(sizes: np.ndarray, document_index: np.ndarray, seq_length: int, epochs: int,
                       tokens_per_epoch: int, drop_last_partial_sequence: bool, extra: int) -> np.ndarray:
    """Where each sample starts and ends: ``(n + 1, 2)`` rows of (position in document_index, offset).

    Sample k covers tokens ``[k·seq, k·seq + seq + extra)`` of the documents concatenated in
    document_index order, so row k lies at token ``p = k·seq``: in the first document whose end
    reaches ``p + extra`` (Megatron's loop walks there from the previous row, skipping empty
    sequences), at offset ``p`` minus that document's start. With ``extra = 0`` a sample that ends
    exactly on a document end therefore gives the next row ``offset == size`` of that document.
    When the last partial sample is kept, its end row is the last document at ``size − extra``.
    The count without drop-last is computed in float32, as Megatron's C++ helper does.

    Returns:
        int32 rows, or int64 when a position or size exceeds 2**31 − 1 (Megatron's choice).

    Raises:
        TokenmillError: a row with a negative offset, which megatron-core refuses to build.
    """
    total = epochs * tokens_per_epoch - extra
    if drop_last_partial_sequence:
        num_samples = total // seq_length
    else:
        num_samples = int(math.ceil(np.float32(total) / np.float32(seq_length)))
    wide = max(len(document_index), int(sizes.max()) if len(sizes) else 0) > np.iinfo(np.int32).max
    rows = np.empty((num_samples + 1, 2), dtype=np.int64 if wide else np.int32)
    _kernels.sample_index(np.ascontiguousarray(sizes, dtype=np.int32),
                          np.ascontiguousarray(document_index, dtype=np.int32), seq_length, num_samples, extra, rows)
    if len(rows) and rows[:, 1].min() < 0:
        # Keeping a partial last sample whose document index ends on an empty sequence puts its end row
        # at offset -extra; megatron-core's build_sample_idx asserts offsets >= 0 and builds nothing.
        row = int(np.argmax(rows[:, 1] < 0))
        raise TokenmillError(f"sample index row {row} would have offset {int(rows[row, 1])} (the partial last sample "
                             f"ends on an empty sequence); megatron-core refuses such an index, so tokenmill does too: "
                             f"drop the partial validation sample or remove empty sequences")
    return rows


def build_shuffle_index(num_samples: int, total_size: int, random_state: np.random.RandomState) -> np.ndarray:
    """``arange(num_samples)`` shuffled, then ``arange(num_samples, total_size)`` shuffled after it."""
    dtype = np.int64 if total_size >= np.iinfo(np.uint32).max - 1 else np.uint32
    first = np.arange(num_samples, dtype=dtype)
    random_state.shuffle(first)
    if num_samples == total_size:
        return first
    last = np.arange(num_samples, total_size, dtype=dtype)
    random_state.shuffle(last)
    return np.concatenate((first, last))


@dataclass(frozen=True)
class GPTIndexSpec:
    """Everything that determines one split's indices.

    Args:
        seq_length: tokens per sample (plus ``extra``).
        seed: ``random_seed`` of the RandomState.
        num_samples: requested samples, or None for one epoch.
        split_name: ``train``, ``valid`` or ``test`` (valid may keep its last partial sample).
        extra: 1 with ``add_extra_token_to_sequence`` (Megatron's default), else 0.
        drop_last_partial_validation_sequence: Megatron's default True.
    """

    seq_length: int
    seed: int
    num_samples: int | None
    split_name: str = "train"
    extra: int = 1
    drop_last_partial_validation_sequence: bool = True


@dataclass
class GPTIndices:
    """The three arrays of one split."""

    document_index: np.ndarray
    sample_index: np.ndarray
    shuffle_index: np.ndarray


def build_gpt_indices(sizes: np.ndarray, indices: np.ndarray, spec: GPTIndexSpec, where: str = "") -> GPTIndices:
    """Build one split's document, sample and shuffle index exactly as megatron-core does.

    Args:
        sizes: tokens per sequence of the whole dataset (the ``.idx`` sequence lengths).
        indices: the split's sequence ids (see :func:`split_ranges`).
        spec: see :class:`GPTIndexSpec`.
        where: names the dataset and split in errors.

    Raises:
        TokenmillError: the split has no tokens (Megatron loops forever on it).
    """
    sizes = np.asarray(sizes)
    tokens_per_epoch = int(np.sum(sizes[indices], dtype=np.int64))
    if tokens_per_epoch == 0:
        raise TokenmillError(f"{where}: the {spec.split_name} split has {len(indices)} sequences and no tokens; "
                             f"change the split or add data (Megatron would loop forever here)")
    epochs = num_epochs(tokens_per_epoch, spec.num_samples, spec.seq_length, spec.extra)
    separate_final_epoch = False
    if epochs > 1:
        samples_sans_final = ((epochs - 1) * tokens_per_epoch - spec.extra) // spec.seq_length
        samples_from_final = spec.num_samples - samples_sans_final
        samples_per_epoch = (tokens_per_epoch - spec.extra) // spec.seq_length
        if not 0 <= samples_from_final <= samples_per_epoch + 1:  # Megatron asserts this
            raise TokenmillError(f"{where}: inconsistent epoch arithmetic for {spec.num_samples} samples")
        separate_final_epoch = samples_from_final < int(_SEPARATE_FINAL_EPOCH_THRESHOLD * samples_per_epoch)

    random_state = np.random.RandomState(spec.seed)
    document_index = build_document_index(indices, epochs, random_state, separate_final_epoch)
    drop_last = spec.split_name != "valid" or spec.drop_last_partial_validation_sequence
    sample_index = build_sample_index(sizes, document_index, spec.seq_length, epochs, tokens_per_epoch,
                                      drop_last, spec.extra)
    num_samples = len(sample_index) - 1  # 0 when one epoch holds less than a sample, as in Megatron
    shuffle_index = build_shuffle_index(samples_sans_final if separate_final_epoch else num_samples,
                                        num_samples, random_state)
    return GPTIndices(document_index, sample_index, shuffle_index)


# ---------------------------------------------------------------------------------------------
# Cache description and files (docs/formats.md §6)

def null_tokenizer_identifiers(vocab_size: int, version: str = DEFAULT_VERSION) -> dict:
    """``unique_identifiers`` of the tokenizer a Megatron job of ``version`` builds from
    ``--tokenizer-type NullTokenizer --vocab-size <vocab_size>`` (``pad_id`` ``"-1"`` included; see
    :mod:`tokenmill.megatron_tokenizer`).

    Raises:
        TokenmillError: an unknown version or a vocabulary size of 0.
    """
    return job_tokenizer_identifiers(version, null_tokenizer_flags(vocab_size))


def description(dataset_path: str, num_samples: int | None, split_name: str, seed: int, seq_length: int,
                split: str | None, matrix: list | None, tokenizer_identifiers: dict) -> str:
    """The JSON that Megatron hashes into the cache name, byte for byte (``json.dumps(indent=4)``)."""
    return json.dumps(gpt_identifiers(dataset_path, num_samples, split_name, seed, seq_length, split, matrix,
                                      tokenizer_identifiers), indent=4)


def gpt_identifiers(dataset_path: str, num_samples: int | None, split_name: str, seed: int, seq_length: int,
                    split: str | None, matrix: list | None, tokenizer_identifiers: dict) -> OrderedDict:
    """GPTDataset's ``unique_identifiers``, in Megatron's key order."""
    identifiers = OrderedDict()
    identifiers["class"] = _CLASS
    identifiers["dataset_path"] = dataset_path
    identifiers["num_samples"] = num_samples
    identifiers["index_split"] = split_name
    identifiers["random_seed"] = seed
    identifiers["sequence_length"] = seq_length
    identifiers["split"] = split
    identifiers["split_matrix"] = matrix
    identifiers["tokenizer"] = tokenizer_identifiers
    return identifiers


def cache_file_names(description_text: str, split_name: str, class_name: str = _CLASS,
                     suffixes=("description.txt", "document_index.npy", "sample_index.npy",
                               "shuffle_index.npy")) -> dict[str, str]:
    """``{suffix: "<md5>-<Class>-<split>-<suffix>"}``."""
    digest = hashlib.md5(description_text.encode("utf-8")).hexdigest()
    return {suffix: f"{digest}-{class_name}-{split_name}-{suffix}" for suffix in suffixes}


def write_cache(cache_dir: str | os.PathLike, description_text: str, split_name: str,
                arrays: dict[str, np.ndarray], class_name: str = _CLASS, fingerprint: dict | None = None,
                ) -> dict[str, Path]:
    """Write the description and ``.npy`` files (``numpy.save`` bytes), each atomically, and the
    dataset's fingerprint if given (see the module docstring).

    The description is written last, so a folder with it is complete.
    """
    cache_dir = Path(cache_dir)
    cache_dir.mkdir(parents=True, exist_ok=True)
    names = cache_file_names(description_text, split_name, class_name,
                             ("description.txt", *(f"{key}.npy" for key in arrays)))
    written = {}
    for key, array in arrays.items():
        with atomic_output(cache_dir / names[f"{key}.npy"]) as tmp_path:
            with open(tmp_path, "wb") as handle:
                np.save(handle, array, allow_pickle=True)  # the flag only matters for object arrays
        written[key] = cache_dir / names[f"{key}.npy"]
    if fingerprint is not None:
        fingerprint_path = cache_dir / cache_file_names(description_text, split_name, class_name, (_FINGERPRINT,))[
            _FINGERPRINT]
        with atomic_output(fingerprint_path) as tmp_path:
            tmp_path.write_text(json.dumps(fingerprint, sort_keys=True) + "\n", encoding="utf-8")
        written["fingerprint"] = fingerprint_path
    with atomic_output(cache_dir / names["description.txt"]) as tmp_path:
        tmp_path.write_text(description_text, encoding="utf-8")
    written["description"] = cache_dir / names["description.txt"]
    return written


def load_cache(cache_dir: str | os.PathLike, description_text: str, split_name: str,
               keys=("document_index", "sample_index", "shuffle_index"), class_name: str = _CLASS,
               ) -> dict[str, np.ndarray] | None:
    """Memory-map the cached arrays for this description, or None if any file is missing.

    Raises:
        TokenmillError: a cache file exists but is not a plain ``.npy`` array.
    """
    names = cache_file_names(description_text, split_name, class_name,
                             ("description.txt", *(f"{key}.npy" for key in keys)))
    paths = {key: Path(cache_dir) / names[f"{key}.npy"] for key in keys}
    if not all(path.exists() for path in paths.values()) or not (Path(cache_dir) / names["description.txt"]).exists():
        return None
    return {key: load_npy(path) for key, path in paths.items()}


def load_npy(path: str | os.PathLike) -> np.ndarray:
    """Memory-map a ``.npy`` array, never unpickling anything.

    Returns a plain ndarray view of the map (np.memmap's indexing overhead dominates sample reads).

    Raises:
        TokenmillError: the file is missing, holds objects, or is not a ``.npy`` array.
    """
    try:
        return np.load(path, mmap_mode="r", allow_pickle=False).view(np.ndarray)
    except Exception as exc:  # numpy raises ValueError, OSError, even tokenize errors on corrupt headers
        raise TokenmillError(f"{path}: not a readable .npy array ({type(exc).__name__}: {exc})") from None


MAX_SEED = 2**32 - 1  # numpy's RandomState, which Megatron seeds with --seed
MAX_SEQ_LENGTH = 2**31 - 1  # sample_index rows hold token offsets in int32


def check_sampling(seq_length: int, seed: int) -> None:
    """Refuse a sequence length or seed that Megatron's index building cannot take (its C++
    ``build_sample_idx`` aborts the process on a sequence length of 1).

    Raises:
        TokenmillError: ``seq_length`` outside ``[2, 2**31 - 1]`` or ``seed`` outside ``[0, 2**32 - 1]``.
    """
    if not 2 <= seq_length <= MAX_SEQ_LENGTH:
        raise TokenmillError(f"sequence length must be 2 to {MAX_SEQ_LENGTH}, not {seq_length}")
    if not 0 <= seed <= MAX_SEED:
        raise TokenmillError(f"seed must be 0 to {MAX_SEED} (numpy's RandomState, as Megatron seeds it), not {seed}")


def num_samples_for_epochs(prefix: str | os.PathLike, split: str, epochs: int, seq_length: int,
                           extra: int) -> dict[str, int | None]:
    """Sample counts that make every split exactly ``epochs`` epochs long.

    One epoch is Megatron's ``num_samples=None``; E > 1 asks for the samples of E whole epochs,
    ``(E·T − extra) // seq``, which Megatron turns back into E epochs.

    Raises:
        TokenmillError: ``epochs`` < 1.
    """
    from tokenmill.mmidx import MMapIndexedDataset

    if epochs < 1:
        raise TokenmillError(f"epochs must be at least 1, not {epochs}")
    check_sampling(seq_length, 0)
    if epochs == 1:
        return {name: None for name in SPLIT_NAMES}
    sizes = MMapIndexedDataset(prefix).sizes
    ranges = split_ranges(split_matrix(parse_split(split)), len(sizes))
    return {name: None if indices is None else (epochs * int(np.sum(sizes[indices], dtype=np.int64)) - extra)
            // seq_length for name, indices in zip(SPLIT_NAMES, ranges)}


def dataset_fingerprint(dataset) -> dict:
    """``{"idx_bytes", "sizes_sha256"}`` of an opened :class:`~tokenmill.mmidx.MMapIndexedDataset`."""
    digest = hashlib.sha256(np.ascontiguousarray(dataset.sequence_lengths).tobytes())
    digest.update(np.ascontiguousarray(dataset.document_indices).tobytes())
    return {"idx_bytes": dataset.idx_identity.size, "sizes_sha256": digest.hexdigest()}


def read_fingerprint(path: str | os.PathLike) -> dict | None:
    """The fingerprint file of a cache split, or None when it has none (a cache Megatron built).

    Raises:
        TokenmillError: the file exists but is not a fingerprint.
    """
    try:
        fingerprint = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise TokenmillError(f"{path}: unreadable fingerprint ({exc})") from None
    if not isinstance(fingerprint, dict) or set(fingerprint) != {"idx_bytes", "sizes_sha256"}:
        raise TokenmillError(f"{path}: not a cache fingerprint (expected idx_bytes and sizes_sha256)")
    return fingerprint


def cache_fingerprint(cache_dir: str | os.PathLike, description_text: str, split_name: str) -> dict | None:
    """The fingerprint of the dataset a tokenmill cache split was built from (None: Megatron built it).

    Raises:
        TokenmillError: an unreadable fingerprint file.
    """
    names = cache_file_names(description_text, split_name, suffixes=(_FINGERPRINT,))
    return read_fingerprint(Path(cache_dir) / names[_FINGERPRINT])


def build_gpt_cache(prefix: str | os.PathLike, cache_dir: str | os.PathLike, seq_length: int, seed: int,
                    split: str, num_samples: dict[str, int | None], tokenizer_identifiers: dict, extra: int = 1,
                    dataset_path: str | None = None, drop_last_partial_validation_sequence: bool = True,
                    ) -> dict[str, dict]:
    """Build (or find) the cache files of every non-empty split of ``<prefix>.bin/.idx``.

    Args:
        prefix: the Megatron dataset.
        cache_dir: the folder to hand to Megatron as ``--data-cache-path``.
        seq_length, seed, split: as Megatron's ``--seq-length``, ``--seed``, ``--split``.
        num_samples: per split name, the sample count or None for one epoch.
        extra: 1 with ``add_extra_token_to_sequence`` (default), 0 without (not in the hash!).
        dataset_path: the prefix string exactly as the training job passes it (hashed); default
            ``prefix`` as given.
        tokenizer_identifiers: the training tokenizer's ``unique_identifiers`` (hashed; see
            :func:`null_tokenizer_identifiers`).
        drop_last_partial_validation_sequence: Megatron's default True.

    Returns:
        Per split name: ``{"description", "identifiers", "files", "samples", "state"}``;
        state is ``found``, ``built``, or ``rebuilt`` (a cache built for another version of the
        dataset, see the module docstring).

    Raises:
        TokenmillError: unreadable dataset, bad split, or a split without tokens.
    """
    from tokenmill.mmidx import MMapIndexedDataset

    check_sampling(seq_length, seed)
    dataset = MMapIndexedDataset(prefix)
    weights = parse_split(split)
    matrix = split_matrix(weights)
    ranges = split_ranges(matrix, len(dataset))
    dataset_path = str(prefix) if dataset_path is None else dataset_path
    fingerprint = dataset_fingerprint(dataset)
    results = {}
    for split_name, bookends, indices in zip(SPLIT_NAMES, matrix, ranges):
        if bookends is None:
            continue
        identifiers = gpt_identifiers(dataset_path, num_samples.get(split_name), split_name, seed, seq_length, split,
                                      [list(pair) if pair else None for pair in matrix], tokenizer_identifiers)
        text = json.dumps(identifiers, indent=4)
        names = cache_file_names(text, split_name, suffixes=("description.txt", _FINGERPRINT))
        fingerprint_path = Path(cache_dir) / names[_FINGERPRINT]
        cached = load_cache(cache_dir, text, split_name)
        state = "found"
        if cached is not None and read_fingerprint(fingerprint_path) not in (None, fingerprint):
            cached, state = None, "rebuilt"
            (Path(cache_dir) / names["description.txt"]).unlink()  # incomplete until rewritten last
        if cached is None:
            state = "rebuilt" if state == "rebuilt" else "built"
            spec = GPTIndexSpec(seq_length, seed, num_samples.get(split_name), split_name, extra,
                                drop_last_partial_validation_sequence)
            indices_built = build_gpt_indices(dataset.sizes, indices, spec, where=str(prefix))
            write_cache(cache_dir, text, split_name, {"document_index": indices_built.document_index,
                                                      "sample_index": indices_built.sample_index,
                                                      "shuffle_index": indices_built.shuffle_index},
                        fingerprint=fingerprint)
            samples = len(indices_built.shuffle_index)
        else:
            samples = len(cached["shuffle_index"])
        results[split_name] = {"description": text, "identifiers": identifiers, "samples": samples,
                               "files": cache_file_names(text, split_name), "state": state}
    return results


# ---------------------------------------------------------------------------------------------
# One folder, several tokenizer identities (Megatron versions) over the same arrays

def retokenize(description_text: str, tokenizer_identifiers: dict) -> str:
    """The same description with another tokenizer identity: a GPTDataset's ``tokenizer``, or that
    of every dataset of a BlendedDataset. Floats survive the JSON round trip (``repr`` is exact)."""
    identifiers = json.loads(description_text, object_pairs_hook=OrderedDict)
    for dataset in identifiers.get("datasets", [identifiers]):
        dataset["tokenizer"] = tokenizer_identifiers
    return json.dumps(identifiers, indent=4)


def link_cache(cache_dir: str | os.PathLike, source_text: str, target_text: str, split_name: str,
               keys: tuple[str, ...], class_name: str = _CLASS) -> str:
    """Name a complete cache a second time: ``target_text``'s files over ``source_text``'s arrays.

    Each ``.npy`` (and the fingerprint, when the source has one) is hard-linked under the target
    name, or copied where the file system refuses links; the description is written last, so a
    killed run leaves a target that is redone. Cost: one link per file, no array is read.

    Returns:
        ``found`` (the target was complete and, where tokenmill built it, of the same dataset),
        ``built`` or ``rebuilt`` (it was of another version of the dataset).

    Raises:
        TokenmillError: a source file is missing, or a link or copy fails.
    """
    cache_dir = Path(cache_dir)
    suffixes = (*(f"{key}.npy" for key in keys), _FINGERPRINT, "description.txt")
    source = {suffix: cache_dir / name for suffix, name in
              cache_file_names(source_text, split_name, class_name, suffixes).items()}
    target = {suffix: cache_dir / name for suffix, name in
              cache_file_names(target_text, split_name, class_name, suffixes).items()}
    complete = all(target[suffix].exists() for suffix in suffixes if suffix != _FINGERPRINT)
    fingerprint = read_fingerprint(source[_FINGERPRINT])
    if complete and read_fingerprint(target[_FINGERPRINT]) in (None, fingerprint):
        return "found"
    target["description.txt"].unlink(missing_ok=True)  # incomplete until rewritten last
    for suffix in suffixes[:-1]:
        if suffix == _FINGERPRINT and fingerprint is None:
            continue
        if not source[suffix].exists():
            raise TokenmillError(f"{source[suffix]}: missing; cannot name its cache for another tokenizer identity")
        if target[suffix].exists() and os.path.samefile(source[suffix], target[suffix]):
            continue  # renaming a link onto its own file would do nothing and leave the temporary behind
        with atomic_output(target[suffix]) as tmp_path:
            try:
                os.link(source[suffix], tmp_path)
            except OSError:  # no hard links here (another file system, a FAT volume): a copy holds the same bytes
                shutil.copyfile(source[suffix], tmp_path)
    with atomic_output(target["description.txt"]) as tmp_path:
        tmp_path.write_text(target_text, encoding="utf-8")
    return "rebuilt" if complete else "built"


def alias_gpt_cache(cache_dir: str | os.PathLike, results: dict[str, dict], tokenizer_identifiers: dict,
                    ) -> dict[str, dict]:
    """Name the caches of :func:`build_gpt_cache`'s ``results`` for another tokenizer identity too
    (another Megatron version's), over the same arrays (see :func:`link_cache`).

    Returns:
        Per split, a result like :func:`build_gpt_cache`'s for the new names.

    Raises:
        TokenmillError: as :func:`link_cache`.
    """
    aliased = {}
    for split_name, result in results.items():
        text = retokenize(result["description"], tokenizer_identifiers)
        state = link_cache(cache_dir, result["description"], text, split_name,
                           ("document_index", "sample_index", "shuffle_index"))
        identifiers = result["identifiers"].copy()
        identifiers["tokenizer"] = tokenizer_identifiers
        aliased[split_name] = {**result, "description": text, "identifiers": identifiers, "state": state,
                               "files": cache_file_names(text, split_name)}
    return aliased
