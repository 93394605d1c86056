# ---- Config validation, path helpers and the target matrix ------------------------------------
# Everything the rule files need that is Python lives here (snakemake-workflows convention).

import glob
import json
import os
import re
from argparse import Namespace
from shlex import quote as shlex_quote

from snakemake.utils import validate

from tokenmill import FORMAT_VERSIONS
from tokenmill.blend import check_weights
from tokenmill.errors import TokenmillError
from tokenmill.jsonl import input_compression
from tokenmill.sample_index import parse_split
from tokenmill.tokenizer import load_tokenizer

# The schema ships inside the package (tokenmill sft validates its config with it too); the
# workflow's copy is a link to it.
validate(config, schema="../schemas/config.schema.yaml", set_default=True)

NAME = r"[A-Za-z0-9_-]+"


def _dataset_inputs(name):
    """The dataset's JSONL files: its `inputs` with globs expanded (sorted), in config order."""
    files = []
    for pattern in config["datasets"][name]["inputs"]:
        matches = sorted(glob.glob(pattern)) if glob.has_magic(pattern) else [pattern]
        if not matches:
            raise ValueError(f"datasets.{name}.inputs: {pattern!r} matches no file")
        files += matches
    return files


def _checked(key, check, *arguments):
    """Run a tokenmill check on a config value now, so a bad value fails before any job, naming its key."""
    try:
        return check(*arguments)
    except TokenmillError as exc:
        raise ValueError(f"{key}: {exc}") from None


for _name, _tokenizer in config["tokenizers"].items():
    _checked(f"tokenizers.{_name}", load_tokenizer, _tokenizer["path"], _tokenizer["eod"])


def _tokenizer_names(name):
    """The tokenizers a dataset is packed with (`tokenizer` is one name or a list)."""
    names = config["datasets"][name]["tokenizer"]
    return [names] if isinstance(names, str) else list(names)


for _name, _dataset in config["datasets"].items():
    for _tokenizer_name in _tokenizer_names(_name):
        if _tokenizer_name not in config["tokenizers"]:
            raise ValueError(f"datasets.{_name}.tokenizer: {_tokenizer_name!r} is not in tokenizers")
    if _name.startswith("blend_") and _name.removeprefix("blend_") in config.get("blends", {}):
        raise ValueError(
            f"datasets.{_name}: its caches would share data/cache/{_name}/ with blend "
            f"{_name.removeprefix('blend_')!r}; rename one of them"
        )
for _tokenizer_name in config["tokenizers"]:
    if re.fullmatch(r"(part|shard)[0-9]+", _tokenizer_name):
        raise ValueError(
            f"tokenizers.{_tokenizer_name}: the name would read as a file part or shard in output names; rename it"
        )


def _size_bytes(key, value):
    """`shard_bytes` as bytes: an integer, or a number with a unit (2GB, 512MiB)."""
    if value is None or isinstance(value, int):
        return value
    match = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([KMGT]?)(i?)B?\s*", value, re.IGNORECASE)
    if not match:
        raise ValueError(f"{key}: {value!r} is not a size (e.g. 2GB, 512MiB or bytes)")
    number, unit, binary = match.groups()
    size = int(float(number) * (1024 if binary else 1000) ** " KMGT".index(unit.upper() or " "))
    if size < 1:
        raise ValueError(f"{key}: {value!r} is less than one byte")
    return size


# ---- Pack units ------------------------------------------------------------------------------
# A dataset is built once per tokenizer: a *build*, named <dataset> when it has one tokenizer and
# <dataset>.<tokenizer> when it has several (data/packed/<build>.pbin, data/megatron/<build>_text_document,
# data/cache/<build>/...). Each input file ("file stem": <dataset>, or <dataset>.part<k> with several
# files) has one raw index, shared by the tokenizers. A build is packed in *units*: one per file, or
# one per byte range (<...>.shard<j>) of a plain file bigger than the dataset's shard_bytes; a build
# of several units is their merge.

DATASET_INPUTS = {name: _dataset_inputs(name) for name in config["datasets"]}
FILE_INPUTS = {}  # file stem -> (path, compression or None)
for _name, _files in DATASET_INPUTS.items():
    for _k, _path in enumerate(_files):
        _stem = _name if len(_files) == 1 else f"{_name}.part{_k}"
        FILE_INPUTS[_stem] = (_path, _checked(f"datasets.{_name}.inputs", input_compression, _path))

