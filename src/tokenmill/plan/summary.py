"""The one-screen summary that ends a successful workflow run: what was built where, and what to run next.

The Snakefile's ``onsuccess`` handler calls :func:`print_summary` with the build plan. It prints, in at
most about 25 lines whatever the size of the matrix:

* per build (dataset × tokenizer): documents and tokens (and skipped lines, if any) from the ``.pbin``
  sidecar (with a warning where its documents hold the EOD before their end: ``eod_within_documents``),
  the ``.pbin`` with its size, the Megatron prefix (and ``--data-path`` as the training job spells it,
  where ``sampling.megatron_path_prefix`` differs), its index cache folders and datatrove folder;
  its best-fit folders with what packing bought beside what it cost, of the train split (OLMo-core's: of the
  whole dataset): the tokens ``truncate`` dropped and their share, and a warning above
  :data:`tokenmill.best_fit.packed_index.TRUNCATION_WARNING_SHARE` that names ``long_doc_strategy: fragment``;
  past :data:`MAX_BUILDS_SHOWN` builds, the rest as one line of totals;
* per instruction-tuning dataset and per blend, one line (a best-fit blend's with the epochs it repeats each
  dataset's packed samples, and its datasets' truncation warnings);
* builds of the config not built yet (a run that asked for one target, say);
* the next commands, runnable as printed from the workflow's working directory (a ``cd`` line first
  where the shell's directory is another), each followed by what it shows as a shell comment:
  ``tokenmill inspect`` of a document and of a training sample, ``tokenmill verify``, ``snakemake
  --report`` with the run's own ``-s`` and ``--configfile`` (without them Snakemake reports the
  demo); then where the Megatron-LM arguments and the PyTorch DataLoader recipe are, and (where the
  workflow made a HuggingFaceTokenizer folder and the caches are named for NullTokenizer) the config key
  that names them for a job with HuggingFaceTokenizer: following it as printed, Megatron finds the caches
  (tests/megatron/test_handoff_megatron.py runs every hint through megatron-core).

The report's front page (:func:`report_front_page`) gets a table of the same counts: a row per dataset
build and per SFT set, from their sidecars as they are when the Snakefile is read (``snakemake --report``
reads it after the build).

tokenmill does not import Snakemake: the handler passes the plan, the config files
(``workflow.overwrite_configfiles``) and the Snakefile (``workflow.main_snakefile``). Paths are
relative to the working directory, as the plan's layout functions give them.

Cost: one ``stat`` per built file and one read of each shown build's sidecar (JSON, kilobytes;
a sidecar that cannot be read leaves its counts out rather than failing a finished run).
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from tokenmill.files.atomic import write_if_changed
from tokenmill.formats.sidecar import SidecarRecord, eod_within_note
from tokenmill.megatron.job_tokenizer import null_tokenizer_flags
from tokenmill.best_fit.packed_index import truncation_cost
from tokenmill.plan import blend_cache_name, hf_tokenizer_folder, job_flags_of, megatron_prefix, packed_path, sft_files
from tokenmill.plan.facade import Plan
from tokenmill.plan.layout import OUTPUT_FOLDERS, PACKED_FOLDER, STALE_FOLDER, cache_folder, format_files, format_path
from tokenmill.plan.prune import MOVED_RECORD, last_run_stamp
from tokenmill.plan.records import config_identity

__all__ = ["MAX_BUILDS_SHOWN", "summary_lines", "print_summary", "run_command", "report_command", "report_front_page",
           "report_table", "failure_line", "failure_lines", "print_failures"]

#: Builds described one by one (three lines each); the others are summed up in one line.
MAX_BUILDS_SHOWN = 3
_MAX_OTHERS_SHOWN = 2  # instruction-tuning datasets, and blends, each listed before summing up


def _size(path: str) -> str:
    """A file's size for people (``2.1 MB``), or ``missing``."""
    try:
        size = os.path.getsize(path)
    except OSError:
        return "missing"
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if size >= scale:
            return f"{size / scale:.1f} {unit}"
    return f"{size} B"


