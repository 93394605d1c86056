"""A Megatron index cache folder as a person reads it (``tokenmill inspect FOLDER``): per split and class, the
samples, sequence length, seed and dataset path each cache was built for, and the descriptions of a split's
caches, one per set of arrays (which :mod:`tokenmill.views.inspect_file` resolves a sample through).

Cost: one read of each description and one map of each split's index array.
"""

from __future__ import annotations

import itertools
import json
import os
from pathlib import Path

from tokenmill.errors import TokenmillError

__all__ = ["describe_caches", "cache_descriptions"]


def describe_caches(folder: str | os.PathLike) -> list[str]:
    """A cache folder in short: per split and class, the samples, sequence length, seed and dataset path
    each cache was built for (a blend: its datasets and weights), and any split holding two caches.

    Raises:
        TokenmillError: a folder without ``*-description.txt``, or a cache file that is not a plain ``.npy``.
    """
    from tokenmill.megatron.gpt_indices import SPLIT_NAMES
    from tokenmill.megatron.index_cache import load_cache
    from tokenmill.verify.index_caches import duplicate_caches

    folder = Path(folder)
    if not any(folder.glob("*-description.txt")):
        raise TokenmillError(f"{folder}: a folder without *-description.txt: not an index cache folder")
    lines = [f"cache folder: {folder}"]
    for class_name, key in (("BlendedDataset", "dataset_index"), ("GPTDataset", "shuffle_index")):
        for split in SPLIT_NAMES:
            for description_path, text in cache_descriptions(folder, class_name, split):
                try:
                    identifiers = json.loads(text)
                except ValueError:
                    identifiers = None
                if not isinstance(identifiers, dict):
                    lines.append(f"  {description_path.name}: not a Megatron description (tokenmill verify says more)")
                    continue
                arrays = load_cache(folder, text, split, (key,), class_name)
                samples = "incomplete (index files missing)" if arrays is None else f"{len(arrays[key])} samples"
                md5 = description_path.name.split("-")[0]
                if class_name == "BlendedDataset":
                    datasets = identifiers.get("datasets") if isinstance(identifiers.get("datasets"), list) else []
                    weights = identifiers.get("weights") or []
                    parts = ", ".join(f"{dataset.get('dataset_path') if isinstance(dataset, dict) else dataset}"
                                      + (f" {weight}" if weight is not None else "")
                                      for dataset, weight in itertools.zip_longest(datasets, weights))
                    lines.append(f"  {split} blend: {samples} of {len(datasets)} datasets ({parts}) [{md5}]")
                    continue
                asked = identifiers.get("num_samples")
                if arrays is not None and asked is None:
                    samples += " (one epoch)"
                elif arrays is not None and asked != len(arrays[key]):  # Megatron builds whole epochs
                    samples += f" ({asked} asked: whole epochs)"
                lines.append(f"  {split}: {samples}, seq length {identifiers.get('sequence_length')}, seed "
                             f"{identifiers.get('random_seed')}, split {identifiers.get('split')}, built for dataset "
                             f"path {identifiers.get('dataset_path')} [{md5}]")
    if (folder / "megatron_args.txt").exists():
        lines.append(f"Megatron arguments that reuse these caches: {folder / 'megatron_args.txt'}")
    lines += [f"problem: {problem}" for problem in duplicate_caches(folder).values()]
    return lines


def cache_descriptions(cache: Path, class_name: str, split: str, every_name: bool = False) -> list[tuple[Path, str]]:
    """The split's caches of a class, one per set of arrays (unless ``every_name``): a folder built for
    several Megatron versions names the same arrays once per tokenizer identity, and those descriptions
    differ only there."""
    from tokenmill.megatron.index_cache import retokenize

    found, seen = [], set()
    for path in sorted(cache.glob(f"*-{class_name}-{split}-description.txt")):
        text = path.read_text(encoding="utf-8")
        try:
            arrays = retokenize(text, {})
        except (ValueError, AttributeError, TypeError):  # not Megatron's object: verify names it, keep it apart
            arrays = text
        if every_name or arrays not in seen:
            seen.add(arrays)
            found.append((path, text))
    return found
