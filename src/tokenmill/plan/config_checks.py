"""The checks of a validated config that need more than its schema: each stops planning with one line naming the
key (``datasets.web.text: ...``), before any job runs, rather than in the job that would meet the problem.

* :func:`check_tokenizers`: a name that reads as a part or shard, a path that is not there, an EOD the vocabulary
  lacks (one JSON parse of a ``tokenizer.json``), job flags of another type than the tokenizer's; gives the EODs
  that are ordinary tokens.
* :func:`check_fields`: a dataset's text pattern and field paths.
* :func:`check_sampling`: num_samples or epochs, the split, blends' samples, an ordinary EOD for a format whose
  readers end documents at every EOS, best fit's formats and sequence lengths.
* :func:`check_sft`: an SFT set's tokenizer, its local files and objects, best fit's sequence length.
* :func:`check_inputs_outside_outputs`: no input or tokenizer in a folder the workflow writes or moves to.

:class:`tokenmill.plan.units.Units` calls them as it plans. Cost: a ``stat`` per path, a JSON parse per tokenizer
with an EOD, an object listing per SFT URL glob (made anyway by the plan).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable

from tokenmill.errors import TokenmillError
from tokenmill.files.source import is_missing_file
from tokenmill.formats.kinds import BEST_FIT_FORMATS, BEST_FIT_POWER_OF_TWO, EOS_SCANNED
from tokenmill.formats.provenance import field_keys
from tokenmill.inputs.text_selection import TextSelector
from tokenmill.megatron.gpt_indices import parse_split
from tokenmill.megatron.job_tokenizer import DEFAULT_VERSION, SUPPORTED_TYPES, job_tokenizer
from tokenmill.plan.layout import OUTPUT_FOLDERS, RAW_FOLDER, STALE_FOLDER
from tokenmill.tokenization.families import HF_TYPE
from tokenmill.tokenization.tokenizer import check_eod_in_file

__all__ = ["check_tokenizers", "check_fields", "check_sampling", "check_sft", "check_inputs_outside_outputs"]


def check_tokenizers(config: dict) -> dict[str, str]:
    """The config's tokenizers checked; returns tokenizer → its EOD where that is an ordinary vocabulary token.

    Raises:
        TokenmillError: a name read as a part or shard, no such path, an EOD the vocabulary lacks, ``megatron.args``
            of another ``--tokenizer-type`` (naming the key).
    """
    ordinary_eods = {}
    for name, tokenizer in config["tokenizers"].items():
        if re.fullmatch(r"(part|shard)[0-9]+", name):
            raise TokenmillError(f"tokenizers.{name}: the name would read as a file part or shard in "
                                 f"output names; rename it")
        path = tokenizer["path"]
        if not os.path.exists(path):
            raise TokenmillError(f"tokenizers.{name}.path: {path}: no such file")
        # The EOD is looked up where it costs a JSON parse: a tokenizer.json (a type's other files are
        # converted by the job, which names a missing EOD)
        tokenizer_json = os.path.join(path, "tokenizer.json") if tokenizer["type"] == HF_TYPE and \
            os.path.isdir(path) else path
        eod = tokenizer.get("eod")
        if (tokenizer["type"] is None and (eod is not None or os.path.isdir(path))) or \
                (tokenizer["type"] == HF_TYPE and eod is not None):
            try:
                if eod is not None and not check_eod_in_file(tokenizer_json, eod):
                    ordinary_eods[name] = eod
            except TokenmillError as exc:
                raise TokenmillError(f"tokenizers.{name}: {exc}") from None
        if tokenizer["type"] in SUPPORTED_TYPES and tokenizer["megatron"].get("args"):
            asked = job_tokenizer(DEFAULT_VERSION, tokenizer["megatron"]["args"]).flags
            kind = asked[asked.index("--tokenizer-type") + 1] if "--tokenizer-type" in asked else None
            if kind != tokenizer["type"]:
                raise TokenmillError(f"tokenizers.{name}.megatron.args: --tokenizer-type {kind} is not its type "
                                     f"{tokenizer['type']}")
    return ordinary_eods


def check_fields(name: str, dataset: dict) -> None:
    """A dataset's text pattern and field paths, checked before any job rather than in the job using them.

    Raises:
        TokenmillError: a pattern or a field path that does not parse (naming the key).
    """
    try:
        TextSelector(dataset["text"])
    except TokenmillError as exc:
        raise TokenmillError(f"datasets.{name}.text: {exc}") from None
    for key in ("count_by", "id_field"):
        if dataset[key] is not None:
            try:
                field_keys(dataset[key])
            except TokenmillError as exc:
                raise TokenmillError(f"datasets.{name}.{key}: {exc}") from None


def check_sampling(config: dict, ordinary_eods: dict[str, str], tokenizer_names: Callable[[str], list[str]]) -> None:
    """The sampling section, and what each dataset's formats and packing ask of it and of its tokenizers.

    Raises:
        TokenmillError: naming the key.
    """
    sampling = config["sampling"]
    if sampling.get("num_samples") and sampling["epochs"] is not None:
        raise TokenmillError("sampling: give num_samples or epochs, not both")
    try:
        parse_split(sampling["split"])
    except TokenmillError as exc:
        raise TokenmillError(f"sampling.split: {exc}") from None
    if config["blends"] and not {"train", "valid", "test"} <= set(sampling.get("num_samples") or {}):
        raise TokenmillError("blends: a weighted blend needs sampling.num_samples for every split "
                             "(train, valid and test; 0 for an unused one)")
    for name, dataset in config["datasets"].items():
        # the formats whose readers find documents by the EOS
        scanned = [name for name in dataset["formats"] if name in EOS_SCANNED]
        for tokenizer in tokenizer_names(name):
            if tokenizer in ordinary_eods and scanned and not config["tokenizers"][tokenizer]["ordinary_eod"]:
                raise TokenmillError(
                    f"tokenizers.{tokenizer}.eod: {ordinary_eods[tokenizer]!r} is an ordinary token of the "
                    f"vocabulary, which text holds too, and datasets.{name} is made for {' and '.join(scanned)}, "
                    f"whose readers end a document at every one; name a special token, or set "
                    f"tokenizers.{tokenizer}.ordinary_eod: true")
        if dataset["packing"] != "best_fit":
            continue
        if not BEST_FIT_FORMATS & set(dataset["formats"]):
            raise TokenmillError(f"datasets.{name}.packing: best_fit packs for the megatron or olmo format; "
                                 f"its formats are {', '.join(dataset['formats'])}")
        odd = [length for length in sampling["seq_lengths"] if length & (length - 1)]
        if BEST_FIT_POWER_OF_TWO & set(dataset["formats"]) and odd:
            raise TokenmillError(f"datasets.{name}.packing: OLMo-core packs only sequence lengths that are powers "
                                 f"of two; sampling.seq_lengths has {', '.join(map(str, odd))}")


def check_sft(config: dict, sft_objects: Callable[[str], list]) -> None:
    """Each SFT set's tokenizer, its local files (a missing one must not keep an old build) and its objects
    (``sft_objects(name)``: listed and reachable now, as datasets' are), and best fit's sequence length.

    Raises:
        TokenmillError: naming the key.
    """
    for name, sft in config["sft"].items():
        if sft["tokenizer"] not in config["tokenizers"]:
            raise TokenmillError(f"sft.{name}.tokenizer: {sft['tokenizer']!r} is not in tokenizers")
        for path in sft["inputs"]:
            if is_missing_file(path):
                raise TokenmillError(f"sft.{name}.inputs: {path}: no such file")
        try:
            sft_objects(name)
        except TokenmillError as exc:
            raise TokenmillError(f"sft.{name}.inputs: {exc}") from None
        length = sft["seq_length"]
        if sft["packing"] == "best_fit" and BEST_FIT_POWER_OF_TWO & set(sft["formats"]) and length & (length - 1):
            raise TokenmillError(f"sft.{name}.packing: OLMo-core packs only sequence lengths that are powers of "
                                 f"two; its seq_length is {length}")


def check_inputs_outside_outputs(named: Iterable[tuple[str, str]]) -> None:
    """Refuse an input or tokenizer (``(key, path)`` pairs) that lies in a folder the workflow writes (or moves
    earlier plans' outputs to): Snakemake would delete it before the job that writes there, or the prune move it.

    Raises:
        TokenmillError: naming the key, the path and the folder.
    """
    folders = [os.path.realpath(folder) for folder in (*OUTPUT_FOLDERS, STALE_FOLDER)]
    for key, path in named:
        real = os.path.realpath(path)
        for folder, shown in zip(folders, (*OUTPUT_FOLDERS, STALE_FOLDER)):
            if os.path.commonpath([real, folder]) == folder:
                raise TokenmillError(f"{key}: {path} lies in {shown}/, where the workflow writes its outputs "
                                     f"(it would be overwritten or moved); keep inputs elsewhere, e.g. "
                                     f"{RAW_FOLDER}/")