def _sidecar(path: str) -> SidecarRecord:
    """The sidecar of a ``.pbin``, or {} where it cannot be read (the summary then leaves counts out)."""
    try:
        return json.loads(Path(f"{path}.meta.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def _skipped(meta: SidecarRecord) -> int:
    """Lines skipped in all, from a sidecar's ``skipped`` (reason → count, or reason → {count, ...})."""
    return sum(entry["count"] if isinstance(entry, dict) else entry for entry in meta.get("skipped", {}).values())


def _counts(meta: SidecarRecord, items: str = "documents") -> str:
    if "documents" not in meta:
        return "counts unknown (no readable sidecar)"
    skipped = _skipped(meta)
    return (f"{meta['documents']:,} {items}, {meta.get('tokens', 0):,} tokens"
            + (f", {skipped:,} lines skipped" if skipped else ""))


def _folders(paths: list[str]) -> str:
    """Cache folders of one build: ``.../cache/web/{seq512_seed1234,seq2048_seed1234}``, or a count."""
    if len(paths) == 1:
        return paths[0]
    parent = os.path.dirname(paths[0])
    if len(paths) > 3:
        return f"{parent}/ ({len(paths)} folders)"
    return f"{parent}/{{{','.join(os.path.basename(path) for path in paths)}}}"


def _shown_path(path: str | os.PathLike, workdir: str) -> str:
    """A path as typed in the working directory: relative inside it, absolute outside."""
    absolute = os.path.abspath(path)
    relative = os.path.relpath(absolute, workdir)
    return absolute if relative.startswith("..") else relative


def run_command(configfiles: Sequence[str | os.PathLike] = (), snakefile: str | os.PathLike | None = None,
                workdir: str | None = None) -> str:
    """``snakemake`` as a run of this config is spelled from ``workdir``: its ``-s`` where the Snakefile is not
    ``workdir/Snakefile``, and its ``--configfile`` (Snakemake runs the demo config without it)."""
    workdir = os.path.abspath(workdir or os.getcwd())
    parts = ["snakemake"]
    if snakefile is not None and os.path.abspath(snakefile) != os.path.join(workdir, "Snakefile"):
        parts += ["-s", _shown_path(snakefile, workdir)]
    if configfiles:
        parts += ["--configfile", *(_shown_path(path, workdir) for path in configfiles)]
    return shlex.join(parts)


def report_command(configfiles: Sequence[str | os.PathLike] = (), snakefile: str | os.PathLike | None = None,
                   workdir: str | None = None) -> str:
    """``snakemake --report report.html`` as the run that built the files must be repeated to report on
    them (:func:`run_command`)."""
    return f"{run_command(configfiles, snakefile, workdir)} --report report.html"


def report_front_page(template: str | os.PathLike, out_path: str | os.PathLike,
                      configfiles: Sequence[str | os.PathLike] = (), snakefile: str | os.PathLike | None = None,
                      plan: Plan | None = None) -> str:
    """Write the report's front page (the Snakefile's ``report:``): ``template`` with its ``REPORT_COMMAND``
    line as this run spells :func:`report_command`, and its ``REPORT_TABLE`` line as :func:`report_table` of
    ``plan`` (removed without one); rewritten only when it changes. Returns its absolute path.

    Raises:
        OSError: the template cannot be read or the page written.
    """
    text = Path(template).read_text(encoding="utf-8").replace("REPORT_COMMAND", report_command(configfiles, snakefile))
    text = text.replace("REPORT_TABLE", report_table(plan) if plan is not None else "")
    return str(write_if_changed(Path(out_path).absolute(), text))


def report_table(plan: Plan) -> str:
    """An RST table of the plan's dataset builds and SFT sets: documents (conversations) and tokens from each
    ``.pbin``'s sidecar, "not built" where there is none yet, and the datasets' total where there are several."""
    def rows(names: list[str], pbin_of, kind: str) -> tuple[list[list[str]], list[int]]:
        found, totals = [], [0, 0]
        for name in names:
            meta = _sidecar(pbin_of(name))
            if "documents" not in meta:
                found.append([name, kind, "not built", "", pbin_of(name)])
                continue
            counts = [meta["documents"], meta.get("tokens", 0)]
            totals = [total + count for total, count in zip(totals, counts)]
            found.append([name, kind, *(f"{count:,}" for count in counts), pbin_of(name)])
        return found, totals

    datasets, totals = rows(list(plan.units.builds), packed_path, "dataset")
    if len(datasets) > 1:
        datasets.append(["all datasets", "", *(f"{total:,}" for total in totals), ""])
    sft, _ = rows(list(plan.units.config["sft"]), lambda name: sft_files(name)[0], "SFT set")
    header = ["name", "kind", "documents / conversations", "tokens", "file"]
    return "\n".join([".. list-table::", "   :header-rows: 1", "",
                      *(f"   {'*' if column == 0 else ' '} - {cell}".rstrip()
                        for row in [header, *datasets, *sft] for column, cell in enumerate(row))])


def _format_names(plan: Plan, build: str, sized: bool) -> list[str]:
    """How the summary names a build's files in each of its formats (its row's ``summary``: ``Megatron PREFIX``),
    ``sized``: with the size of the first file where the row says so."""
    names = []
    for kind in plan.outputs.kinds(build):
        path = format_path(kind, build)
        names.append(kind.summary.format(path=path, folder=os.path.dirname(path))
                     + (f" ({_size(format_files(kind, build)[0])})" if sized and kind.summary_size else ""))
    return names


def _build_lines(plan: Plan, build: str) -> list[str]:
    """Up to three lines: counts; the files; the cache folders (with ``--data-path`` as the job spells it)."""
    pbin = packed_path(build)
    meta = _sidecar(pbin)
    lines = [f"  {build}: {_counts(meta)}", "    " + "; ".join(_format_names(plan, build, sized=True))]
    tokenizer = meta.get("tokenizer")
    if isinstance(tokenizer, dict) and "eod_id" in tokenizer and tokenizer["eod_id"] is None:
        name = plan.units.builds[build].tokenizer
        said = f"tokenizers.{name}.eod: null" if "eod" in plan.units.config["tokenizers"][name] else \
            f"tokenizers.{name} names no eod"  # (a tokenizer.json without a type: the config says nothing)
        lines.append(f"    warning: packed without an EOD ({said}): its documents run together in training")
    if note := eod_within_note(meta):
        lines.append(f"    warning: {note}")
    # a run for one target has none
    caches = [folder for folder in plan.outputs.cache_dirs(build) if os.path.isdir(folder)]
    if caches:
        hashed = plan.outputs.job_data_path(build)
        lines.append(f"    caches {_folders(caches)}"
                     + (f", for --data-path {hashed}" if hashed != megatron_prefix(build) else ""))
    for what, planned in (("best fit", plan.outputs.packed_index_dirs(build)),
                          ("best fit, OLMo-core work_dir", plan.outputs.olmo_packing_dirs(build))):
        folders = [folder for folder in planned if os.path.isdir(folder)]
        if folders:
            lines.append(f"    {what} {_folders(folders)}{_padding(folders[0])}")
            lines += _truncation_warnings(folders)
    return lines


def _train_figures(folder: str | os.PathLike) -> dict:
    """A best-fit folder's figures: its packed index's train split (its description) or its OLMo-core packing's
    (its sidecar: the whole dataset), or {} where there are none to read."""
    for name in ("best_fit-truncate-train-description.json", "best_fit-fragment-train-description.json",
                 "tokenmill-olmo-packing.meta.json"):
        try:
            figures = json.loads(Path(folder, name).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        return figures if isinstance(figures, dict) else {}
    return {}


def _padding(folder: str) -> str:
    """What a best-fit folder's packing bought and what it cost in tokens, of its train split (or, OLMo-core's,
    of the whole dataset), or ''."""
    figures = _train_figures(folder)
    of = f"the {figures['split_name']} split" if "split_name" in figures else "the whole dataset"
    try:
        cost, _ = truncation_cost(figures)
        return (f" ({of} at {figures['sequence_length']}: {figures['kept_whole']:,} documents whole, of which "
                f"concatenation cuts {figures['cut_by_concat']:,}; {cost}; padding "
                f"{100 * figures['padding_share']:.1f} % of its samples)")
    except (KeyError, TypeError, ValueError):
        return ""


def _truncation_warnings(folders: list[str], name_dataset: bool = False) -> list[str]:
    """The warning of the best-fit folder whose truncation dropped the largest share of its train split's (or
    OLMo-core's whole dataset's) tokens (:func:`tokenmill.best_fit.packed_index.truncation_cost`), one per dataset
    packed in ``folders`` (its sequence lengths and seeds: the summary stays one screen), naming the folder (and
    with ``name_dataset``, a blend's, the dataset packed there)."""
    worst: dict = {}  # dataset -> (share, warning, where)
    for folder in folders:
        figures = _train_figures(folder)
        try:
            _, warning = truncation_cost(figures)
            share = figures["long_tokens_dropped"] / figures["tokens"] if warning else 0.0
        except (KeyError, TypeError, ValueError):
            continue
        dataset = figures.get("dataset")
        if warning and share > worst.get(dataset, (0.0,))[0]:
            worst[dataset] = share, warning, f"{dataset} in {folder}" if name_dataset else folder
    return [f"    {warning} ({where})" for _, warning, where in worst.values()]


def _blend_padding(folder: str) -> str:
    """What a packed blend's train split holds, as its description says (with the epochs each dataset's packed
    samples repeat), or ''."""
    for name in ("blend-truncate-train-description.json", "blend-fragment-train-description.json"):
        try:
            figures = json.loads(Path(folder, name).read_text(encoding="utf-8"))
            return (f" (at {figures['sequence_length']}: {figures['samples']:,} train samples drawn by the weights, "
                    f"{_epochs(figures['datasets'])}; padding {100 * figures['padding_share']:.1f} %)")
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return ""


def _epochs(datasets: list[dict]) -> str:
    """The epochs a blend split repeats each dataset's packed samples, as its description says:
    ``"epochs of each dataset's packed samples: demo_text_document 10, web_text_document 4"``."""
    return "epochs of each dataset's packed samples: " + ", ".join(
        f"{os.path.basename(each['dataset'])} {each['epochs']:,}" for each in datasets)


def _sft_rows(folder: str) -> str:
    """What an SFT set's best-fit rows (or OLMo-core work dir) bought, as its description or sidecar says, or ''."""
    for name in ("sft_best_fit-description.json", "tokenmill-olmo-packing.meta.json"):
        try:
            figures = json.loads(Path(folder, name).read_text(encoding="utf-8"))
            return (f" ({figures['samples']:,} rows of {figures['sequence_length']} for "
                    f"{figures.get('conversations', figures.get('documents', 0)):,} conversations; padding "
                    f"{100 * figures['padding_share']:.1f} %)")
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return ""


def summary_lines(plan: Plan, configfiles: Sequence[str | os.PathLike] = (),
                  snakefile: str | os.PathLike | None = None, shell_dir: str | None = None) -> list[str]:
    """The summary as lines of text (see the module docstring); paths relative to the working
    directory, the current one.

    Args:
        plan: the build plan of the run's config.
        configfiles: the ``--configfile`` paths of the run (none for the demo config).
        snakefile: the run's Snakefile.
        shell_dir: the directory the user's shell is in (``$PWD``): where it is not the working
            directory, the next commands start with ``cd`` to it.
    """
    workdir = os.getcwd()
    built = [build for build in plan.units.builds if os.path.exists(packed_path(build))]
    unbuilt = [build for build in plan.units.builds if build not in built]
    sft = [name for name in plan.units.config["sft"] if os.path.exists(sft_files(name)[0])]
    blends = [name for name in plan.units.blends
              if all(map(os.path.isdir, plan.outputs.cache_dirs(blend_cache_name(name))))]
    config_text = ", ".join(_shown_path(path, workdir) for path in configfiles) or "config/config.yaml"
    lines = [f"tokenmill: {len(built)} dataset{'' if len(built) == 1 else 's'} of {config_text} in {workdir}:"]

    for build in built[:MAX_BUILDS_SHOWN]:
        lines += _build_lines(plan, build)
    rest = built[MAX_BUILDS_SHOWN:]
    if rest:
        metas = [_sidecar(packed_path(build)) for build in rest]
        lines.append(f"  and {len(rest)} more ({', '.join(rest[:3])}{', ...' if len(rest) > 3 else ''}): "
                     f"{sum(meta.get('documents', 0) for meta in metas):,} documents, "
                     f"{sum(meta.get('tokens', 0) for meta in metas):,} tokens, "
                     f"in {os.path.dirname(packed_path(rest[0]))}/")
    for name in sft[:_MAX_OTHERS_SHOWN]:
        pbin = sft_files(name)[0]
        lines.append(f"  {name} (instruction tuning): {_counts(_sidecar(pbin), 'conversations')} -> {pbin} "
                     f"+ {name}.loss_mask.pbin")
        for folder in plan.outputs.sft_packing_dirs(name) + plan.outputs.sft_olmo_packing_dirs(name):
            if os.path.isdir(folder):
                lines.append(f"    best fit {folder}{_sft_rows(folder)}")
    if len(sft) > _MAX_OTHERS_SHOWN:
        lines.append(f"  and {len(sft) - _MAX_OTHERS_SHOWN} more instruction-tuning datasets in "
                     f"{os.path.dirname(sft_files(sft[-1])[0])}/")
    for name in blends[:_MAX_OTHERS_SHOWN]:
        lines.append(f"  blend {name} ({', '.join(plan.units.blends[name])}): caches "
                     f"{_folders(plan.outputs.cache_dirs(blend_cache_name(name)))}")
        packed = [folder for folder in plan.outputs.blend_packing_dirs(name) if os.path.isdir(folder)]
        if packed:
            lines.append(f"    best fit {_folders(packed)}{_blend_padding(packed[0])}")
            datasets = [str(each) for folder in packed for each in sorted(Path(folder).glob("dataset-*"))]
            lines += _truncation_warnings(datasets, name_dataset=True)
    if len(blends) > _MAX_OTHERS_SHOWN:
        lines.append(f"  and {len(blends) - _MAX_OTHERS_SHOWN} more blends in {cache_folder(blend_cache_name('*'))}/")
    if unbuilt:
        lines.append(f"  not built yet: {', '.join(unbuilt[:5])}{', ...' if len(unbuilt) > 5 else ''} "
                     f"(snakemake without targets builds the whole config)")
    lines += _stale_lines(config_identity(configfiles, plan.units.config.get("name")).key)

    lines.append("Next:")
    if shell_dir and os.path.isdir(shell_dir) and not os.path.samefile(shell_dir, workdir):
        lines.append(f"  cd {shlex.quote(workdir)}")
    return lines + _next_lines(plan, built[0] if built else None, report_command(configfiles, snakefile, workdir))


def _stale_lines(name: str) -> list[str]:
    """What the run's last job moved out of where trainers look (:mod:`tokenmill.plan.prune`), and what
    earlier plans' outputs take in the stale folder."""
    stamp = Path(last_run_stamp(name))
    moved = stamp.read_text(encoding="utf-8").splitlines() if stamp.is_file() else []
    shown_first = tuple(f"{folder}/" for folder in OUTPUT_FOLDERS)  # in the order of the output folders
    moved.sort(key=lambda path: next((rank for rank, folder in enumerate(shown_first) if path.startswith(folder)),
                                     len(shown_first)))
    stale_bytes = sum(path.stat().st_size for path in Path(STALE_FOLDER).rglob("*")  # (not the records)
                      if path.is_file() and path != Path(MOVED_RECORD) and not path.name.startswith("moved-last-run"))
    lines = []
    if moved:
        lines.append(f"  moved {len(moved)} output(s) of an earlier plan to {STALE_FOLDER}/, out of where trainers "
                     f"look: {', '.join(moved[:3])}{', ...' if len(moved) > 3 else ''} ({MOVED_RECORD} lists all)")
    if stale_bytes:
        lines.append(f"  {STALE_FOLDER}/ holds {stale_bytes / 1e6:,.1f} MB of earlier plans' outputs "
                     f"(rm -r {STALE_FOLDER} frees it)")
    return lines


def _next_lines(plan: Plan, build: str | None, report: str) -> list[str]:
    """The next commands, on one build's files (the first), each with what it shows."""
    commands = []
    cache = next((folder for folder in plan.outputs.cache_dirs(build) if os.path.isdir(folder)), None) \
        if build else None
    if build:
        read_in = build in plan.units.token_sources  # tokens read in: no text to re-encode
        commands.append((f"tokenmill inspect {packed_path(build)} --doc 0",
                         "a document, with its source file and " + ("document there" if read_in else "line")))
        if cache:
            commands.append((f"tokenmill inspect {cache} --sample 0", "a training sample, document by document"))
        commands.append((f"tokenmill verify {packed_path(build)}", "check again: ids, EODs, counts, sources unchanged")
                        if read_in else (f"tokenmill verify {packed_path(build)} --against-tokenizer 0.05",
                                         "check again, re-encoding 5 % with the tokenizer's own library"))
    commands.append((report, "the HTML report of these datasets"))
    # What each shows as a shell comment, so that a whole line can be pasted; aligned unless a command is long.
    width = min(max(len(command) for command, _ in commands), 64)
    lines = [f"  {command:<{width}}  # {why}" for command, why in commands]
    if cache:
        lines.append(f"  Megatron-LM: the arguments in {cache}/megatron_args.txt")
        name = plan.units.builds[build].tokenizer
        folder, tokenizer = hf_tokenizer_folder(name), plan.units.config["tokenizers"][name]
        # What HuggingFaceTokenizer's --tokenizer-model needs is there; the caches are named for the tokenizer
        # flags of megatron_args.txt (NullTokenizer where the config names none), so other flags need the key
        if os.path.isfile(f"{folder}/tokenizer_config.json") and not tokenizer["megatron"].get("args") \
                and tokenizer["megatron_identifiers"] is None:
            flags = f"--tokenizer-type HuggingFaceTokenizer --tokenizer-model {folder}"
            lines.append(f"    for HuggingFaceTokenizer ({folder} holds its tokenizer.json, the EOD as eos_token), "
                         f"caches named for it: tokenizers.{name}.megatron.args: {json.dumps(flags)}")
        # The caches are named for the job's spelling of the prefix: a Nanoset given only the local
        # prefix would build a second set of caches beside them.
        hashed = plan.outputs.job_data_path(build)
        lines.append(f"  PyTorch: NanosetConfig on that folder with dataset_path={hashed!r} and")
        lines.append(f"    {_identifiers_hint(plan, build)} (README, \"Training with it\")")
    elif build:
        lines.append(f"  PyTorch: tokenmill.training.datasets.PackedMemMapDatasetContinuous on {packed_path(build)}")
    return lines


def _identifiers_hint(plan: Plan, build: str) -> str:
    """The ``tokenizer_identifiers`` a Nanoset needs to find a build's caches: those of the training job's
    tokenizer flags, which the caches' names hash (as ``megatron_args.txt`` spells them)."""
    tokenizer = plan.units.config["tokenizers"][plan.units.builds[build].tokenizer]
    if tokenizer["megatron_identifiers"] is not None:
        return f"tokenizer_identifiers=<tokenizers.{plan.units.builds[build].tokenizer}.megatron_identifiers>"
    flags = tokenizer["megatron"].get("args") or shlex.join(job_flags_of(tokenizer) or [])
    if not flags:  # the workflow's NullTokenizer of the packed vocabulary
        meta = _sidecar(packed_path(build)).get("tokenizer", {})
        flags = shlex.join(null_tokenizer_flags(int(meta.get("vocab_size", 0)), meta.get("eod_id")))
    return f"tokenizer_identifiers=job_tokenizer_identifiers({tokenizer['megatron']['version'][0]!r}, {flags!r})"


def storage_summary_lines(plan: Plan, prefix: str, configfiles: Sequence[str | os.PathLike] = ()) -> list[str]:
    """The summary of a run on object storage (``--default-storage-prefix``): where each build's files
    are under the prefix, laid out as a local build's tree. (Their counts are in the sidecars there: this
    process holds no local copy to read them from.)"""
    config_text = ", ".join(_shown_path(path, os.getcwd()) for path in configfiles) or "config/config.yaml"
    builds = plan.units.builds
    lines = [f"tokenmill: the {len(builds)} dataset{'' if len(builds) == 1 else 's'} of {config_text} "
             f"under {prefix}/ (laid out as a local build):"]
    for build in list(builds)[:MAX_BUILDS_SHOWN]:
        files = _format_names(plan, build, sized=False)
        caches = plan.outputs.cache_dirs(build)
        lines.append(f"  {build}: {'; '.join(files)}" + (f"; caches {_folders(caches)}" if caches else ""))
    if len(builds) > MAX_BUILDS_SHOWN:
        lines.append(f"  and {len(builds) - MAX_BUILDS_SHOWN} more in {PACKED_FOLDER}/")
    lines += [f"  {name} (instruction tuning): {sft_files(name)[0]} + {os.path.basename(sft_files(name)[1])}"
              for name in plan.units.config["sft"]]
    lines += [f"  blend {name}: caches {_folders(plan.outputs.cache_dirs(blend_cache_name(name)))}"
              for name in plan.units.blends]
    return lines + ["Next:", f"  aws s3 sync {prefix}/data data    # a local copy, for tokenmill inspect and training"]


def print_summary(plan: Plan, configfiles: Sequence[str | os.PathLike] = (),
                  snakefile: str | os.PathLike | None = None, stream: TextIO | None = None,
                  storage_prefix: str = "") -> None:
    """Print :func:`summary_lines` for the run in the current directory (the Snakefile's ``onsuccess``),
    with the shell's directory taken from ``$PWD``; :func:`storage_summary_lines` for a run whose outputs
    are under ``storage_prefix``."""
    stream = stream or sys.stdout
    lines = (storage_summary_lines(plan, storage_prefix, configfiles) if storage_prefix
             else summary_lines(plan, configfiles, snakefile, os.environ.get("PWD")))
    stream.write("\n".join(lines) + "\n")
    stream.flush()


# The last line a tokenmill job writes when it stops on an error or a signal (tokenmill.cli.main).
_FAILURE_PREFIXES = ("tokenmill: error:", "tokenmill: interrupted", "tokenmill: terminated")


def failure_line(log: str | os.PathLike) -> str | None:
    """The last line of a job's log where it is tokenmill's own one-line error (or interruption), else None."""
    try:
        with open(log, "rb") as handle:
            handle.seek(max(0, os.fstat(handle.fileno()).st_size - 4096))
            last = next((line for line in reversed(handle.read().decode("utf-8", "replace").splitlines())
                         if line.strip()), "")
    except OSError:
        return None
    return last if last.startswith(_FAILURE_PREFIXES) else None


def failure_lines(since: float, logs: str | os.PathLike = "logs") -> list[str]:
    """Each failed job's own one-line error, then its log, for the jobs whose logs under ``logs`` were
    written since ``since`` (a run's start, seconds since the epoch) and end in that line; in the order
    they were written. A failure outside tokenmill (Snakemake's own) has no such log and no line here."""
    found = []
    for log in Path(logs).rglob("*.log"):
        try:
            written = log.stat().st_mtime
        except OSError:
            continue
        line = failure_line(log) if written >= since else None
        if line is not None:
            found.append((written, line, str(log)))
    return [text for _, line, log in sorted(found) for text in (line, f"  log: {log}")]


def print_failures(since: float, logs: str | os.PathLike = "logs", stream: TextIO | None = None) -> None:
    """Print :func:`failure_lines` last (the Snakefile's ``onerror``), so that a failed run ends with the
    error a user acts on rather than Snakemake's traceback of the shell command."""
    lines = failure_lines(since, logs)
    if lines:
        stream = stream or sys.stderr
        stream.write("\n".join(lines) + "\n")
        stream.flush()

