"""The layout of the workflow's tree: every output's path, relative to the working directory, and the
way back from a path to its build (:func:`build_of`). The rules and the plan spell no path of their own.

Cost: string formatting; :func:`build_of` a few ``stat`` calls.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from tokenmill.formats.kinds import OUTPUT_FORMATS, OutputFormat

__all__ = ["DATA_FOLDER", "OUTPUT_FOLDERS", "PACKED_FOLDER", "CACHE_FOLDER", "STALE_FOLDER", "PLANS_FOLDER",
           "RAW_FOLDER", "stale_path", "raw_index_path", "packed_path", "PARTS_FOLDER", "part_pbin_path",
           "part_megatron_prefix", "megatron_prefix", "datatrove_name", "olmo_folder", "blend_cache_name",
           "cache_folder", "cache_dir", "brace_ranges", "build_of", "verified_stamp", "verified_blend_stamp",
           "verified_sft_stamp", "sft_files", "report_page", "sft_report_page", "hf_tokenizer_folder",
           "packed_index_dir", "packed_index_dir_of", "olmo_packing_dir", "sft_packing_dir", "sft_olmo_packing_dir",
           "formats_view", "format_path", "format_files", "format_named_path", "part_path", "sft_format_folder"]

# ---- The layout: where each output lives (relative to the workflow's working directory) ----------

DATA_FOLDER = "data"  # the workflow's tree
# The folders the workflow writes the files trainers and tools read (logs and benchmarks are not looked in):
# its own, which prune keeps to the plan (tokenmill.plan.prune)
OUTPUT_FOLDERS = ("data/index", "data/packed", "data/parts", "data/megatron", "data/datatrove", "data/olmo",
                  "data/cache", "data/sft", "data/verified", "data/report")
PACKED_FOLDER = f"{DATA_FOLDER}/{OUTPUT_FORMATS['pbin'].folder}"  # each build's .pbin and sidecar (packed_path)
CACHE_FOLDER = "data/cache"  # each build's and blend's cache folders (cache_dir)
STALE_FOLDER = "data/stale"  # where prune moves the outputs of an earlier plan
PLANS_FOLDER = "data/plans"  # each config's plan by its identity (tokenmill.plan.records)
RAW_FOLDER = "data/raw"  # the demo's inputs, which the workflow never writes: where inputs may lie


def stale_path(path: str) -> str:
    """Where prune moves ``path`` (in an output folder): the same place under :data:`STALE_FOLDER`
    (``data/packed/b.pbin`` → ``data/stale/packed/b.pbin``)."""
    return f"{STALE_FOLDER}/{path[len(DATA_FOLDER) + 1:]}"


def format_path(kind: OutputFormat, build: str, folder: str | None = None) -> str:
    """A build's name in an output format (its row's ``stem`` in its ``folder``: :mod:`tokenmill.formats.kinds`), as
    the format's tools take it: the ``.pbin``, the Megatron prefix, datatrove's ``NAME``, the OLMo folder;
    ``folder``: the folder as a training job spells it (default: the format's, in :data:`DATA_FOLDER`)."""
    return f"{folder if folder is not None else f'{DATA_FOLDER}/{kind.folder}/'}{kind.stem.format(build=build)}"


def format_files(kind: OutputFormat, build: str) -> list[str]:
    """The files (or folder) a build has in an output format: its :func:`format_path` followed by each of the row's
    ``files``."""
    return [format_path(kind, build) + suffix for suffix in kind.files]


def format_named_path(kind: OutputFormat, build: str) -> str:
    """The path ``verify`` and ``inspect`` are given for a build's files in an output format (datatrove's
    ``NAME.ds``)."""
    return format_path(kind, build) + kind.named_by


def part_path(kind: OutputFormat, unit: str) -> str:
    """A merged build's unit in a format that pack writes (the unit's ``.pbin``, its Megatron prefix), in
    :data:`PARTS_FOLDER`: the row's ``stem`` of the unit."""
    return f"{PARTS_FOLDER}{kind.stem.format(build=unit)}"


def raw_index_path(stem: str) -> str:
    """The raw line index of an input file."""
    return f"data/index/{stem}.idx"


def packed_path(build_or_unit: str) -> str:
    """The ``.pbin`` of a build or of one of its units (its sidecar is this path + ``.meta.json``)."""
    return format_path(OUTPUT_FORMATS["pbin"], build_or_unit)


# A merged build's units (its files' and shards' packs) live apart from the final files, so that
# data/packed/ and data/megatron/ hold one file per build: a glob there never trains on a build twice.
PARTS_FOLDER = "data/parts/"


def part_pbin_path(unit: str) -> str:
    """The ``.pbin`` of a unit of a merged build (its sidecar is this path + ``.meta.json``)."""
    return part_path(OUTPUT_FORMATS["pbin"], unit)


def part_megatron_prefix(unit: str) -> str:
    """The Megatron prefix of a unit of a merged build."""
    return part_path(OUTPUT_FORMATS["megatron"], unit)


def megatron_prefix(build: str, folder: str | None = None) -> str:
    """The Megatron prefix (``--data-path`` value) of a build, as ``preprocess_data.py`` names it;
    ``folder`` is how the training job spells the folder (``sampling.megatron_path_prefix``)."""
    return format_path(OUTPUT_FORMATS["megatron"], build, folder)


def datatrove_name(build: str) -> str:
    """A build's datatrove ``NAME`` (``NAME.ds``, ``.ds.index``, ``.ds.metadata``), in a folder of its
    own: ``DatatroveFolderDataset`` and nanotron's Nanoset read every ``.ds`` below a folder."""
    return format_path(OUTPUT_FORMATS["datatrove"], build)


def olmo_folder(build: str) -> str:
    """A build's OLMo-core token files (``part-NNNNN.npy``, ``.csv.gz``, ``metadata.json``), a folder per
    build: an OLMo-core config lists the parts of the datasets it mixes."""
    return format_path(OUTPUT_FORMATS["olmo"], build)


def blend_cache_name(blend: str) -> str:
    """The name under ``data/cache/`` and ``data/report/`` of a blend's caches."""
    return f"blend_{blend}"


def cache_folder(name: str) -> str:
    """The folder of a build's (or :func:`blend_cache_name`'s) cache folders, one per length and seed."""
    return f"{CACHE_FOLDER}/{name}"


def cache_dir(name: str, seq_length: int | str, seed: int | str) -> str:
    """The index cache folder of a build (or of :func:`blend_cache_name`) for one length and seed."""
    return f"{cache_folder(name)}/seq{seq_length}_seed{seed}"


def packed_index_dir(build: str, seq_length: int, seed: int) -> str:
    """A build's best-fit packed index for one length and seed (``tokenmill best-fit``), beside its caches; for
    :func:`blend_cache_name`, the blend's packed blend (``tokenmill best-fit --blend``)."""
    return f"{cache_dir(build, seq_length, seed)}_best_fit"


def olmo_packing_dir(build: str, seq_length: int) -> str:
    """The OLMo-core work dir holding a build's best-fit packing caches for one length (its
    ``dataset-common/``), beside its parts."""
    return f"data/olmo/{build}.best_fit/seq{seq_length}"


def brace_ranges(names: list[str] | tuple[str, ...], folder: str, suffix: str) -> str:
    """Files of numbered names for a shell command as bash brace ranges, in order
    (``data/packed/web.part{0..1999}.pbin``): thousands of paths spelled out would pass the 128 KiB
    that one argument (``bash -c``) may hold. Names of builds and units hold only letters, digits and
    ``._-``, so they need no quoting."""
    runs = []  # [prefix, first number, last number]
    for name in names:
        prefix, number = re.fullmatch(r"(.*?)([0-9]*)", name).groups()
        if number and runs and runs[-1][0] == prefix and runs[-1][2] == int(number) - 1:
            runs[-1][2] += 1
        else:
            runs.append([prefix, int(number) if number else None, int(number) if number else None])
    return " ".join(f"{folder}{prefix}{'' if first is None else first}{suffix}" if first == last
                    else f"{folder}{prefix}{{{first}..{last}}}{suffix}" for prefix, first, last in runs)


def _layout_root(path: str | os.PathLike, build: str, layout_path: str) -> Path | None:
    """The workflow folder in which ``layout_path`` (this layout's path of ``build``) is ``path``, or None."""
    path = Path(os.path.normpath(path))
    parts = Path(layout_path).parts
    if path.parts[-len(parts):] != parts:
        return None
    return Path(*path.parts[:-len(parts)]) if len(path.parts) > len(parts) else Path(".")


def build_of(path: str | os.PathLike) -> tuple[Path, str] | None:
    """``(workflow folder, build)`` of a file of this layout, read backwards from its path: a build's file in a
    format whose name for a build is the build's followed by its own suffix (:func:`format_path`: the ``.pbin``
    and its sidecar, the Megatron prefix and its ``.bin``/``.idx``) or a cache folder (:func:`cache_dir`); None
    for a path of another layout. For the verbs given one file (``inspect``) to find the build's other files."""
    path = Path(path)
    name = path.name
    candidates = []
    for kind in OUTPUT_FORMATS.values():
        head, _, tail = kind.stem.partition("{build}")
        if head or not tail or "/" in tail:  # (a name in a folder of the build's own: not read back)
            continue
        for suffix in dict.fromkeys(("", *kind.files)):
            if name.endswith(tail + suffix) and len(name) > len(tail + suffix):
                candidates.append((name[:len(name) - len(tail + suffix)],
                                   lambda build, kind=kind, suffix=suffix: format_path(kind, build) + suffix))
    match = re.fullmatch(r"seq([0-9]+)_seed([0-9]+)", name)
    if match:
        candidates.append((path.parent.name, lambda build: cache_dir(build, int(match[1]), int(match[2]))))
    for build, layout in candidates:
        root = _layout_root(path, build, layout(build))
        if root is not None:
            return root, build
    return None


def packed_index_dir_of(cache_folder: str | os.PathLike) -> Path | None:
    """The :func:`packed_index_dir` beside a cache folder of this layout (:func:`cache_dir`:
    ``data/cache/<b>/seq<L>_seed<S>`` → ``data/cache/<b>/seq<L>_seed<S>_best_fit``), where the workflow builds
    its best-fit packed index; None for a folder of another layout."""
    path = Path(cache_folder)
    match = re.fullmatch(r"seq([0-9]+)_seed([0-9]+)", path.name)
    found = build_of(path) if match else None
    return None if found is None else found[0] / packed_index_dir(found[1], int(match[1]), int(match[2]))


def formats_view(formats: list[str], default: list[str]) -> str:
    """What a build's (or an SFT set's) verify stamp and report page add to its name for its ``formats``: nothing
    for the ``default`` ones (the schema's), else ``+`` and each format, sorted (``+datatrove+megatron+pbin``).
    Two configs of one folder that make one build in different formats each check and report their own set (a
    name holds no ``+``), so that running them in turn reruns nothing; the cost is one verify and one page more
    per format set."""
    if set(formats) == set(default):
        return ""
    return "".join(f"+{name}" for name in sorted(formats))


def verified_stamp(build: str) -> str:
    """The stamp that ``rule verify`` writes once every file of a build checks out (``build`` followed by its
    :func:`formats_view`)."""
    return f"data/verified/{build}.ok"


def report_page(name: str, seq_length: int | None = None, seed: int | None = None) -> str:
    """A build's report page (``name``: the build followed by its :func:`formats_view`), or a blend's per cache
    folder."""
    if seq_length is None:
        return f"data/report/{name}.html"
    return f"data/report/{name}/seq{seq_length}_seed{seed}.html"


def sft_report_page(name: str) -> str:
    """An SFT set's report page (``name`` followed by its :func:`formats_view`)."""
    return f"data/report/sft/{name}.html"


def verified_blend_stamp(blend: str) -> str:
    """The stamp that ``rule verify_blend`` writes once a blend's caches check out."""
    return f"data/verified/blend/{blend}.ok"


def sft_files(name: str) -> list[str]:
    """An SFT dataset's tokens, loss mask and sidecar."""
    return [f"data/sft/{name}.pbin", f"data/sft/{name}.loss_mask.pbin", f"data/sft/{name}.pbin.meta.json"]


def sft_format_folder(name: str, kind: OutputFormat) -> str:
    """An SFT set's files in a format converted from its pair, beside it: ``data/sft/<name>.<format>``."""
    return f"data/sft/{name}.{kind.name}"


def sft_olmo_folder(name: str) -> str:
    """An SFT set's OLMo-core token files with their label masks, beside its pair."""
    return sft_format_folder(name, OUTPUT_FORMATS["olmo"])


def sft_packing_dir(name: str) -> str:
    """An SFT set's best-fit rows (``tokenmill best-fit PAIR.pbin``), beside its pair."""
    return f"data/sft/{name}.best_fit"


def sft_olmo_packing_dir(name: str) -> str:
    """The OLMo-core work dir holding an SFT set's best-fit packing caches (its ``dataset-common/``), beside
    its parts."""
    return f"data/sft/{name}.olmo.best_fit"


def verified_sft_stamp(name: str) -> str:
    """The stamp that ``rule verify_sft`` writes once an SFT pair checks out (``name`` followed by its
    :func:`formats_view`)."""
    return f"data/verified/sft/{name}.ok"


def hf_tokenizer_folder(tokenizer: str) -> str:
    """The folder a Megatron job's ``--tokenizer-model`` names for a config tokenizer given as a
    ``tokenizer.json`` (HuggingFaceTokenizer loads a folder): beside the Megatron data."""
    return f"data/megatron/tokenizers/{tokenizer}"

