"""The verbs that look at what is built and tidy it: ``inspect``, ``verify``, ``report`` and ``prune`` (the
workflow's outputs that its plan no longer makes, moved to its stale folder).

Each verb's arguments (``add_<verb>``) and its handler side by side; the views and checks are imported by the
handler.
"""

from __future__ import annotations

import argparse
import sys

from tokenmill.config import default
from tokenmill.errors import TokenmillError
from tokenmill.files.atomic import atomic_output
from tokenmill.files.identity import refuse_inputs_as_outputs


def add_inspect(verbs: argparse._SubParsersAction) -> None:
    """The ``inspect`` verb's arguments."""
    inspect = verbs.add_parser("inspect", help="show a file's header and counts, a document, or a training sample")
    inspect.add_argument("path", help=".pbin, raw .idx, Megatron prefix, datatrove NAME.ds, an SFT set's best-fit "
                                      "rows folder, or (with --sample) an index cache folder")
    inspect.add_argument("--doc", type=int, help="show document I, decoded, with its source file and line")
    inspect.add_argument("--sample", type=int, help="show sample K of a split: its pieces, decoded, with sources")
    inspect.add_argument("--seq-length", type=int,
                         help="with --sample: find the workflow's cache folder of that length and --seed")
    inspect.add_argument("--seed", type=int, help="with --sample: see --seq-length")
    inspect.add_argument("--cache", help="with --sample: the cache folder (instead of --seq-length/--seed)")
    inspect.add_argument("--split", default="train", choices=("train", "valid", "test"))
    inspect.add_argument("--best-fit", choices=("truncate", "fragment"), metavar="STRATEGY",
                         help="with --sample: the sample of the packed index (tokenmill best-fit) of this "
                              "long-document strategy, instead of the GPTDataset cache's")
    inspect.add_argument("--tokenizer", help="tokenizer.json for decoding (default: from the .pbin sidecar)")
    inspect.add_argument("--id-field", default="id", metavar="KEY",
                         help="with --doc: the JSON field of the document's line shown as its id (default: id)")
    inspect.set_defaults(run=_inspect)


def _inspect(args: argparse.Namespace) -> None:
    from tokenmill.views import inspect_file

    if args.sample is not None:
        prefix, cache = inspect_file.sample_target(args.path, args.cache, args.seq_length, args.seed)
        lines = inspect_file.show_sample(prefix, args.sample, cache, args.split, args.tokenizer, args.best_fit)
    elif args.doc is not None:
        lines = inspect_file.show_document(args.path, args.doc, args.tokenizer, args.id_field)
    else:
        lines = inspect_file.describe(args.path)
    print("\n".join(lines))


def add_verify(verbs: argparse._SubParsersAction) -> None:
    """The ``verify`` verb's arguments."""
    verify = verbs.add_parser("verify", help="check files against their own structure and sidecars")
    verify.add_argument("paths", nargs="+", metavar="FILE",
                        help="raw .idx, .pbin, Megatron prefix (or its .bin/.idx), datatrove NAME.ds, or index cache "
                             "folder")
    verify.add_argument("--jsonl", help="for a raw .idx: the JSONL file it indexes")
    verify.add_argument("--inputs", nargs="+", metavar="JSONL",
                        help="for a .pbin: the files it must be packed from, in order, each exactly once and whole "
                             "(end the list with -- when paths follow)")
    verify.add_argument("--made-from", metavar="PBIN",
                        help="the Megatron prefix and datatrove .ds among FILE were made from this .pbin: check that "
                             "they follow Megatron's dtype rule and datatrove's document rule for its tokenizer")
    verify.add_argument("--stamp", help="write this file (listing what was verified) when nothing is wrong")
    verify.add_argument("--on-bad-line", choices=("error", "skip"),
                        help="for a .pbin, the policy its dataset asks: error makes a skipped line a problem, naming "
                             "the first (a fresh build under error stops there); default: skipped lines are counted")
    verify.add_argument("--against-tokenizer", type=float, metavar="FRACTION",
                        help="for a .pbin, also re-encode its documents from their JSONL lines with the Hugging Face "
                             "tokenizer: the ones a pack job always checks plus this share of the rest (1.0: all)")
    verify.set_defaults(run=_verify)


def _verify(args: argparse.Namespace) -> None:
    from tokenmill.verify.checks import verify

    if args.stamp:
        refuse_inputs_as_outputs([args.stamp], [*args.paths, *([args.jsonl] if args.jsonl else [])])
    problems = [problem for path in args.paths
                for problem in verify(path, jsonl=args.jsonl, against_tokenizer=args.against_tokenizer,
                                      inputs=args.inputs, on_bad_line=args.on_bad_line)]
    if args.made_from and not problems:
        from tokenmill.verify.checks import made_from_problems

        problems = made_from_problems(args.made_from, args.paths)
    for problem in problems:
        print(problem, file=sys.stderr)
    if problems:
        raise TokenmillError(f"{len(problems)} problem(s) found in {len(args.paths)} file(s)")
    print(f"{len(args.paths)} file(s) verified, no problem found", file=sys.stderr)
    if args.stamp:
        with atomic_output(args.stamp) as stamp:
            stamp.write_text("".join(f"ok {path}\n" for path in args.paths))


