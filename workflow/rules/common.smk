# ---- Config validation, the build plan, input functions and resources ---------------------------
# What is built from what, where and with which options is tokenmill.plan (pure, unit-tested); this
# file validates the config, builds the plan once, and adapts it to Snakemake's wildcards. The rules
# spell their files with tokenmill.plan.layout's functions, given wildcards: one place names each path.

import json
import os
import re
import sys
import time
from shlex import join as shell_join, quote
from types import SimpleNamespace

from tokenmill import FORMAT_VERSIONS
from tokenmill.config import validate_config
from tokenmill.errors import TokenmillError
from tokenmill.files.urls import URLS_VARIABLE, redact_text, urls_variable
from tokenmill.formats.sidecar import sidecar_path
from tokenmill.pack.settings import useful_workers
from tokenmill.plan import Plan
from tokenmill.plan.records import (
    config_identity,
    older_records,
    output_conflict,
    page_conflict,
    tokenizer_folder_conflict,
)
from tokenmill.plan.layout import (
    blend_cache_name,
    cache_dir,
    datatrove_name,
    hf_tokenizer_folder,
    megatron_prefix,
    olmo_folder,
    olmo_packing_dir,
    packed_index_dir,
    packed_path,
    part_megatron_prefix,
    part_pbin_path,
    raw_index_path,
    report_page,
    sft_files,
    sft_olmo_folder,
    sft_olmo_packing_dir,
    sft_packing_dir,
    sft_report_page,
    verified_blend_stamp,
    verified_sft_stamp,
    verified_stamp,
)
from tokenmill.plan.prune import last_run_stamp
from tokenmill.plan.running import alive_line, alive_run
from tokenmill.plan.summary import report_front_page, run_command
from tokenmill.plan.units import with_local_paths_absolute, with_urls_redacted
from tokenmill.views.report import page_recipe

STARTED = time.time()  # the run's start: the logs its failed jobs wrote are newer (onerror)

# Object storage: `snakemake --default-storage-provider s3 --default-storage-prefix s3://bucket/run` keeps
# every output under the prefix and gives each job local copies of its files below STORAGE_ROOT
# (.snakemake/storage/s3/bucket/run/), laid out as a local build's tree. Each command runs there (job_files),
# so that the paths it spells, and those its sidecars and caches record, are a local build's; the config's
# own files (inputs, tokenizers) stay local: absolute, marked local(). Without the flags it is empty.
STORAGE_PREFIX = (workflow.storage_settings.default_storage_prefix or "").rstrip("/")
STORAGE_ROOT = ""
if STORAGE_PREFIX:
    _probe = workflow.storage_registry.default_storage_provider.object(f"{STORAGE_PREFIX}/probe")
    STORAGE_ROOT = str(_probe.local_path().parent)


def _arguments():
    """This command line as Snakemake's parser reads it (~1 s: asked only where needed)."""
    from snakemake.cli import get_argument_parser

    return get_argument_parser().parse_known_args(sys.argv[1:])[0]


def _only_looks():
    """Whether this command runs no job: a dry run (-n), --report, --lint, a graph, a summary or a list (asked only
    while another run is alive)."""
    args = _arguments()
    looks = ("dryrun", "report", "lint", "dag", "rulegraph", "filegraph", "summary", "detailed_summary", "list_rules")
    return any(getattr(args, name, None) for name in looks + ("list_target_rules", "list_changes", "list_untracked"))


def _reports():
    """Whether this command makes a report of the files there are (--report, --reporter; not --report-after-run,
    whose run remakes them first). The parser is asked only where an argument starts as these do."""
    if not workflow.is_main_process or not any(arg.startswith("--rep") for arg in sys.argv[1:]):
        return False
    args = _arguments()
    return bool(args.report or args.reporter) and not args.report_after_run


# A run alive in this folder (its record, written at onstart: plan/running.py): one line, before Snakemake's own
# lock error (and before an --unlock that would free that run's files); a command that runs no job goes on. Jobs
# that read the Snakefile again (a cluster's) are that run's own.
_ALIVE = alive_run() if workflow.is_main_process else None
if _ALIVE:
    if not _only_looks():
        print(f"tokenmill: error: {alive_line(_ALIVE)}", file=sys.stderr)
        sys.exit(1)
    print(f"tokenmill: note: {alive_line(_ALIVE)}", file=sys.stderr)


