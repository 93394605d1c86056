"""What a config builds: datasets → builds → units (a file, a byte-range shard of a big plain file, a run of row
groups of a big Parquet file, or a group of small files), blends and SFT sets, and the inputs each job reads; from
the config and one look at each input (a ``stat``, an object's ``HEAD``, a big Parquet file's footer). What is
refused as it plans: inputs named twice or matching nothing, tokens that are not there, blend weights, and the
config checks of :mod:`tokenmill.plan.config_checks` (tokenizers and their EODs, text fields, sampling, SFT sets,
inputs outside the output folders). See :mod:`tokenmill.plan` for the names.

Cost: one ``glob`` (or bucket listing) per pattern and one ``stat`` per input file; the rest is O(units).
"""

from __future__ import annotations

import copy
import glob
import os
import re
from dataclasses import dataclass

from tokenmill.errors import TokenmillError
from tokenmill.files.identity import FileIdentity, named_twice
from tokenmill.files.objects import ObjectIdentity, pinned_identity
from tokenmill.files.source import Source, expand, input_key, is_missing_file, local_paths
from tokenmill.files.urls import redact
from tokenmill.formats.kinds import SAMPLED
from tokenmill.formats.bin_idx import prefix_of
from tokenmill.inputs.jsonl import input_compression
from tokenmill.inputs.parquet import row_group_units
from tokenmill.megatron.blend import check_weights
from tokenmill.megatron.job_tokenizer import SUPPORTED_TYPES
from tokenmill.pack.tokens_in import token_source_files
from tokenmill.plan.config_checks import (check_fields, check_inputs_outside_outputs, check_sampling, check_sft,
                                          check_tokenizers)
from tokenmill.plan.layout import cache_folder
from tokenmill.tokenization.families import TIKTOKEN_DEFAULT_SPECIALS

__all__ = ["InputFile", "Unit", "Build", "Units", "parse_size", "job_flags_of", "MAX_LISTED_INPUT_CHARS",
           "with_local_paths_absolute", "with_urls_redacted"]


@dataclass(frozen=True)
class InputFile:
    """One input file of a dataset."""

    stem: str
    path: str
    compression: str | None  # None: plain JSONL, read through its raw index; "parquet": a Parquet file
    size: int
    mtime_ns: int
    etag: str | None = None  # an input by URL's version (ObjectIdentity.tag), where a file has its mtime


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


MAX_LISTED_INPUT_CHARS = 64 << 10


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



