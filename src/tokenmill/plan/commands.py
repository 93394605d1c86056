"""Each job's command line and identity: the ``tokenmill`` arguments that come from the config and the size and
modification time of what a job reads, for the planned units (:class:`tokenmill.plan.units.Units`) and their
outputs (:class:`tokenmill.plan.outputs.Outputs`). Every option that changes an output is a plain string here,
so the workflow records it as a Snakemake param and reruns exactly the jobs an edit affects; a file replaced by
an older one (``cp -p``), which Snakemake's mtime trigger misses, changes its identity. And what makes each
output, as a digest (:meth:`Commands.output_identities`), so that two configs of one folder never write one
file differently; and what each report page is made for (:meth:`Commands.page_recipes`), so that ``--report``
never embeds a page another config's run made.

Cost: O(units) string building; one ``stat`` per tokenizer file, once, and one per token source or SFT file
per identity asked.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex

from tokenmill import FORMAT_VERSIONS
from tokenmill.formats.kinds import OUTPUT_FORMATS, OutputFormat
from tokenmill.megatron.gpt_indices import SPLIT_NAMES
from tokenmill.plan.layout import (PARTS_FOLDER, blend_cache_name, brace_ranges, format_files, format_named_path,
                                   format_path, hf_tokenizer_folder, megatron_prefix, packed_index_dir, packed_path,
                                   part_path, part_pbin_path, raw_index_path, report_page, sft_files, sft_olmo_folder,
                                   sft_report_page)
from tokenmill.plan.outputs import Outputs
from tokenmill.plan.units import MAX_LISTED_INPUT_CHARS, Units, job_flags_of, with_urls_redacted

__all__ = ["Commands", "path_identity"]


def _digest(*parts: object) -> str:
    """16 hex digits of the SHA-256 of ``parts`` as JSON."""
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode("utf-8")).hexdigest()[:16]


def path_identity(path: str, size: int | None = None, mtime_ns: int | None = None) -> str:
    """A file's size and modification time (stat'ed now unless given), as a params value; a missing
    file says so (Snakemake then names it). A folder's (a tokenizer type's files): each file's."""
    if size is None and os.path.isdir(path):
        return "; ".join(path_identity(os.path.join(path, name)) for name in sorted(os.listdir(path))
                         if os.path.isfile(os.path.join(path, name))) or f"{path}: empty folder"
    if size is None:
        try:
            stat = os.stat(path)
        except OSError:
            return f"{path}: missing"
        size, mtime_ns = stat.st_size, stat.st_mtime_ns
    return f"{path}: {size} bytes, mtime {mtime_ns} ns"


