"""Index cache folders as a Megatron job reads them: every problem of one, listed.

* Each ``*-description.txt`` hashes (md5) to its file name and is a JSON object.
* GPTDataset arrays have Megatron's dtypes and shapes, rows that stay inside the document index and the
  sequences, and a shuffle index that is a permutation, and (where tokenmill built it) the fingerprint
  of the dataset it was built from; BlendedDataset arrays point at existing datasets.
* One cache per split and dataset (and one blend per split): a second cache of the same dataset,
  typically built by a job that spells the dataset path differently (Megatron hashes it into the
  names), is a problem, since a job reads only one of them and nothing says which
  (:func:`duplicate_caches`).

Cost: reads every description and fingerprint, and each array once (memory-mapped).
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
from pathlib import Path

import numpy as np

from tokenmill.errors import TokenmillError
from tokenmill.formats.bin_idx import MMapIndexedDataset
from tokenmill.megatron.index_cache import dataset_fingerprint, load_npy, read_fingerprint

__all__ = ["verify_cache", "duplicate_caches"]


def verify_cache(folder: Path) -> list[str]:
    """Every problem of an index cache folder (see the module docstring); one line each."""
    descriptions = sorted(folder.glob("*-description.txt"))
    if not descriptions:
        return [f"{folder}: no *-description.txt: not an index cache folder"]
    problems = []
    for description_path in descriptions:
        stem = description_path.name[:-len("-description.txt")]
        text = description_path.read_bytes()
        digest, _, kind = stem.partition("-")
        if hashlib.md5(text).hexdigest() != digest:
            problems.append(f"{description_path}: its md5 is {hashlib.md5(text).hexdigest()}, not the {digest} "
                            f"of its name")
            continue
        try:
            identifiers = json.loads(text)
            arrays = {path.name[len(stem) + 1:-len(".npy")]: load_npy(path) for path in folder.glob(f"{stem}-*.npy")}
        except ValueError as exc:
            problems.append(f"{description_path}: not JSON ({exc})")
            continue
        except TokenmillError as exc:
            problems.append(str(exc))
            continue
        if not isinstance(identifiers, dict):
            problems.append(f"{description_path}: a JSON {type(identifiers).__name__}, Megatron writes an object")
            continue
        if kind.startswith("GPTDataset-"):
            problems += _verify_gpt_arrays(folder / stem, identifiers, arrays)
        elif kind.startswith("BlendedDataset-"):
            problems += _verify_blend_arrays(folder / stem, identifiers, arrays)
    return problems + list(duplicate_caches(folder).values())


def _arrays_key(identifiers: dict) -> str:
    """What names one set of arrays: the identifiers without the tokenizer's (a folder built for several
    Megatron versions names the same arrays once per tokenizer identity)."""
    def bare(dataset: object) -> object:
        return {**dataset, "tokenizer": None} if isinstance(dataset, dict) else dataset

    if isinstance(identifiers.get("datasets"), list):
        identifiers = {**identifiers, "datasets": [bare(dataset) for dataset in identifiers["datasets"]]}
    return json.dumps(bare(identifiers), sort_keys=True)


def duplicate_caches(folder: str | os.PathLike) -> dict[tuple[str, str], str]:
    """The splits of a cache folder holding two caches of one dataset (or two blends), each with its problem.

    A job reads one cache per split and dataset: the one whose name its own arguments hash to. A second
    one of the same dataset is usually a job's own, built because it spelled the dataset path
    differently (Megatron hashes the path as given); which one a run used, nothing says. Caches are of
    one dataset when their fingerprints (tokenmill's, of the ``.idx``) are equal, or, where one has
    none (Megatron built it), when their dataset paths end in the same file name. Caches of other
    datasets (a folder shared as ``--data-cache-path``, a blend's parts) are no problem, nor are the parts a
    blend of the folder names, though two hold equal tokens (two datasets made from copies of one file): the
    blend's job reads each; names of one cache for several tokenizer identities count as one. Descriptions
    that are not JSON objects are left to :func:`verify`. Cost: reads every description and fingerprint.

    Returns:
        ``{(class name, split): problem}``, e.g. ``("GPTDataset", "train")``.
    """
    folder = Path(folder)
    caches: dict[tuple[str, str], dict[str, tuple[Path, dict]]] = {}  # (class, split) → arrays key → first
    separate: dict[tuple[str, str], list[Path]] = {}  # (class, split) → names of one key not linked to the first
    blend_parts: set[str] = set()  # arrays keys of the datasets a blend of the folder names
    for description_path in sorted(folder.glob("*-description.txt")):
        parts = description_path.name[:-len("-description.txt")].split("-")
        if len(parts) != 3:
            continue
        try:
            identifiers = json.loads(description_path.read_bytes())
        except ValueError:
            continue
        if isinstance(identifiers, dict):
            if parts[1] == "BlendedDataset" and isinstance(identifiers.get("datasets"), list):
                blend_parts.update(_arrays_key(part) for part in identifiers["datasets"] if isinstance(part, dict))
            first = caches.setdefault((parts[1], parts[2]), {}).setdefault(_arrays_key(identifiers),
                                                                            (description_path, identifiers))
            if first[0] != description_path and not _same_arrays(first[0], description_path):
                separate.setdefault((parts[1], parts[2]), [first[0]]).append(description_path)
    clashes = {}
    for (class_name, split), found in caches.items():
        groups = [list(found.values())] if class_name != "GPTDataset" else _by_dataset(list(found.values()))
        groups = [_beside_blend_parts(group, blend_parts) for group in groups]
        clash = next((group for group in groups if len(group) > 1), None)
        if clash:
            clashes[(class_name, split)] = _clash_problem(folder, class_name, split, clash)
        elif (class_name, split) in separate:
            files = ", ".join(path.name.removesuffix("description.txt") + "*" for path in separate[(class_name, split)])
            clashes[(class_name, split)] = (
                f"{folder}: {len(separate[(class_name, split)])} {class_name} {split} caches of one dataset ({files}) "
                f"built separately for other tokenizer identifiers (names the workflow gives one cache for several "
                f"Megatron versions share its arrays); a job reads only the one its tokenizer flags hash to "
                f"(megatron_args.txt): delete the files of the one no job uses")
    return clashes


def _same_arrays(one: Path, other: Path) -> bool:
    """Whether two cache names are links to one set of arrays (:func:`tokenmill.megatron.index_cache.link_cache`)."""
    def first_array(description_path: Path) -> Path:
        stem = description_path.name.removesuffix("description.txt")
        return next(iter(sorted(description_path.parent.glob(f"{glob.escape(stem)}*.npy"))), description_path)

    try:
        return os.path.samefile(first_array(one), first_array(other))
    except OSError:
        return True  # a missing array is verify's own problem to name


def _by_dataset(caches: list[tuple[Path, dict]]) -> list[list[tuple[Path, dict]]]:
    """GPTDataset caches grouped by the dataset they were built from (see :func:`duplicate_caches`)."""
    groups: list[list[tuple[Path, dict, dict | None, str]]] = []
    for description_path, identifiers in caches:
        try:
            fingerprint = read_fingerprint(description_path.with_name(
                description_path.name.removesuffix("description.txt") + "tokenmill_fingerprint.json"))
        except TokenmillError:  # verify names it; here it tells nothing
            fingerprint = None
        name = Path(str(identifiers.get("dataset_path"))).name
        for group in groups:
            _, _, other_fingerprint, other_name = group[0]
            if (fingerprint == other_fingerprint if fingerprint and other_fingerprint else name == other_name):
                group.append((description_path, identifiers, fingerprint, name))
                break
        else:
            groups.append([(description_path, identifiers, fingerprint, name)])
    return [[(path, identifiers) for path, identifiers, _, _ in group] for group in groups]


def _beside_blend_parts(caches: list[tuple[Path, dict]], blend_parts: set[str]) -> list[tuple[Path, dict]]:
    """Caches of one dataset with those a blend names counted as one: the blend reads each of its parts."""
    named = [cache for cache in caches if _arrays_key(cache[1]) in blend_parts]
    return named[:1] + [cache for cache in caches if _arrays_key(cache[1]) not in blend_parts]


def _clash_problem(folder: Path, class_name: str, split: str, caches: list[tuple[Path, dict]]) -> str:
    """One line: the caches of one split, what tells them apart, and what to do."""
    keys = [key for key in caches[0][1] if key != "tokenizer"
            and len({json.dumps(identifiers.get(key), sort_keys=True) for _, identifiers in caches}) > 1]
    values = {key: ", ".join(repr(identifiers.get(key)) for _, identifiers in caches) for key in keys}
    differences = "; ".join(f"{key} {value}" for key, value in values.items()) or "their tokenizer only"
    files = ", ".join(path.name.removesuffix("description.txt") + "*" for path, _ in caches)
    why = ("Megatron hashes --data-path as spelled (NanosetConfig: dataset_path=), so a job spelling it differently "
           "built one of them" if "dataset_path" in keys else "a job with other settings built one of them")
    return (f"{folder}: {len(caches)} {class_name} {split} caches of one dataset ({files}), differing in "
            f"{differences}; a job reads only the one its arguments hash to, and {why}: delete the files of the one "
            f"no job uses")


def _verify_gpt_arrays(where: Path, identifiers: dict, arrays: dict) -> list[str]:
    expected = {"document_index": ("int32",), "sample_index": ("int32", "int64"),
                "shuffle_index": ("uint32", "int64")}
    problems = [f"{where}: missing {key}.npy" for key in expected if key not in arrays]
    if problems:
        return problems
    document_index, sample_index, shuffle_index = (arrays[key] for key in expected)
    for key, dtypes in expected.items():
        if arrays[key].dtype.name not in dtypes:
            problems.append(f"{where}-{key}.npy: dtype {arrays[key].dtype}, Megatron writes {' or '.join(dtypes)}")
    if sample_index.ndim != 2 or sample_index.shape[1] != 2:
        return problems + [f"{where}-sample_index.npy: shape {sample_index.shape}, expected (samples + 1, 2)"]
    if len(shuffle_index) != len(sample_index) - 1:
        problems.append(f"{where}: {len(shuffle_index)} shuffled samples for {len(sample_index) - 1} in sample_index")
    elif not np.array_equal(np.sort(shuffle_index), np.arange(len(shuffle_index))):
        problems.append(f"{where}-shuffle_index.npy: not a permutation of the samples")
    positions = sample_index[:, 0]
    if len(positions) and (positions.min() < 0 or positions.max() >= len(document_index)
                           or np.any(np.diff(positions) < 0)):
        problems.append(f"{where}-sample_index.npy: rows leave the document index or go backwards")
    dataset_path = identifiers.get("dataset_path")
    if dataset_path and Path(f"{dataset_path}.idx").exists() and not problems:
        try:
            dataset = MMapIndexedDataset(dataset_path)
            recorded = read_fingerprint(f"{where}-tokenmill_fingerprint.json")
        except TokenmillError as exc:
            return problems + [str(exc)]
        if recorded not in (None, dataset_fingerprint(dataset)):
            return problems + [f"{where}: built for another version of {dataset_path} (its .idx fingerprint "
                               f"differs): rebuild it with tokenmill sample-index"]
        sizes = dataset.sizes
        if len(document_index) and (document_index.min() < 0 or document_index.max() >= len(sizes)):
            problems.append(f"{where}-document_index.npy: sequence ids beyond the {len(sizes)} of {dataset_path}")
        elif len(positions) > 1 and np.any(sample_index[1:, 1] > sizes[document_index[positions[1:]]]):
            problems.append(f"{where}-sample_index.npy: offsets beyond their sequences in {dataset_path}")
    return problems


def _verify_blend_arrays(where: Path, identifiers: dict, arrays: dict) -> list[str]:
    if set(arrays) != {"dataset_index", "dataset_sample_index"}:
        return [f"{where}: expected dataset_index.npy and dataset_sample_index.npy, found {sorted(arrays)}"]
    dataset_index, sample_index = arrays["dataset_index"], arrays["dataset_sample_index"]
    if not isinstance(identifiers.get("datasets"), list):
        return [f"{where}-description.txt: no list of datasets, as Megatron's BlendedDataset writes"]
    problems = []
    if dataset_index.dtype != np.int16 or sample_index.dtype != np.int64:
        problems.append(f"{where}: dtypes {dataset_index.dtype}/{sample_index.dtype}, Megatron writes int16/int64")
    if len(dataset_index) != len(sample_index):
        problems.append(f"{where}: {len(dataset_index)} dataset ids for {len(sample_index)} samples")
    elif len(dataset_index) and (dataset_index.min() < 0 or dataset_index.max() >= len(identifiers["datasets"])
                                 or sample_index.min() < 0):
        problems.append(f"{where}-dataset_index.npy: ids outside the blend's {len(identifiers['datasets'])} datasets")
    return problems