# A config error is one line naming the file and the key (no schema dump, no traceback frames).
# The schema is workflow/schemas/config.schema.yaml, a copy of the package's, which tokenmill sft uses too.
_CONFIG_SOURCE = ", ".join(map(str, workflow.overwrite_configfiles)) or "config/config.yaml"
try:
    config.update(validate_config(config, _CONFIG_SOURCE))
    # URLs with secrets (user info, presigned queries): jobs take them whole from their environment, and the
    # redacted names everywhere else (commands, params, logs: tokenmill.files.urls)
    _secret_urls = urls_variable(
        path
        for section in ("datasets", "sft")
        for entry in config[section].values()
        for path in entry.get("inputs", [])
    )
    if _secret_urls != "[]":
        os.environ[URLS_VARIABLE] = _secret_urls
    # the tokenizer paths as the config spells them, which datatrove's .ds.metadata records
    _spelled_paths = {name: entry["path"] for name, entry in config["tokenizers"].items()}
    if STORAGE_ROOT:
        config.update(with_local_paths_absolute(config))
    # this config's identity: its file's resolved path, labelled by its name (plan/records.py), so that configs
    # share a working folder
    CONFIG = config_identity(workflow.overwrite_configfiles, config["name"])
    config["name"] = CONFIG.label
    PLAN = Plan(config, _spelled_paths)
    for _note in PLAN.units.notes():
        print(f"tokenmill: note: {_CONFIG_SOURCE}: {_note}", file=sys.stderr)
    for _record in older_records():
        print(
            f"tokenmill: note: {_record}: a plan record of an older tokenmill, by file stem: its outputs are kept as "
            f"another config's; delete it once the config it was written for has run again",
            file=sys.stderr,
        )
    # a tokenizer folder or an output that another config's record makes differently (plan/records.py)
    _clash = tokenizer_folder_conflict(CONFIG, PLAN.commands.tokenizer_folder_identities()) or output_conflict(
        CONFIG, PLAN.commands.output_identities()
    )
    if _clash:
        raise TokenmillError(_clash)
    # a report embeds the pages there are: never one that another config's run (or an earlier plan) made under this
    # config's page names, as when two configs share a build but not its sequence lengths (plan/records.py)
    if _reports():
        _pages = PLAN.commands.page_recipes()
        _foreign = page_conflict(
            CONFIG,
            _pages,
            {page: page_recipe(page) for page in _pages if os.path.isfile(page)},
            run_command(workflow.overwrite_configfiles, workflow.main_snakefile),
        )
        if _foreign:
            raise TokenmillError(_foreign)
except TokenmillError as exc:
    message = str(exc) if str(exc).startswith(_CONFIG_SOURCE) else f"{_CONFIG_SOURCE}: {exc}"
    print(f"tokenmill: error: {redact_text(message)}", file=sys.stderr)
    sys.exit(1)


def _alternatives(names):
    """A regex matching exactly these names (and nothing when there are none)."""
    return "|".join(map(re.escape, names)) or "(?!)"