class Commands:
    """Each job's command line and identity for the planned ``units``: the ``tokenmill`` arguments that come
    from the config, and the size and modification time of what a job reads, as plain strings that Snakemake
    records as params (an edit reruns exactly the jobs it changes); and the identity of each output another
    config could make differently (:meth:`output_identities`).

    Args:
        units: what the config builds.
        outputs: where its outputs go.
    """

    def __init__(self, units: Units, outputs: Outputs):
        self.units = units
        self.outputs = outputs
        # each tokenizer's files, stat'ed once: in every identity of a job that reads it
        self.tokenizer_identities = {name: path_identity(entry["path"])
                                     for name, entry in units.config["tokenizers"].items()}
        # the arguments from the config of each format converted from a .pbin (its rule's params); none for others
        self._conversion_options = {"datatrove": self.datatrove_options, "olmo": self.olmo_options}

    def pack_options(self, unit_name: str) -> list[str]:
        """The ``tokenmill pack`` arguments of a unit that come from the config: everything besides
        the input, the tokenizer path, the worker count and the output, which change no byte, and
        ``on_bad_line`` (:meth:`bad_line_option`), which changes none where no line was skipped."""
        unit = self.units.unit(unit_name)
        dataset, tokenizer = self.units.dataset_of(unit.build), self.units.tokenizer_of(unit.build)
        options = ["--jq", dataset["text"], "--max-line-bytes", str(dataset["max_line_bytes"]),
                   "--engine", tokenizer["engine"], "--check-fraction", str(tokenizer["check_fraction"]),
                   "--on-mismatch", tokenizer["on_mismatch"]]
        for index in self.outputs.unit_index(unit_name):
            options += ["--index", index]
        if unit.byte_range is not None:
            options += ["--byte-range", unit.byte_range]
        if unit.row_groups is not None:
            options += ["--row-groups", unit.row_groups]
        options += self._tokenizer_options(tokenizer)
        if dataset["allow_duplicate_inputs"]:
            options.append("--allow-duplicate-inputs")
        return options

    def bad_line_option(self, build: str) -> list[str]:
        """``--on-bad-line`` of a build's dataset, for its pack units and their merge: not part of a unit's
        identity (the workflow leaves it out of the params Snakemake records), since a unit packed under
        ``error`` has no bad line and is, byte for byte, what ``skip`` makes of it. So a switch to ``skip``
        packs only the units not built yet, and a switch back to ``error`` keeps the units without skipped
        lines; ``merge`` and ``verify`` (whose recorded options hold it: :meth:`verify_options`) refuse a unit
        with skipped lines under ``error``, as a fresh build would stop at that line."""
        return ["--on-bad-line", self.units.config["datasets"][self.units.builds[build].dataset]["on_bad_line"]]

    @staticmethod
    def _tokenizer_options(tokenizer: dict) -> list[str]:
        """A config tokenizer's type, EOD and special-token options, as ``pack`` and ``tokens-in`` take them."""
        options = []
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
        return options

    def tokens_in_options(self, build: str) -> list[str]:
        """``tokenmill tokens-in`` arguments of a build of tokens: its sources in order, then the tokenizer's
        options (type, EOD, special tokens); the tokenizer path and outputs are the rule's."""
        return [*self.units.token_sources[build],
                *self._tokenizer_options(self.units.tokenizer_of(build))]

    def tokens_in_outputs(self, build: str) -> list[str]:
        """``tokenmill tokens-in`` outputs: the build's files in each of its formats written in pack's pass (the
        ``.pbin`` and, with the megatron format, its prefix), by their ``pack`` options."""
        return [part for kind in self.outputs.kinds(build) if kind.in_pack_pass
                for part in (kind.pack_flag, format_path(kind, build))]

    def tokens_identity(self, build: str) -> str:
        """Size and modification time of the files a ``tokens_in`` job reads (see :meth:`unit_identity`)."""
        return "; ".join([*map(path_identity, self.units.token_files(build)),
                          self.tokenizer_identities[self.units.builds[build].tokenizer]])

    def pack_inputs(self, unit_name: str) -> list[str]:
        """The ``tokenmill pack`` inputs of a unit, each object by its redacted name (the job takes the full URL
        from ``TOKENMILL_URLS``: :mod:`tokenmill.files.urls`) with ``--pin NAME VERSION``: the version the plan
        saw, which the job reads (a Hub file at that commit, though its branch moved) or refuses."""
        unit = self.units.unit(unit_name)
        pins = [part for stem in unit.stems if (file := self.units.file(stem)).etag is not None
                for part in ("--pin", file.path, file.etag)]
        return [*self.units.unit_inputs(unit_name), *pins]

    def pack_outputs(self, unit_name: str) -> list[str]:
        """The ``tokenmill pack`` output arguments of a unit: its ``.pbin`` and its build's other formats written in
        pack's pass (Megatron's files), each by its ``pack`` option. (datatrove's ``.ds`` files and OLMo's are
        converted from the build's ``.pbin``, so that adding either format never tokenizes again.)"""
        unit = self.units.unit(unit_name)
        merged = len(self.units.builds[unit.build].units) > 1
        return [part for kind in self.outputs.kinds(unit.build) if kind.in_pack_pass
                for part in (kind.pack_flag, part_path(kind, unit_name) if merged else format_path(kind, unit_name))]

    def pack_format(self, unit_name: str) -> str:
        """The format versions of the files a unit's pack writes (see :meth:`pack_outputs`)."""
        outputs = self.pack_outputs(unit_name)
        return " ".join(FORMAT_VERSIONS[kind.version_key] for kind in OUTPUT_FORMATS.values()
                        if kind.pack_flag in outputs)

    def file_identity(self, stem: str) -> str:
        """Size and modification time of an input file (what its raw index reads)."""
        file = self.units.file(stem)
        if file.etag is not None:
            return f"{file.path}: {file.size} bytes, ETag {file.etag}"
        return path_identity(file.path, file.size, file.mtime_ns)

    def unit_identity(self, unit_name: str) -> str:
        """Size and modification time of the files a pack unit reads: its inputs and its tokenizer.
        (A unit is often named like its file stem: the two are never looked up by one name.)"""
        unit = self.units.unit(unit_name)
        tokenizer = self.tokenizer_identities[self.units.builds[unit.build].tokenizer]
        return "; ".join([*map(self.file_identity, unit.stems), tokenizer])

    def merge_commands(self, build: str) -> str:
        """The shell commands merging a build's units in each of its formats written in pack's pass, ``.pbin``
        then Megatron's files (where it has that format), with the units as brace ranges (:func:`brace_ranges`);
        the ``.pbin``'s merge refuses a unit with skipped lines under ``on_bad_line: error``
        (:meth:`bad_line_option`)."""
        units = self.units.builds[build].units
        return " && ".join(
            f"tokenmill merge {brace_ranges(units, PARTS_FOLDER, kind.stem.format(build=''))} "
            f"-o {shlex.quote(format_path(kind, build))} --force"
            + ("" if kind.made_from_pbin else f" {shlex.join(self.bad_line_option(build))}")
            for kind in self.outputs.kinds(build) if kind.in_pack_pass)

    def datatrove_options(self, build: str) -> list[str]:
        """``tokenmill to-datatrove`` arguments: the tokenizer named as the config file spells it (also where
        the plan's paths were made absolute, on object storage: the ``.ds.metadata`` of a local build)."""
        tokenizer = self.units.builds[build].tokenizer
        return ["--tokenizer-name", self.units.spelled_paths.get(tokenizer, self.units.tokenizer_of(build)["path"])]

    def olmo_options(self, build: str) -> list[str]:
        """``tokenmill to-olmo`` arguments: tokens per part and the id field (``""``: line numbers)."""
        dataset = self.units.dataset_of(build)
        return ["--max-tokens", str(dataset["olmo_max_tokens"]), "--id-field", dataset["id_field"] or ""]

    def conversion_options(self, kind: OutputFormat, build: str) -> list[str]:
        """The arguments from the config of a build's conversion into a format converted from its ``.pbin``
        (:meth:`datatrove_options`, :meth:`olmo_options`; none for a format that takes none)."""
        options = self._conversion_options.get(kind.name)
        return options(build) if options is not None else []

    def report_options(self, build: str) -> list[str]:
        """``tokenmill report`` arguments: the build's files in other formats, its cache and best-fit folders,
        and the field it counts by."""
        count_by = self.units.dataset_of(build)["count_by"]
        return [*(part for cache in self.outputs.cache_dirs(build) for part in ("--cache", cache)),
                *(part for folder in self.outputs.best_fit_dirs(build) for part in ("--best-fit", folder)),
                *(part for path in self.outputs.built_files(build)[2:] for part in ("--file", path)),
                *(["--count-by", count_by] if count_by else [])]

    def best_fit_options(self, build: str) -> list[str]:
        """``tokenmill best-fit`` options of a build's packed index (the rule gives its length, seed and output):
        the long-document strategy and the split."""
        dataset = self.units.dataset_of(build)
        return ["--long-doc-strategy", dataset["long_doc_strategy"], "--split", self.units.sampling["split"]]

    def olmo_best_fit_options(self, build: str) -> list[str]:
        """``tokenmill best-fit`` options of a build's OLMo-core packing caches: the long-document strategy and
        the parts' folder as the job spells it (``sampling.olmo_path_prefix``: hashed into the names)."""
        dataset = self.units.dataset_of(build)
        return ["--long-doc-strategy", dataset["long_doc_strategy"], "--job-path-prefix",
                f"{self.units.sampling['olmo_path_prefix'].rstrip('/')}/{build}"]

    def blend_best_fit_options(self, blend: str) -> list[str]:
        """``tokenmill best-fit --blend`` arguments of a blend's packed blend (the rule gives its length, seed
        and output): weighted prefixes, the split, each split's samples, the long-document strategy."""
        counts = self.units.sampling["num_samples"]
        return ["--blend", *(part for build, weight in self.units.blends[blend].items()
                             for part in (str(weight), megatron_prefix(build))),
                "--split", self.units.sampling["split"], *(f"--{name}-samples={counts[name]}" for name in SPLIT_NAMES),
                "--long-doc-strategy", self.units.config["blends"][blend]["long_doc_strategy"]]

    def sampling_options(self, build: str) -> list[str]:
        """Split, sample counts, extra token and tokenizer identity for a build's caches."""
        sampling = self.units.sampling
        options = ["--split", sampling["split"]]
        if sampling["epochs"] is not None or not sampling.get("num_samples"):
            options += ["--epochs", str(sampling["epochs"] or 1)]
        else:
            counts = sampling["num_samples"]
            options += ["--num-samples", str(counts.get("train", 0))]
            options += [f"--{split}-samples={counts[split]}" for split in ("valid", "test") if split in counts]
        if not sampling["add_extra_token"]:
            options.append("--no-extra-token")
        tokenizer = self.units.tokenizer_of(build)
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
        return ["--job-data-path", self.outputs.job_data_path(build), *self.sampling_options(build)]

    def blend_options(self, blend: str) -> list[str]:
        """``tokenmill blend`` arguments: weighted prefixes, hashed paths, sampling and tokenizer options."""
        weights = self.units.blends[blend]
        arguments = [part for build, weight in weights.items() for part in (str(weight), megatron_prefix(build))]
        first = next(iter(weights))
        return arguments + self.sampling_options(first) + [
            "--job-data-paths", *(self.outputs.job_data_path(build) for build in weights)]

    def verify_options(self, build: str) -> list[str]:
        """``tokenmill verify`` arguments: the raw index with its JSONL, the ``.pbin`` with the inputs it
        must cover and the bad-line policy its skipped lines must meet, the Megatron prefix, the datatrove ``.ds``
        and the caches, as the build's formats have them."""
        kinds = self.outputs.kinds(build)
        checked = [*(format_named_path(kind, build) for kind in kinds), *self.outputs.cache_dirs(build)]
        arguments = ["--made-from", packed_path(build)] if any(kind.made_from_pbin for kind in kinds) else []
        if build not in self.units.token_sources:  # (tokens read in have no lines to skip)
            arguments += self.bad_line_option(build)
        indexed = self.units.indexed_input(build)
        if indexed is not None:
            arguments += ["--jsonl", indexed.path]
            checked.insert(0, raw_index_path(indexed.stem))
        # a build of tokens covers its .bin files (each with its .idx) and .pbin files
        paths = [file.path for file in self.units.build_inputs(build)] + [
            path for path in self.units.token_files(build) if not path.endswith(".idx")]
        # One shell command holds at most 128 KiB: past that verify checks the sidecar's sources among
        # themselves only (each file covered once, whole), not against the config's list.
        if sum(len(path) + 3 for path in paths) < MAX_LISTED_INPUT_CHARS:
            arguments += ["--inputs", *paths]
        return arguments + ["--", *checked]

    def sft_identity(self, name: str) -> str:
        """Size and modification time of an SFT dataset's files and tokenizer, size and ETag of its objects
        (see :meth:`unit_identity`)."""
        return "; ".join([*(path_identity(path) for path in self.units.sft_inputs(name)),
                          *(f"{item.url}: {item.size} bytes, ETag {item.tag}"
                            for item in self.units.sft_objects(name))])

    def sft_pins(self, name: str) -> list[str]:
        """``--pin NAME VERSION`` of each object an SFT set reads: the version the plan saw (see
        :meth:`pack_inputs`)."""
        return [part for item in self.units.sft_objects(name) for part in ("--pin", item.url, item.tag)]

    def sft_olmo_best_fit_options(self, name: str) -> list[str]:
        """``tokenmill best-fit`` options of an SFT set's OLMo-core packing caches: its length and the parts'
        folder as the job spells it (``olmo_path``: hashed into the names)."""
        entry = self.units.config["sft"][name]
        return ["--seq-length", str(entry["seq_length"]), "--job-path-prefix",
                (entry["olmo_path"] or sft_olmo_folder(name)).rstrip("/")]

    def sft_verify_options(self, name: str) -> list[str]:
        """``tokenmill verify`` arguments of an SFT set: the pair, and its OLMo folder against it."""
        pbin = sft_files(name)[0]
        folders = self.outputs.sft_olmo_folders(name)
        return [pbin, *folders, *(["--made-from", pbin] if folders else [])]

    def sft_report_options(self, name: str) -> list[str]:
        """``tokenmill report --sft`` options of an SFT set: its best-fit rows' folders (``--best-fit``)."""
        return [part for folder in self.outputs.sft_packing_dirs(name) + self.outputs.sft_olmo_packing_dirs(name)
                for part in ("--best-fit", folder)]

    def sft_config(self, name: str) -> str:
        """The resolved config that ``tokenmill sft -`` reads: this entry and its tokenizer (as JSON), defaults
        filled in (a chat template's ``template_date`` included: the rule's params carry the date it renders)."""
        # packing, olmo_path and formats are left out: they change only the packing and conversion jobs' outputs,
        # never the pair (adding olmo converts it, never tokenizes it again); workers (the rule's threads) changes
        # no byte
        entry = {key: value for key, value in self.units.config["sft"][name].items()
                 if key not in ("packing", "olmo_path", "formats", "workers")}
        tokenizer = entry["tokenizer"]
        # the date a chat template's strftime_now gives is an option of chat templates alone (no rerun without one)
        if entry.get("chat_template") is None:
            entry.pop("template_date", None)
        config = with_urls_redacted({"sft": {name: entry}})  # (the job's TOKENMILL_URLS has them whole)
        return json.dumps({**config, "tokenizers": {tokenizer: self.units.config["tokenizers"][tokenizer]}},
                          sort_keys=True)

    def tokenizer_folder_identities(self) -> dict[str, str]:
        """Each tokenizer folder this plan writes, with what it is written from (its file as the config spells
        it and its EOD): two configs of one working folder must not write one folder differently
        (:func:`tokenmill.plan.records.tokenizer_folder_conflict`)."""
        return {hf_tokenizer_folder(name): f"{self.units.config['tokenizers'][name]['path']} with EOD "
                                           f"{self.units.config['tokenizers'][name]['eod']!r}"
                for name in self.outputs.hf_tokenizer_folders()}

    def output_identities(self) -> dict[str, str]:
        """What makes each output that another config of the working folder could make differently, by path: a
        digest of the options and the paths (as planned, not their sizes or times) of the inputs and tokenizer
        of its job, equal for two configs exactly where the two would make the same bytes
        (:func:`tokenmill.plan.records.output_conflict`). Raw indexes, a build's files in its formats, caches
        and best-fit folders, blend caches and SFT files; verify stamps and report pages, cheap to redo, not (a page
        records what it is made for instead: :meth:`page_recipes`)."""
        units, outputs = self.units, self.outputs
        identities = {raw_index_path(stem): _digest("index", units.file(stem).path) for stem in units.files
                      if stem in units.indexed}
        for build in units.builds:
            tokenizer = units.tokenizer_of(build)["path"]
            if build in units.token_sources:
                made = _digest("tokens", tokenizer, self.tokens_in_options(build), self.tokens_in_outputs(build))
            else:
                made = _digest("pack", tokenizer, [(unit, [units.file(stem).path for stem in units.unit(unit).stems],
                                                    self.pack_options(unit), self.pack_outputs(unit))
                                                   for unit in units.builds[build].units])
            kinds = outputs.kinds(build)
            identities.update({path: made for kind in kinds if kind.in_pack_pass
                               for path in format_files(kind, build)})
            if units.config["keep_parts"] and len(units.builds[build].units) > 1:
                identities.update({path: made for unit in units.builds[build].units
                                   for path in (part_pbin_path(unit), f"{part_pbin_path(unit)}.meta.json")})
            identities.update({path: _digest(made, self.conversion_options(kind, build)) for kind in kinds
                               if not kind.in_pack_pass for path in format_files(kind, build)})
            sampled = _digest(made, self.sample_index_options(build))
            identities.update({path: sampled for path in outputs.cache_dirs(build)})
            identities.update({path: _digest(sampled, self.best_fit_options(build))
                               for path in outputs.packed_index_dirs(build)})
            identities.update({path: _digest(made, self.olmo_best_fit_options(build), units.sampling["seq_lengths"])
                               for path in outputs.olmo_packing_dirs(build)})
        for blend in units.blends:
            blended = _digest("blend", self.blend_options(blend))
            identities.update({path: blended for path in outputs.cache_dirs(blend_cache_name(blend))})
            identities.update({path: _digest(blended, self.blend_best_fit_options(blend))
                               for path in outputs.blend_packing_dirs(blend)})
        for name in units.config["sft"]:
            made = _digest("sft", self.sft_config(name))
            identities.update({path: made for path in [*sft_files(name), *outputs.sft_olmo_folders(name)]})
            packed = _digest(made, units.config["sft"][name]["packing"], self.sft_olmo_best_fit_options(name))
            identities.update({path: packed
                               for path in [*outputs.sft_packing_dirs(name), *outputs.sft_olmo_packing_dirs(name)]})
        return identities

    def report_recipe(self, build: str) -> str:
        """What a build's report page is made for: a digest of its job's options and of its verify job's (the caches
        and best-fit folders it reads, the files of its formats, the inputs verified...) and of both format
        versions. A config that shares the build but not these (other ``sampling.seq_lengths``, another
        ``on_bad_line``) writes its own page under the same name; the page records this digest, so that ``--report``
        refuses another config's (:func:`tokenmill.plan.records.page_conflict`). Every part is a param the workflow
        records for the page's job or its verify job: after a run, the page holds its config's recipe."""
        return _digest("report", FORMAT_VERSIONS["report"], self.report_options(build), FORMAT_VERSIONS["verify"],
                       self.verify_options(build))

    def sft_report_recipe(self, name: str) -> str:
        """What an SFT set's report page is made for (see :meth:`report_recipe`): its best-fit folders and the
        verify options of its set."""
        return _digest("report sft", FORMAT_VERSIONS["report"], self.sft_report_options(name),
                       FORMAT_VERSIONS["verify"], self.sft_verify_options(name))

    def blend_report_recipe(self, blend: str, seq_length: int | str, seed: int | str) -> str:
        """What a blend's report page of one length and seed is made for (see :meth:`report_recipe`): whether it
        shows the packed blend (``packing: best_fit``), whose folder is named as the cache's."""
        folder = packed_index_dir(blend_cache_name(blend), seq_length, seed)
        return _digest("report blend", FORMAT_VERSIONS["report"], folder in self.outputs.blend_packing_dirs(blend))

    def page_recipes(self) -> dict[str, str]:
        """Every report page the plan makes, with its recipe (:meth:`report_recipe`), by path: recorded in the
        config's plan record, and asked of the pages before ``snakemake --report`` embeds them."""
        units, outputs = self.units, self.outputs
        pages = {report_page(build + outputs.view(build)): self.report_recipe(build) for build in units.builds}
        pages.update({report_page(blend_cache_name(blend), seq_length, seed):
                      self.blend_report_recipe(blend, seq_length, seed) for blend in units.blends
                      for seq_length in units.sampling["seq_lengths"] for seed in units.sampling["seeds"]})
        pages.update({sft_report_page(name + outputs.sft_view(name)): self.sft_report_recipe(name)
                      for name in units.config["sft"]})
        return pages

    def hf_tokenizer_options(self, tokenizer: str) -> list[str]:
        """``tokenmill hf-tokenizer-folder`` arguments of a config tokenizer."""
        entry = self.units.config["tokenizers"][tokenizer]
        return [entry["path"], "--eod", entry["eod"], "-o", hf_tokenizer_folder(tokenizer)]
