"""The build plan: from a validated workflow config, what is built, from which inputs, where, and with
which options. Pure: no Snakemake, no tokenizer load (an EOD token is looked up in the parsed ``tokenizer.json``);
each input file is stat'ed once.

Names (they are also the workflow's wildcards):

* A **build** is a dataset packed with one of its tokenizers: ``<dataset>`` when the dataset has one
  tokenizer, ``<dataset>.<tokenizer>`` when it has several. Its files are :func:`packed_path`,
  :func:`megatron_prefix` and the cache folders of :func:`cache_dir`.
* A **file stem** names one input file: ``<dataset>``, or ``<dataset>.part<k>`` for file *k* of a
  dataset with several. Each plain file packed alone or in shards has one raw index
  (:func:`raw_index_path`), shared by the dataset's tokenizers; a compressed or Parquet file has none
  (it is read as a stream), nor has a small file packed with others (its job scans it: ~30 ms per
  64 MB, against a job per file).
* A build is packed in **units**: one per byte range ``START:END`` (``<...>.shard<j>``) of a plain
  file bigger than the dataset's ``shard_bytes``, or per run of whole row groups of about
  ``shard_bytes`` (compressed, from the footer) of such a Parquet file; one per run of consecutive
  files of one kind (plain, or compressed and Parquet) holding together under ``group_bytes`` of text
  (a compressed file counted 4x), named after its first file (``<...>.part<k>``), so that thousands
  of small files make a few jobs; one per other file. A build of one unit is packed straight to its
  ``.pbin``; a build of several is the merge of their ``.pbin`` files, in input order.

Every option that changes an output is returned here as plain strings (:meth:`Plan.pack_options`,
:meth:`Plan.sampling_options`, ...), so the workflow records them as Snakemake params and reruns
exactly the jobs an edit affects. So is each input's and tokenizer's size and modification time
(:meth:`Plan.unit_identity`, :meth:`Plan.file_identity`): a file replaced by an *older* one
(``cp -p``, ``rsync -a``), which
Snakemake's mtime trigger misses, still reruns what reads it. Errors name the config key:
``datasets.web.inputs: ...``.

Cost: one ``glob`` per pattern and one ``stat`` per input file, and one footer read per Parquet file
bigger than ``shard_bytes``; the rest is O(number of units).
"""

from __future__ import annotations

import glob
import json
import os
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

from tokenmill import FORMAT_VERSIONS
from tokenmill.blend import check_weights
from tokenmill.errors import TokenmillError
from tokenmill.jsonl import input_compression
from tokenmill.objects import expand_url, is_url, pinned_identity
from tokenmill.parquet import row_group_units
from tokenmill.prune import OUTPUT_FOLDERS, STALE_FOLDER
from tokenmill.sample_index import parse_split
from tokenmill.text import TextSelector
from tokenmill.families import HF_TYPE, TIKTOKEN_DEFAULT_SPECIALS
from tokenmill.megatron_tokenizer import DEFAULT_VERSION, SUPPORTED_TYPES, job_tokenizer
from tokenmill.tokenizer import check_eod_in_file

__all__ = ["Plan", "InputFile", "Unit", "Build", "parse_size", "raw_index_path", "packed_path",
           "megatron_prefix", "datatrove_name", "cache_dir", "blend_cache_name", "verified_stamp", "report_page",
           "build_of", "brace_ranges"]

# ---- The layout: where each output lives (relative to the workflow's working directory) ----------


def raw_index_path(stem: str) -> str:
    """The raw line index of an input file."""
    return f"data/index/{stem}.idx"


def packed_path(build_or_unit: str) -> str:
    """The ``.pbin`` of a build or of one of its units (its sidecar is this path + ``.meta.json``)."""
    return f"data/packed/{build_or_unit}.pbin"


# A merged build's units (its files' and shards' packs) live apart from the final files, so that
# data/packed/ and data/megatron/ hold one file per build: a glob there never trains on a build twice.
PARTS_FOLDER = "data/parts/"


def part_pbin_path(unit: str) -> str:
    """The ``.pbin`` of a unit of a merged build (its sidecar is this path + ``.meta.json``)."""
    return f"{PARTS_FOLDER}{unit}.pbin"


def part_megatron_prefix(unit: str) -> str:
    """The Megatron prefix of a unit of a merged build."""
    return f"{PARTS_FOLDER}{unit}_text_document"


def megatron_prefix(build: str, folder: str = "data/megatron/") -> str:
    """The Megatron prefix (``--data-path`` value) of a build, as ``preprocess_data.py`` names it;
    ``folder`` is how the training job spells the folder (``sampling.megatron_path_prefix``)."""
    return f"{folder}{build}_text_document"


def datatrove_name(build: str) -> str:
    """A build's datatrove ``NAME`` (``NAME.ds``, ``.ds.index``, ``.ds.metadata``), in a folder of its
    own: ``DatatroveFolderDataset`` and nanotron's Nanoset read every ``.ds`` below a folder."""
    return f"data/datatrove/{build}/{build}"


def blend_cache_name(blend: str) -> str:
    """The name under ``data/cache/`` and ``data/report/`` of a blend's caches."""
    return f"blend_{blend}"


