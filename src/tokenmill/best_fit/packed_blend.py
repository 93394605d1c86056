"""The packed blend: best-fit samples of several Megatron datasets, drawn by a blend's weights.

For datasets ``P_0 .. P_{n-1}`` with weights ``w``, sequence length ``L``, seed and split, each dataset gets its
own packed index (:mod:`tokenmill.best_fit.packed_index`, the same seed and split) in a folder ``dataset-<i>/``,
and for every split with a size ``S`` (``sampling.num_samples``) the blend draws its samples as Megatron's
BlendedDataset does (:mod:`tokenmill.megatron.blend`): ``w`` normalised in float64, dataset i gives
``t_i = ceil(S · w_i)`` samples, and the greedy error minimisation over ``Σ t_i`` steps names, for each blend
sample, a dataset and its draw number ``j`` from that dataset (0, 1, ...). Draw ``j`` of a dataset with ``K``
packed samples is its packed sample ``order[j]``: its epoch ``e = j // K`` is the packed index's own order (the
seed's) for ``e = 0`` and ``numpy.random.RandomState([seed, e]).permutation(K)`` after, so a dataset drawn past
its packed samples repeats them in a new order. Files, beside the datasets' folders (docs/formats.md, "Packed
blend")::

    blend-<strategy>-<split>-dataset_index.npy         int16 (N,): blend sample s is from dataset_index[s]
    blend-<strategy>-<split>-dataset_sample_index.npy  int64 (N,): ... its packed sample dataset_sample_index[s]
    blend-<strategy>-<split>-description.json          what was blended and what it bought (written last)

Cost: each dataset's packing (:mod:`tokenmill.best_fit.packed_index`), then O(N · n) for the greedy draw (C) and
O(N) for the epochs; memory 10 bytes per blend sample besides the packing's.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import numpy as np

from tokenmill.errors import TokenmillError
from tokenmill.megatron.blend import blend_sizes, build_blending_indices, check_weights
from tokenmill.megatron.gpt_indices import SPLIT_NAMES, normalise
from tokenmill.megatron.index_cache import load_npy
from tokenmill.best_fit.packed_index import (build_packed_index, load_packed_index, packed_index_problems,
                                            read_description, sample_figures, write_packing_output)

__all__ = ["PACKED_BLEND_FORMAT", "packed_blend_names", "dataset_folder", "blend_draws", "build_packed_blend",
           "load_packed_blend", "packed_blend_problems"]

PACKED_BLEND_FORMAT = "tokenmill-packed-blend/1"
_MAX_DATASETS = np.iinfo(np.int16).max - 1


def packed_blend_names(strategy: str, split_name: str) -> dict[str, str]:
    """The file names of one split's blend arrays and description (module docstring)."""
    stem = f"blend-{strategy}-{split_name}"
    return {"dataset_index": f"{stem}-dataset_index.npy", "dataset_sample_index": f"{stem}-dataset_sample_index.npy",
            "description": f"{stem}-description.json"}


def dataset_folder(cache_dir: str | os.PathLike, i: int) -> Path:
    """The folder of dataset ``i``'s own packed index inside a packed blend's folder."""
    return Path(cache_dir) / f"dataset-{i}"


