"""What the Snakemake side calls. The build plan (:class:`~tokenmill.plan.facade.Plan`), one object per
responsibility: :mod:`~tokenmill.plan.units` (what is built: datasets → builds → units, blends, SFT sets;
the config's checks in :mod:`~tokenmill.plan.config_checks`),
:mod:`~tokenmill.plan.outputs` (where each job's outputs go, the targets) and :mod:`~tokenmill.plan.commands`
(each job's arguments and identities), over :mod:`~tokenmill.plan.layout` (every path); and what the plan does
with the tree: :mod:`~tokenmill.plan.prune` (outputs no longer planned, moved aside; across file systems by
:mod:`~tokenmill.plan.copy_across`),
:mod:`~tokenmill.plan.records` (each config's plan by name, so that configs share a folder) and
:mod:`~tokenmill.plan.summary` (the screens that end a build).

May import: ``tokenmill.FORMAT_VERSIONS``, the root's ``errors`` and ``config``; ``files``, ``inputs``,
``tokenization``, ``formats``, ``megatron``, ``best_fit``, ``pack``. Nothing here imports Snakemake.

The build plan: from a validated workflow config, what is built, from which inputs, where, and with
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

Every option that changes an output is returned here as plain strings (:meth:`Commands.pack_options`,
:meth:`Commands.sampling_options`, ...), so the workflow records them as Snakemake params and reruns
exactly the jobs an edit affects. So is each input's and tokenizer's size and modification time
(:meth:`Commands.unit_identity`, :meth:`Commands.file_identity`): a file replaced by an *older* one
(``cp -p``, ``rsync -a``), which
Snakemake's mtime trigger misses, still reruns what reads it. Errors name the config key:
``datasets.web.inputs: ...``.

Cost: one ``glob`` per pattern and one ``stat`` per input file, and one footer read per Parquet file
bigger than ``shard_bytes``; the rest is O(number of units).
"""

from __future__ import annotations

from tokenmill.plan.commands import Commands
from tokenmill.plan.facade import Plan
from tokenmill.plan.layout import (PARTS_FOLDER, blend_cache_name, brace_ranges, build_of, cache_dir, datatrove_name,
                                   hf_tokenizer_folder, megatron_prefix, olmo_folder, packed_index_dir_of, packed_path,
                                   part_megatron_prefix, part_pbin_path, raw_index_path, report_page, sft_files,
                                   sft_report_page, verified_blend_stamp, verified_sft_stamp, verified_stamp)
from tokenmill.plan.outputs import Outputs
from tokenmill.plan.units import Build, InputFile, Unit, Units, job_flags_of, parse_size

__all__ = ["Plan", "Units", "Outputs", "Commands", "InputFile", "Unit", "Build", "parse_size", "job_flags_of",
           "raw_index_path", "packed_path", "PARTS_FOLDER", "part_pbin_path", "part_megatron_prefix", "megatron_prefix",
           "datatrove_name", "olmo_folder", "cache_dir", "blend_cache_name", "verified_stamp", "verified_blend_stamp",
           "verified_sft_stamp", "sft_files", "report_page", "sft_report_page", "build_of", "brace_ranges",
           "hf_tokenizer_folder", "packed_index_dir_of"]
