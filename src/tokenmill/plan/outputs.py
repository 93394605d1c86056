"""Where a config's outputs go: the files and folders each job writes and the outputs other jobs read, for the
planned builds, blends and SFT sets (:class:`tokenmill.plan.units.Units`), each spelled by
:mod:`tokenmill.plan.layout`; and every final file of the matrix (:meth:`Outputs.all_targets`), which the
workflow's ``all`` asks for and ``prune`` keeps.

Cost: string building, O(units + builds x sequence lengths x seeds); :meth:`Outputs.hf_tokenizer_folders` one
``stat`` per tokenizer.
"""

from __future__ import annotations

import os

from tokenmill.config import default
from tokenmill.formats.kinds import OutputFormat, formats_of
from tokenmill.plan.layout import (blend_cache_name, cache_dir, format_files, formats_view, hf_tokenizer_folder,
                                   megatron_prefix, olmo_packing_dir, packed_index_dir, packed_path, part_path,
                                   part_pbin_path, raw_index_path, report_page, sft_files, sft_format_folder,
                                   sft_olmo_packing_dir, sft_packing_dir, sft_report_page, verified_blend_stamp,
                                   verified_sft_stamp, verified_stamp)
from tokenmill.plan.units import Units

__all__ = ["Outputs"]


class Outputs:
    """The outputs of the planned ``units``: what each job writes and what the next reads, by build, unit,
    blend or SFT set name, as paths relative to the working directory.

    Args:
        units: what the config builds.
    """

    def __init__(self, units: Units):
        self.units = units
        # where best-fit packing (tokenmill.best_fit, a room above the formats') writes for each format it packs for
        # (the rows' ``best_fit``): a packed index per length and seed, OLMo-core's work dir per length
        self._best_fit_dirs = {"megatron": self._packed_index_dirs, "olmo": self._olmo_packing_dirs}

    def kinds(self, build: str) -> list[OutputFormat]:
        """The rows of a build's formats (:func:`tokenmill.formats.kinds.formats_of`), the ``.pbin``'s first."""
        return formats_of(self.units.formats(build))

    def sampled(self, build: str) -> bool:
        """Whether Megatron's sample indices are built over a build (one of its formats is ``sampled``): its index
        caches, blends, packed index and the tokenizer folder a job loads."""
        return any(kind.sampled for kind in self.kinds(build))

    def unit_index(self, unit: str) -> list[str]:
        """The raw index a unit is read through: none for compressed or Parquet files (read as a
        stream) and for a group of small files (scanned by the job)."""
        return [raw_index_path(stem) for stem in self.units.unit(unit).stems if stem in self.units.indexed]

    def merge_units(self, build: str) -> list[str]:
        """The unit ``.pbin`` files of a merged build, in input order."""
        return [part_pbin_path(unit) for unit in self.units.builds[build].units]

    def merge_unit_megatron_files(self, build: str) -> list[str]:
        """The units' files a merged build merges besides their ``.pbin``: those of its other formats written in
        pack's pass (Megatron's ``.bin`` and ``.idx``)."""
        return [f"{part_path(kind, unit)}{suffix}" for unit in self.units.builds[build].units
                for kind in self.kinds(build) if kind.in_pack_pass and kind.made_from_pbin for suffix in kind.files]

    def blend_inputs(self, blend: str) -> list[str]:
        """The Megatron ``.bin/.idx`` and the sidecar of every dataset of a blend."""
        return [path for build in self.units.blends[blend]
                for path in (f"{megatron_prefix(build)}.bin", f"{megatron_prefix(build)}.idx",
                             f"{packed_path(build)}.meta.json")]

    def built_files(self, build: str) -> list[str]:
        """A build's files in its formats: the ``.pbin`` and sidecar (the others are made from its tokens),
        Megatron's ``.bin/.idx``, datatrove's ``.ds``, ``.ds.index`` and ``.ds.metadata``, OLMo's folder."""
        return [path for kind in self.kinds(build) for path in format_files(kind, build)]

    def cache_dirs(self, name: str) -> list[str]:
        """The cache folders of a build (or of :func:`blend_cache_name`), one per sequence length and seed;
        none for a build without the ``megatron`` format."""
        if name in self.units.builds and not self.sampled(name):
            return []
        sampling = self.units.sampling
        return [cache_dir(name, seq_length, seed) for seq_length in sampling["seq_lengths"]
                for seed in sampling["seeds"]]

    def best_fit_dirs(self, build: str) -> list[str]:
        """A build's best-fit packing outputs (dataset ``packing: best_fit``), for each of its formats best-fit
        packs for: :meth:`packed_index_dirs`, then :meth:`olmo_packing_dirs`."""
        if self.units.dataset_of(build)["packing"] != "best_fit":
            return []
        return [path for kind in self.kinds(build) if kind.best_fit for path in self._best_fit_dirs[kind.name](build)]

    def packed_index_dirs(self, build: str) -> list[str]:
        """A best-fit build's packed index per sequence length and seed, over Megatron's files (as planned)."""
        planned = set(self.best_fit_dirs(build))
        return [path for path in self._packed_index_dirs(build) if path in planned]

    def olmo_packing_dirs(self, build: str) -> list[str]:
        """A best-fit build's OLMo-core work dir per sequence length, beside its OLMo parts (as planned)."""
        planned = set(self.best_fit_dirs(build))
        return [path for path in self._olmo_packing_dirs(build) if path in planned]

    def _packed_index_dirs(self, build: str) -> list[str]:
        sampling = self.units.sampling
        return [packed_index_dir(build, seq_length, seed) for seq_length in sampling["seq_lengths"]
                for seed in sampling["seeds"]]

    def _olmo_packing_dirs(self, build: str) -> list[str]:
        return [olmo_packing_dir(build, seq_length) for seq_length in self.units.sampling["seq_lengths"]]

    def blend_packing_dirs(self, blend: str) -> list[str]:
        """A blend's packed blend per sequence length and seed (blend ``packing: best_fit``)."""
        if self.units.config["blends"][blend]["packing"] != "best_fit":
            return []
        sampling = self.units.sampling
        return [packed_index_dir(blend_cache_name(blend), seq_length, seed)
                for seq_length in sampling["seq_lengths"] for seed in sampling["seeds"]]

    def job_data_path(self, build: str) -> str:
        """A build's Megatron prefix as the training job spells it (hashed into the cache names)."""
        return megatron_prefix(build, self.units.sampling["megatron_path_prefix"])

    def view(self, build: str) -> str:
        """What the build's verify stamp and report page add to its name: its formats (:func:`formats_view`)."""
        return formats_view(self.units.formats(build), default("datasets.*.formats"))

    def sft_view(self, name: str) -> str:
        """What an SFT set's verify stamp and report page add to its name: its formats (:func:`formats_view`)."""
        return formats_view(self.units.config["sft"][name]["formats"], default("sft.*.formats"))

    def verify_files(self, build: str) -> list[str]:
        """Every file ``rule verify`` checks for a build: built files and the local inputs they come from (its
        objects are checked by their ETag, named in its arguments: no input of Snakemake's)."""
        inputs = self.units.build_inputs(build)
        return [*self.built_files(build), *self.units.token_files(build),
                *(file.path for file in inputs if file.etag is None),  # objects: no file
                *(raw_index_path(file.stem) for file in inputs if file.stem in self.units.indexed),
                *self.cache_dirs(build)]

    def sft_olmo_folders(self, name: str) -> list[str]:
        """The folders of an SFT set's formats converted from its pair (its OLMo folder where its formats name
        olmo, the one the schema takes)."""
        return [sft_format_folder(name, kind) for kind in formats_of(self.units.config["sft"][name]["formats"])
                if kind.made_from_pbin]

    def sft_packing_dirs(self, name: str) -> list[str]:
        """An SFT set's best-fit rows (``packing: best_fit``)."""
        return [sft_packing_dir(name)] if self.units.config["sft"][name]["packing"] == "best_fit" else []

    def sft_olmo_packing_dirs(self, name: str) -> list[str]:
        """An SFT set's OLMo-core work dir of best-fit packing caches (``packing: best_fit`` and olmo)."""
        return [sft_olmo_packing_dir(name)] if self.sft_packing_dirs(name) and self.sft_olmo_folders(name) else []

    def hf_tokenizer_folders(self) -> list[str]:
        """The config tokenizers given as a ``tokenizer.json`` with an EOD whose data is made in the Megatron
        format: each gets the folder a job's HuggingFaceTokenizer loads (:func:`hf_tokenizer_folder`)."""
        units = self.units
        used = {units.builds[build].tokenizer for build in units.builds if self.sampled(build)}
        return [name for name, tokenizer in units.config["tokenizers"].items()
                if name in used and tokenizer["type"] is None and tokenizer.get("eod") is not None
                and os.path.isfile(tokenizer["path"])]

    def part_files(self, build: str) -> list[str]:
        """The files of a build packed in several units, before their merge (none for a build of one unit): each
        unit's ``.pbin``, sidecar and the files of the build's other formats written in pack's pass (Megatron's
        ``.bin/.idx``)."""
        if len(self.units.builds[build].units) < 2:
            return []
        return [f"{part_path(kind, unit)}{suffix}" for unit in self.units.builds[build].units
                for kind in self.kinds(build) if kind.in_pack_pass for suffix in kind.files]

    def all_targets(self) -> list[str]:
        """Every final file of the configured matrix: raw indexes, packed files and their sidecars,
        Megatron and datatrove files (as each dataset's ``formats`` ask), caches, blends, SFT pairs,
        verify stamps and report pages. Snakemake checks for a missing output only among the files a
        target asks for (a deleted sidecar beside an intact ``.pbin`` would otherwise stay deleted), so
        each is named here."""
        units = self.units
        targets = [raw_index_path(stem) for stem in units.files if stem in units.indexed]
        for build in units.builds:
            targets += [*self.built_files(build), *self.cache_dirs(build), *self.best_fit_dirs(build),
                        verified_stamp(build + self.view(build)), report_page(build + self.view(build))]
            if units.config["keep_parts"]:  # kept, so rebuilt when deleted
                targets += self.part_files(build)
        for blend in units.blends:
            name = blend_cache_name(blend)
            targets += self.cache_dirs(name) + self.blend_packing_dirs(blend) + [verified_blend_stamp(blend)]
            targets += [report_page(name, seq_length, seed)
                        for seq_length in units.sampling["seq_lengths"] for seed in units.sampling["seeds"]]
        for name in units.config["sft"]:
            targets += [*sft_files(name), *self.sft_olmo_folders(name), *self.sft_packing_dirs(name),
                        *self.sft_olmo_packing_dirs(name), verified_sft_stamp(name + self.sft_view(name)),
                        sft_report_page(name + self.sft_view(name))]
        return targets + [f"{hf_tokenizer_folder(name)}/{file}" for name in self.hf_tokenizer_folders()
                          for file in ("tokenizer.json", "tokenizer_config.json")]