# Wildcard patterns. They stay short for thousands of files: names of datasets and builds, then
# numbered suffixes; a unit or file stem that matches but does not exist fails in its input function.
_SINGLE_FILE = [name for name, files in PLAN.units.dataset_files.items() if len(files) == 1]
_MULTI_FILE = [name for name, files in PLAN.units.dataset_files.items() if len(files) > 1]
FILE_STEM = rf"(?:{_alternatives(_SINGLE_FILE)})|(?:{_alternatives(_MULTI_FILE)})\.part[0-9]+"
# A build of one unit is packed by the rule whose outputs are its formats (every build has a .pbin; Megatron's
# files come from the same pass); a merged build's units and merge, by whether it has the megatron format.
# datatrove's files are converted from the .pbin (datatrove.smk): adding that format to a built dataset
# converts it, it never tokenizes it again.
SINGLE_UNIT = {megatron: _alternatives(PLAN.units.single_unit_builds(megatron=megatron)) for megatron in (True, False)}
MERGED = {megatron: _alternatives(PLAN.units.merged_builds(megatron=megatron)) for megatron in (True, False)}
UNIT_OF_MERGED = {
    megatron: rf"(?:{builds})(?:\.part[0-9]+(?:\.shard[0-9]+)?|\.shard[0-9]+)" for megatron, builds in MERGED.items()
}
# A dataset of tokens already made (`tokens`) has no pack unit: one tokens_in job writes its .pbin (and Megatron's files).
TOKENS_IN = {megatron: _alternatives(PLAN.units.token_builds(megatron=megatron)) for megatron in (True, False)}
DATATROVE = _alternatives(PLAN.units.builds_with(datatrove=True))
OLMO = _alternatives(PLAN.units.builds_with(olmo=True))
BEST_FIT = _alternatives([build for build in PLAN.units.builds if PLAN.outputs.best_fit_dirs(build)])
BUILD = _alternatives(PLAN.units.builds)
BLEND = _alternatives(PLAN.units.blends)
BEST_FIT_BLEND = _alternatives([blend for blend in PLAN.units.blends if PLAN.outputs.blend_packing_dirs(blend)])
SFT = _alternatives(config["sft"])
SFT_OLMO = _alternatives([name for name in config["sft"] if PLAN.outputs.sft_olmo_folders(name)])
SFT_BEST_FIT = _alternatives([name for name in config["sft"] if PLAN.outputs.sft_packing_dirs(name)])
SFT_OLMO_BEST_FIT = _alternatives([name for name in config["sft"] if PLAN.outputs.sft_olmo_packing_dirs(name)])
HF_TOKENIZER_FOLDERS = _alternatives(PLAN.outputs.hf_tokenizer_folders())
# What a verify stamp's and a report page's name adds for a build's or an SFT set's formats (empty for the
# default ones; layout.formats_view): a name holds no "+"
VIEW = r"(?:\+[a-z]+)*"


def _plan(method, wildcard):
    """An input or params function of one wildcard's value, failing with the plan's one-line error."""

    def function(wildcards):
        try:
            return method(wildcards[wildcard])
        except TokenmillError as exc:
            raise ValueError(redact_text(str(exc))) from None

    return function


def _input(method, wildcard):
    """An input function of one wildcard's value; on object storage its absolute paths (the config's own
    files) are marked local(), every other path being an object under the prefix."""
    plan_function = _plan(method, wildcard)

    def function(wildcards):
        paths = plan_function(wildcards)
        if not STORAGE_ROOT:
            return paths
        mark = lambda path: local(path) if os.path.isabs(path) else path
        return mark(paths) if isinstance(paths, str) else list(map(mark, paths))

    return function


def job_files(wildcards, input, output):
    """Where a job's command runs (``cd``: into STORAGE_ROOT, or nothing in the working directory) and its
    named input and output files as spelled from there: an object's local copy by its path in a local
    build, a local file as given."""

    def spelled(path):
        path = str(path)
        return path[len(STORAGE_ROOT) + 1 :] if STORAGE_ROOT and path.startswith(f"{STORAGE_ROOT}/") else path

    files = {
        name: spelled(paths) if isinstance(paths, str) else list(map(spelled, paths))
        for name, paths in [*input.items(), *output.items()]
    }
    return SimpleNamespace(cd=f"cd {quote(STORAGE_ROOT)} && " if STORAGE_ROOT else "", **files)


def _shell(method, wildcard):
    """A params function giving the plan's argument list as one shell-quoted string. A function of the
    wildcards only, so that Snakemake records its value and reruns a job whose options changed."""
    plan_function = _plan(method, wildcard)
    return lambda wildcards: shell_join(plan_function(wildcards))


# The report's front page: workflow/report/workflow.rst with the command that makes the report again as this
# run is spelled (its -s and --configfile), written under .snakemake/.
REPORT_FRONT_PAGE = report_front_page(
    os.path.join(workflow.basedir, "workflow/report/workflow.rst"),
    ".snakemake/tokenmill/workflow.rst",
    workflow.overwrite_configfiles,
    workflow.main_snakefile,
    PLAN,
)


# ---- Input functions

