"""Megatron's index cache folder: each split's description, md5 file names and ``.npy`` arrays, built
once and found again (``--data-cache-path``).

A split's files are ``<md5>-GPTDataset-<split>-{description.txt,document_index.npy,sample_index.npy,
shuffle_index.npy}``, where md5 is that of the description, GPTDataset's ``unique_identifiers`` as
``json.dumps(indent=4)``. The description text, md5 and ``.npy`` bytes (``numpy.save``) equal
megatron-core 0.19's for the same inputs (docs/formats.md §6), so the folder can be handed to Megatron
and training starts without building anything. The arrays come from :mod:`tokenmill.megatron.gpt_indices`;
finding a built split costs a few stats and one ``.idx`` fingerprint.

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
import os
import shutil
from collections import OrderedDict
from pathlib import Path

import numpy as np

from tokenmill.errors import TokenmillError
from tokenmill.files.atomic import atomic_output
from tokenmill.megatron.gpt_indices import (SPLIT_NAMES, GPTIndexSpec, build_gpt_indices, check_sampling, parse_split,
                                            split_matrix, split_ranges)
from tokenmill.megatron.job_tokenizer import DEFAULT_VERSION, job_tokenizer_identifiers, null_tokenizer_flags

__all__ = ["description", "gpt_identifiers", "cache_file_names", "write_cache", "load_cache", "load_npy",
           "null_tokenizer_identifiers", "dataset_fingerprint", "read_fingerprint", "cache_fingerprint",
           "build_gpt_cache", "retokenize", "link_cache", "alias_gpt_cache"]

_CLASS = "GPTDataset"
_FINGERPRINT = "tokenmill_fingerprint.json"


def null_tokenizer_identifiers(vocab_size: int, version: str = DEFAULT_VERSION) -> dict:
    """``unique_identifiers`` of the tokenizer a Megatron job of ``version`` builds from
    ``--tokenizer-type NullTokenizer --vocab-size <vocab_size>`` (``pad_id`` ``"-1"`` included; see
    :mod:`tokenmill.megatron.job_tokenizer`).

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


def dataset_fingerprint(dataset) -> dict:
    """``{"idx_bytes", "sizes_sha256"}`` of an opened :class:`~tokenmill.formats.bin_idx.MMapIndexedDataset`."""
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
    from tokenmill.formats.bin_idx import MMapIndexedDataset

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
