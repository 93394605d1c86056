"""Hand-off to training: the Megatron-LM arguments that reuse an index cache folder.

``megatron_args.txt`` is written into every cache folder that ``tokenmill sample-index`` or
``tokenmill blend`` builds. Format: UTF-8 text, one Megatron argument with its value per line
(``--seq-length 512``), comment lines starting with ``#``; so ``grep -v '^#' megatron_args.txt``
gives arguments to paste into a launch script. Written in a fixed order from the arguments the cache
was built with, so the same build gives the same bytes.

Why these arguments: megatron-core finds cache files by the md5 of a description that holds
``--data-path`` exactly as the training job spells it, ``--split``, ``--seq-length``, ``--seed``,
the number of samples of each split and the tokenizer's identifiers (``../shared/specs/megatron.md``
§4). Any difference makes the job build (and write) a new cache. Megatron derives the sample counts
from its own flags: train = ``--train-samples`` (or train_iters × global batch), valid =
``(train_iters // eval_interval + 1) × eval_iters × global batch``, test = ``eval_iters × global
batch``; the file states the counts the job must arrive at. Cost: one small file per cache folder.
"""

from __future__ import annotations

import os
from pathlib import Path

from tokenmill.atomic import atomic_output

__all__ = ["HANDOFF_NAME", "megatron_args", "write_megatron_args"]

HANDOFF_NAME = "megatron_args.txt"

_NULL_TOKENIZER_CLASS = "megatron.core.tokenizers.text.models.default_tokenizer.DefaultTokenizerText"


def _tokenizer_lines(identifiers: dict) -> list[str]:
    """The tokenizer arguments whose identifiers the cache was hashed with, or a comment naming them."""
    if identifiers.get("class") == _NULL_TOKENIZER_CLASS and identifiers.get("tokenizer_path") is None:
        return ["--tokenizer-type NullTokenizer", f"--vocab-size {identifiers.get('vocab_size')}",
                "# with --eod-mask-loss, --reset-position-ids or --reset-attention-mask, check that the job's "
                "tokenizer.eod is the data's end-of-document id (eod_id in the .pbin sidecar)"]
    return [f"# tokenizer: a job whose tokenizer has the identifiers {identifiers} "
            f"(tokenizers.<name>.megatron_identifiers); set --tokenizer-type/--tokenizer-model to it"]


def megatron_args(cache_dir: str | os.PathLike, data_path: list[str], seq_length: int, seed: int,
                  split: str | None, num_samples: dict[str, int | None], tokenizer_identifiers: dict,
                  extra: int = 1) -> str:
    """The text of ``megatron_args.txt`` for a cache folder (see the module docstring).

    Args:
        cache_dir: the cache folder, as the training job will name it in ``--data-cache-path``.
        data_path: ``--data-path`` values as hashed: one prefix, or ``weight prefix`` pairs of a blend.
        seq_length, seed, split: the sampling the cache was built for.
        num_samples: samples per split name that the cache holds (None: one epoch).
        tokenizer_identifiers: the identifiers hashed into the cache names.
        extra: 0 when built without ``add_extra_token_to_sequence``.
    """
    lines = [
        "# Megatron-LM arguments that find this index cache instead of building a new one (tokenmill).",
        "# Megatron hashes --data-path as spelled, --split, --seq-length, --seed, each split's sample count",
        "# and the tokenizer's identifiers into the cache names: keep them exactly as below.",
        f"--data-path {' '.join(data_path)}",
        f"--data-cache-path {cache_dir}",
    ]
    if split is not None:
        lines.append(f"--split {split}")
    lines += [f"--seq-length {seq_length}", f"--seed {seed}"]
    train = num_samples.get("train")
    if train is not None:
        lines.append(f"--train-samples {train}")
    lines += _tokenizer_lines(tokenizer_identifiers)
    described = {"train": "--train-samples (or train_iters x global batch size)",
                 "valid": "(train_iters // eval_interval + 1) x eval_iters x global batch size",
                 "test": "eval_iters x global batch size"}
    for split_name, count in num_samples.items():
        amount = "one epoch (num_samples null)" if count is None else f"{count} samples"
        lines.append(f"# {split_name}: {amount}; Megatron asks for {described[split_name]}")
    if not extra:
        lines.append("# built without the extra token: set add_extra_token_to_sequence=False in the "
                     "GPTDatasetConfig (it is not hashed: a job with the default reuses this cache wrongly)")
    return "\n".join(lines) + "\n"


def write_megatron_args(cache_dir: str | os.PathLike, *args, **kwargs) -> Path:
    """Write :func:`megatron_args` into ``cache_dir/megatron_args.txt`` atomically, unless it already
    says exactly that (a cache that was found is left untouched); returns its path."""
    path = Path(cache_dir) / HANDOFF_NAME
    text = megatron_args(cache_dir, *args, **kwargs)
    if path.is_file() and path.read_text(encoding="utf-8", errors="replace") == text:
        return path
    with atomic_output(path) as temporary:
        temporary.write_text(text, encoding="utf-8")
    return path
