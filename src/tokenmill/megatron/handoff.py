"""Hand-off to training: the Megatron-LM arguments that reuse an index cache folder.

``megatron_args.txt`` is written into every cache folder that ``tokenmill sample-index`` or
``tokenmill blend`` builds. Format: UTF-8 text, one Megatron argument with its value(s) per line
(``--seq-length 512``), comment lines starting with ``#``; so ``grep -v '^#' megatron_args.txt``
gives arguments to paste into a launch script. Written in a fixed order from the arguments the cache
was built with, so the same build gives the same bytes.

Why these arguments: megatron-core finds cache files by the md5 of a description that holds
``--data-path`` exactly as the training job spells it, ``--split``, ``--seq-length``, ``--seed``,
the number of samples of each split and the identifiers of the tokenizer the job builds from its
tokenizer flags (see :mod:`tokenmill.megatron.job_tokenizer`). Any difference makes the job build (and
write) a new cache. The file therefore names the tokenizer flags per Megatron version the folder was
named for, or says that none are known (identifiers given as they are). Megatron derives the sample
counts from its own flags: train = ``--train-samples`` (or train_iters × global batch), valid =
``(train_iters // eval_interval + 1) × eval_iters × global batch``, test = ``eval_iters × global
batch``; the file states the counts the job must arrive at.

``sequences_per_dataset.json`` (:func:`write_sequences_per_dataset`) is the file Megatron's
``tools/build_sequences_per_dataset.py`` writes: ``{prefix: [sequence_count, document_count]}``
with the prefixes as the job spells them, in blend order, each once, and ``document_count`` the
number of entries of the ``.idx`` document-boundary array (documents + 1), as that tool records it;
``json.dump`` with default separators, no trailing newline. A job given
``--per-dataset-sequences-path`` takes the counts from it instead of reading every ``.idx`` header
at start (megatron-core 0.19 and main both). It then assumes int32 tokens when its tokenizer's
vocab_size is above 65536, else uint16, so the file lists the flag only where that holds or says
what to check. ``--dataloader-fast-cache-load`` is never listed: Megatron refuses it together with
``--data-path`` (measured on both versions). Cost: two small files per cache folder, one ``.idx``
header read per dataset.

:func:`write_hf_tokenizer_folder` writes what a job's ``--tokenizer-type HuggingFaceTokenizer
--tokenizer-model DIR`` loads (``transformers.AutoTokenizer.from_pretrained(DIR)``): ``DIR/tokenizer.json``,
the bytes the data was packed with, and ``DIR/tokenizer_config.json``, ``{"eos_token": EOD,
"tokenizer_class": "PreTrainedTokenizerFast"}``, whose ``eos_token`` is the id Megatron takes for the
end of a document; a bare ``tokenizer.json`` path fails inside Megatron.
"""

from __future__ import annotations

import json
import os
import shlex
from pathlib import Path

import numpy as np

from tokenmill.errors import TokenmillError
from tokenmill.files.atomic import write_if_changed
from tokenmill.formats.dtypes import UINT16_VOCAB_LIMIT
from tokenmill.megatron.job_tokenizer import VERSIONS, JobTokenizer

__all__ = ["HANDOFF_NAME", "SEQUENCES_NAME", "megatron_args", "write_megatron_args", "sequences_per_dataset",
           "write_sequences_per_dataset", "write_hf_tokenizer_folder"]

HANDOFF_NAME = "megatron_args.txt"
SEQUENCES_NAME = "sequences_per_dataset.json"


def _argument_lines(flags: tuple[str, ...]) -> list[str]:
    """One line per option with its values, each token shell-quoted where it needs it."""
    lines: list[str] = []
    for token in flags:
        if token.startswith("--") or not lines:
            lines.append(shlex.quote(token))
        else:
            lines[-1] += " " + shlex.quote(token)
    return lines