class Units:
    """What the workflow builds for a validated config (defaults filled in): datasets → builds → units
    (files, shards, groups), blends and SFT datasets, and the inputs each job reads; where their outputs go is
    :class:`tokenmill.plan.outputs.Outputs`, each job's command :class:`tokenmill.plan.commands.Commands`.

    Args:
        config: the workflow config after schema validation.
        spelled_paths: where ``config``'s local paths were made absolute (:func:`with_local_paths_absolute`,
            on object storage), the tokenizer paths as the config file spells them: what a name taken as
            given (datatrove's ``.ds.metadata``) records, so that those bytes are a local build's.

    Raises:
        TokenmillError: a config that cannot be built, naming the key (an input matching no file,
            an input listed twice, an unknown tokenizer, clashing output names, bad blend weights...).
    """

    def __init__(self, config: dict, spelled_paths: dict[str, str] | None = None):
        self.config = config
        self.spelled_paths = spelled_paths or {}
        self.sampling = config["sampling"]
        self.dataset_files: dict[str, list[InputFile]] = {}
        self.files: dict[str, InputFile] = {}
        self.builds: dict[str, Build] = {}
        self.units: dict[str, Unit] = {}
        self.indexed: set[str] = set()  # stems of the plain files read through a raw index
        self.row_group_bytes: dict[str, list[int]] = {}  # file stem → compressed bytes per row group (big Parquet)
        self._row_group_ranges: dict[str, list[tuple[int, int]]] = {}
        self.token_sources: dict[str, list[str]] = {}  # build → its tokens entries (prefixes, .pbin), globs expanded
        self.ordinary_eods = check_tokenizers(config)  # tokenizer → an EOD that is an ordinary vocabulary token
        for name, dataset in config["datasets"].items():
            if bool(dataset["inputs"]) == bool(dataset["tokens"]):
                raise TokenmillError(f"datasets.{name}: give inputs (JSONL to tokenize) or tokens (.bin/.idx prefixes "
                                     f"or .pbin files already made), {'not both' if dataset['inputs'] else 'one'}")
            if dataset["tokens"]:
                self._plan_tokens(name)
            else:
                self._plan_dataset(name)
        check_sampling(config, self.ordinary_eods, self.tokenizer_names)
        self.blends = {name: self._blend_builds(name) for name in config["blends"]}
        check_sft(config, self.sft_objects)
        check_inputs_outside_outputs(self._named_inputs())

    def _named_inputs(self) -> list[tuple[str, str]]:
        """Every input and tokenizer of the config, with the key that names it: ``(key, path)``."""
        named = [(f"datasets.{name}.inputs", file.path) for name, files in self.dataset_files.items() for file in files]
        named += [(f"datasets.{self.builds[build].dataset}.tokens", path) for build in self.token_sources
                  for path in self.token_files(build)]
        named += [(f"sft.{name}.inputs", path) for name, entry in self.config["sft"].items()
                  for path in entry["inputs"]]
        return named + [(f"tokenizers.{name}.path", entry["path"]) for name, entry in self.config["tokenizers"].items()]

    def notes(self) -> list[str]:
        """What planning says without stopping, one line each: an EOD that is an ordinary vocabulary token; a
        relative spelling hashed into the cache names (a job that spells it otherwise misses every cache)."""
        notes = [f"tokenizers.{name}.eod: {eod!r} is an ordinary token of the vocabulary, not a special one: text "
                 f"holding it ends a document for any reader that scans for the EOS" + (
                     "" if self.config["tokenizers"][name]["ordinary_eod"] else
                     " (ordinary_eod: true says it is meant)")
                 for name, eod in self.ordinary_eods.items()]
        cached = {self.builds[build].tokenizer for build in self.builds_with(megatron=True)} \
            if self.sampling["seq_lengths"] else set()
        notes += [f"tokenizers.{name}.path: the caches are named for a job passing --tokenizer-model {entry['path']} "
                  f"as spelled here; if your job spells it otherwise (an absolute path), give its flags in "
                  f"tokenizers.{name}.megatron.args"
                  for name, entry in self.config["tokenizers"].items()
                  if name in cached and entry["type"] is not None and not entry["megatron"].get("args")
                  and not entry["megatron_identifiers"] and not os.path.isabs(entry["path"])]
        return notes

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
                matches = expand([pattern], local_globs=True)
            except TokenmillError as exc:
                raise TokenmillError(f"datasets.{name}.inputs: {exc}") from None
            if not matches:
                raise TokenmillError(f"datasets.{name}.inputs: {pattern!r} matches no file")
            for path in matches:
                if is_missing_file(path):
                    raise TokenmillError(f"datasets.{name}.inputs: {path}: no such file")
                key = input_key(path)
                first = seen.get(key)
                if first is not None and not dataset["allow_duplicate_inputs"]:
                    raise TokenmillError(
                        f"datasets.{name}.inputs: {path} is the file {first} again and would be packed twice; "
                        f"remove one, or set datasets.{name}.allow_duplicate_inputs: true")
                seen.setdefault(key, path)
                paths.append(path)
        return paths

    def _plan_tokens(self, name: str) -> None:
        """A dataset of tokens already made (``tokens``): one build, no pack unit, made by the ``tokens_in`` job.
        Each entry is checked here as far as a look at its files goes (they exist; an ``.idx`` starts with
        Megatron's magic); the job checks the rest (dtype, ids, EODs) before writing anything.

        Raises:
            TokenmillError: several tokenizers, a count_by, an entry matching no file, a missing or foreign file.
        """
        dataset = self.config["datasets"][name]
        tokenizers = self.tokenizer_names(name)
        if len(tokenizers) != 1:
            raise TokenmillError(f"datasets.{name}.tokenizer: tokens were made with one tokenizer; name that one")
        if tokenizers[0] not in self.config["tokenizers"]:
            raise TokenmillError(f"datasets.{name}.tokenizer: {tokenizers[0]!r} is not in tokenizers")
        if dataset["count_by"] is not None:
            raise TokenmillError(f"datasets.{name}.count_by: a dataset of tokens has no JSON lines to count by; "
                                 f"set it to null")
        if name.startswith("blend_") and name.removeprefix("blend_") in self.config["blends"]:
            raise TokenmillError(f"datasets.{name}: its caches would share {cache_folder(name)}/ with blend "
                                 f"{name.removeprefix('blend_')!r}; rename one of them")
        entries: list[str] = []
        for pattern in dataset["tokens"]:
            matches = [pattern] if os.path.exists(pattern) or not glob.has_magic(pattern) else sorted(
                {path if path.endswith(".pbin") else prefix_of(path) for path in glob.glob(pattern)
                 if path.endswith((".pbin", ".bin", ".idx"))})
            if not matches:
                raise TokenmillError(f"datasets.{name}.tokens: {pattern!r} matches no .bin/.idx or .pbin file")
            for entry in matches:
                entry = entry if entry.endswith(".pbin") else prefix_of(entry)
                for path in token_source_files(entry):
                    if not os.path.isfile(path):
                        raise TokenmillError(f"datasets.{name}.tokens: {path}: no such file" + (
                            "" if entry.endswith(".pbin") else f" (the prefix {entry} names {entry}.bin and "
                                                               f"{entry}.idx)"))
                if not entry.endswith(".pbin"):
                    with open(f"{entry}.idx", "rb") as handle:
                        magic = handle.read(9)
                    if magic != b"MMIDIDX\x00\x00":
                        raise TokenmillError(f"datasets.{name}.tokens: {entry}.idx: not a Megatron .idx (it starts "
                                             f"with {magic!r}, not b'MMIDIDX\\x00\\x00')")
                entries.append(entry)
        twice = named_twice(entries, {entry: FileIdentity.of(token_source_files(entry)[0]) for entry in entries})
        if twice is not None:
            raise TokenmillError(f"datasets.{name}.tokens: {twice[0]} is the source {twice[1]} again (the same file) "
                                 f"and its documents would be written twice; name it once")
        if name in self.builds:
            raise TokenmillError(f"datasets.{name}: its outputs would be named {name!r} like another dataset's")
        self.dataset_files[name] = []
        self.token_sources[name] = entries
        self.builds[name] = Build(name, name, tokenizers[0], ())

    def token_files(self, build: str) -> list[str]:
        """The files a build of tokens reads (each ``.bin`` and ``.idx``, each ``.pbin``); none for one of inputs."""
        return [path for entry in self.token_sources.get(build, []) for path in token_source_files(entry)]

    def token_builds(self, **formats: bool) -> list[str]:
        """The builds made from tokens (``tokens``), chosen by format as :meth:`builds_with`."""
        return [build for build in self.builds_with(**formats) if build in self.token_sources]

    def _plan_dataset(self, name: str) -> None:
        dataset = self.config["datasets"][name]
        for tokenizer in self.tokenizer_names(name):
            if tokenizer not in self.config["tokenizers"]:
                raise TokenmillError(f"datasets.{name}.tokenizer: {tokenizer!r} is not in tokenizers")
        if name.startswith("blend_") and name.removeprefix("blend_") in self.config["blends"]:
            raise TokenmillError(f"datasets.{name}: its caches would share {cache_folder(name)}/ with blend "
                                 f"{name.removeprefix('blend_')!r}; rename one of them")
        check_fields(name, self.config["datasets"][name])
        paths = self._input_paths(name)
        files = []
        for k, path in enumerate(paths):
            stem = name if len(paths) == 1 else f"{name}.part{k}"
            try:
                source = Source.resolve(path, repin=False)
                compression = input_compression(source)
            except TokenmillError as exc:
                raise TokenmillError(f"datasets.{name}.inputs: {exc}") from None
            if source.is_url:  # streamed whole by its pack job (a byte range would need a raw index first)
                files.append(InputFile(stem, path, compression, source.size, 0, source.identity.tag))
            else:
                files.append(InputFile(stem, path, compression, source.size, source.identity.mtime_ns))
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
                              or group_chars + chars > MAX_LISTED_INPUT_CHARS
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
        return [build for build in self.builds_with(**formats) if len(self.builds[build].units) == 1]

    def merged_builds(self, **formats: bool) -> list[str]:
        """The builds merged from several units, chosen by format as :meth:`single_unit_builds`."""
        return [build for build in self.builds_with(**formats) if len(self.builds[build].units) > 1]

    def builds_with(self, **formats: bool) -> list[str]:
        """The builds that have (True) or lack (False) each named format."""
        return [build for build in self.builds
                if all((name in self.formats(build)) == wanted for name, wanted in formats.items())]

    def unit_inputs(self, unit: str) -> list[str]:
        """The input files and objects a unit packs, in order."""
        return [self.files[stem].path for stem in self.unit(unit).stems]

    def unit_tokenizer_path(self, unit: str) -> str:
        """The tokenizer.json a unit is packed with."""
        return self.tokenizer_of(self.unit(unit).build)["path"]

    def tokens_in_inputs(self, build: str) -> list[str]:
        """The files a ``tokens_in`` job reads: the sources' files and the tokenizer."""
        return [*self.token_files(build), self.tokenizer_of(build)["path"]]

    def dataset_of(self, build: str) -> dict:
        """The config entry of a build's dataset."""
        return self.config["datasets"][self.builds[build].dataset]

    def tokenizer_of(self, build: str) -> dict:
        """The config entry of a build's tokenizer."""
        return self.config["tokenizers"][self.builds[build].tokenizer]

    def unit_local_inputs(self, unit: str) -> list[str]:
        """The input files a unit packs that Snakemake sees: its objects are read by URL, and their ETags
        (:meth:`tokenmill.plan.commands.Commands.unit_identity`) rerun it when one is replaced."""
        return local_paths(self.unit_inputs(unit))

    def build_inputs(self, build: str) -> list[InputFile]:
        """The input files of a build, in order."""
        return self.dataset_files[self.builds[build].dataset]

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
        """Bytes of text behind a build: its units'; for a build of tokens, twice its token files' bytes (about
        the text 2-byte tokens come from: resources only)."""
        if build in self.token_sources:
            return 2 * sum(os.path.getsize(path) for path in self.token_files(build) if os.path.isfile(path))
        return sum(map(self.unit_text_bytes, self.builds[build].units))

    def blend_text_bytes(self, blend: str) -> int:
        return sum(map(self.build_text_bytes, self.blends[blend]))

    def formats(self, build: str) -> list[str]:
        """The formats a build is made in (its dataset's ``formats``): ``pbin``, ``megatron``, ``datatrove``,
        ``olmo``."""
        return self.dataset_of(build)["formats"]

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
            if not SAMPLED & set(self.formats(by_dataset[name])):  # (the format Megatron's sample indices read)
                raise TokenmillError(f"blends.{blend_name}.weights: dataset {name!r} is not made in the megatron "
                                     f"format (datasets.{name}.formats), which a blend samples from")
        return {by_dataset[name]: weight for name, weight in blend["weights"].items()}

    def indexed_input(self, build: str) -> InputFile | None:
        """The input of a build packed from one whole plain file (its raw index is then verified), else None."""
        units = self.builds[build].units
        if len(units) != 1 or len(self.units[units[0]].stems) != 1:
            return None
        file = self.files[self.units[units[0]].stems[0]]
        return None if file.compression or file.etag is not None else file  # an object: streamed, no raw index

    def sft_inputs(self, name: str) -> list[str]:
        """The conversation files, the tokenizer and the chat template's file of an SFT dataset (its URLs'
        objects are read by its job, which no input of Snakemake's names: :meth:`sft_objects`): an edit of
        the template rebuilds the set."""
        from tokenmill.tokenization.chat_template import chat_template_file  # (its engine imports: SFT sets only)

        entry = self.config["sft"][name]
        tokenizer_path = self.config["tokenizers"][entry["tokenizer"]]["path"]
        template = chat_template_file(entry.get("chat_template"), tokenizer_path)
        return [*local_paths(entry["inputs"]), tokenizer_path,
                *([template] if template is not None and template != tokenizer_path else [])]

    def sft_objects(self, name: str) -> list[ObjectIdentity]:
        """The objects by URL of an SFT dataset's inputs (globs listed), each as first seen.

        Raises:
            TokenmillError: an object or a bucket that cannot be reached, a glob matching nothing.
        """
        inputs = self.config["sft"][name]["inputs"]
        local = set(local_paths(inputs))
        return [pinned_identity(url) for url in expand(pattern for pattern in inputs if pattern not in local)]