file_jsonl = _input(lambda stem: PLAN.units.file(stem).path, "stem")
unit_jsonl = _input(PLAN.units.unit_local_inputs, "unit")
unit_index = _input(PLAN.outputs.unit_index, "unit")
unit_tokenizer_path = _input(PLAN.units.unit_tokenizer_path, "unit")
hf_tokenizer_json = _input(lambda name: config["tokenizers"][name]["path"], "tokenizer")
merge_units = _input(PLAN.outputs.merge_units, "build")
tokens_in_files = _input(PLAN.units.token_files, "build")
tokens_in_tokenizer = _input(lambda build: PLAN.units.tokens_in_inputs(build)[-1], "build")
merge_unit_sidecars = _input(lambda build: [f"{path}.meta.json" for path in PLAN.outputs.merge_units(build)], "build")
merge_unit_megatron_files = _input(PLAN.outputs.merge_unit_megatron_files, "build")
verify_inputs = _input(PLAN.outputs.verify_files, "build")
report_caches = _input(PLAN.outputs.cache_dirs, "build")
report_best_fit = _input(PLAN.outputs.best_fit_dirs, "build")
report_files = _input(lambda build: PLAN.outputs.built_files(build)[2:], "build")  # besides the .pbin and its sidecar
blend_caches = _input(lambda blend: PLAN.outputs.cache_dirs(blend_cache_name(blend)), "blend")
blend_megatron_files = _input(PLAN.outputs.blend_inputs, "blend")


def report_blend_best_fit(wildcards):
    """A blend's packed blend of one length and seed, where its packing is best_fit (none otherwise)."""
    folder = packed_index_dir(blend_cache_name(wildcards.blend), wildcards.seq_length, wildcards.seed)
    return [folder] if folder in PLAN.outputs.blend_packing_dirs(wildcards.blend) else []


def report_blend_recipe(wildcards):
    """What a blend's page of one length and seed is made for (tokenmill.plan.commands.Commands.page_recipes)."""
    return PLAN.commands.blend_report_recipe(wildcards.blend, wildcards.seq_length, wildcards.seed)


def report_blend_best_fit_options(wildcards):
    """``--best-fit FOLDER`` for :func:`report_blend_best_fit`'s folder: a plain value Snakemake records."""
    return shell_join([part for folder in report_blend_best_fit(wildcards) for part in ("--best-fit", folder)])


sft_inputs = _input(PLAN.units.sft_inputs, "name")
sft_olmo_folders = _input(PLAN.outputs.sft_olmo_folders, "name")
sft_seq_length = _plan(lambda name: config["sft"][name]["seq_length"], "name")
sft_olmo_best_fit_options = _shell(PLAN.commands.sft_olmo_best_fit_options, "name")
sft_report_rows = _input(
    lambda name: PLAN.outputs.sft_packing_dirs(name) + PLAN.outputs.sft_olmo_packing_dirs(name), "name"
)
sft_report_options = _shell(PLAN.commands.sft_report_options, "name")
sft_report_recipe = _plan(PLAN.commands.sft_report_recipe, "name")


# ---- Params: every option that changes an output, as a plain recorded value

pack_options = _shell(PLAN.commands.pack_options, "unit")
pack_outputs = _shell(PLAN.commands.pack_outputs, "unit")
pack_format = _plan(PLAN.commands.pack_format, "unit")
hf_tokenizer_options = _shell(PLAN.commands.hf_tokenizer_options, "tokenizer")
pack_inputs = _shell(PLAN.commands.pack_inputs, "unit")  # files and URLs (these no input of Snakemake's)
build_megatron_prefix = _plan(megatron_prefix, "build")
datatrove_options = _shell(PLAN.commands.datatrove_options, "build")
olmo_options = _shell(PLAN.commands.olmo_options, "build")
best_fit_options = _shell(PLAN.commands.best_fit_options, "build")
olmo_best_fit_options = _shell(PLAN.commands.olmo_best_fit_options, "build")
unit_identity = _plan(PLAN.commands.unit_identity, "unit")
file_identity = _plan(PLAN.commands.file_identity, "stem")
sample_index_options = _shell(PLAN.commands.sample_index_options, "build")
blend_options = _shell(PLAN.commands.blend_options, "blend")
blend_best_fit_options = _shell(PLAN.commands.blend_best_fit_options, "blend")
verify_options = _shell(PLAN.commands.verify_options, "build")
report_options = _shell(PLAN.commands.report_options, "build")
report_recipe = _plan(PLAN.commands.report_recipe, "build")
sft_config = _plan(PLAN.commands.sft_config, "name")
sft_identity = _plan(PLAN.commands.sft_identity, "name")
sft_pins = _shell(PLAN.commands.sft_pins, "name")
sft_verify_options = _shell(PLAN.commands.sft_verify_options, "name")