def _tokenizer_lines(tokenizers: list[JobTokenizer]) -> list[str]:
    """The tokenizer flags that find the folder, per Megatron version, or a comment that none are known."""
    known = [tokenizer for tokenizer in tokenizers if tokenizer.flags is not None]
    lines = [f"# tokenizer: no job flags are known for the identifiers {json.dumps(tokenizer.identifiers)} (given as "
             f"they are): a job finds this cache only if its tokenizer's unique_identifiers are exactly these"
             for tokenizer in tokenizers if tokenizer.flags is None]
    flag_sets = list(dict.fromkeys(tokenizer.flags for tokenizer in known))
    if len(flag_sets) == 1:
        names = " or ".join(VERSIONS[tokenizer.version] for tokenizer in known)
        lines.append(f"# tokenizer flags of the job ({names}): the cache file names are hashed from what they build")
        lines += _argument_lines(flag_sets[0])
    else:
        for tokenizer in known:
            lines.append(f"# tokenizer flags of a {VERSIONS[tokenizer.version]} job: {tokenizer.flag_text}")
    if len(known) == 1 and len(VERSIONS) > 1:
        others = " or ".join(name for version, name in VERSIONS.items() if version != known[0].version)
        lines.append(f"# a {others} job hashes another tokenizer class: name its version when building the cache")
    for tokenizer in known[:1]:
        flags = list(tokenizer.flags)
        kind = flags[flags.index("--tokenizer-type") + 1] if "--tokenizer-type" in flags[:-1] else None
        if kind == "HuggingFaceTokenizer":
            lines.append("# HuggingFaceTokenizer: --tokenizer-model must be a folder (or a Hub name) holding "
                         "tokenizer.json and a tokenizer_config.json whose eos_token is the data's end-of-document "
                         "token (Megatron's eod); a path to a bare tokenizer.json fails inside Megatron")
        if tokenizer.identifiers.get("tokenizer_path") is None:  # NullTokenizer
            eod = tokenizer.identifiers.get("eod_id", int(tokenizer.identifiers["vocab_size"]) - 1)
            lines.append(f"# NullTokenizer: the job's tokenizer.eod is {eod}; with --eod-mask-loss, "
                         f"--reset-position-ids or --reset-attention-mask it must be the data's end-of-document id "
                         f"(eod_id in the .pbin sidecar; --null-tokenizer-eod-id sets it)")
    return lines


def _sequences_lines(path: str, tokenizers: list[JobTokenizer], token_dtypes: set[str]) -> list[str]:
    """``--per-dataset-sequences-path`` where the job's token dtype assumption holds, else why not."""
    refused = "# --dataloader-fast-cache-load is not listed: Megatron refuses it together with --data-path"
    vocab_sizes = {tokenizer.vocab_size for tokenizer in tokenizers}
    data = " and ".join(sorted(token_dtypes))
    if len(vocab_sizes) == 1 and None not in vocab_sizes:
        vocab_size = vocab_sizes.pop()
        assumed = "int32" if vocab_size > UINT16_VOCAB_LIMIT else "uint16"
        if token_dtypes != {assumed}:
            return [f"# no --per-dataset-sequences-path {path}: with it Megatron reads the tokens as {assumed} "
                    f"(vocab_size {vocab_size}) without the .idx header, and this data is {data}", refused]
        return [f"--per-dataset-sequences-path {path}", refused]
    condition = "at most" if token_dtypes == {"uint16"} else "above"
    return [f"--per-dataset-sequences-path {path}",
            f"# with it Megatron reads the tokens without the .idx header, as int32 when the tokenizer's vocab_size is "
            f"above {UINT16_VOCAB_LIMIT}, else uint16; this data is {data}: keep it only if vocab_size is {condition} "
            f"{UINT16_VOCAB_LIMIT}", refused]


