"""Each job's command: the ``tokenmill`` arguments, inputs and identities of every rule, from the planned
units (:class:`tokenmill.plan.units.Units`) and the layout (:mod:`tokenmill.plan.layout`). Every option that
changes an output is a plain string here, so the workflow records it as a Snakemake param and reruns exactly
the jobs an edit affects.

Cost: O(units) string building.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex

from tokenmill import FORMAT_VERSIONS
from tokenmill.megatron.gpt_indices import SPLIT_NAMES
from tokenmill.plan.layout import (PARTS_FOLDER, blend_cache_name, brace_ranges, cache_dir, datatrove_name,
                                   hf_tokenizer_folder, megatron_prefix, olmo_folder, olmo_packing_dir,
                                   packed_index_dir, packed_path, part_megatron_prefix, part_pbin_path, raw_index_path,
                                   report_page, sft_files, sft_olmo_folder, sft_olmo_packing_dir, sft_packing_dir,
                                   sft_report_page, verified_blend_stamp, verified_sft_stamp, verified_stamp)
from tokenmill.plan.units import MAX_LISTED_INPUT_CHARS, Units, job_flags_of, path_identity

__all__ = ["Plan"]


class Plan(Units):
    """Everything the workflow builds for a validated config (defaults filled in): the units
    (:class:`Units`), and each job's command-line arguments, inputs, identities and sizes, as plain
    strings that Snakemake records as params.

    Args:
        config: the workflow config after schema validation.

    Raises:
        TokenmillError: a config that cannot be built, naming the key (an input matching no file,
            an input listed twice, an unknown tokenizer, clashing output names, bad blend weights...).
    """

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
        options += self._tokenizer_options(tokenizer)
        if dataset["allow_duplicate_inputs"]:
            options.append("--allow-duplicate-inputs")
        return options

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
        return [*self.token_sources[build],
                *self._tokenizer_options(self.config["tokenizers"][self.builds[build].tokenizer])]

    def tokens_in_outputs(self, build: str) -> list[str]:
        """``tokenmill tokens-in`` outputs: the build's ``.pbin`` and, with the megatron format, its prefix."""
        return ["-o", packed_path(build), *(["--megatron", megatron_prefix(build)]
                                            if "megatron" in self.formats(build) else [])]

    def tokens_in_inputs(self, build: str) -> list[str]:
        """The files a ``tokens_in`` job reads: the sources' files and the tokenizer."""
        return [*self.token_files(build), self.config["tokenizers"][self.builds[build].tokenizer]["path"]]

    def tokens_identity(self, build: str) -> str:
        """Size and modification time of the files a ``tokens_in`` job reads (see :meth:`unit_identity`)."""
        return "; ".join([*map(path_identity, self.token_files(build)),
                          self.tokenizer_identities[self.builds[build].tokenizer]])

    def pack_outputs(self, unit_name: str) -> list[str]:
        """The ``tokenmill pack`` output arguments of a unit: its ``.pbin`` and, where its build has the
        ``megatron`` format, Megatron's files from the same pass. (datatrove's ``.ds`` files are converted
        from the build's ``.pbin``, so that adding that format never tokenizes again.)"""
        unit = self.unit(unit_name)
        build = self.builds[unit.build]
        merged = len(build.units) > 1
        outputs = ["-o", part_pbin_path(unit_name) if merged else packed_path(unit_name)]
        if "megatron" in self.formats(build.name):
            outputs += ["--megatron", part_megatron_prefix(unit_name) if merged else megatron_prefix(unit_name)]
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
        return path_identity(file.path, file.size, file.mtime_ns)

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
        """``tokenmill to-datatrove`` arguments: the tokenizer named as the config file spells it (also where
        the plan's paths were made absolute, on object storage: the ``.ds.metadata`` of a local build)."""
        tokenizer = self.builds[build].tokenizer
        return ["--tokenizer-name", self.spelled_paths.get(tokenizer, self.config["tokenizers"][tokenizer]["path"])]

    def olmo_options(self, build: str) -> list[str]:
        """``tokenmill to-olmo`` arguments: tokens per part and the id field (``""``: line numbers)."""
        dataset = self.config["datasets"][self.builds[build].dataset]
        return ["--max-tokens", str(dataset["olmo_max_tokens"]), "--id-field", dataset["id_field"] or ""]

    def report_options(self, build: str) -> list[str]:
        """``tokenmill report`` arguments: the build's files in other formats, its cache and best-fit folders,
        and the field it counts by."""
        count_by = self.config["datasets"][self.builds[build].dataset]["count_by"]
        return [*(part for cache in self.cache_dirs(build) for part in ("--cache", cache)),
                *(part for folder in self.best_fit_dirs(build) for part in ("--best-fit", folder)),
                *(part for path in self.built_files(build)[2:] for part in ("--file", path)),
                *(["--count-by", count_by] if count_by else [])]

    def blend_inputs(self, blend: str) -> list[str]:
        """The Megatron ``.bin/.idx`` and the sidecar of every dataset of a blend."""
        return [path for build in self.blends[blend]
                for path in (f"{megatron_prefix(build)}.bin", f"{megatron_prefix(build)}.idx",
                             f"{packed_path(build)}.meta.json")]

    def built_files(self, build: str) -> list[str]:
        """A build's files in its formats: the ``.pbin`` and sidecar (the others are made from its tokens),
        Megatron's ``.bin/.idx``, datatrove's ``.ds``, ``.ds.index`` and ``.ds.metadata``, OLMo's folder."""
        files = [packed_path(build), f"{packed_path(build)}.meta.json"]
        if "megatron" in self.formats(build):
            files += [f"{megatron_prefix(build)}.bin", f"{megatron_prefix(build)}.idx"]
        if "datatrove" in self.formats(build):
            files += [f"{datatrove_name(build)}{suffix}" for suffix in (".ds", ".ds.index", ".ds.metadata")]
        if "olmo" in self.formats(build):
            files.append(olmo_folder(build))
        return files

    def cache_dirs(self, name: str) -> list[str]:
        """The cache folders of a build (or of :func:`blend_cache_name`), one per sequence length and seed;
        none for a build without the ``megatron`` format."""
        if name in self.builds and "megatron" not in self.formats(name):
            return []
        return [cache_dir(name, seq_length, seed)
                for seq_length in self.sampling["seq_lengths"] for seed in self.sampling["seeds"]]

    def best_fit_dirs(self, build: str) -> list[str]:
        """A build's best-fit packing outputs (dataset ``packing: best_fit``): :meth:`packed_index_dirs`, then
        :meth:`olmo_packing_dirs`."""
        return self.packed_index_dirs(build) + self.olmo_packing_dirs(build)

    def packed_index_dirs(self, build: str) -> list[str]:
        """A best-fit build's packed index per sequence length and seed (with the megatron format)."""
        if self.config["datasets"][self.builds[build].dataset]["packing"] != "best_fit" or \
                "megatron" not in self.formats(build):
            return []
        return [packed_index_dir(build, seq_length, seed) for seq_length in self.sampling["seq_lengths"]
                for seed in self.sampling["seeds"]]

    def olmo_packing_dirs(self, build: str) -> list[str]:
        """A best-fit build's OLMo-core work dir per sequence length (with the olmo format)."""
        if self.config["datasets"][self.builds[build].dataset]["packing"] != "best_fit" or \
                "olmo" not in self.formats(build):
            return []
        return [olmo_packing_dir(build, seq_length) for seq_length in self.sampling["seq_lengths"]]

    def best_fit_options(self, build: str) -> list[str]:
        """``tokenmill best-fit`` options of a build's packed index (the rule gives its length, seed and output):
        the long-document strategy and the split."""
        dataset = self.config["datasets"][self.builds[build].dataset]
        return ["--long-doc-strategy", dataset["long_doc_strategy"], "--split", self.sampling["split"]]

    def olmo_best_fit_options(self, build: str) -> list[str]:
        """``tokenmill best-fit`` options of a build's OLMo-core packing caches: the long-document strategy and
        the parts' folder as the job spells it (``sampling.olmo_path_prefix``: hashed into the names)."""
        dataset = self.config["datasets"][self.builds[build].dataset]
        return ["--long-doc-strategy", dataset["long_doc_strategy"], "--job-path-prefix",
                f"{self.sampling['olmo_path_prefix'].rstrip('/')}/{build}"]

    def blend_packing_dirs(self, blend: str) -> list[str]:
        """A blend's packed blend per sequence length and seed (blend ``packing: best_fit``)."""
        if self.config["blends"][blend]["packing"] != "best_fit":
            return []
        return [packed_index_dir(blend_cache_name(blend), seq_length, seed)
                for seq_length in self.sampling["seq_lengths"] for seed in self.sampling["seeds"]]

    def blend_best_fit_options(self, blend: str) -> list[str]:
        """``tokenmill best-fit --blend`` arguments of a blend's packed blend (the rule gives its length, seed
        and output): weighted prefixes, the split, each split's samples, the long-document strategy."""
        counts = self.sampling["num_samples"]
        return ["--blend", *(part for build, weight in self.blends[blend].items()
                             for part in (str(weight), megatron_prefix(build))),
                "--split", self.sampling["split"], *(f"--{name}-samples={counts[name]}" for name in SPLIT_NAMES),
                "--long-doc-strategy", self.config["blends"][blend]["long_doc_strategy"]]

    def job_data_path(self, build: str) -> str:
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
        return ["--job-data-path", self.job_data_path(build), *self.sampling_options(build)]

    def blend_options(self, blend: str) -> list[str]:
        """``tokenmill blend`` arguments: weighted prefixes, hashed paths, sampling and tokenizer options."""
        weights = self.blends[blend]
        arguments = [part for build, weight in weights.items() for part in (str(weight), megatron_prefix(build))]
        first = next(iter(weights))
        return arguments + self.sampling_options(first) + [
            "--job-data-paths", *(self.job_data_path(build) for build in weights)]

    def verify_files(self, build: str) -> list[str]:
        """Every file ``rule verify`` checks for a build: built files and the local inputs they come from (its
        objects are checked by their ETag, named in its arguments: no input of Snakemake's)."""
        inputs = self.build_inputs(build)
        return [*self.built_files(build), *self.token_files(build),
                *(file.path for file in inputs if file.etag is None),  # objects: no file
                *(raw_index_path(file.stem) for file in inputs if file.stem in self.indexed),
                *self.cache_dirs(build)]

    def verify_options(self, build: str) -> list[str]:
        """``tokenmill verify`` arguments: the raw index with its JSONL, the ``.pbin`` with the inputs it
        must cover, the Megatron prefix, the datatrove ``.ds`` and the caches, as the build's formats have them."""
        formats = self.formats(build)
        checked = [packed_path(build), *([megatron_prefix(build)] if "megatron" in formats else []),
                   *([f"{datatrove_name(build)}.ds"] if "datatrove" in formats else []),
                   *([olmo_folder(build)] if "olmo" in formats else []), *self.cache_dirs(build)]
        arguments = ["--made-from", packed_path(build)] if {"megatron", "datatrove", "olmo"} & set(formats) else []
        indexed = self.indexed_input(build)
        if indexed is not None:
            arguments += ["--jsonl", indexed.path]
            checked.insert(0, raw_index_path(indexed.stem))
        # a build of tokens covers its .bin files (each with its .idx) and .pbin files
        paths = [file.path for file in self.build_inputs(build)] + [
            path for path in self.token_files(build) if not path.endswith(".idx")]
        # One shell command holds at most 128 KiB: past that verify checks the sidecar's sources among
        # themselves only (each file covered once, whole), not against the config's list.
        if sum(len(path) + 3 for path in paths) < MAX_LISTED_INPUT_CHARS:
            arguments += ["--inputs", *paths]
        return arguments + ["--", *checked]

    def sft_identity(self, name: str) -> str:
        """Size and modification time of an SFT dataset's files and tokenizer, size and ETag of its objects
        (see :meth:`unit_identity`)."""
        return "; ".join([*(path_identity(path) for path in self.sft_inputs(name)),
                          *(f"{item.url}: {item.size} bytes, ETag {item.tag}" for item in self.sft_objects(name))])

    def sft_olmo_folders(self, name: str) -> list[str]:
        """The OLMo folder of an SFT set whose formats name olmo (none otherwise)."""
        return [sft_olmo_folder(name)] if "olmo" in self.config["sft"][name]["formats"] else []

    def sft_packing_dirs(self, name: str) -> list[str]:
        """An SFT set's best-fit rows (``packing: best_fit``)."""
        return [sft_packing_dir(name)] if self.config["sft"][name]["packing"] == "best_fit" else []

    def sft_olmo_packing_dirs(self, name: str) -> list[str]:
        """An SFT set's OLMo-core work dir of best-fit packing caches (``packing: best_fit`` and olmo)."""
        return [sft_olmo_packing_dir(name)] if self.sft_packing_dirs(name) and self.sft_olmo_folders(name) else []

    def sft_olmo_best_fit_options(self, name: str) -> list[str]:
        """``tokenmill best-fit`` options of an SFT set's OLMo-core packing caches: its length and the parts'
        folder as the job spells it (``olmo_path``: hashed into the names)."""
        entry = self.config["sft"][name]
        return ["--seq-length", str(entry["seq_length"]), "--job-path-prefix",
                (entry["olmo_path"] or sft_olmo_folder(name)).rstrip("/")]

    def sft_verify_options(self, name: str) -> list[str]:
        """``tokenmill verify`` arguments of an SFT set: the pair, and its OLMo folder against it."""
        pbin = sft_files(name)[0]
        folders = self.sft_olmo_folders(name)
        return [pbin, *folders, *(["--made-from", pbin] if folders else [])]

    def sft_report_options(self, name: str) -> list[str]:
        """``tokenmill report --sft`` options of an SFT set: its best-fit rows' folders (``--best-fit``)."""
        return [part for folder in self.sft_packing_dirs(name) + self.sft_olmo_packing_dirs(name)
                for part in ("--best-fit", folder)]

    def sft_config(self, name: str) -> str:
        """The resolved config that ``tokenmill sft -`` reads: this entry and its tokenizer (as JSON)."""
        # packing and olmo_path are left out: they change only the packing jobs' outputs, never the pair; workers
        # (the rule's threads) changes no byte
        entry = {key: value for key, value in self.config["sft"][name].items()
                 if key not in ("packing", "olmo_path", "workers")}
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
            targets += [*self.built_files(build), *self.cache_dirs(build), *self.best_fit_dirs(build),
                        verified_stamp(build), report_page(build)]
            if self.config["keep_parts"] and len(self.builds[build].units) > 1:  # kept, so rebuilt when deleted
                megatron = "megatron" in self.formats(build)
                targets += [path for unit in self.builds[build].units
                            for path in (part_pbin_path(unit), f"{part_pbin_path(unit)}.meta.json",
                                         *([f"{part_megatron_prefix(unit)}.bin", f"{part_megatron_prefix(unit)}.idx"]
                                           if megatron else []))]
        for blend in self.blends:
            name = blend_cache_name(blend)
            targets += self.cache_dirs(name) + self.blend_packing_dirs(blend) + [verified_blend_stamp(blend)]
            targets += [report_page(name, seq_length, seed)
                        for seq_length in self.sampling["seq_lengths"] for seed in self.sampling["seeds"]]
        for name in self.config["sft"]:
            targets += [*sft_files(name), *self.sft_olmo_folders(name), *self.sft_packing_dirs(name),
                        *self.sft_olmo_packing_dirs(name), verified_sft_stamp(name), sft_report_page(name)]
        return targets + [f"{hf_tokenizer_folder(name)}/{file}" for name in self.hf_tokenizer_folders()
                          for file in ("tokenizer.json", "tokenizer_config.json")]

    def hf_tokenizer_folders(self) -> list[str]:
        """The config tokenizers given as a ``tokenizer.json`` with an EOD whose data is made in the Megatron
        format: each gets the folder a job's HuggingFaceTokenizer loads (:func:`hf_tokenizer_folder`)."""
        used = {self.builds[build].tokenizer for build in self.builds if "megatron" in self.formats(build)}
        return [name for name, tokenizer in self.config["tokenizers"].items()
                if name in used and tokenizer["type"] is None and tokenizer.get("eod") is not None
                and os.path.isfile(tokenizer["path"])]

    def tokenizer_folder_identities(self) -> dict[str, str]:
        """Each tokenizer folder this plan writes, with what it is written from (its file as the config spells
        it and its EOD): two configs of one working folder must not write one folder differently
        (:func:`tokenmill.plan.records.tokenizer_folder_conflict`)."""
        return {hf_tokenizer_folder(name): f"{self.config['tokenizers'][name]['path']} with EOD "
                                           f"{self.config['tokenizers'][name]['eod']!r}"
                for name in self.hf_tokenizer_folders()}

    def output_identities(self) -> dict[str, str]:
        """What makes each output that another config of the working folder could make differently, by path: a
        digest of the options and the paths (as planned, not their sizes or times) of the inputs and tokenizer
        of its job, equal for two configs exactly where the two would make the same bytes
        (:func:`tokenmill.plan.records.output_conflict`). Raw indexes, a build's files in its formats, caches
        and best-fit folders, blend caches and SFT files; verify stamps and report pages, cheap to redo, not."""

        def digest(*parts: object) -> str:
            return hashlib.sha256(json.dumps(parts, sort_keys=True).encode("utf-8")).hexdigest()[:16]

        identities = {raw_index_path(stem): digest("index", self.file(stem).path) for stem in self.files
                      if stem in self.indexed}
        for build in self.builds:
            tokenizer = self.config["tokenizers"][self.builds[build].tokenizer]["path"]
            if build in self.token_sources:
                made = digest("tokens", tokenizer, self.tokens_in_options(build), self.tokens_in_outputs(build))
            else:
                made = digest("pack", tokenizer, [(unit, [self.file(stem).path for stem in self.unit(unit).stems],
                                                   self.pack_options(unit), self.pack_outputs(unit))
                                                  for unit in self.builds[build].units])
            formats = self.formats(build)
            megatron = [f"{megatron_prefix(build)}.{ext}" for ext in ("bin", "idx")] if "megatron" in formats else []
            identities.update({path: made for path in (packed_path(build), f"{packed_path(build)}.meta.json",
                                                       *megatron)})
            if self.config["keep_parts"] and len(self.builds[build].units) > 1:
                identities.update({path: made for unit in self.builds[build].units
                                   for path in (part_pbin_path(unit), f"{part_pbin_path(unit)}.meta.json")})
            if "datatrove" in formats:
                identities.update({f"{datatrove_name(build)}{suffix}": digest(made, self.datatrove_options(build))
                                   for suffix in (".ds", ".ds.index", ".ds.metadata")})
            if "olmo" in formats:
                identities[olmo_folder(build)] = digest(made, self.olmo_options(build))
            sampled = digest(made, self.sample_index_options(build))
            identities.update({path: sampled for path in self.cache_dirs(build)})
            identities.update({path: digest(sampled, self.best_fit_options(build))
                               for path in self.packed_index_dirs(build)})
            identities.update({path: digest(made, self.olmo_best_fit_options(build), self.sampling["seq_lengths"])
                               for path in self.olmo_packing_dirs(build)})
        for blend in self.blends:
            blended = digest("blend", self.blend_options(blend))
            identities.update({path: blended for path in self.cache_dirs(blend_cache_name(blend))})
            identities.update({path: digest(blended, self.blend_best_fit_options(blend))
                               for path in self.blend_packing_dirs(blend)})
        for name in self.config["sft"]:
            made = digest("sft", self.sft_config(name))
            identities.update({path: made for path in [*sft_files(name), *self.sft_olmo_folders(name)]})
            packed = digest(made, self.config["sft"][name]["packing"], self.sft_olmo_best_fit_options(name))
            identities.update({path: packed
                               for path in [*self.sft_packing_dirs(name), *self.sft_olmo_packing_dirs(name)]})
        return identities

    def hf_tokenizer_options(self, tokenizer: str) -> list[str]:
        """``tokenmill hf-tokenizer-folder`` arguments of a config tokenizer."""
        entry = self.config["tokenizers"][tokenizer]
        return [entry["path"], "--eod", entry["eod"], "-o", hf_tokenizer_folder(tokenizer)]
