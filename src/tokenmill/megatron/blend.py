"""Blends of several Megatron datasets, exactly as megatron-core's BlendedDataset builds them.

Given weights (docs/algorithms.md §4), for a blend of S samples in one split:

* weights are normalised in float64: ``w_i``;
* dataset i must supply ``t_i = ceil(S · w_i)`` samples, and is built (as a GPTDataset over its
  own split range) with ``b_i = ceil(t_i · 1.005)`` — Megatron's 0.5 % mid-level surplus;
* the blend has ``Σ t_i`` samples (which can exceed S);
* ``dataset_index[s]`` (int16) and ``dataset_sample_index[s]`` (int64) come from greedy error
  minimisation: step s takes the dataset maximising ``w_j · max(s, 1) − count_j``, ties to the
  lowest j. Blend sample s is sample ``dataset_sample_index[s]`` of dataset ``dataset_index[s]``
  (which its own shuffle_index then maps).

Without weights, every dataset is one epoch (num_samples None), the weights are the datasets'
lengths, and the blend is ``min(S, Σ lengths)`` long, or exhaustive (every sample once) when S is
None. The two loops run in C (``_kernels.c``), O(S · datasets). The cache is
``<md5>-BlendedDataset-<split>-{description.txt,dataset_index.npy,dataset_sample_index.npy}``, the
md5 over ``json.dumps`` of (class, datasets' identifiers, split, weights, size). For another
tokenizer identity (another Megatron version) the same arrays are named again by hard links
(:func:`alias_blend_cache`).
"""

from __future__ import annotations

import json
import math
import os
from collections import OrderedDict

import numpy as np

from tokenmill import _kernels
from tokenmill.errors import TokenmillError
from tokenmill.megatron.gpt_indices import SPLIT_NAMES, EmptySplit, check_sampling, normalise
from tokenmill.megatron.index_cache import (alias_gpt_cache, build_gpt_cache, cache_file_names, link_cache, load_cache,
                                            retokenize, write_cache)

__all__ = ["MID_LEVEL_SURPLUS", "parse_blend", "check_weights", "blend_sizes", "build_blending_indices",
           "build_exhaustive_blending_indices", "build_blend_cache", "alias_blend_cache"]

MID_LEVEL_SURPLUS = 0.005
_CLASS = "BlendedDataset"
_FILES = ("description.txt", "dataset_index.npy", "dataset_sample_index.npy")
_MAX_DATASETS = np.iinfo(np.int16).max - 1


def parse_blend(items: list[str]) -> tuple[list[str], list[float] | None]:
    """Megatron's ``--data-path`` list: ``w1 p1 w2 p2 ...`` (weights) or ``p1 p2 ...`` (none).

    Raises:
        TokenmillError: weights that are not finite numbers ≥ 0 or add up to zero.
    """
    if len(items) % 2 == 1 or not items:
        return [item.strip() for item in items], None
    try:
        weights = [float(item) for item in items[0::2]]
    except ValueError:
        return [item.strip() for item in items], None  # all prefixes, an even number of them
    check_weights(weights)
    return [item.strip() for item in items[1::2]], weights


def check_weights(weights: list[float]) -> None:
    """Refuse blend weights that cannot be normalised.

    Raises:
        TokenmillError: a weight that is negative, NaN or infinite, or weights that add up to zero.
    """
    if not all(math.isfinite(weight) and weight >= 0 for weight in weights):
        raise TokenmillError(f"blend weights must be finite numbers ≥ 0, got {weights}")
    if not sum(weights) > 0:
        raise TokenmillError(f"blend weights add up to zero ({weights}): give at least one dataset a weight")


def blend_sizes(weights: list[float], size: int) -> tuple[list[int], list[int]]:
    """Per dataset, the samples the blend takes (``t_i``) and the samples it is built with (``b_i``)."""
    targets = [int(math.ceil(size * weight)) for weight in normalise(weights)]
    return targets, [int(math.ceil(target * (1 + MID_LEVEL_SURPLUS))) for target in targets]