# on_bad_line is no part of a pack unit's identity (tokenmill.plan.commands.Commands.bad_line_option): a unit packed
# under error has no bad line, so it is what skip makes too. These params are functions of the input as well, which
# Snakemake counts as derived from the inputs and leaves out of the params it records: switching on_bad_line
# repacks and merges nothing built already. verify's recorded options hold it and refuse, under error, a build with
# skipped lines, as merge does when it runs.
def unit_bad_line_option(wildcards, input):
    """``--on-bad-line POLICY`` of a pack unit's dataset."""
    return shell_join(_plan(lambda unit: PLAN.commands.bad_line_option(PLAN.units.unit(unit).build), "unit")(wildcards))


def merge_commands(wildcards, input):
    """The commands merging a build's units (the format versions are the rule's own recorded param)."""
    return _plan(PLAN.commands.merge_commands, "build")(wildcards)


tokens_in_options = _shell(PLAN.commands.tokens_in_options, "build")
tokens_in_outputs = _shell(PLAN.commands.tokens_in_outputs, "build")
tokens_identity = _plan(PLAN.commands.tokens_identity, "build")


def part_file(path):
    """A unit's .pbin is temporary (deleted once merged) unless datasets keep their parts."""
    return path if config["keep_parts"] else temp(path)


def all_targets():
    """Every final file of the configured matrix; on object storage named, not downloaded."""
    if STORAGE_PREFIX:
        return [storage(f"{STORAGE_PREFIX}/{path}", retrieve=False) for path in PLAN.outputs.all_targets()]
    return PLAN.outputs.all_targets()


def prune_stamp():
    """The prune job's stamp, asked by `all` in a local tree only: objects of an earlier plan under a
    storage prefix are not moved (tokenmill prune reads a local tree)."""
    return [] if STORAGE_PREFIX else rules.prune.output.stamp


# ---- Resources
# They scale with the text a job handles, known from the plan (input sizes stat'ed once; a compressed
# file counted 4x). Runtimes assume 1 MB/s for tokenizing (the Hugging Face engine on one core;
# fastokens is 29x faster with GPT-2, 70x with Tekken: bench/RESULTS.md) and 50 MB/s for a pass over
# the bytes, so that a cluster never kills a job that is merely slow. A profile's set-resources
# overrides any of them.


def _job_text_mb(wildcards):
    """MB of text behind a job: its unit's, its input file's, its build's, its blend's or its SFT set's."""
    if "name" in wildcards.keys():
        return _sft_text_mb(wildcards)
    if "unit" in wildcards.keys():
        return PLAN.units.unit_text_bytes(wildcards.unit) / 1e6
    if "stem" in wildcards.keys():
        return PLAN.units.file(wildcards.stem).size / 1e6
    if "blend" in wildcards.keys():
        return PLAN.units.blend_text_bytes(wildcards.blend) / 1e6
    return PLAN.units.build_text_bytes(wildcards.build) / 1e6


def pack_threads(wildcards):
    """Up to eight tokenizer threads, one per batch of the unit's text (tokenmill.pack.pretraining.useful_workers)."""
    return useful_workers(_job_text_mb(wildcards) * 1e6, 8)


def pack_mem_mb(wildcards, threads):
    """One process holds both tokenizers (~0.4 GB), each thread a few 4 MiB batches and the engine's
    heap (~0.1 GB), the writers 16 bytes per line."""
    return 1000 + 200 * threads + int(_job_text_mb(wildcards) / 10)


def tokenize_runtime(wildcards):
    """Minutes to tokenize the text at 1 MB/s."""
    return 10 + int(_job_text_mb(wildcards) / 60)


def _sft_text_mb(wildcards):
    local = [path for path in PLAN.units.sft_inputs(wildcards.name) if os.path.isfile(path)]
    return (sum(map(os.path.getsize, local)) + sum(item.size for item in PLAN.units.sft_objects(wildcards.name))) / 1e6


def sft_runtime(wildcards):
    """Minutes to tokenize an SFT dataset's conversations at 1 MB/s."""
    return 10 + int(_sft_text_mb(wildcards) / 60)


def sft_threads(wildcards):
    """The entry's workers: processes rendering its chat template (tokenmill.pack.sft; one without a template)."""
    entry = config["sft"][wildcards.name]
    return entry["workers"] if entry.get("chat_template") is not None else 1


def sft_mem_mb(wildcards, threads):
    """A tokenizer and a batch of conversations (~1 GB), each render process and its batches (~0.1 GB), and the
    raw line index of its inputs (16 bytes per line: a tenth of the text for conversations of 160+ bytes)."""
    return 2000 + 100 * threads + int(_sft_text_mb(wildcards) / 10)


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
