# ---- Config validation, path helpers and the target matrix ------------------------------------
# Everything the rule files need that is Python lives here (snakemake-workflows convention).

import glob
import json
import re
from shlex import quote as shlex_quote

from snakemake.utils import validate

from tokenmill import FORMAT_VERSIONS
from tokenmill.blend import check_weights
from tokenmill.errors import TokenmillError
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

for _name, _dataset in config["datasets"].items():
    if _dataset["tokenizer"] not in config["tokenizers"]:
        raise ValueError(f"datasets.{_name}.tokenizer: {_dataset['tokenizer']!r} is not in tokenizers")
    if _name.startswith("blend_") and _name.removeprefix("blend_") in config.get("blends", {}):
        raise ValueError(f"datasets.{_name}: its caches would share data/cache/{_name}/ with blend "
                         f"{_name.removeprefix('blend_')!r}; rename one of them")

DATASET_INPUTS = {name: _dataset_inputs(name) for name in config["datasets"]}
SINGLE_FILE_DATASETS = [name for name, files in DATASET_INPUTS.items() if len(files) == 1]
MULTI_FILE_DATASETS = [name for name, files in DATASET_INPUTS.items() if len(files) > 1]


def _alternatives(names):
    """A regex matching exactly these names (and nothing when there are none)."""
    return "|".join(map(re.escape, names)) or "(?!)"


# A pack unit ("stem") is a single-file dataset or one file of a multi-file dataset (<name>.part<k>).
STEM = rf"(?:{_alternatives(SINGLE_FILE_DATASETS)})|(?:{_alternatives(MULTI_FILE_DATASETS)})\.part[0-9]+"
MERGED = _alternatives(MULTI_FILE_DATASETS)
DATASET = _alternatives(config["datasets"])
BLEND = _alternatives(config["blends"])
SFT = _alternatives(config["sft"])


def _split_stem(stem):
    name, _, part = stem.partition(".part")
    return name, int(part) if part else 0


def stem_jsonl(wildcards):
    """The JSONL file of a pack unit."""
    name, part = _split_stem(wildcards.stem)
    return DATASET_INPUTS[name][part]


def stem_dataset(wildcards):
    """The dataset config of a pack unit."""
    return config["datasets"][_split_stem(wildcards.stem)[0]]


def stem_tokenizer(wildcards):
    """The tokenizer config of a pack unit."""
    return config["tokenizers"][stem_dataset(wildcards)["tokenizer"]]


def stem_tokenizer_path(wildcards):
    return stem_tokenizer(wildcards)["path"]


def pack_options(wildcards):
    """`tokenmill pack` options that come from the config, shell-quoted."""
    dataset, tokenizer = stem_dataset(wildcards), stem_tokenizer(wildcards)
    options = ["--jq", dataset["text"], "--on-bad-line", dataset["on_bad_line"],
               "--max-line-bytes", str(dataset["max_line_bytes"]), "--engine", tokenizer["engine"],
               "--check-fraction", str(tokenizer["check_fraction"]), "--on-mismatch", tokenizer["on_mismatch"]]
    if tokenizer["eod"] is not None:
        options += ["--eod", tokenizer["eod"]]
    if not tokenizer["add_special_tokens"]:
        options.append("--no-special-tokens")
    return " ".join(map(shlex_quote, options))


def merge_parts(wildcards):
    """The part .pbin files of a multi-file dataset, in input order."""
    count = len(DATASET_INPUTS[wildcards.name])
    return [f"data/packed/{wildcards.name}.part{k}.pbin" for k in range(count)]


def pack_mem_mb(wildcards, threads):
    """A worker holds a tokenizer and a few 1 MB batches; the parent 8 bytes per document."""
    return 1000 + 500 * threads


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
    identifiers = config["tokenizers"][config["datasets"][name]["tokenizer"]]["megatron_identifiers"]
    if identifiers is not None:
        options += ["--tokenizer-identifiers", json.dumps(identifiers)]
    else:
        options += ["--vocab-size-from", f"data/packed/{name}.pbin.meta.json"]
    return options


for _blend_name, _blend in config["blends"].items():
    _checked(f"blends.{_blend_name}.weights", check_weights, list(_blend["weights"].values()))
    for _name in _blend["weights"]:
        if _name not in config["datasets"]:
            raise ValueError(f"blends.{_blend_name}.weights: {_name!r} is not in datasets")
    if len({config["datasets"][_name]["tokenizer"] for _name in _blend["weights"]}) > 1:
        raise ValueError(f"blends.{_blend_name}: its datasets use different tokenizers")


def blend_megatron_files(wildcards):
    """The .idx and sidecar of every dataset of a blend."""
    names = config["blends"][wildcards.blend]["weights"]
    return [f"data/megatron/{name}_text_document.{ext}" for name in names for ext in ("bin", "idx")] + [
        f"data/packed/{name}.pbin.meta.json" for name in names]


def blend_options(wildcards):
    """`tokenmill blend` arguments: weighted prefixes, hashed paths, sampling and tokenizer options."""
    weights = config["blends"][wildcards.blend]["weights"]
    blend = []
    for name, weight in weights.items():
        blend += [str(weight), f"data/megatron/{name}_text_document"]
    paths = [f"{SAMPLING['megatron_path_prefix']}{name}_text_document" for name in weights]
    first = next(iter(weights))
    options = _sampling_options(first) + ["--megatron-paths", *paths]
    return " ".join(map(shlex_quote, blend + options))


def _dataset_caches(name):
    return [f"data/cache/{name}/seq{seq_length}_seed{seed}" for seq_length in SAMPLING["seq_lengths"]
            for seed in SAMPLING["seeds"]]


def verify_inputs(wildcards):
    """Every file `rule verify` checks for a dataset (so that it reruns when any of them changes)."""
    name = wildcards.name
    files = [f"data/packed/{name}.pbin", f"data/packed/{name}.pbin.meta.json",
             f"data/megatron/{name}_text_document.bin", f"data/megatron/{name}_text_document.idx"]
    if name in SINGLE_FILE_DATASETS:
        files += [f"data/index/{name}.idx", DATASET_INPUTS[name][0]]
    return files + _dataset_caches(name)


def verify_options(wildcards):
    """`tokenmill verify` arguments: the raw index with its JSONL, the .pbin, the Megatron prefix, caches."""
    name = wildcards.name
    paths = [f"data/packed/{name}.pbin", f"data/megatron/{name}_text_document"] + _dataset_caches(name)
    if name in SINGLE_FILE_DATASETS:
        paths = ["--jsonl", DATASET_INPUTS[name][0], f"data/index/{name}.idx"] + paths
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
    return json.dumps({"sft": {wildcards.name: entry}, "tokenizers": {tokenizer: config["tokenizers"][tokenizer]}},
                      sort_keys=True)


def all_targets():
    """Every file that `rule all` builds for the configured matrix."""
    megatron = [f"data/megatron/{name}_text_document.idx" for name in config["datasets"]]
    caches = [cache for name in config["datasets"] for cache in _dataset_caches(name)]
    verified = [f"data/verified/{name}.ok" for name in config["datasets"]]
    blends = [f"data/cache/blend_{blend}/seq{seq_length}_seed{seed}" for blend in config["blends"]
              for seq_length in SAMPLING["seq_lengths"] for seed in SAMPLING["seeds"]]
    sft = [f"data/sft/{name}.pbin" for name in config["sft"]]
    return megatron + caches + blends + verified + sft