def build_blending_indices(weights: list[float], size: int) -> tuple[np.ndarray, np.ndarray]:
    """Greedy ``(dataset_index int16, dataset_sample_index int64)`` for normalised ``weights``."""
    dataset_index = np.empty(size, dtype=np.int16)
    dataset_sample_index = np.empty(size, dtype=np.int64)
    if size:
        _kernels.blending_index(np.ascontiguousarray(weights, dtype=np.float64), size, dataset_index,
                                dataset_sample_index)
    return dataset_index, dataset_sample_index


def build_exhaustive_blending_indices(sizes: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """Blend every sample of every dataset once, weights ``sizes / total``.

    Raises:
        TokenmillError: a dataset with no samples.
    """
    if min(sizes) <= 0:
        raise TokenmillError(f"exhaustive blending needs samples in every dataset, got sizes {sizes}")
    total = int(sum(sizes))
    dataset_index = np.empty(total, dtype=np.int16)
    dataset_sample_index = np.empty(total, dtype=np.int64)
    _kernels.exhaustive_blending_index(np.array(sizes, dtype=np.int64), dataset_index, dataset_sample_index)
    return dataset_index, dataset_sample_index


def build_blend_cache(prefixes: list[str], weights: list[float] | None, cache_dir: str | os.PathLike,
                      seq_length: int, seed: int, split: str, num_samples: dict[str, int | None],
                      tokenizer_identifiers: dict, extra: int = 1, dataset_paths: list[str] | None = None,
                      ) -> dict[str, dict]:
    """Build (or find) every dataset's GPT caches and the blend's caches, per split.

    Args:
        prefixes: the Megatron datasets.
        weights: their weights, or None (one epoch each, weights = lengths).
        cache_dir: the folder for all cache files (Megatron's ``--data-cache-path``).
        num_samples: per split, the blend's size; with weights every split needs one (0 allowed).
        dataset_paths: the prefixes as the training job spells them (hashed); default ``prefixes``.
        Others: as :func:`tokenmill.megatron.index_cache.build_gpt_cache`.

    Returns:
        Per split: ``{"description", "files", "samples", "state"}`` of the blend (``found`` or
        ``built``), and ``"parts"``: each dataset's own :func:`build_gpt_cache` result for that split.

    Raises:
        TokenmillError: too many datasets, missing sizes with weights, a dataset asked for more samples
            than it has, or any error of the datasets' own caches.
    """
    if not 1 <= len(prefixes) <= _MAX_DATASETS:
        raise TokenmillError(f"a blend takes 1 to {_MAX_DATASETS} datasets, got {len(prefixes)}")
    check_sampling(seq_length, seed)
    dataset_paths = dataset_paths or [str(prefix) for prefix in prefixes]
    if weights is not None:
        check_weights(weights)
        if any(num_samples.get(name) is None for name in SPLIT_NAMES):
            raise TokenmillError("a weighted blend needs a sample count for every split (0 for an unused one)")
        normalised = normalise(weights)
        per_split = {name: blend_sizes(normalised, num_samples[name]) for name in SPLIT_NAMES}
        mid_level = [{name: per_split[name][1][i] for name in SPLIT_NAMES} for i in range(len(prefixes))]
    else:
        mid_level = [{name: None for name in SPLIT_NAMES}] * len(prefixes)
    datasets = []
    for i, prefix in enumerate(prefixes):
        try:
            datasets.append(build_gpt_cache(prefix, cache_dir, seq_length, seed, split, mid_level[i],
                                            tokenizer_identifiers, extra=extra, dataset_path=dataset_paths[i]))
        except EmptySplit as exc:
            raise TokenmillError(_empty_split_message(exc, prefix, None if weights is None else weights[i],
                                                      split)) from None

    results = {}
    for name in SPLIT_NAMES:
        if name not in datasets[0]:
            continue
        parts = [dataset[name] for dataset in datasets]
        lengths = [part["samples"] for part in parts]
        if weights is not None:
            targets = per_split[name][0]
            short = [i for i, (target, length) in enumerate(zip(targets, lengths)) if target > length]
            if short:
                raise TokenmillError(f"{prefixes[short[0]]}: the {name} blend needs {targets[short[0]]} samples, "
                                     f"the dataset has {lengths[short[0]]}")
            blend_weights, size = normalised, int(sum(targets))
        else:
            size = None if num_samples.get(name) is None else min(num_samples[name], sum(lengths))
            # the lengths are the weights; Megatron normalises them when the blend has a size
            blend_weights = lengths if size is None else normalise(lengths)
        results[name] = _split_blend_cache(cache_dir, name, parts, blend_weights, size)
    return results


def _split_blend_cache(cache_dir: str | os.PathLike, name: str, parts: list[dict], blend_weights: list[float],
                       size: int | None) -> dict:
    """The blend's cache of split ``name`` over its datasets' caches ``parts``, found or built: exhaustive where
    ``size`` is None, else ``size`` samples drawn by ``blend_weights``; as :func:`build_blend_cache` returns it."""
    identifiers = OrderedDict()
    identifiers["class"] = _CLASS
    identifiers["datasets"] = [part["identifiers"] for part in parts]
    identifiers["split"] = name
    identifiers["weights"] = blend_weights
    identifiers["size"] = size
    text = json.dumps(identifiers, indent=4)
    keys = ("dataset_index", "dataset_sample_index")
    cached = load_cache(cache_dir, text, name, keys, _CLASS)
    if cached is None:
        if size is None:
            dataset_index, dataset_sample_index = build_exhaustive_blending_indices([part["samples"] for part in parts])
        else:
            dataset_index, dataset_sample_index = build_blending_indices(blend_weights, size)
        write_cache(cache_dir, text, name, {"dataset_index": dataset_index,
                                            "dataset_sample_index": dataset_sample_index}, _CLASS)
        samples = len(dataset_index)
    else:
        samples = len(cached["dataset_index"])
    return {"description": text, "samples": samples, "state": "built" if cached is None else "found",
            "parts": parts, "files": cache_file_names(text, name, _CLASS, _FILES)}


def _empty_split_message(exc: EmptySplit, prefix: str | os.PathLike, weight: float | None, split: str) -> str:
    """The blend's split that a dataset leaves without tokens, named with that dataset and its weight."""
    weighted = "its length as weight" if weight is None else f"weight {weight:g}"
    return (f"the blend's {exc.split_name} split (split {split}) has no tokens of {prefix} ({weighted}; "
            f"{exc.sequences} sequences fall in it): Megatron builds every dataset's {exc.split_name} split of a "
            f"blend, whatever its weight or sample count, and would loop forever on it; change the split, add data to "
            f"{prefix}, or leave it out of the blend")


def alias_blend_cache(cache_dir: str | os.PathLike, results: dict[str, dict], tokenizer_identifiers: dict,
                      ) -> dict[str, dict]:
    """Name :func:`build_blend_cache`'s caches (the blend's and its datasets') for another tokenizer
    identity too, over the same arrays (see :func:`tokenmill.megatron.index_cache.link_cache`).

    Returns:
        Per split, a result like :func:`build_blend_cache`'s for the new names.

    Raises:
        TokenmillError: as :func:`tokenmill.megatron.index_cache.link_cache`.
    """
    aliased = {}
    for name, result in results.items():
        parts = [alias_gpt_cache(cache_dir, {name: part}, tokenizer_identifiers)[name] for part in result["parts"]]
        text = retokenize(result["description"], tokenizer_identifiers)
        state = link_cache(cache_dir, result["description"], text, name, ("dataset_index", "dataset_sample_index"),
                           _CLASS)
        aliased[name] = {**result, "description": text, "state": state, "parts": parts,
                         "files": cache_file_names(text, name, _CLASS, _FILES)}
    return aliased