def blend_draws(weights: list[float], size: int, seed: int, sample_counts: list[int],
                names: list[str] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``(dataset_index int16, dataset_sample_index int64)`` of a blend of ``size`` samples over datasets of
    ``sample_counts`` packed samples each (module docstring).

    Raises:
        TokenmillError: weights that cannot be normalised, or a dataset drawn from that has no samples.
    """
    check_weights(weights)
    normalised = normalise(weights)
    targets, _ = blend_sizes(normalised, size)
    dataset_index, draws = build_blending_indices(normalised, int(sum(targets)))
    dataset_sample_index = np.empty_like(draws)
    for i, count in enumerate(sample_counts):
        mine = dataset_index == i
        if not mine.any():
            continue
        if count < 1:
            raise TokenmillError(f"{(names or [f'dataset {i}'])[i]}: the blend draws from it, and its split has no "
                                 f"documents to pack")
        wanted = draws[mine]
        epochs = int(wanted.max()) // count + 1
        order = np.concatenate([np.arange(count, dtype=np.int64)] + [
            np.random.RandomState([seed, epoch]).permutation(count).astype(np.int64) for epoch in range(1, epochs)])
        dataset_sample_index[mine] = order[wanted]
    return dataset_index, dataset_sample_index


def build_packed_blend(prefixes: list[str], weights: list[float], cache_dir: str | os.PathLike,
                       sequence_length: int, seed: int, split: str, num_samples: dict[str, int],
                       strategy: str = "truncate") -> dict[str, dict]:
    """Pack every dataset into ``cache_dir/dataset-<i>/`` and write the blend of every split with a size in
    ``num_samples`` (0 or missing: none); each file atomically, each description last. Returns each blend
    split's description.

    Raises:
        TokenmillError: too many or no datasets, bad weights, an unreadable dataset, a bad split, length or
            strategy, or a split drawn from a dataset with nothing in it.
    """
    if not 1 <= len(prefixes) <= _MAX_DATASETS or len(weights) != len(prefixes):
        raise TokenmillError(f"a blend takes 1 to {_MAX_DATASETS} datasets, each with a weight; got "
                             f"{len(prefixes)} datasets and {len(weights)} weights")
    check_weights(weights)
    cache_dir = Path(cache_dir)
    parts = [build_packed_index(prefix, dataset_folder(cache_dir, i), sequence_length, seed, split, strategy)
             for i, prefix in enumerate(prefixes)]
    descriptions = {}
    for split_name in SPLIT_NAMES:
        size = num_samples.get(split_name) or 0
        if size < 1:
            continue
        counts = [part[split_name]["samples"] if split_name in part else 0 for part in parts]
        arrays = dict(zip(("dataset_index", "dataset_sample_index"),
                          blend_draws(weights, size, seed, counts, [str(prefix) for prefix in prefixes])))
        description = _description(prefixes, weights, sequence_length, seed, split, split_name, strategy, size,
                                   arrays, [part.get(split_name, {}) for part in parts],
                                   [_sample_lengths(dataset_folder(cache_dir, i), strategy, split_name)
                                    for i in range(len(prefixes))])
        names = packed_blend_names(strategy, split_name)
        write_packing_output(cache_dir, names, arrays, description)
        descriptions[split_name] = description
    return descriptions


def _sample_lengths(folder: Path, strategy: str, split_name: str) -> np.ndarray:
    """Each packed sample's tokens before padding, of one dataset's packed index (none without the split)."""
    if not (folder / f"best_fit-{strategy}-{split_name}-description.json").is_file():
        return np.zeros(0, np.int64)
    _, pieces, offsets = load_packed_index(folder, strategy, split_name)
    totals = np.concatenate([[0], np.cumsum(pieces[:, 2])])
    return totals[offsets[1:]] - totals[offsets[:-1]]


def _description(prefixes: list[str], weights: list[float], sequence_length: int, seed: int, split: str,
                 split_name: str, strategy: str, size: int, arrays: dict[str, np.ndarray], parts: list[dict],
                 sample_lengths: list[np.ndarray]) -> dict:
    """A blend split's description: what was blended, each dataset's draws, and the padding of the samples."""
    dataset_index, dataset_sample_index = arrays["dataset_index"], arrays["dataset_sample_index"]
    drawn = np.bincount(dataset_index.astype(np.int64), minlength=len(prefixes))
    used = np.concatenate([lengths[dataset_sample_index[dataset_index == i]]
                           for i, lengths in enumerate(sample_lengths)] or [np.zeros(0, np.int64)])
    datasets = [{"dataset": str(prefix), "folder": dataset_folder(".", i).name, "weight": weight,
                 "packed_samples": int(part.get("samples", 0)), "drawn": int(drawn[i]),
                 "epochs": math.ceil(drawn[i] / part["samples"]) if part.get("samples") else 0,
                 "kept_whole": int(part.get("kept_whole", 0)), "cut_by_concat": int(part.get("cut_by_concat", 0))}
                for i, (prefix, weight, part) in enumerate(zip(prefixes, weights, parts))]
    return {"format": PACKED_BLEND_FORMAT, "datasets": datasets, "sequence_length": sequence_length, "seed": seed,
            "split": split, "split_name": split_name, "long_document_strategy": strategy, "size": size,
            **sample_figures(used, sequence_length)}


def load_packed_blend(cache_dir: str | os.PathLike, strategy: str,
                      split_name: str) -> tuple[dict, np.ndarray, np.ndarray]:
    """One split's ``(description, dataset_index, dataset_sample_index)``, the arrays memory-mapped.

    Raises:
        TokenmillError: a missing or unreadable file, or one that is not a packed blend.
    """
    names = packed_blend_names(strategy, split_name)
    path = Path(cache_dir) / names["description"]
    description = read_description(path, PACKED_BLEND_FORMAT, "no packed blend (tokenmill best-fit --blend builds it)")
    if not isinstance(description.get("datasets"), list):
        raise TokenmillError(f"{path}: not a {PACKED_BLEND_FORMAT} description")
    dataset_index, dataset_sample_index = (load_npy(Path(cache_dir) / names[key])
                                           for key in ("dataset_index", "dataset_sample_index"))
    if dataset_index.dtype != np.int16 or dataset_sample_index.dtype != np.int64 or \
            dataset_index.shape != dataset_sample_index.shape or dataset_index.ndim != 1:
        raise TokenmillError(f"{Path(cache_dir) / names['dataset_index']}: not an int16 array the length of "
                             f"{names['dataset_sample_index']} (int64)")
    return description, dataset_index, dataset_sample_index


def packed_blend_problems(cache_dir: str | os.PathLike) -> list[str]:
    """Every problem of the packed blends in ``cache_dir``, one line each: its datasets' packed indices
    (:func:`tokenmill.best_fit.packed_index.packed_index_problems`), and per blend split a description that is
    not one, a draw out of its dataset's samples, or arrays and figures other than the blend makes from the
    datasets' sample counts. Cost: each dataset's packing again, then the draw."""
    cache_dir = Path(cache_dir)
    problems = []
    folders = sorted(cache_dir.glob("dataset-*"))
    for folder in folders:
        problems += packed_index_problems(folder)
    for path in sorted(cache_dir.glob("blend-*-description.json")):
        strategy, _, split_name = path.name[len("blend-"):-len("-description.json")].rpartition("-")
        try:
            description, dataset_index, dataset_sample_index = load_packed_blend(cache_dir, strategy, split_name)
            datasets = description["datasets"]
            if len(datasets) != len(folders):
                problems.append(f"{path}: names {len(datasets)} datasets, the folder holds {len(folders)}")
                continue
            lengths = [_sample_lengths(dataset_folder(cache_dir, i), strategy, split_name)
                       for i in range(len(datasets))]
            counts = np.array([len(each) for each in lengths], dtype=np.int64)
            bad = np.flatnonzero((dataset_index < 0) | (dataset_index >= len(datasets)))
            if not len(bad):
                bad = np.flatnonzero((dataset_sample_index < 0) |
                                     (dataset_sample_index >= counts[dataset_index.astype(np.int64)]))
            if len(bad):
                problems.append(f"{path.with_name(packed_blend_names(strategy, split_name)['dataset_index'])}: "
                                f"blend sample {int(bad[0])} names no packed sample of its dataset")
                continue
            weights = [float(each["weight"]) for each in datasets]
            expected = dict(zip(("dataset_index", "dataset_sample_index"),
                                blend_draws(weights, int(description["size"]), int(description["seed"]),
                                            counts.tolist())))
            parts = [json.loads((dataset_folder(cache_dir, i) / f"best_fit-{strategy}-{split_name}-description.json")
                                .read_text(encoding="utf-8")) if counts[i] else {} for i in range(len(datasets))]
            figures = _description([each["dataset"] for each in datasets], weights,
                                   int(description["sequence_length"]), int(description["seed"]),
                                   description["split"], split_name, strategy, int(description["size"]), expected,
                                   parts, lengths)
        except TokenmillError as exc:
            problems.append(str(exc))
            continue
        except (KeyError, TypeError, ValueError, OSError) as exc:
            problems.append(f"{path}: not a packed blend description ({exc})")
            continue
        for key, array in (("dataset_index", dataset_index), ("dataset_sample_index", dataset_sample_index)):
            if not np.array_equal(array, expected[key]):
                problems.append(f"{path.with_name(packed_blend_names(strategy, split_name)[key])}: not the draw the "
                                f"blend makes from its datasets' packed samples")
        if figures != description:
            problems.append(f"{path}: its figures are not the blend's")
    return problems