def cache_dir(name: str, seq_length: int, seed: int) -> str:
    """The index cache folder of a build (or of :func:`blend_cache_name`) for one length and seed."""
    return f"data/cache/{name}/seq{seq_length}_seed{seed}"


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
    """``(workflow folder, build)`` of a file of this layout, read backwards from its path: a build's
    ``.pbin`` (:func:`packed_path`), Megatron prefix (:func:`megatron_prefix`, ``.bin``/``.idx``
    included) or cache folder (:func:`cache_dir`); None for a path of another layout. For the verbs
    given one file (``inspect``) to find the build's other files."""
    path = Path(path)
    name = path.name
    candidates = []
    if name.endswith(".pbin"):
        candidates.append((name[:-len(".pbin")], packed_path))
    for suffix in ("", ".bin", ".idx"):
        if name.endswith(f"_text_document{suffix}"):
            build = name[:len(name) - len(suffix) - len("_text_document")]
            candidates.append((build, lambda build, suffix=suffix: megatron_prefix(build) + suffix))
    match = re.fullmatch(r"seq([0-9]+)_seed([0-9]+)", name)
    if match:
        candidates.append((path.parent.name, lambda build: cache_dir(build, int(match[1]), int(match[2]))))
    for build, layout in candidates:
        root = _layout_root(path, build, layout(build))
        if root is not None:
            return root, build
    return None


def verified_stamp(build: str) -> str:
    """The stamp that ``rule verify`` writes once every file of a build checks out."""
    return f"data/verified/{build}.ok"


def report_page(name: str, seq_length: int | None = None, seed: int | None = None) -> str:
    """A build's report page, or a blend's per cache folder."""
    if seq_length is None:
        return f"data/report/{name}.html"
    return f"data/report/{name}/seq{seq_length}_seed{seed}.html"


# ---- The plan --------------------------------------------------------------------------------


@dataclass(frozen=True)
class InputFile:
    """One input file of a dataset."""

    stem: str
    path: str
    compression: str | None  # None: plain JSONL, read through its raw index; "parquet": a Parquet file
    size: int
    mtime_ns: int
    etag: str | None = None  # an object's (an s3:// input): its version, where a file has its mtime


@dataclass(frozen=True)
class Unit:
    """One pack job: a run of files of a build (one, or several small ones of one kind: plain, or
    compressed and Parquet), a byte range ``START:END`` (END empty: to the end) of a plain one, or a
    row-group range ``START:END`` of a Parquet one."""

    name: str
    build: str
    stems: tuple[str, ...]
    byte_range: str | None = None
    row_groups: str | None = None


@dataclass(frozen=True)
class Build:
    """A dataset packed with one tokenizer, and the units it is packed in, in order."""

    name: str
    dataset: str
    tokenizer: str
    units: tuple[str, ...]