def megatron_args(cache_dir: str | os.PathLike, data_path: list[str], seq_length: int, seed: int,
                  split: str | None, num_samples: dict[str, int | None], tokenizers: list[JobTokenizer],
                  extra: int = 1, token_dtypes: set[str] | None = None) -> str:
    """The text of ``megatron_args.txt`` for a cache folder (see the module docstring).

    Args:
        cache_dir: the cache folder, as the training job will name it in ``--data-cache-path``.
        data_path: ``--data-path`` values as hashed: one prefix, or ``weight prefix`` pairs of a blend.
        seq_length, seed, split: the sampling the cache was built for.
        num_samples: samples per split name that the cache holds (None: one epoch).
        tokenizers: the tokenizer identities the cache files are named for, one per Megatron version.
        extra: 0 when built without ``add_extra_token_to_sequence``.
        token_dtypes: the token dtypes (``uint16``, ``int32``) of the datasets when the folder holds
            ``sequences_per_dataset.json``; None when it does not.
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
    lines += _tokenizer_lines(tokenizers)
    if token_dtypes is not None:
        lines += _sequences_lines(str(Path(cache_dir) / SEQUENCES_NAME), tokenizers, token_dtypes)
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
    says exactly that; returns its path.

    Raises:
        TokenmillError: the file cannot be written.
    """
    return write_if_changed(Path(cache_dir) / HANDOFF_NAME, megatron_args(cache_dir, *args, **kwargs))


def sequences_per_dataset(prefixes: list[str | os.PathLike], dataset_paths: list[str]) -> tuple[dict, set[str]]:
    """``{path as the job spells it: [sequence_count, document_count]}`` in order, each path once
    (the first of a repeated one wins, as Megatron's tool keeps it), and the datasets' token dtypes.

    Raises:
        TokenmillError: an unreadable ``.idx``.
    """
    from tokenmill.formats.bin_idx import MMapIndexedDataset

    counts: dict[str, list[int]] = {}
    dtypes = set()
    for prefix, path in zip(prefixes, dataset_paths):
        if path in counts:
            continue
        dataset = MMapIndexedDataset(prefix)
        counts[path] = [len(dataset.sequence_lengths), len(dataset.document_indices)]
        dtypes.add(np.dtype(dataset.dtype).name)
    return counts, dtypes


def write_sequences_per_dataset(cache_dir: str | os.PathLike, prefixes: list[str | os.PathLike],
                                dataset_paths: list[str]) -> set[str]:
    """Write ``cache_dir/sequences_per_dataset.json`` (see the module docstring) unless it already
    holds the same bytes; returns the datasets' token dtypes.

    Raises:
        TokenmillError: an unreadable ``.idx`` or a failed write.
    """
    counts, dtypes = sequences_per_dataset(prefixes, dataset_paths)
    write_if_changed(Path(cache_dir) / SEQUENCES_NAME, json.dumps(counts))
    return dtypes


def write_hf_tokenizer_folder(tokenizer_json: str | os.PathLike, eod: str, out_dir: str | os.PathLike) -> Path:
    """Write the folder a Megatron job's ``--tokenizer-model`` names for HuggingFaceTokenizer (see the module
    docstring): ``tokenizer.json`` (a copy) and ``tokenizer_config.json`` naming ``eod`` its ``eos_token``.
    Each file is written atomically, and only where it changes.

    Raises:
        TokenmillError: the tokenizer cannot be read, or ``eod`` is not one of its tokens.
    """
    from tokenmill.tokenization.tokenizer import check_eod_in_file

    check_eod_in_file(tokenizer_json, eod)
    try:
        content = Path(tokenizer_json).read_bytes()
    except OSError as exc:
        raise TokenmillError(f"{tokenizer_json}: cannot read ({exc.strerror})") from None
    out_dir = Path(out_dir)
    if out_dir.exists() and not out_dir.is_dir():
        raise TokenmillError(f"{out_dir}: is a file; give the folder to write the tokenizer into")
    write_if_changed(out_dir / "tokenizer.json", content)
    config = {"eos_token": eod, "tokenizer_class": "PreTrainedTokenizerFast"}
    write_if_changed(out_dir / "tokenizer_config.json", json.dumps(config, indent=2, ensure_ascii=False) + "\n")
    return out_dir