def add_report(verbs: argparse._SubParsersAction) -> None:
    """The ``report`` verb's arguments."""
    report = verbs.add_parser("report", help="an HTML page on a build, a blend or an SFT set, for snakemake --report")
    report.add_argument("path", help=".pbin (a build; with --sft an SFT pair's), or with --blend a blend cache folder")
    report.add_argument("-o", "--output", required=True, help="the HTML page to write")
    report.add_argument("--verified", metavar="STAMP", help="the build's verify stamp (rule verify's)")
    report.add_argument("--cache", action="append", metavar="DIR", help="an index cache folder of the build")
    report.add_argument("--best-fit", action="append", metavar="DIR",
                        help="a best-fit packing folder of the build (a packed index, or an OLMo-core work dir)")
    report.add_argument("--file", action="append", metavar="PATH",
                        help="a file of the build in another format (.bin, .idx, .ds...), listed with its size")
    report.add_argument("--count-by", metavar="FIELD",
                        help="also count documents and tokens per value of this JSON field of their lines "
                             "(.meta.domain; reads every source once)")
    report.add_argument("--blend", action="store_true", help="PATH is a blend cache folder")
    report.add_argument("--recipe", metavar="DIGEST", help="what the page is made for, recorded in it (the workflow's: "
                                                           "snakemake --report refuses another config's page)")
    report.add_argument("--sft", action="store_true",
                        help="PATH is an SFT pair's .pbin (its loss mask beside it; --best-fit: its rows' folder)")
    report.set_defaults(run=_report)


def _report(args: argparse.Namespace) -> None:
    from tokenmill.views.report import blend_page, dataset_page, sft_page

    if args.blend and args.sft:
        raise TokenmillError(f"{args.path}: --blend and --sft name different pages; give one")
    if args.blend:
        blend_page(args.path, args.output, best_fit=args.best_fit or [], recipe=args.recipe)
    elif args.sft:
        sft_page(args.path, args.output, verify_stamp=args.verified, best_fit=args.best_fit or [], recipe=args.recipe)
    else:
        dataset_page(args.path, args.output, verify_stamp=args.verified, caches=args.cache or [],
                     files=args.file or [], count_by=args.count_by, best_fit=args.best_fit or [], recipe=args.recipe)


def add_prune(verbs: argparse._SubParsersAction) -> None:
    """The ``prune`` verb's arguments."""
    prune = verbs.add_parser("prune", help="move the workflow's outputs that its plan no longer makes to the same "
                                           "place in its stale folder")
    config = prune.add_mutually_exclusive_group(required=True)
    config.add_argument("--config", metavar="YAML", help="the workflow's config file (its plan is recorded under its "
                                                         "resolved path, labelled by its name, else the file's stem)")
    config.add_argument("--config-json", help="the workflow's validated config, as JSON (the prune rule's)")
    prune.add_argument("--configfile", nargs="+", metavar="YAML",
                       help="with --config-json: the file(s) it was read from, which are its identity (default: "
                            "--config, else config/config.yaml)")
    prune.add_argument("--dry-run", "-n", action="store_true",
                       help="list what would move (one path a line on stdout) and change nothing")
    prune.add_argument("--stamp", help="write the paths moved this time here")
    prune.add_argument("--keep-stale-runs", type=_stale_runs, metavar="N|all",
                       help="keep in the stale folder what the last N runs that moved something moved, deleting older "
                            "runs' (all: keep everything; default: the config's keep_stale_runs, else "
                            f"{default('keep_stale_runs')})")
    prune.set_defaults(run=_prune)


def _prune(args: argparse.Namespace) -> None:
    import json

    from tokenmill.config import read_config_file, validate_config
    from tokenmill.plan import Plan
    from tokenmill.plan.prune import STALE_FOLDER, escaped
    from tokenmill.plan.records import config_identity, prune_for_config

    config = json.loads(args.config_json) if args.config_json else \
        validate_config(read_config_file(args.config), args.config)
    # the flag, else the config's key (a config validated before the key existed: the schema's default)
    keep = args.keep_stale_runs if args.keep_stale_runs is not None else \
        config.get("keep_stale_runs", default("keep_stale_runs"))
    identity = config_identity(args.configfile or ([args.config] if args.config else []), config.get("name"))
    moved, dropped = prune_for_config(Plan(config), identity, None if keep == "all" else keep, args.dry_run)
    if args.dry_run:
        print("".join(f"{escaped(path)}\n" for path in moved), end="")
        print(f"would move {len(moved)} file(s) of an earlier plan of {identity.described()} to {STALE_FOLDER}/",
              file=sys.stderr)
        return
    print(f"moved {len(moved)} file(s) of an earlier plan to {STALE_FOLDER}/" if moved else
          "no file of an earlier plan in the output folders", file=sys.stderr)
    if args.stamp:  # one path a line, escaped as in MOVED.txt: a name with a newline stays one line
        with atomic_output(args.stamp) as stamp:
            stamp.write_text("".join(f"{escaped(path)}\n" for path in moved), encoding="utf-8")
    if dropped:
        print(f"deleted {len(dropped)} path(s) that runs before the last {keep} moved to {STALE_FOLDER}/ "
              f"(keep_stale_runs)", file=sys.stderr)


def _stale_runs(text: str) -> int | str:
    """``--keep-stale-runs``: a count of at least 1, or ``all``."""
    if text == "all":
        return text
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: give a number of runs, at least 1, or all")
    return int(text)