_MAX_LISTED_INPUT_CHARS = 64 << 10
_SIZE = re.compile(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([KMGT]?)(i?)B?\s*", re.IGNORECASE)


def parse_size(key: str, value: int | str | None) -> int | None:
    """A size in bytes: an integer, or a number with a unit (``2GB``, ``512MiB``); None stays None.

    Raises:
        TokenmillError: not a size, or under one byte (naming ``key``).
    """
    if value is None or isinstance(value, int):
        return value
    match = _SIZE.fullmatch(value)
    if not match:
        raise TokenmillError(f"{key}: {value!r} is not a size (e.g. 2GB, 512MiB or bytes)")
    number, unit, binary = match.groups()
    size = int(float(number) * (1024 if binary else 1000) ** " KMGT".index(unit.upper() or " "))
    if size < 1:
        raise TokenmillError(f"{key}: {value!r} is less than one byte")
    return size


def _expand(pattern: str) -> list[str]:
    """An ``inputs`` entry's files: the file itself when it exists (a name may hold ``[``, ``*`` or
    ``?``), else the glob's matches, sorted; for an object URL, the bucket's matching keys."""
    if is_url(pattern):
        return expand_url(pattern)
    if os.path.exists(pattern) or not glob.has_magic(pattern):
        return [pattern]
    return sorted(glob.glob(pattern))


def _text_bytes(file: InputFile) -> int:
    """About the bytes of text in a file: its size, four times that compressed (what gzip and zstd
    give on web text; Parquet likewise)."""
    return file.size * (4 if file.compression else 1)


def job_flags_of(tokenizer: dict) -> list[str] | None:
    """The tokenizer flags of a Megatron job with a config tokenizer's type and files, as the config
    spells its path; None without a type, or for a type whose cache identifiers are not recorded (BERT).
    TikTokenizer names its pattern (a job that leaves it out hashes other identifiers: say so in
    ``megatron.args``), and its other options where they are not Megatron's defaults."""
    kind, path = tokenizer["type"], tokenizer["path"]
    if kind is None or kind not in SUPPORTED_TYPES:
        return None
    if kind == "GPT2BPETokenizer":
        return ["--tokenizer-type", kind, "--vocab-file", os.path.join(path, "vocab.json"),
                "--merge-file", os.path.join(path, "merges.txt")]
    flags = ["--tokenizer-type", kind, "--tokenizer-model", path]
    if kind == "TikTokenizer":
        flags += ["--tiktoken-pattern", tokenizer["tiktoken_pattern"]]
        if tokenizer["tiktoken_num_special_tokens"] != TIKTOKEN_DEFAULT_SPECIALS:
            flags += ["--tiktoken-num-special-tokens", str(tokenizer["tiktoken_num_special_tokens"])]
        flags += ["--vocab-size", str(tokenizer["vocab_size"])] if tokenizer["vocab_size"] else []
    return flags


def _identity(path: str, size: int | None = None, mtime_ns: int | None = None) -> str:
    """A file's size and modification time (stat'ed now unless given), as a params value; a missing
    file says so (Snakemake then names it). A folder's (a tokenizer type's files): each file's."""
    if size is None and os.path.isdir(path):
        return "; ".join(_identity(os.path.join(path, name)) for name in sorted(os.listdir(path))
                         if os.path.isfile(os.path.join(path, name))) or f"{path}: empty folder"
    if size is None:
        try:
            stat = os.stat(path)
        except OSError:
            return f"{path}: missing"
        size, mtime_ns = stat.st_size, stat.st_mtime_ns
    return f"{path}: {size} bytes, mtime {mtime_ns} ns"


class Plan:
    """Everything the workflow builds for a validated config (defaults filled in).

    Args:
        config: the workflow config after schema validation.

    Raises:
        TokenmillError: a config that cannot be built, naming the key (an input matching no file,
            an input listed twice, an unknown tokenizer, clashing output names, bad blend weights...).
    """

    def __init__(self, config: dict):
        self.config = config
        self.sampling = config["sampling"]
        self.dataset_files: dict[str, list[InputFile]] = {}
        self.files: dict[str, InputFile] = {}
        self.builds: dict[str, Build] = {}
        self.units: dict[str, Unit] = {}
        self.indexed: set[str] = set()  # stems of the plain files read through a raw index
        self.row_group_bytes: dict[str, list[int]] = {}  # file stem → compressed bytes per row group (big Parquet)
        self._row_group_ranges: dict[str, list[tuple[int, int]]] = {}
        self._check_tokenizers()
        for name in config["datasets"]:
            self._plan_dataset(name)
        self._check_sampling()
        self.blends = {name: self._blend_builds(name) for name in config["blends"]}
        self._check_sft()
        self._check_inputs_outside_outputs()

    def _check_inputs_outside_outputs(self) -> None:
        """Refuse an input or tokenizer that lies in a folder the workflow writes (or moves earlier plans'
        outputs to): Snakemake would delete it before the job that writes there, or the prune move it."""
        folders = [os.path.realpath(folder) for folder in (*OUTPUT_FOLDERS, STALE_FOLDER)]
        named = [(f"datasets.{name}.inputs", file.path) for name, files in self.dataset_files.items() for file in files]
        named += [(f"sft.{name}.inputs", path) for name, entry in self.config["sft"].items()
                  for path in entry["inputs"]]
        named += [(f"tokenizers.{name}.path", entry["path"]) for name, entry in self.config["tokenizers"].items()]
        for key, path in named:
            real = os.path.realpath(path)
            for folder, shown in zip(folders, (*OUTPUT_FOLDERS, STALE_FOLDER)):
                if os.path.commonpath([real, folder]) == folder:
                    raise TokenmillError(f"{key}: {path} lies in {shown}/, where the workflow writes its outputs "
                                         f"(it would be overwritten or moved); keep inputs elsewhere, e.g. data/raw/")

    # ---- datasets, files and units

    def _check_tokenizers(self) -> None:
        self.tokenizer_identities = {}
        for name, tokenizer in self.config["tokenizers"].items():
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
                    check_eod_in_file(tokenizer_json, eod)
                except TokenmillError as exc:
                    raise TokenmillError(f"tokenizers.{name}: {exc}") from None
            if tokenizer["type"] is not None and job_flags_of(tokenizer) and tokenizer["megatron"].get("args"):
                asked = job_tokenizer(DEFAULT_VERSION, tokenizer["megatron"]["args"]).flags
                kind = asked[asked.index("--tokenizer-type") + 1] if "--tokenizer-type" in asked else None
                if kind != tokenizer["type"]:
                    raise TokenmillError(f"tokenizers.{name}.megatron.args: --tokenizer-type {kind} is not its type "
                                         f"{tokenizer['type']}")
            self.tokenizer_identities[name] = _identity(path)

    def tokenizer_names(self, dataset: str) -> list[str]:
        """The tokenizers a dataset is packed with (``tokenizer`` is one name or a list)."""
        names = self.config["datasets"][dataset]["tokenizer"]
        return [names] if isinstance(names, str) else list(names)

    def _input_paths(self, name: str) -> list[str]:
        """A dataset's files: its ``inputs`` with globs expanded (sorted), in config order, each once
        unless ``allow_duplicate_inputs`` (a file listed twice would be packed twice)."""
        dataset = self.config["datasets"][name]
        paths, seen = [], {}  # (device, inode) → the first path naming that file (links included)
        for pattern in dataset["inputs"]:
            try:
                matches = _expand(pattern)
            except TokenmillError as exc:
                raise TokenmillError(f"datasets.{name}.inputs: {exc}") from None
            if not matches:
                raise TokenmillError(f"datasets.{name}.inputs: {pattern!r} matches no file")
            for path in matches:
                if is_url(path):
                    key = (path,)
                elif not os.path.isfile(path):
                    raise TokenmillError(f"datasets.{name}.inputs: {path}: no such file")
                else:
                    stat = os.stat(path)
                    key = (stat.st_dev, stat.st_ino)
                first = seen.get(key)
                if first is not None and not dataset["allow_duplicate_inputs"]:
                    raise TokenmillError(
                        f"datasets.{name}.inputs: {path} is the file {first} again and would be packed twice; "
                        f"remove one, or set datasets.{name}.allow_duplicate_inputs: true")
                seen.setdefault(key, path)
                paths.append(path)
        return paths

    def _plan_dataset(self, name: str) -> None:
        dataset = self.config["datasets"][name]
        for tokenizer in self.tokenizer_names(name):
            if tokenizer not in self.config["tokenizers"]:
                raise TokenmillError(f"datasets.{name}.tokenizer: {tokenizer!r} is not in tokenizers")
        if name.startswith("blend_") and name.removeprefix("blend_") in self.config["blends"]:
            raise TokenmillError(f"datasets.{name}: its caches would share data/cache/{name}/ with blend "
                                 f"{name.removeprefix('blend_')!r}; rename one of them")
        try:
            TextSelector(dataset["text"])  # compiled now, so a typo fails before any job
        except TokenmillError as exc:
            raise TokenmillError(f"datasets.{name}.text: {exc}") from None
        paths = self._input_paths(name)
        files = []
        for k, path in enumerate(paths):
            stem = name if len(paths) == 1 else f"{name}.part{k}"
            try:
                compression = input_compression(path)
                if is_url(path):  # streamed whole by its pack job (a byte range would need a raw index first)
                    identity = pinned_identity(path)
                    files.append(InputFile(stem, path, compression, identity.size, 0, identity.etag))
                    continue
            except TokenmillError as exc:
                raise TokenmillError(f"datasets.{name}.inputs: {exc}") from None
            stat = os.stat(path)
            files.append(InputFile(stem, path, compression, stat.st_size, stat.st_mtime_ns))
        self.dataset_files[name] = files
        self.files.update((file.stem, file) for file in files)
        shard_bytes = parse_size(f"datasets.{name}.shard_bytes", dataset["shard_bytes"])
        group_bytes = parse_size(f"datasets.{name}.group_bytes", dataset["group_bytes"]) or 0
        tokenizers = self.tokenizer_names(name)
        for tokenizer in tokenizers:
            build = name if len(tokenizers) == 1 else f"{name}.{tokenizer}"
            if build in self.builds:
                raise TokenmillError(f"datasets.{name}: its outputs would be named {build!r} like another dataset's")
            units = []
            group: list[str] = []  # small files waiting to be packed together, their text and command-line bytes
            group_text_bytes = group_chars = 0
            for k, file in enumerate(files):
                unit = build if len(files) == 1 else f"{build}.part{k}"
                text_bytes = _text_bytes(file)
                sharded = shard_bytes and file.size > shard_bytes and (
                    file.compression is None and file.etag is None
                    or file.compression == "parquet" and len(self._row_group_units(name, file, shard_bytes)) > 1)
                joins = text_bytes < group_bytes and not sharded
                chars = len(file.path) + 3  # its path, quoted, in pack's command (grouped files have no index)
                if group and (not joins or group_text_bytes + text_bytes > group_bytes
                              or group_chars + chars > _MAX_LISTED_INPUT_CHARS
                              or (self.files[group[0]].compression is None) != (file.compression is None)):
                    units.append(self._group_unit(build, group, len(files)))
                    group, group_text_bytes, group_chars = [], 0, 0
                if sharded and file.compression is None:
                    count = -(-file.size // shard_bytes)
                    for j in range(count):
                        end = str((j + 1) * shard_bytes) if j + 1 < count else ""
                        units.append(Unit(f"{unit}.shard{j}", build, (file.stem,), f"{j * shard_bytes}:{end}"))
                elif sharded:  # a Parquet file, in runs of whole row groups
                    units += [Unit(f"{unit}.shard{j}", build, (file.stem,), None, f"{start}:{end}")
                              for j, (start, end) in enumerate(self._row_group_units(name, file, shard_bytes))]
                elif joins:
                    group.append(file.stem)
                    group_text_bytes += text_bytes
                    group_chars += chars
                else:
                    units.append(Unit(unit, build, (file.stem,)))
            if group:
                units.append(self._group_unit(build, group, len(files)))
            if len(units) == 1 and units[0].byte_range is None and units[0].row_groups is None:
                units = [Unit(build, build, units[0].stems)]  # the whole dataset in one job: packed as the build
            self.units.update((unit.name, unit) for unit in units)
            self.indexed.update(unit.stems[0] for unit in units
                                if len(unit.stems) == 1 and self.files[unit.stems[0]].compression is None
                                and self.files[unit.stems[0]].etag is None)
            self.builds[build] = Build(build, name, tokenizer, tuple(unit.name for unit in units))

    def _group_unit(self, build: str, stems: list[str], dataset_files: int) -> Unit:
        """The unit of a run of a build's small files, named after its first file (``<build>.part<k>``)."""
        first = self.files[stems[0]]
        return Unit(build if dataset_files == 1 else f"{build}.part{first.stem.rpartition('.part')[2]}", build,
                    tuple(stems))

    def _row_group_units(self, dataset: str, file: InputFile, shard_bytes: int) -> list[tuple[int, int]]:
        """A big Parquet file's row-group ranges of about ``shard_bytes`` each, from its footer (read once).

        Raises:
            TokenmillError: no pyarrow, or a truncated or corrupt file (naming the config key).
        """
        if file.stem not in self.row_group_bytes:
            try:
                units, self.row_group_bytes[file.stem] = row_group_units(file.path, shard_bytes)
            except TokenmillError as exc:
                raise TokenmillError(f"datasets.{dataset}.inputs: {exc}") from None
            self._row_group_ranges[file.stem] = units
        return self._row_group_ranges[file.stem]

    def unit(self, name: str) -> Unit:
        """A pack unit by name.

        Raises:
            TokenmillError: no such unit in the config.
        """
        try:
            return self.units[name]
        except KeyError:
            raise TokenmillError(f"{name}: no such pack unit in the config") from None

    def file(self, stem: str) -> InputFile:
        """An input file by stem.

        Raises:
            TokenmillError: no such input file in the config.
        """
        try:
            return self.files[stem]
        except KeyError:
            raise TokenmillError(f"{stem}: no such input file in the config") from None

    def single_unit_builds(self, **formats: bool) -> list[str]:
        """The builds packed in one unit; with ``megatron=`` / ``datatrove=``, those that have (True)
        or lack (False) that format (the workflow's rule variants, one per set of outputs)."""
        return [build for build in self._builds_with(formats) if len(self.builds[build].units) == 1]

    def merged_builds(self, **formats: bool) -> list[str]:
        """The builds merged from several units, chosen by format as :meth:`single_unit_builds`."""
        return [build for build in self._builds_with(formats) if len(self.builds[build].units) > 1]

    def _builds_with(self, formats: dict[str, bool]) -> list[str]:
        return [build for build in self.builds
                if all((name in self.formats(build)) == wanted for name, wanted in formats.items())]

    def unit_index(self, unit: str) -> list[str]:
        """The raw index a unit is read through: none for compressed or Parquet files (read as a
        stream) and for a group of small files (scanned by the job)."""
        return [raw_index_path(stem) for stem in self.unit(unit).stems if stem in self.indexed]

    def unit_inputs(self, unit: str) -> list[str]:
        """The input files and objects a unit packs, in order."""
        return [self.files[stem].path for stem in self.unit(unit).stems]

    def unit_local_inputs(self, unit: str) -> list[str]:
        """The input files a unit packs that Snakemake sees: its objects are read by URL, and their ETags
        (:meth:`unit_identity`) rerun it when one is replaced."""
        return [path for path in self.unit_inputs(unit) if not is_url(path)]

    def build_inputs(self, build: str) -> list[InputFile]:
        """The input files of a build, in order."""
        return self.dataset_files[self.builds[build].dataset]

    def pack_options(self, unit_name: str) -> list[str]:
        """The ``tokenmill pack`` arguments of a unit that come from the config: everything besides
        the input, the tokenizer path, the worker count and the output, which change no byte."""
        unit = self.unit(unit_name)
        build = self.builds[unit.build]
        dataset = self.config["datasets"][build.dataset]
        tokenizer = self.config["tokenizers"][build.tokenizer]
        options = ["--jq", dataset["text"], "--on-bad-line", dataset["on_bad_line"],
                   "--max-line-bytes", str(dataset["max_line_bytes"]), "--engine", tokenizer["engine"],
                   "--check-fraction", str(tokenizer["check_fraction"]), "--on-mismatch", tokenizer["on_mismatch"]]
        for index in self.unit_index(unit_name):
            options += ["--index", index]
        if unit.byte_range is not None:
            options += ["--byte-range", unit.byte_range]
        if unit.row_groups is not None:
            options += ["--row-groups", unit.row_groups]
        if tokenizer["type"] is not None:
            options += ["--tokenizer-type", tokenizer["type"]]
            if tokenizer["type"] == "TikTokenizer":
                options += ["--tiktoken-pattern", tokenizer["tiktoken_pattern"], "--tiktoken-num-special-tokens",
                            str(tokenizer["tiktoken_num_special_tokens"])]
                options += ["--vocab-size", str(tokenizer["vocab_size"])] if tokenizer["vocab_size"] else []
        # eod: null packs without one, said explicitly: pack refuses to guess; left out with a type, the type's
        if "eod" in tokenizer or tokenizer["type"] is None:
            options += ["--eod", tokenizer["eod"]] if tokenizer.get("eod") is not None else ["--no-eod"]
        if not tokenizer["add_special_tokens"]:
            options.append("--no-special-tokens")
        if dataset["allow_duplicate_inputs"]:
            options.append("--allow-duplicate-inputs")
        return options

    def pack_outputs(self, unit_name: str) -> list[str]:
        """The ``tokenmill pack`` output arguments of a unit: its ``.pbin``, Megatron's files where its
        build has the ``megatron`` format and, for a build of one unit, datatrove's files where it has
        ``datatrove``: every format in pack's one pass. (A merged build's ``.ds`` files are converted
        from its merged ``.pbin``.) The ``.ds.metadata`` names the tokenizer as the config spells it."""
        unit = self.unit(unit_name)
        build = self.builds[unit.build]
        merged = len(build.units) > 1
        outputs = ["-o", part_pbin_path(unit_name) if merged else packed_path(unit_name)]
        if "megatron" in self.formats(build.name):
            outputs += ["--megatron", part_megatron_prefix(unit_name) if merged else megatron_prefix(unit_name)]
        if "datatrove" in self.formats(build.name) and len(build.units) == 1:
            outputs += ["--datatrove", datatrove_name(build.name),
                        "--datatrove-tokenizer-name", self.unit_tokenizer_path(unit_name)]
        return outputs

    def pack_format(self, unit_name: str) -> str:
        """The format versions of the files a unit's pack writes (see :meth:`pack_outputs`)."""
        outputs = self.pack_outputs(unit_name)
        return " ".join(FORMAT_VERSIONS[name] for name, flag in (("pbin", "-o"), ("mmidx", "--megatron"),
                                                                 ("datatrove", "--datatrove")) if flag in outputs)

    def file_identity(self, stem: str) -> str:
        """Size and modification time of an input file (what its raw index reads)."""
        file = self.file(stem)
        if file.etag is not None:
            return f"{file.path}: {file.size} bytes, ETag {file.etag}"
        return _identity(file.path, file.size, file.mtime_ns)

    def unit_identity(self, unit_name: str) -> str:
        """Size and modification time of the files a pack unit reads: its inputs and its tokenizer.
        (A unit is often named like its file stem: the two are never looked up by one name.)"""
        unit = self.unit(unit_name)
        tokenizer = self.tokenizer_identities[self.builds[unit.build].tokenizer]
        return "; ".join([*map(self.file_identity, unit.stems), tokenizer])

    def unit_tokenizer_path(self, unit: str) -> str:
        """The tokenizer.json a unit is packed with."""
        return self.config["tokenizers"][self.builds[self.unit(unit).build].tokenizer]["path"]

    def merge_units(self, build: str) -> list[str]:
        """The unit ``.pbin`` files of a merged build, in input order."""
        return [part_pbin_path(unit) for unit in self.builds[build].units]

    def merge_unit_megatron_files(self, build: str) -> list[str]:
        """The units' Megatron ``.bin`` and ``.idx`` a merged build merges (none without that format)."""
        if "megatron" not in self.formats(build):
            return []
        return [f"{part_megatron_prefix(unit)}.{ext}" for unit in self.builds[build].units for ext in ("bin", "idx")]

    def merge_commands(self, build: str) -> str:
        """The shell commands merging a build's units, ``.pbin`` then Megatron's files (where it has
        that format), with the units as brace ranges (:func:`brace_ranges`)."""
        units = self.builds[build].units
        commands = [f"tokenmill merge {brace_ranges(units, PARTS_FOLDER, '.pbin')} "
                    f"-o {shlex.quote(packed_path(build))} --force"]
        if "megatron" in self.formats(build):
            commands.append(f"tokenmill merge {brace_ranges(units, PARTS_FOLDER, '_text_document')} "
                            f"-o {shlex.quote(megatron_prefix(build))} --force")
        return " && ".join(commands)

    def datatrove_options(self, build: str) -> list[str]:
        """``tokenmill to-datatrove`` arguments: the tokenizer named as the config spells it."""
        return ["--tokenizer-name", self.config["tokenizers"][self.builds[build].tokenizer]["path"]]

    def report_options(self, build: str) -> list[str]:
        """``tokenmill report`` arguments: the build's files in other formats and its cache folders."""
        return [*(part for cache in self.cache_dirs(build) for part in ("--cache", cache)),
                *(part for path in self.built_files(build)[2:] for part in ("--file", path))]

    def blend_inputs(self, blend: str) -> list[str]:
        """The Megatron ``.bin/.idx`` and the sidecar of every dataset of a blend."""
        return [path for build in self.blends[blend]
                for path in (f"{megatron_prefix(build)}.bin", f"{megatron_prefix(build)}.idx",
                             f"{packed_path(build)}.meta.json")]

    # ---- sizes, for the workflow's resources

    def unit_text_bytes(self, unit_name: str) -> int:
        """Bytes of text a unit tokenizes (a compressed file counted 4x: about what it decompresses to)."""
        unit = self.unit(unit_name)
        if unit.row_groups is not None:
            start, end = map(int, unit.row_groups.split(":"))
            return sum(self.row_group_bytes[unit.stems[0]][start:end]) * 4
        if unit.byte_range is None:
            return sum(_text_bytes(self.files[stem]) for stem in unit.stems)
        file = self.files[unit.stems[0]]
        start, _, end = unit.byte_range.partition(":")
        return (int(end) if end else file.size) - int(start)

    def build_text_bytes(self, build: str) -> int:
        return sum(map(self.unit_text_bytes, self.builds[build].units))

    def blend_text_bytes(self, blend: str) -> int:
        return sum(map(self.build_text_bytes, self.blends[blend]))

    # ---- Megatron caches and blends

    def _check_sampling(self) -> None:
        sampling = self.sampling
        if sampling.get("num_samples") and sampling["epochs"] is not None:
            raise TokenmillError("sampling: give num_samples or epochs, not both")
        try:
            parse_split(sampling["split"])
        except TokenmillError as exc:
            raise TokenmillError(f"sampling.split: {exc}") from None
        if self.config["blends"] and not {"train", "valid", "test"} <= set(sampling.get("num_samples") or {}):
            raise TokenmillError("blends: a weighted blend needs sampling.num_samples for every split "
                                 "(train, valid and test; 0 for an unused one)")

    def formats(self, build: str) -> list[str]:
        """The formats a build is made in (its dataset's ``formats``): ``pbin``, ``megatron``, ``datatrove``."""
        return self.config["datasets"][self.builds[build].dataset]["formats"]

    def built_files(self, build: str) -> list[str]:
        """A build's files in its formats: the ``.pbin`` and sidecar (the others are made from its tokens),
        Megatron's ``.bin/.idx``, datatrove's ``.ds``, ``.ds.index`` and ``.ds.metadata``."""
        files = [packed_path(build), f"{packed_path(build)}.meta.json"]
        if "megatron" in self.formats(build):
            files += [f"{megatron_prefix(build)}.bin", f"{megatron_prefix(build)}.idx"]
        if "datatrove" in self.formats(build):
            files += [f"{datatrove_name(build)}{suffix}" for suffix in (".ds", ".ds.index", ".ds.metadata")]
        return files

    def cache_dirs(self, name: str) -> list[str]:
        """The cache folders of a build (or of :func:`blend_cache_name`), one per sequence length and seed;
        none for a build without the ``megatron`` format."""
        if name in self.builds and "megatron" not in self.formats(name):
            return []
        return [cache_dir(name, seq_length, seed)
                for seq_length in self.sampling["seq_lengths"] for seed in self.sampling["seeds"]]

    def hashed_prefix(self, build: str) -> str:
        """A build's Megatron prefix as the training job spells it (hashed into the cache names)."""
        return megatron_prefix(build, self.sampling["megatron_path_prefix"])

    def sampling_options(self, build: str) -> list[str]:
        """Split, sample counts, extra token and tokenizer identity for a build's caches."""
        sampling = self.sampling
        options = ["--split", sampling["split"]]
        if sampling["epochs"] is not None or not sampling.get("num_samples"):
            options += ["--epochs", str(sampling["epochs"] or 1)]
        else:
            counts = sampling["num_samples"]
            options += ["--num-samples", str(counts.get("train", 0))]
            options += [f"--{split}-samples={counts[split]}" for split in ("valid", "test") if split in counts]
        if not sampling["add_extra_token"]:
            options.append("--no-extra-token")
        tokenizer = self.config["tokenizers"][self.builds[build].tokenizer]
        if tokenizer["megatron_identifiers"] is not None:  # the expert's override: hashed as given
            return options + ["--tokenizer-identifiers", json.dumps(tokenizer["megatron_identifiers"])]
        job = tokenizer["megatron"]  # the training job's flags and Megatron version(s): names it computes
        type_flags = job_flags_of(tokenizer)
        if job.get("args"):
            options += ["--megatron-tokenizer-args", job["args"]]
        elif type_flags:
            options += ["--megatron-tokenizer-args", shlex.join(type_flags)]
        else:
            options += ["--vocab-size-from", f"{packed_path(build)}.meta.json"]
        return options + ["--megatron-version", ",".join(job["version"])]

    def sample_index_options(self, build: str) -> list[str]:
        return ["--job-data-path", self.hashed_prefix(build), *self.sampling_options(build)]

    def _blend_builds(self, blend_name: str) -> dict[str, float]:
        """Build → weight of a blend: each dataset as packed with the blend's tokenizer (its
        ``tokenizer``, or else the one tokenizer its datasets share)."""
        blend = self.config["blends"][blend_name]
        try:
            check_weights(list(blend["weights"].values()))
        except TokenmillError as exc:
            raise TokenmillError(f"blends.{blend_name}.weights: {exc}") from None
        for name in blend["weights"]:
            if name not in self.config["datasets"]:
                raise TokenmillError(f"blends.{blend_name}.weights: {name!r} is not in datasets")
        shared = set.intersection(*(set(self.tokenizer_names(name)) for name in blend["weights"]))
        tokenizer = blend["tokenizer"]
        if tokenizer is None:
            if len(shared) != 1:
                raise TokenmillError(f"blends.{blend_name}: its datasets share {len(shared)} tokenizers "
                                     f"({', '.join(sorted(shared)) or 'none'}); name one in "
                                     f"blends.{blend_name}.tokenizer")
            tokenizer = shared.pop()
        elif tokenizer not in shared:
            raise TokenmillError(f"blends.{blend_name}.tokenizer: {tokenizer!r} is not a tokenizer of all its datasets")
        by_dataset = {build.dataset: build.name for build in self.builds.values() if build.tokenizer == tokenizer}
        for name in blend["weights"]:
            if "megatron" not in self.formats(by_dataset[name]):
                raise TokenmillError(f"blends.{blend_name}.weights: dataset {name!r} is not made in the megatron "
                                     f"format (datasets.{name}.formats), which a blend samples from")
        return {by_dataset[name]: weight for name, weight in blend["weights"].items()}

    def blend_options(self, blend: str) -> list[str]:
        """``tokenmill blend`` arguments: weighted prefixes, hashed paths, sampling and tokenizer options."""
        weights = self.blends[blend]
        arguments = [part for build, weight in weights.items() for part in (str(weight), megatron_prefix(build))]
        first = next(iter(weights))
        return arguments + self.sampling_options(first) + [
            "--job-data-paths", *(self.hashed_prefix(build) for build in weights)]

    # ---- verification and targets

    def indexed_input(self, build: str) -> InputFile | None:
        """The input of a build packed from one whole plain file (its raw index is then verified), else None."""
        units = self.builds[build].units
        if len(units) != 1 or len(self.units[units[0]].stems) != 1:
            return None
        file = self.files[self.units[units[0]].stems[0]]
        return None if file.compression else file

    def verify_files(self, build: str) -> list[str]:
        """Every file ``rule verify`` checks for a build: built files and the inputs they come from."""
        inputs = self.build_inputs(build)
        return [*self.built_files(build), *(file.path for file in inputs),
                *(raw_index_path(file.stem) for file in inputs if file.stem in self.indexed),
                *self.cache_dirs(build)]

    def verify_options(self, build: str) -> list[str]:
        """``tokenmill verify`` arguments: the raw index with its JSONL, the ``.pbin`` with the inputs it
        must cover, the Megatron prefix, the datatrove ``.ds`` and the caches, as the build's formats have them."""
        formats = self.formats(build)
        checked = [packed_path(build), *([megatron_prefix(build)] if "megatron" in formats else []),
                   *([f"{datatrove_name(build)}.ds"] if "datatrove" in formats else []), *self.cache_dirs(build)]
        arguments = ["--made-from", packed_path(build)] if {"megatron", "datatrove"} & set(formats) else []
        indexed = self.indexed_input(build)
        if indexed is not None:
            arguments += ["--jsonl", indexed.path]
            checked.insert(0, raw_index_path(indexed.stem))
        paths = [file.path for file in self.build_inputs(build)]
        # One shell command holds at most 128 KiB: past that verify checks the sidecar's sources among
        # themselves only (each file covered once, whole), not against the config's list.
        if sum(len(path) + 3 for path in paths) < _MAX_LISTED_INPUT_CHARS:
            arguments += ["--inputs", *paths]
        return arguments + ["--", *checked]

    def _check_sft(self) -> None:
        for name, sft in self.config["sft"].items():
            if sft["tokenizer"] not in self.config["tokenizers"]:
                raise TokenmillError(f"sft.{name}.tokenizer: {sft['tokenizer']!r} is not in tokenizers")
            for path in sft["inputs"]:  # files, as the schema says (a missing one must not keep an old build)
                if not os.path.isfile(path):
                    raise TokenmillError(f"sft.{name}.inputs: {path}: no such file")

    def sft_inputs(self, name: str) -> list[str]:
        """The conversation files and the tokenizer of an SFT dataset."""
        entry = self.config["sft"][name]
        return [*entry["inputs"], self.config["tokenizers"][entry["tokenizer"]]["path"]]

    def sft_identity(self, name: str) -> str:
        """Size and modification time of an SFT dataset's inputs and tokenizer (see :meth:`unit_identity`)."""
        return "; ".join(_identity(path) for path in self.sft_inputs(name))

    def sft_config(self, name: str) -> str:
        """The resolved config that ``tokenmill sft -`` reads: this entry and its tokenizer (as JSON)."""
        entry = self.config["sft"][name]
        tokenizer = entry["tokenizer"]
        return json.dumps({"sft": {name: entry}, "tokenizers": {tokenizer: self.config["tokenizers"][tokenizer]}},
                          sort_keys=True)

    def all_targets(self) -> list[str]:
        """Every final file of the configured matrix: raw indexes, packed files and their sidecars,
        Megatron and datatrove files (as each dataset's ``formats`` ask), caches, blends, SFT pairs,
        verify stamps and report pages. Snakemake checks for a missing output only among the files a
        target asks for (a deleted sidecar beside an intact ``.pbin`` would otherwise stay deleted), so
        each is named here."""
        targets = [raw_index_path(stem) for stem in self.files if stem in self.indexed]
        for build in self.builds:
            targets += [*self.built_files(build), *self.cache_dirs(build), verified_stamp(build), report_page(build)]
            if self.config["keep_parts"] and len(self.builds[build].units) > 1:  # kept, so rebuilt when deleted
                megatron = "megatron" in self.formats(build)
                targets += [path for unit in self.builds[build].units
                            for path in (part_pbin_path(unit), f"{part_pbin_path(unit)}.meta.json",
                                         *([f"{part_megatron_prefix(unit)}.bin", f"{part_megatron_prefix(unit)}.idx"]
                                           if megatron else []))]
        for blend in self.blends:
            name = blend_cache_name(blend)
            targets += self.cache_dirs(name) + [f"data/verified/blend/{blend}.ok"]
            targets += [report_page(name, seq_length, seed)
                        for seq_length in self.sampling["seq_lengths"] for seed in self.sampling["seeds"]]
        for name in self.config["sft"]:
            targets += [f"data/sft/{name}.pbin", f"data/sft/{name}.loss_mask.pbin", f"data/sft/{name}.pbin.meta.json",
                        f"data/verified/sft/{name}.ok"]
        return targets