BUILDS = {}  # build -> (dataset, tokenizer)
UNITS = {}  # unit -> (build, file stem, byte range "START:END" or None)
BUILD_UNITS = {}  # build -> its units, in order
for _name, _files in DATASET_INPUTS.items():
    _tokenizers = _tokenizer_names(_name)
    _shard_bytes = _size_bytes(f"datasets.{_name}.shard_bytes", config["datasets"][_name]["shard_bytes"])
    for _tokenizer_name in _tokenizers:
        _build = _name if len(_tokenizers) == 1 else f"{_name}.{_tokenizer_name}"
        if _build in BUILDS:
            raise ValueError(f"datasets.{_name}: its outputs would be named {_build!r} like another dataset's")
        BUILDS[_build] = (_name, _tokenizer_name)
        BUILD_UNITS[_build] = []
        for _k, _path in enumerate(_files):
            _stem = _name if len(_files) == 1 else f"{_name}.part{_k}"
            _unit = _build if len(_files) == 1 else f"{_build}.part{_k}"
            _size = os.path.getsize(_path)
            if _shard_bytes and FILE_INPUTS[_stem][1] is None and _size > _shard_bytes:
                _count = -(-_size // _shard_bytes)
                _ranges = [
                    f"{j * _shard_bytes}:{(j + 1) * _shard_bytes if j + 1 < _count else ''}" for j in range(_count)
                ]
                _units = {f"{_unit}.shard{j}": byte_range for j, byte_range in enumerate(_ranges)}
            else:
                _units = {_unit: None}
            for _unit_name, _byte_range in _units.items():
                UNITS[_unit_name] = (_build, _stem, _byte_range)
                BUILD_UNITS[_build].append(_unit_name)

SINGLE_UNIT_BUILDS = [build for build, units in BUILD_UNITS.items() if len(units) == 1]
MERGED_BUILDS = [build for build, units in BUILD_UNITS.items() if len(units) > 1]
SINGLE_FILE_DATASETS = [name for name, files in DATASET_INPUTS.items() if len(files) == 1]
MULTI_FILE_DATASETS = [name for name, files in DATASET_INPUTS.items() if len(files) > 1]


def _alternatives(names):
    """A regex matching exactly these names (and nothing when there are none)."""
    return "|".join(map(re.escape, names)) or "(?!)"


# Wildcard patterns. They stay short for thousands of files: names of datasets and builds, then
# numbered suffixes; a unit or file stem that matches but does not exist fails in its input function.
FILE_STEM = rf"(?:{_alternatives(SINGLE_FILE_DATASETS)})|(?:{_alternatives(MULTI_FILE_DATASETS)})\.part[0-9]+"
SINGLE_UNIT = _alternatives(SINGLE_UNIT_BUILDS)
UNIT_OF_MERGED = rf"(?:{_alternatives(MERGED_BUILDS)})(?:\.part[0-9]+(?:\.shard[0-9]+)?|\.shard[0-9]+)"
MERGED = _alternatives(MERGED_BUILDS)
BUILD = _alternatives(BUILDS)
BLEND = _alternatives(config["blends"])
SFT = _alternatives(config["sft"])


def _unit(wildcards):
    try:
        return UNITS[wildcards.unit]
    except KeyError:
        raise ValueError(f"{wildcards.unit}: no such pack unit in the config") from None


def file_jsonl(wildcards):
    """The input file of a file stem (for its raw index)."""
    try:
        return FILE_INPUTS[wildcards.stem][0]
    except KeyError:
        raise ValueError(f"{wildcards.stem}: no such input file in the config") from None


def unit_jsonl(wildcards):
    """The input file of a pack unit."""
    return FILE_INPUTS[_unit(wildcards)[1]][0]


def unit_index(wildcards):
    """The raw index a pack unit reads through: none for a compressed file (read as a stream)."""
    build, stem, _ = _unit(wildcards)
    return [] if FILE_INPUTS[stem][1] else [f"data/index/{stem}.idx"]


def unit_tokenizer_path(wildcards):
    return config["tokenizers"][BUILDS[_unit(wildcards)[0]][1]]["path"]


def pack_options(wildcards, input):
    """`tokenmill pack` options that come from the config, shell-quoted."""
    build, _, byte_range = _unit(wildcards)
    dataset_name, tokenizer_name = BUILDS[build]
    dataset, tokenizer = config["datasets"][dataset_name], config["tokenizers"][tokenizer_name]
    settings = {
        "--jq": dataset["text"],
        "--on-bad-line": dataset["on_bad_line"],
        "--max-line-bytes": dataset["max_line_bytes"],
        "--engine": tokenizer["engine"],
        "--check-fraction": tokenizer["check_fraction"],
        "--on-mismatch": tokenizer["on_mismatch"],
    }
    options = [part for option, value in settings.items() for part in (option, str(value))]
    options += [option for path in input.idx for option in ("--index", path)]
    if byte_range is not None:
        options += ["--byte-range", byte_range]
    if tokenizer["eod"] is not None:
        options += ["--eod", tokenizer["eod"]]
    if not tokenizer["add_special_tokens"]:
        options.append("--no-special-tokens")
    return " ".join(map(shlex_quote, options))


def merge_units(wildcards):
    """The unit .pbin files of a merged build, in input order."""
    return [f"data/packed/{unit}.pbin" for unit in BUILD_UNITS[wildcards.build]]


def merge_units_shell(wildcards):
    """The unit paths for the shell as bash brace ranges (`data/packed/web.part{0..1999}.pbin`), in
    order: thousands of paths spelled out would pass the 128 KiB that one argument (`bash -c`) may
    hold. Unit names hold only letters, digits and `._-`, so they need no quoting."""
    runs = []  # [prefix, first number, last number]
    for unit in BUILD_UNITS[wildcards.build]:
        prefix, number = re.fullmatch(r"(.*?)([0-9]+)", unit).groups()
        if runs and runs[-1][0] == prefix and runs[-1][2] == int(number) - 1:
            runs[-1][2] += 1
        else:
            runs.append([prefix, int(number), int(number)])
    return " ".join(
        f"data/packed/{prefix}{first}.pbin" if first == last else f"data/packed/{prefix}{{{first}..{last}}}.pbin"
        for prefix, first, last in runs
    )


def merge_unit_sidecars(wildcards):
    """Their sidecars, which the merge combines (an input, so that temporary ones live until then)."""
    return [f"{path}.meta.json" for path in merge_units(wildcards)]


def part_file(path):
    """A unit's .pbin is temporary (deleted once merged) unless datasets keep their parts."""
    return path if config["keep_parts"] else temp(path)


# Resources scale with the text a job handles, known when the workflow is parsed (input file sizes,
# a compressed file counted 4x): Snakemake's `input.size_mb` would stat every file again for every
# job (5 s of a 2,000-file plan). Runtimes assume 1 MB/s for tokenizing (the Hugging Face engine on
# one core; fastokens is 10-40x faster) and 50 MB/s for a pass over the bytes, so that a cluster
# never kills a job that is merely slow. A profile's set-resources overrides any of them.


def _unit_text_mb(unit):
    build, stem, byte_range = UNITS[unit]
    path, compression = FILE_INPUTS[stem]
    if byte_range is not None:
        start, _, end = byte_range.partition(":")
        size = (int(end) if end else os.path.getsize(path)) - int(start)
    else:
        size = os.path.getsize(path) * (4 if compression else 1)
    return size / 1e6


def _job_text_mb(wildcards):
    """MB of text behind a job: its unit's, its input file's, its build's or its blend's."""
    if hasattr(wildcards, "unit"):
        return _unit_text_mb(wildcards.unit)
    if hasattr(wildcards, "stem"):
        return os.path.getsize(FILE_INPUTS[wildcards.stem][0]) / 1e6
    if hasattr(wildcards, "blend"):
        return sum(_job_text_mb(Namespace(build=build)) for build in BLEND_BUILDS[wildcards.blend])
    return sum(map(_unit_text_mb, BUILD_UNITS[getattr(wildcards, "build", None) or wildcards.name]))


def pack_threads(wildcards):
    """Eight workers, or one for a unit under 8 MB of text, which pack tokenizes in-process anyway:
    on many small files, jobs then run side by side instead of holding idle cores."""
    return 1 if _job_text_mb(wildcards) < 8 else 8


def pack_mem_mb(wildcards, threads):
    """A worker holds a tokenizer and a few 4 MiB batches (~0.4 GB); the parent 16 bytes per line."""
    return 1000 + 500 * threads + int(_job_text_mb(wildcards) / 10)


def tokenize_runtime(wildcards):
    """Minutes to tokenize the text at 1 MB/s."""
    return 10 + int(_job_text_mb(wildcards) / 60)


def _sft_text_mb(wildcards):
    return sum(map(os.path.getsize, config["sft"][wildcards.name]["inputs"])) / 1e6


def sft_runtime(wildcards):
    """Minutes to tokenize an SFT dataset's conversations at 1 MB/s."""
    return 10 + int(_sft_text_mb(wildcards) / 60)


def sft_mem_mb(wildcards):
    """A tokenizer and a batch of conversations (~1 GB), and the raw line index of its inputs (16 bytes
    per line: a tenth of the text for conversations of 160+ bytes)."""
    return 2000 + int(_sft_text_mb(wildcards) / 10)


def copy_runtime(wildcards):
    """Minutes for a job that reads (and writes) its data once, at 50 MB/s."""
    return 10 + int(_job_text_mb(wildcards) / 3000)


def line_index_mem_mb(wildcards):
    """A raw index holds 16-24 bytes per line: a tenth of the file for lines of 240+ bytes."""
    return 1000 + int(_job_text_mb(wildcards) / 10)


def document_index_mem_mb(wildcards):
    """Merging, converting and verifying hold 16 bytes per document (documents of 800+ bytes of text)."""
    return 1000 + int(_job_text_mb(wildcards) / 50)


def cache_mem_mb(wildcards):
    """Building index caches holds ~16-20 bytes per document (sizes, document index, its shuffle)
    and ~24 per sample: a fiftieth of the text for documents of 1 KB and samples of 512+ tokens."""
    return 1000 + int(_job_text_mb(wildcards) / 50)


def megatron_prefix(wildcards):
    """The Megatron prefix (`--data-path` value) of a dataset, as preprocess_data.py names it."""
    return f"data/megatron/{wildcards.name}_text_document"


SAMPLING = config["sampling"]
if SAMPLING.get("num_samples") and SAMPLING["epochs"] is not None:
    raise ValueError("sampling: give num_samples or epochs, not both")
_checked("sampling.split", parse_split, SAMPLING["split"])


def sample_index_options(wildcards):
    """`tokenmill sample-index` options from the sampling config and the dataset's tokenizer."""
    path = f"{SAMPLING['megatron_path_prefix']}{wildcards.name}_text_document"
    return " ".join(map(shlex_quote, ["--megatron-path-prefix", path] + _sampling_options(wildcards.name)))


def _sampling_options(name):
    """Split, sample counts, extra token and tokenizer identity, for a dataset's tokenizer."""
    options = ["--split", SAMPLING["split"]]
    if SAMPLING["epochs"] is not None or not SAMPLING.get("num_samples"):
        options += ["--epochs", str(SAMPLING["epochs"] or 1)]
    else:
        counts = SAMPLING["num_samples"]
        options += ["--num-samples", str(counts.get("train", 0))]
        options += [f"--{split}-samples={counts[split]}" for split in ("valid", "test") if split in counts]
    if not SAMPLING["add_extra_token"]:
        options.append("--no-extra-token")
    identifiers = config["tokenizers"][BUILDS[name][1]]["megatron_identifiers"]
    if identifiers is not None:
        options += ["--tokenizer-identifiers", json.dumps(identifiers)]
    else:
        options += ["--vocab-size-from", f"data/packed/{name}.pbin.meta.json"]
    return options


def _blend_builds(blend_name):
    """Build → weight of a blend: each dataset as packed with the blend's tokenizer (its `tokenizer`,
    or else the one tokenizer its datasets share)."""
    blend = config["blends"][blend_name]
    for name in blend["weights"]:
        if name not in config["datasets"]:
            raise ValueError(f"blends.{blend_name}.weights: {name!r} is not in datasets")
    shared = set.intersection(*(set(_tokenizer_names(name)) for name in blend["weights"]))
    tokenizer = blend["tokenizer"]
    if tokenizer is None:
        if len(shared) != 1:
            raise ValueError(
                f"blends.{blend_name}: its datasets share {len(shared)} tokenizers "
                f"({', '.join(sorted(shared)) or 'none'}); name one in blends.{blend_name}.tokenizer"
            )
        tokenizer = shared.pop()
    elif tokenizer not in shared:
        raise ValueError(f"blends.{blend_name}.tokenizer: {tokenizer!r} is not a tokenizer of all its datasets")
    by_dataset = {dataset: build for build, (dataset, tokenizer_name) in BUILDS.items() if tokenizer_name == tokenizer}
    return {by_dataset[name]: weight for name, weight in blend["weights"].items()}


if config["blends"] and not {"train", "valid", "test"} <= set(SAMPLING.get("num_samples") or {}):
    raise ValueError(
        "blends: a weighted blend needs sampling.num_samples for every split "
        "(train, valid and test; 0 for an unused one)"
    )

BLEND_BUILDS = {}
for _blend_name, _blend in config["blends"].items():
    _checked(f"blends.{_blend_name}.weights", check_weights, list(_blend["weights"].values()))
    BLEND_BUILDS[_blend_name] = _blend_builds(_blend_name)


def blend_megatron_files(wildcards):
    """The .idx and sidecar of every dataset of a blend."""
    builds = BLEND_BUILDS[wildcards.blend]
    return [f"data/megatron/{build}_text_document.{ext}" for build in builds for ext in ("bin", "idx")] + [
        f"data/packed/{build}.pbin.meta.json" for build in builds
    ]


def blend_options(wildcards):
    """`tokenmill blend` arguments: weighted prefixes, hashed paths, sampling and tokenizer options."""
    weights = BLEND_BUILDS[wildcards.blend]
    blend = []
    for build, weight in weights.items():
        blend += [str(weight), f"data/megatron/{build}_text_document"]
    paths = [f"{SAMPLING['megatron_path_prefix']}{build}_text_document" for build in weights]
    first = next(iter(weights))
    options = _sampling_options(first) + ["--megatron-paths", *paths]
    return " ".join(map(shlex_quote, blend + options))


def dataset_caches(name):
    """The index cache folders of a build (or of `blend_<name>`), one per sequence length and seed."""
    return [
        f"data/cache/{name}/seq{seq_length}_seed{seed}"
        for seq_length in SAMPLING["seq_lengths"]
        for seed in SAMPLING["seeds"]
    ]


def _indexed_input(build):
    """(JSONL, raw index) of a build packed from one whole plain file, else None."""
    (unit,) = BUILD_UNITS[build] if len(BUILD_UNITS[build]) == 1 else (None,)
    if unit is None:
        return None
    stem = UNITS[unit][1]
    path, compression = FILE_INPUTS[stem]
    return None if compression else (path, f"data/index/{stem}.idx")


def verify_inputs(wildcards):
    """Every file `rule verify` checks for a build (so that it reruns when any of them changes)."""
    name = wildcards.name
    files = [
        f"data/packed/{name}.pbin",
        f"data/packed/{name}.pbin.meta.json",
        f"data/megatron/{name}_text_document.bin",
        f"data/megatron/{name}_text_document.idx",
    ]
    return files + list(_indexed_input(name) or ()) + dataset_caches(name)


def verify_options(wildcards):
    """`tokenmill verify` arguments: the raw index with its JSONL, the .pbin, the Megatron prefix, caches."""
    name = wildcards.name
    paths = [f"data/packed/{name}.pbin", f"data/megatron/{name}_text_document"] + dataset_caches(name)
    indexed = _indexed_input(name)
    if indexed:
        paths = ["--jsonl", *indexed] + paths
    return " ".join(map(shlex_quote, paths))


for _sft_name, _sft in config["sft"].items():
    if _sft["tokenizer"] not in config["tokenizers"]:
        raise ValueError(f"sft.{_sft_name}.tokenizer: {_sft['tokenizer']!r} is not in tokenizers")


def sft_inputs(wildcards):
    """The conversation files and the tokenizer of an SFT dataset."""
    entry = config["sft"][wildcards.name]
    return entry["inputs"] + [config["tokenizers"][entry["tokenizer"]]["path"]]


def sft_config(wildcards):
    """The resolved config that `tokenmill sft -` reads: this entry and its tokenizer (as JSON)."""
    entry = config["sft"][wildcards.name]
    tokenizer = entry["tokenizer"]
    return json.dumps(
        {"sft": {wildcards.name: entry}, "tokenizers": {tokenizer: config["tokenizers"][tokenizer]}}, sort_keys=True
    )


def blend_caches(wildcards):
    """The cache folders of a blend, one per sequence length and seed."""
    return dataset_caches(f"blend_{wildcards.blend}")


def all_targets():
    """Every file that `rule all` builds for the configured matrix."""
    megatron = [f"data/megatron/{build}_text_document.idx" for build in BUILDS]
    caches = [cache for build in BUILDS for cache in dataset_caches(build)]
    verified = [f"data/verified/{build}.ok" for build in BUILDS]
    blends = [cache for blend in config["blends"] for cache in dataset_caches(f"blend_{blend}")]
    verified += [f"data/verified/blend/{blend}.ok" for blend in config["blends"]]
    verified += [f"data/verified/sft/{name}.ok" for name in config["sft"]]
    sft = [f"data/sft/{name}.pbin" for name in config["sft"]]
    reports = [f"data/report/{build}.html" for build in BUILDS] + [
        f"{blend}.html".replace("data/cache/", "data/report/") for blend in blends
    ]
    return megatron + caches + blends + verified + sft + reports


def report_caches(wildcards):
    """The index cache folders a build's report page describes."""
    return dataset_caches(wildcards.name)


def report_cache_options(wildcards, input):
    """`--cache DIR` for each of them."""
    return " ".join(f"--cache {shlex_quote(cache)}" for cache in input.caches)