def with_urls_redacted(config: dict) -> dict:
    """A validated config with its input URLs redacted (:func:`tokenmill.files.urls.redact`): what a job's
    command line and Snakemake's records may hold; the job takes the full URLs from ``TOKENMILL_URLS``."""
    config = copy.deepcopy(config)
    for section in ("datasets", "sft"):
        for entry in config.get(section, {}).values():
            entry["inputs"] = [redact(path) for path in entry.get("inputs", [])]
    return config


def with_local_paths_absolute(config: dict) -> dict:
    """A validated config with its local files absolute: dataset and SFT inputs (globs included) and
    tokenizer paths; URLs as given. The workflow plans with it on object storage, where jobs run
    in Snakemake's folder of local copies, not in the working directory those paths are relative to."""

    def absolute(path: str) -> str:
        return os.path.abspath(path) if local_paths([path]) else path

    config = copy.deepcopy(config)
    for section in ("datasets", "sft"):
        for entry in config.get(section, {}).values():
            entry["inputs"] = [absolute(path) for path in entry["inputs"]]
            if "tokens" in entry:
                entry["tokens"] = [absolute(path) for path in entry["tokens"]]
    for tokenizer in config.get("tokenizers", {}).values():
        tokenizer["path"] = absolute(tokenizer["path"])
    return config
