"""The ``tokenmill`` command: parses arguments and calls one module function per verb.

User errors (:class:`TokenmillError`, missing files) print one line, ``tokenmill: error: ...``,
and exit 1; Ctrl-C prints ``tokenmill: interrupted`` and exits 130; ``--debug`` shows the
traceback too.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import traceback

from tokenmill import __version__
from tokenmill.config import default
from tokenmill.errors import TokenmillError
from tokenmill.files.atomic import atomic_output, remove_temporaries
from tokenmill.files.identity import refuse_inputs_as_outputs
from tokenmill.files.urls import redact_text
from tokenmill.formats.dtypes import MEGATRON_UINT16_BELOW, UINT16_VOCAB_LIMIT
from tokenmill.formats.mmidx import is_megatron_index, prefix_of


def _index(args: argparse.Namespace) -> None:
    from tokenmill.inputs import raw_index
    from tokenmill.files.objects import is_url

    if args.output is None and is_url(args.input):
        raise TokenmillError(f"{args.input}: give -o for an object's raw index (it is written here, not in the bucket)")
    out_path = args.output or os.path.splitext(args.input)[0] + ".idx"
    lines = raw_index.index_file(args.input, out_path, validate=args.validate)
    print(f"{out_path}: {len(lines)} lines", file=sys.stderr)


def _pack(args: argparse.Namespace) -> None:
    from tokenmill.inputs.jsonl import parse_byte_range
    from tokenmill.pack.pretraining import PackSettings, pack
    from tokenmill.inputs.parquet import parse_row_groups
    from tokenmill.tokenization.tokenizer import TYPE_EOD

    if args.index and len(args.index) != len(args.inputs):
        raise TokenmillError(f"--index was given {len(args.index)} times for {len(args.inputs)} inputs")
    eod = args.eod
    if eod is None and args.tokenizer_type is not None and not args.no_eod:
        eod = TYPE_EOD  # a named type has Megatron's EOD, as its --append-eod appends
    # Refused rather than warned: a pack without EOD is rarely meant, and nothing downstream says so
    if eod is None and not args.no_eod:
        raise TokenmillError("pack needs --eod TOKEN (e.g. --eod '<|endoftext|>'), appended to every document as "
                             "Megatron's --append-eod and Modalities' eod_token do; --no-eod packs documents that "
                             "run together")
    if args.eod is not None and args.no_eod:
        raise TokenmillError("pack takes --eod TOKEN or --no-eod, not both")
    type_options = {} if args.tokenizer_type is None else dict(
        tokenizer_type=args.tokenizer_type, tiktoken_pattern=args.tiktoken_pattern,
        tiktoken_num_special_tokens=args.tiktoken_num_special_tokens, vocab_size=args.vocab_size)
    settings = PackSettings(tokenizer_path=args.tokenizer, text=args.jq, eod=eod, **type_options,
                            add_special_tokens=not args.no_special_tokens, on_bad_line=args.on_bad_line,
                            workers=args.workers, batch_bytes=args.batch_bytes, engine=args.engine,
                            check_fraction=args.check_fraction, on_mismatch=args.on_mismatch,
                            max_line_bytes=args.max_line_bytes, allow_duplicate_inputs=args.allow_duplicate_inputs)
    byte_range = parse_byte_range(args.byte_range) if args.byte_range else None
    row_groups = parse_row_groups(args.row_groups) if args.row_groups else None
    _check_olmo_arguments(args)
    _expect_pins(args)
    pack(args.inputs, args.output, settings, indexes=args.index, byte_range=byte_range, row_groups=row_groups,
         megatron_prefix=prefix_of(args.megatron) if args.megatron else None, datatrove_name=args.datatrove,
         datatrove_tokenizer_name=args.datatrove_tokenizer_name)
    if args.olmo:
        from tokenmill.formats.olmo import pbin_to_olmo

        meta = pbin_to_olmo(args.output, args.olmo, args.olmo_max_tokens or default("datasets.*.olmo_max_tokens"),
                            default("datasets.*.id_field") if args.id_field is None else args.id_field or None)
        print(f"{args.olmo}: {len(meta['parts'])} OLMo part(s), {meta['dtype']}", file=sys.stderr)


def _check_olmo_arguments(args: argparse.Namespace) -> None:
    """``pack --olmo``'s arguments, checked before the pack rather than after it."""
    if not args.olmo:
        if args.olmo_max_tokens is not None or args.id_field is not None:
            raise TokenmillError("--olmo-max-tokens and --id-field are for --olmo DIR")
        return
    if not args.output:
        raise TokenmillError("--olmo converts the .pbin that -o names: give -o too")
    if os.path.isfile(args.olmo):
        raise TokenmillError(f"{args.olmo}: is a file; give the folder to write the parts into")
    if args.no_eod:
        raise TokenmillError("--olmo needs an EOD: OLMo-core finds documents by their EOS (drop --no-eod)")
    if args.olmo_max_tokens is not None and args.olmo_max_tokens < 1:
        raise TokenmillError(f"--olmo-max-tokens must be at least 1, not {args.olmo_max_tokens}")


def _merge(args: argparse.Namespace) -> None:
    pbin_inputs = [path.endswith(".pbin") for path in args.inputs]
    if any(pbin_inputs) != all(pbin_inputs) or args.output.endswith(".pbin") != all(pbin_inputs):
        raise TokenmillError("merge takes either .pbin files only or Megatron prefixes only, output included")
    if all(pbin_inputs):
        from tokenmill.formats.merge import merge_pbin

        meta = merge_pbin(args.output, args.inputs, force=args.force, on_bad_line=args.on_bad_line)
        print(f"{args.output}: {meta['documents']} documents, {meta['tokens']} tokens from {len(args.inputs)} files",
              file=sys.stderr)
    else:
        from tokenmill.formats.mmidx import merge_megatron

        summary = merge_megatron(prefix_of(args.output), [prefix_of(path) for path in args.inputs], force=args.force)
        print(f"{args.output}: {summary['documents']} documents ({summary['dtype']}) from {len(args.inputs)} "
              f"datasets", file=sys.stderr)


def _tokens_in(args: argparse.Namespace) -> None:
    from tokenmill.formats.sidecar import eod_within_note
    from tokenmill.pack.tokens_in import tokens_in
    from tokenmill.tokenization.families import TokenizerSpec
    from tokenmill.tokenization.tokenizer import TYPE_EOD

    if args.eod is not None and args.no_eod:
        raise TokenmillError("tokens-in takes --eod TOKEN or --no-eod, not both")
    eod = None if args.no_eod else args.eod
    if eod is None and not args.no_eod:
        if args.tokenizer_type is None:
            raise TokenmillError("tokens-in needs --eod TOKEN, the EOD the tokens were made with (each document must "
                                 "end with it), or --no-eod for documents without one")
        eod = TYPE_EOD
    tokenizer = args.tokenizer if args.tokenizer_type is None else TokenizerSpec(
        args.tokenizer, args.tokenizer_type, args.tiktoken_pattern, args.tiktoken_num_special_tokens, args.vocab_size)
    meta = tokens_in(args.inputs, args.output, tokenizer, eod, add_special_tokens=not args.no_special_tokens,
                     megatron_prefix=prefix_of(args.megatron) if args.megatron else None,
                     drop_loss_mask=args.drop_loss_mask)
    print(f"{args.output}: {meta['documents']} documents, {meta['tokens']} tokens from {len(args.inputs)} "
          f"source(s), nothing tokenized", file=sys.stderr)
    if note := eod_within_note(meta):
        print(f"warning: {note}", file=sys.stderr)


def _to_megatron(args: argparse.Namespace) -> None:
    from tokenmill.formats.mmidx import pbin_to_megatron

    summary = pbin_to_megatron(args.input, prefix_of(args.output), vocab_size=args.vocab_size)
    print(f"{args.output}: {summary['documents']} documents, {summary['tokens']} tokens as {summary['dtype']}",
          file=sys.stderr)


def _to_datatrove(args: argparse.Namespace) -> None:
    from tokenmill.formats.datatrove import datatrove_paths, pbin_to_datatrove

    summary = pbin_to_datatrove(args.input, args.output, tokenizer_name=args.tokenizer_name,
                                vocab_size=args.vocab_size)
    print(f"{datatrove_paths(args.output)['.ds']}: {summary['documents']} documents, {summary['tokens']} tokens "
          f"of {summary['token_size']} bytes{', with .ds.loss' if summary['loss'] else ''}", file=sys.stderr)


def _blend(args: argparse.Namespace) -> None:
    from tokenmill.megatron.blend import alias_blend_cache, build_blend_cache, parse_blend

    if args.epochs not in (None, 1):
        raise TokenmillError("blend: --epochs supports 1 (each part one epoch); give sample counts otherwise")
    prefixes, weights = parse_blend(args.blend)
    if args.job_data_paths is not None and len(args.job_data_paths) != len(prefixes):
        raise TokenmillError(f"--job-data-paths names {len(args.job_data_paths)} paths for {len(prefixes)} datasets")
    tokenizers = _job_tokenizers(args)
    num_samples = ({} if args.epochs else
                   {"train": args.num_samples, "valid": args.valid_samples, "test": args.test_samples})
    paths = args.job_data_paths or prefixes  # as the training job spells them
    results = build_blend_cache([prefix_of(prefix) for prefix in prefixes], weights, args.output, args.seq_length,
                                args.seed, args.split, num_samples, tokenizers[0].identifiers,
                                extra=0 if args.no_extra_token else 1, dataset_paths=paths)
    # the first identity built the arrays; the other versions' identities name the same arrays
    for named in [results, *(alias_blend_cache(args.output, results, tokenizer.identifiers)
                             for tokenizer in tokenizers[1:])]:
        _report_caches(args.output, named)
        for split_name, result in named.items():  # the parts' own caches, where they were not simply found
            for part in result["parts"]:
                if part["state"] != "found":
                    _report_caches(args.output, {split_name: part})
    data_path = paths if weights is None else [item for pair in zip(args.blend[0::2], paths) for item in pair]
    _write_handoff(args, [prefix_of(prefix) for prefix in prefixes], paths, data_path,
                   {name: num_samples.get(name) for name in results}, tokenizers)


def _write_handoff(args: argparse.Namespace, prefixes: list[str], paths: list[str], data_path: list[str],
                   num_samples: dict, tokenizers: list) -> None:
    """sequences_per_dataset.json and megatron_args.txt in the cache folder."""
    from tokenmill.megatron.handoff import write_megatron_args, write_sequences_per_dataset

    token_dtypes = write_sequences_per_dataset(args.output, prefixes, paths)
    write_megatron_args(args.output, data_path, args.seq_length, args.seed, args.split, num_samples, tokenizers,
                        extra=0 if args.no_extra_token else 1, token_dtypes=token_dtypes)


def _verify(args: argparse.Namespace) -> None:
    from tokenmill.verify.checks import verify

    if args.stamp:
        refuse_inputs_as_outputs([args.stamp], [*args.paths, *([args.jsonl] if args.jsonl else [])])
    problems = [problem for path in args.paths
                for problem in verify(path, jsonl=args.jsonl, against_tokenizer=args.against_tokenizer,
                                      inputs=args.inputs, on_bad_line=args.on_bad_line)]
    if args.made_from and not problems:
        from tokenmill.verify.checks import verify_made_from

        prefixes = [prefix_of(path) for path in args.paths if is_megatron_index(f"{prefix_of(path)}.idx")]
        from tokenmill.formats.olmo import is_olmo_folder

        names = [path[:-len(".ds")] for path in args.paths if path.endswith(".ds")]
        olmo = [path for path in args.paths if is_olmo_folder(path)]
        problems = verify_made_from(args.made_from, prefixes[0] if prefixes else None, names[0] if names else None,
                                    olmo[0] if olmo else None)
    for problem in problems:
        print(problem, file=sys.stderr)
    if problems:
        raise TokenmillError(f"{len(problems)} problem(s) found in {len(args.paths)} file(s)")
    print(f"{len(args.paths)} file(s) verified, no problem found", file=sys.stderr)
    if args.stamp:
        with atomic_output(args.stamp) as stamp:
            stamp.write_text("".join(f"ok {path}\n" for path in args.paths))


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


def _expect_pins(args: argparse.Namespace) -> None:
    """``--pin URL VERSION``: read that version of each input URL (what the workflow's plan saw)."""
    from tokenmill.files.objects import expect

    for url, version in args.pin or ():
        expect(url, version)


def _add_pin_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--pin", nargs=2, action="append", metavar=("URL", "VERSION"),
                        help="read this version of the input URL (as the workflow's plan pinned it: its ETag, "
                             "Last-Modified and Hub revision): a Hub file at that commit, though its branch moved; "
                             "another object refused in one line once replaced")


def _sft(args: argparse.Namespace) -> None:
    from tokenmill.config import read_config_file
    from tokenmill.pack.sft import write_sft

    _expect_pins(args)
    meta = write_sft(args.name, read_config_file(args.config), args.output, source=args.config, engine=args.engine,
                     chat_template=args.chat_template, workers=args.workers)
    for source in meta["sources"]:  # what gave no document, by reason: conversations dropped, bad lines skipped
        for kind, what in (("dropped", "conversations"), ("skipped", "lines")):
            for reason, entry in source.get(kind, {}).items():
                print(f"{source['path']}: {kind} {entry['count']} {what}: {reason} (first at line "
                      f"{entry['first_lines'][0]})", file=sys.stderr)
    skipped = sum(entry["count"] for entry in meta["skipped"].values())
    checked = (f", {meta['engine']['checked_messages']} messages checked against Hugging Face"
               if "checked_messages" in meta["engine"] else "")
    template = (f"; chat template {meta['chat_template']['source']} (trained: {meta['chat_template']['train_on']}, "
                f"strftime_now: {meta['chat_template']['date']})" if "chat_template" in meta else "")
    print(f"{args.output}: {meta['documents']} conversations, {meta['tokens']} tokens, {meta['truncated']} truncated, "
          f"{meta['dropped']} dropped, {skipped} lines skipped; {meta['engine']['reason']}{checked}{template}",
          file=sys.stderr)


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


def _report(args: argparse.Namespace) -> None:
    from tokenmill.views.report import blend_page, dataset_page, sft_page

    if args.blend and args.sft:
        raise TokenmillError(f"{args.path}: --blend and --sft name different pages; give one")
    if args.blend:
        blend_page(args.path, args.output, best_fit=args.best_fit or [])
    elif args.sft:
        sft_page(args.path, args.output, verify_stamp=args.verified, best_fit=args.best_fit or [])
    else:
        dataset_page(args.path, args.output, verify_stamp=args.verified, caches=args.cache or [],
                     files=args.file or [], count_by=args.count_by, best_fit=args.best_fit or [])


def _report_caches(cache_dir: str, results: dict) -> None:
    for split_name, result in results.items():
        state = result["state"]
        if state == "rebuilt":
            state = "rebuilt: it had been built for another version of the dataset"
        print(f"{cache_dir}/{result['files']['description.txt']}: {split_name}, {result['samples']} samples ({state})",
              file=sys.stderr)


def _job_tokenizers(args: argparse.Namespace) -> list:
    """The tokenizer identities to name the caches for, one per Megatron version: from the job's
    tokenizer flags, or a NullTokenizer job of the data's vocabulary; identifiers given as JSON stand
    alone (no version, no flags known)."""
    import json

    from tokenmill.megatron.job_tokenizer import JobTokenizer, job_tokenizer, null_tokenizer_flags, parse_versions

    if args.tokenizer_identifiers is not None:
        if args.megatron_version:
            raise TokenmillError("--megatron-version names the version whose identifiers the tokenizer flags give; "
                                 "--tokenizer-identifiers gives the identifiers themselves: use one or the other")
        try:
            identifiers = json.loads(args.tokenizer_identifiers)
        except ValueError as exc:
            raise TokenmillError(f"--tokenizer-identifiers: not JSON ({exc})") from None
        if not isinstance(identifiers, dict):
            raise TokenmillError("--tokenizer-identifiers: expected a JSON object")
        return [JobTokenizer(None, None, identifiers)]
    versions = parse_versions(args.megatron_version)
    if args.megatron_tokenizer_args is not None:
        flags = args.megatron_tokenizer_args
    elif args.vocab_size_from is not None:
        from tokenmill.formats.pbin import read_sidecar

        meta = read_sidecar(args.vocab_size_from.removesuffix(".meta.json"))
        if not meta or "vocab_size" not in meta.get("tokenizer", {}):
            raise TokenmillError(f"{args.vocab_size_from}: no .pbin sidecar with a tokenizer vocabulary size")
        flags = null_tokenizer_flags(int(meta["tokenizer"]["vocab_size"]), meta["tokenizer"].get("eod_id"))
    else:
        flags = null_tokenizer_flags(args.vocab_size)
    return [job_tokenizer(version, flags) for version in versions]


def _to_olmo(args: argparse.Namespace) -> None:
    from tokenmill.formats.olmo import pbin_to_olmo

    meta = pbin_to_olmo(args.input, args.output, args.max_tokens, args.id_field or None)
    print(f"{args.output}: {len(meta['parts'])} part(s), {meta['documents']} documents, {meta['tokens']} tokens "
          f"({meta['dtype']})")


def _hf_tokenizer_folder(args: argparse.Namespace) -> None:
    from tokenmill.megatron.handoff import write_hf_tokenizer_folder

    print(f"{write_hf_tokenizer_folder(args.tokenizer, args.eod, args.output)}: tokenizer.json and "
          f"tokenizer_config.json (eos_token {args.eod!r})")


def _sample_index(args: argparse.Namespace) -> None:
    from tokenmill.megatron.gpt_indices import num_samples_for_epochs
    from tokenmill.megatron.index_cache import alias_gpt_cache, build_gpt_cache

    prefix = prefix_of(args.prefix)
    tokenizers = _job_tokenizers(args)
    if args.epochs is not None:
        num_samples = num_samples_for_epochs(prefix, args.split, args.epochs, args.seq_length,
                                             0 if args.no_extra_token else 1)
    else:
        num_samples = {"train": args.num_samples, "valid": args.valid_samples, "test": args.test_samples}
    results = build_gpt_cache(prefix, args.output, args.seq_length, args.seed, args.split, num_samples,
                              tokenizers[0].identifiers, extra=0 if args.no_extra_token else 1,
                              dataset_path=args.job_data_path)
    _report_caches(args.output, results)
    for tokenizer in tokenizers[1:]:  # the same arrays, named for another Megatron version
        _report_caches(args.output, alias_gpt_cache(args.output, results, tokenizer.identifiers))
    path = args.job_data_path or prefix
    _write_handoff(args, [prefix], [path], [path], {name: num_samples.get(name) for name in results}, tokenizers)


def _add_index_options(parser: argparse.ArgumentParser) -> None:
    """Options shared by sample-index and blend: Megatron's sampling flags and the hashed identities."""
    parser.add_argument("-o", "--output", required=True, help="cache folder (Megatron's --data-cache-path)")
    parser.add_argument("--seq-length", type=int, required=True, help="tokens per sample (--seq-length)")
    parser.add_argument("--seed", type=int, required=True, help="random seed (--seed)")
    parser.add_argument("--split", default=default("sampling.split"),
                        help="train,valid,test weights (default: %(default)s)")
    amount = parser.add_mutually_exclusive_group(required=True)
    amount.add_argument("--num-samples", type=int, help="training samples (Megatron: train_iters x global batch)")
    amount.add_argument("--epochs", type=int,
                        help="whole epochs of every split instead of sample counts (1: Megatron's num_samples=None)")
    parser.add_argument("--valid-samples", type=int, help="validation samples (default: one epoch)")
    parser.add_argument("--test-samples", type=int, help="test samples (default: one epoch)")
    parser.add_argument("--no-extra-token", action="store_true",
                        help="samples of exactly seq-length tokens (Megatron's add_extra_token_to_sequence off); "
                             "not part of Megatron's hash, so use a separate cache folder")
    identity = parser.add_mutually_exclusive_group(required=True)
    identity.add_argument("--megatron-tokenizer-args", metavar="FLAGS",
                          help="the training job's tokenizer flags as one string, e.g. '--tokenizer-type "
                               "HuggingFaceTokenizer --tokenizer-model /models/llama3': the caches are named with the "
                               "identifiers Megatron builds from them")
    identity.add_argument("--vocab-size", type=int,
                          help="name the caches for a job with --tokenizer-type NullTokenizer --vocab-size N")
    identity.add_argument("--vocab-size-from", metavar="PBIN_META",
                          help="as --vocab-size, with the vocabulary size (and EOD id) of a .pbin's sidecar")
    identity.add_argument("--tokenizer-identifiers", metavar="JSON",
                          help="expert: the tokenizer's unique_identifiers themselves, as in a Megatron "
                               "description.txt (no job flags are then known)")
    parser.add_argument("--megatron-version", action="append", metavar="{0.19,main}",
                        help="the Megatron version of the job: 0.19 (megatron-core 0.19.2, the default) or main "
                             "(Megatron-LM main, 2026-08); repeat it or give 0.19,main to name the caches for both")


def _add_tokenizer_type_arguments(parser: argparse.ArgumentParser) -> None:
    from tokenmill.tokenization.families import TIKTOKEN_DEFAULT_SPECIALS, TYPES

    parser.add_argument("--tokenizer-type", choices=TYPES, metavar="TYPE",
                        help="a Megatron tokenizer type; --tokenizer then names its files (a SentencePiece .model, "
                             "a tiktoken JSON, a GPT-2 vocab/merges folder, a WordPiece vocab.txt, a Hugging Face "
                             "folder) and the EOD defaults to the type's: " + ", ".join(TYPES))
    parser.add_argument("--tiktoken-pattern", choices=("v1", "v2"), default="v2",
                        help="TikTokenizer's split pattern (default: %(default)s)")
    parser.add_argument("--tiktoken-num-special-tokens", type=int, default=TIKTOKEN_DEFAULT_SPECIALS,
                        help="TikTokenizer's special tokens before the ranks (default: %(default)s)")
    parser.add_argument("--vocab-size", type=int, help="TikTokenizer's vocabulary size (default: 131072)")


def _preprocess_data(args: argparse.Namespace) -> None:
    from tokenmill.megatron.preprocess_data import preprocess_data

    summary = preprocess_data(args.flags)
    for key, prefix in summary.prefixes.items():
        print(f"{prefix}.bin/.idx: {summary.documents} documents, {summary.tokens[key]} tokens", file=sys.stderr)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every verb."""
    parser = argparse.ArgumentParser(prog="tokenmill", description="Turn raw JSONL corpora into LLM training data.")
    parser.add_argument("--version", action="version", version=f"tokenmill {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks for errors")
    verbs = parser.add_subparsers(dest="verb", required=True, metavar="VERB")
    _add_index_verb(verbs)
    _add_pack_verb(verbs)
    _add_prune_verb(verbs)
    _add_preprocess_data_verb(verbs)
    _add_merge_verb(verbs)
    _add_to_megatron_verb(verbs)
    _add_tokens_in_verb(verbs)
    _add_to_datatrove_verb(verbs)
    _add_sample_index_verb(verbs)
    _add_blend_verb(verbs)
    _add_verify_verb(verbs)
    _add_sft_verb(verbs)
    _add_inspect_verb(verbs)
    _add_report_verb(verbs)
    _add_hf_tokenizer_folder_verb(verbs)
    _add_to_olmo_verb(verbs)
    _add_best_fit_verb(verbs)
    return parser


def _add_index_verb(verbs) -> None:
    """The ``index`` verb's arguments."""
    index = verbs.add_parser("index", help="write the raw line index (.idx) of a JSONL file")
    index.add_argument("input", help="JSONL file, or a URL (s3://, gs://, https://, hf://datasets/...)")
    index.add_argument("-o", "--output", help="index path (default: INPUT with .idx)")
    index.add_argument("--validate", action="store_true", help="also parse every line as JSON")
    index.set_defaults(run=_index)


def _add_pack_verb(verbs) -> None:
    """The ``pack`` verb's arguments."""
    pack = verbs.add_parser("pack", help="tokenize JSONL into a packed .pbin (+ .pbin.meta.json)")
    pack.add_argument("inputs", nargs="+", metavar="INPUT",
                      help="JSONL files (plain or gzip/zstd/xz/bzip2) or Parquet files, packed in this order; or "
                           "URLs, streamed: s3:// or gs://BUCKET/KEY, https://HOST/PATH, "
                           "hf://datasets/ORG/NAME[@REV]/PATH (globs in a KEY and an hf:// PATH)")
    pack.add_argument("-o", "--output", help="output .pbin (optional with --megatron or --datatrove)")
    pack.add_argument("--megatron", metavar="PREFIX",
                      help="also write Megatron's PREFIX.bin/.idx from the same tokens, in the same pass (the bytes "
                           "of preprocess_data.py --append-eod)")
    pack.add_argument("--datatrove", metavar="DIR/NAME",
                      help="also write datatrove/nanotron's NAME.ds, .ds.index and .ds.metadata in DIR from the same "
                           "tokens, in the same pass (the bytes of datatrove's DocumentTokenizer)")
    pack.add_argument("--datatrove-tokenizer-name", metavar="NAME",
                      help="the tokenizer field of NAME.ds.metadata (default: --tokenizer as given)")
    pack.add_argument("--olmo", metavar="DIR",
                      help="also write OLMo-core's part-NNNNN.npy/.csv.gz and metadata.json in DIR, converted from "
                           "the -o .pbin once written (no second tokenizing; as tokenmill to-olmo)")
    pack.add_argument("--olmo-max-tokens", type=int, metavar="N",
                      help="with --olmo: tokens per part at most, whole documents (default: 512 Mi, as dolma)")
    pack.add_argument("--id-field", metavar="KEY",
                      help="with --olmo: the JSON field giving a document's id (default: id; else its line number)")
    pack.add_argument("--tokenizer", required=True,
                      help="Hugging Face tokenizer.json, or the files of --tokenizer-type")
    _add_tokenizer_type_arguments(pack)
    pack.add_argument("--index", action="append",
                      help="raw index of each input, in order (default: scan; ignored for compressed inputs)")
    pack.add_argument("--byte-range", metavar="START:END",
                      help="pack only the lines of the (one, plain) input that start in this byte range; "
                           "line numbers stay those of the whole file")
    pack.add_argument("--row-groups", metavar="START:END",
                      help="pack only row groups START..END-1 of the (one) Parquet input (END empty: to the last); "
                           "row numbers stay those of the whole file")
    pack.add_argument("--jq", default=default("datasets.*.text"),
                      help="jq pattern selecting the text (default: %(default)s)")
    pack.add_argument("--eod", metavar="TOKEN",
                      help="end-of-document token appended to every document, e.g. '<|endoftext|>'; required unless "
                           "--no-eod, since documents without it run together in training: Modalities requires an "
                           "eod_token and Megatron's pretraining recipes pass --append-eod")
    pack.add_argument("--no-eod", action="store_true",
                      help="append no end-of-document token (inspect shows it, verify warns about it)")
    pack.add_argument("--no-special-tokens", action="store_true",
                      help="do not let the tokenizer add its own BOS/EOS (added by default, as HF does)")
    pack.add_argument("--on-bad-line", choices=("error", "skip"), default=default("datasets.*.on_bad_line"),
                      help="stop at a bad line (default) or skip it and count it in the sidecar")
    pack.add_argument("--workers", type=int, default=len(os.sched_getaffinity(0)),
                      help="tokenizer threads: at most this many cores (default: every core this process may use)")
    pack.add_argument("--batch-bytes", type=int, default=4 << 20, help=argparse.SUPPRESS)
    pack.add_argument("--engine", choices=("auto", "hf", "fastokens", "gigatoken"),
                      default=default("tokenizers.*.engine"),
                      help="tokenizer engine: gigatoken (where installed) or fastokens where proven for the tokenizer, "
                           "else Hugging Face (default: %(default)s)")
    pack.add_argument("--check-fraction", type=float, default=default("tokenizers.*.check_fraction"), metavar="F",
                      help="with a fast engine, re-encode this share of documents whole with Hugging Face (more in "
                           "a job under 32 MB), besides excerpts around special-token strings and rare code points; "
                           "1 checks everything (default: %(default)s)")
    pack.add_argument("--max-line-bytes", type=int, default=default("datasets.*.max_line_bytes"), metavar="N",
                      help="longer lines are bad lines (memory: ~125 bytes per byte of a document under Hugging "
                           "Face; default: %(default)s)")
    pack.add_argument("--on-mismatch", choices=("error", "hf"), default=default("tokenizers.*.on_mismatch"),
                      help="a fast-engine document that differs from Hugging Face: stop (default) or re-encode "
                           "that input with Hugging Face")
    pack.add_argument("--allow-duplicate-inputs", action="store_true",
                      help="pack an input named twice twice (recorded in the sidecar); by default an error")
    _add_pin_argument(pack)
    pack.set_defaults(run=_pack)


def _add_prune_verb(verbs) -> None:
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


def _stale_runs(text: str) -> int | str:
    """``--keep-stale-runs``: a count of at least 1, or ``all``."""
    if text == "all":
        return text
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: give a number of runs, at least 1, or all")
    return int(text)


def _add_preprocess_data_verb(verbs) -> None:
    """The ``preprocess-data`` verb's arguments."""
    preprocess = verbs.add_parser("preprocess-data", add_help=False, prefix_chars="\0",
                                  help="Megatron's tools/preprocess_data.py: its flags, its .bin/.idx bytes, "
                                       "every tokenizer type (--help lists the flags)")
    preprocess.add_argument("flags", nargs=argparse.REMAINDER)
    preprocess.set_defaults(run=_preprocess_data)


def _add_merge_verb(verbs) -> None:
    """The ``merge`` verb's arguments."""
    merge = verbs.add_parser("merge", help="concatenate .pbin files, or Megatron datasets, in the order given")
    merge.add_argument("inputs", nargs="+", metavar="INPUT", help=".pbin files, or Megatron prefixes")
    merge.add_argument("-o", "--output", required=True, help="output .pbin, or output Megatron prefix")
    merge.add_argument("--force", action="store_true", help="replace the output if it exists")
    merge.add_argument("--on-bad-line", choices=("error", "skip"),
                       help="the policy the .pbin parts must meet: error refuses a part with skipped lines, naming the "
                            "first (a fresh pack under error stops there); default: the parts as they are")
    merge.set_defaults(run=_merge)


def _add_to_megatron_verb(verbs) -> None:
    """The ``to-megatron`` verb's arguments."""
    to_megatron = verbs.add_parser("to-megatron", help="convert a .pbin into Megatron MMIDIDX .bin/.idx")
    to_megatron.add_argument("input", help=".pbin file")
    to_megatron.add_argument("-o", "--output", required=True, help="output prefix (PREFIX.bin, PREFIX.idx)")
    to_megatron.add_argument("--vocab-size", type=int,
                             help=f"vocabulary size that picks uint16 (< {MEGATRON_UINT16_BELOW}) or int32 (default: "
                                  "from the sidecar)")
    to_megatron.set_defaults(run=_to_megatron)


def _add_tokens_in_verb(verbs) -> None:
    """The ``tokens-in`` verb's arguments."""
    tokens_in = verbs.add_parser("tokens-in", help="a .pbin (+ Megatron .bin/.idx) from tokens already made: Megatron "
                                                   "prefixes or .pbin files, nothing tokenized",
                                 description="A .pbin (+ Megatron .bin/.idx) from tokens already made, nothing "
                                             "tokenized. Megatron's empty documents (an empty text) are kept, so "
                                             "the .bin/.idx written equal the source's bytes; EOD ids inside "
                                             "documents are counted in the sidecar and warned about, as pack does. "
                                             "Refused in one line: a source named twice (a link to it included), "
                                             "an SFT .pbin without --drop-loss-mask.")
    tokens_in.add_argument("inputs", nargs="+", metavar="SOURCE",
                           help="Megatron prefixes (or their .bin/.idx) and .pbin files, in this order, each file "
                                "once")
    tokens_in.add_argument("-o", "--output", required=True, help="output .pbin (its sidecar records the sources)")
    tokens_in.add_argument("--megatron", metavar="PREFIX",
                           help="also write Megatron's PREFIX.bin/.idx: the sources' sequences as they are, in the "
                                "dtype preprocess_data.py picks for the vocabulary")
    tokens_in.add_argument("--tokenizer", required=True,
                           help="the tokenizer the tokens were made with (its vocabulary and EOD are checked against "
                                "them): a Hugging Face tokenizer.json, or the files of --tokenizer-type")
    _add_tokenizer_type_arguments(tokens_in)
    tokens_in.add_argument("--eod", metavar="TOKEN",
                           help="the EOD every document ends with (preprocess_data.py --append-eod), but an empty "
                                "text's, which has none; with --tokenizer-type, the type's by default")
    tokens_in.add_argument("--no-eod", action="store_true", help="the documents carry no EOD: take them as they are")
    tokens_in.add_argument("--no-special-tokens", action="store_true",
                           help="the tokens were made without the tokenizer's own BOS/EOS (recorded in the sidecar)")
    tokens_in.add_argument("--drop-loss-mask", action="store_true",
                           help="take an SFT .pbin's tokens without its loss mask (its .loss_mask.pbin is not read; "
                                "every token is then trained on; recorded per source in the sidecar); without it an "
                                "SFT .pbin is refused")
    tokens_in.set_defaults(run=_tokens_in)


def _add_to_datatrove_verb(verbs) -> None:
    """The ``to-datatrove`` verb's arguments."""
    to_datatrove = verbs.add_parser("to-datatrove", help="convert a .pbin into datatrove/nanotron NAME.ds files")
    to_datatrove.add_argument("input", help=".pbin file (an SFT .pbin also gives NAME.ds.loss from its loss mask)")
    to_datatrove.add_argument("-o", "--output", required=True,
                              help="DIR/NAME (or DIR/NAME.ds): writes NAME.ds, NAME.ds.index, NAME.ds.metadata "
                                   "in DIR")
    to_datatrove.add_argument("--tokenizer-name",
                              help="the tokenizer field of NAME.ds.metadata (default: the tokenizer path in the "
                                   "sidecar, as pack was given it)")
    to_datatrove.add_argument("--vocab-size", type=int,
                              help=f"vocabulary size that picks uint16 (<= {UINT16_VOCAB_LIMIT}) or uint32 (default: "
                                   "from the sidecar)")
    to_datatrove.set_defaults(run=_to_datatrove)


def _add_sample_index_verb(verbs) -> None:
    """The ``sample-index`` verb's arguments."""
    sample_index = verbs.add_parser(
        "sample-index", help="build Megatron GPTDataset index caches (document/sample/shuffle .npy) for every split")
    sample_index.add_argument("prefix", help="Megatron dataset prefix (PREFIX.bin, PREFIX.idx)")
    _add_index_options(sample_index)
    sample_index.add_argument("--job-data-path", "--megatron-path-prefix", dest="job_data_path", metavar="PATH",
                              help="the dataset path exactly as the training job passes it in --data-path, which "
                                   "Megatron hashes (default: PREFIX as given here); the config's "
                                   "sampling.megatron_path_prefix is the folder part of it")
    sample_index.set_defaults(run=_sample_index)


def _add_blend_verb(verbs) -> None:
    """The ``blend`` verb's arguments."""
    blend = verbs.add_parser("blend", help="build Megatron BlendedDataset caches (and every part's GPT caches)")
    blend.add_argument("blend", nargs="+", metavar="[WEIGHT] PREFIX",
                       help="as Megatron's --data-path: 'w1 P1 w2 P2 ...' or 'P1 P2 ...' (weights = lengths)")
    _add_index_options(blend)
    blend.add_argument("--job-data-paths", "--megatron-paths", dest="job_data_paths", nargs="+", metavar="PATH",
                       help="the prefixes exactly as the training job spells them in --data-path, in the same "
                            "order; Megatron hashes them (default: as given)")
    blend.set_defaults(run=_blend)


def _add_verify_verb(verbs) -> None:
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


def _add_sft_verb(verbs) -> None:
    """The ``sft`` verb's arguments."""
    sft = verbs.add_parser("sft", help="pre-tokenize conversations into a .pbin + .loss_mask.pbin pair")
    sft.add_argument("config", help="YAML with `tokenizers:` and `sft:` sections (the workflow config), or - for stdin")
    sft.add_argument("name", help="the entry of `sft:` to build")
    sft.add_argument("-o", "--output", required=True, help="output .pbin (the loss mask goes next to it)")
    sft.add_argument("--engine", choices=("auto", "hf", "fastokens", "gigatoken"), default=None,
                     help="tokenizer engine (default: the tokenizer's `engine` in the config, else auto); a fast "
                          "engine is proven on the config's check_fraction of the messages")
    sft.add_argument("--chat-template", metavar="tokenizer|PATH", default=None,
                     help="render conversations (OpenAI messages or ShareGPT conversations) with the model's chat "
                          "template, as transformers' apply_chat_template: `tokenizer` (its folder's) or a .jinja "
                          "file; overrides the entry's chat_template")
    sft.add_argument("--workers", type=int, default=None, metavar="N",
                     help="with a chat template, render batches in N worker processes (default: the entry's "
                          f"`workers`, else {default('sft.*.workers')}); the same bytes for any N")
    _add_pin_argument(sft)
    sft.set_defaults(run=_sft)


def _add_inspect_verb(verbs) -> None:
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


def _add_hf_tokenizer_folder_verb(verbs) -> None:
    """The ``hf-tokenizer-folder`` verb's arguments."""
    folder = verbs.add_parser("hf-tokenizer-folder",
                              help="write the folder Megatron's HuggingFaceTokenizer loads (--tokenizer-model DIR): "
                                   "tokenizer.json and a tokenizer_config.json naming the EOD its eos_token")
    folder.add_argument("tokenizer", help="Hugging Face tokenizer.json")
    folder.add_argument("--eod", required=True, metavar="TOKEN", help="the data's end-of-document token")
    folder.add_argument("-o", "--output", required=True, metavar="DIR", help="the folder to write")
    folder.set_defaults(run=_hf_tokenizer_folder)


def _add_to_olmo_verb(verbs) -> None:
    """The ``to-olmo`` verb's arguments."""
    olmo = verbs.add_parser("to-olmo", help="convert a .pbin into OLMo-core's token files (part-NNNNN.npy, "
                                            "part-NNNNN.csv.gz of start,end,id,src,loc, metadata.json)")
    olmo.add_argument("input", help=".pbin file (with its sidecar)")
    olmo.add_argument("-o", "--output", required=True, metavar="DIR", help="the folder to write the parts into")
    olmo.add_argument("--max-tokens", type=int, default=default("datasets.*.olmo_max_tokens"), metavar="N",
                      help="tokens per part at most, whole documents (default: 512 Mi, as dolma)")
    olmo.add_argument("--id-field", default="id", metavar="KEY",
                      help="the JSON field giving a document's id in the csv.gz (default: id; else its line number)")
    olmo.set_defaults(run=_to_olmo)


def _add_best_fit_verb(verbs) -> None:
    """The ``best-fit`` verb's arguments."""
    best_fit = verbs.add_parser(
        "best-fit", help="pack documents whole into samples (OBFD): a Megatron dataset's packed index per split, "
                         "or the packing caches OLMo-core's NumpyPackedFSLDataset finds for a folder of parts")
    best_fit.add_argument("input", nargs="+", metavar="INPUT",
                          help="a Megatron dataset prefix (PREFIX.bin, PREFIX.idx), a folder of OLMo-core parts "
                               "(tokenmill to-olmo), or an SFT pair's .pbin (tokenmill sft: its conversations into "
                               "rows); with --blend, 'w1 P1 w2 P2 ...' as Megatron's --data-path")
    best_fit.add_argument("-o", "--output", required=True, metavar="DIR",
                          help="the cache folder to write the packed index into; for parts, the job's work_dir")
    best_fit.add_argument("--seq-length", type=int, required=True, metavar="L", help="tokens per sample")
    best_fit.add_argument("--long-doc-strategy", choices=("truncate", "fragment"), default="truncate",
                          help="documents over L tokens: their first L tokens (truncate, the default) or pieces "
                               "of L tokens and a shorter last one (fragment)")
    megatron = best_fit.add_argument_group("a Megatron dataset")
    megatron.add_argument("--seed", type=int, default=1234, help="orders the samples (default: 1234)")
    megatron.add_argument("--split", default="969,30,1", help="Megatron's --split (default: 969,30,1)")
    blend = best_fit.add_argument_group("a blend of Megatron datasets (--blend)")
    blend.add_argument("--blend", action="store_true",
                       help="pack each weighted dataset and draw the blend's samples from them by the weights, as "
                            "Megatron's BlendedDataset (docs/formats.md, 'Packed blend')")
    for split_name in ("train", "valid", "test"):
        blend.add_argument(f"--{split_name}-samples", type=int, default=0, metavar="N",
                           help=f"the blend's {split_name} samples (default: 0, none)")
    olmo = best_fit.add_argument_group("OLMo-core parts")
    olmo.add_argument("--job-path-prefix", metavar="PATH",
                      help="the parts' folder as the job spells it in its paths (hashed into the cache names; "
                           "default: the folder as given here)")
    olmo.add_argument("--source-group-size", type=int, default=1, metavar="N",
                      help="parts packed together, as the job's source_group_size (default: 1)")
    olmo.add_argument("--pad-id", type=int, metavar="ID", help="the job's pad_token_id (default: the EOS id)")
    best_fit.set_defaults(run=_best_fit)


def _best_fit(args: argparse.Namespace) -> None:
    if args.blend:
        from tokenmill.megatron.blend import parse_blend
        from tokenmill.packing.packed_blend import build_packed_blend

        prefixes, weights = parse_blend(args.input)
        if weights is None:
            raise TokenmillError(f"best-fit --blend: give 'WEIGHT PREFIX' pairs, got {' '.join(args.input)}")
        num_samples = {name: getattr(args, f"{name}_samples") for name in ("train", "valid", "test")}
        if not any(num_samples.values()):
            raise TokenmillError("best-fit --blend: give the blend's samples (--train-samples, --valid-samples, "
                                 "--test-samples)")
        blended = build_packed_blend([prefix_of(prefix) for prefix in prefixes], weights, args.output,
                                     args.seq_length, args.seed, args.split, num_samples, args.long_doc_strategy)
        _say_blend_datasets(prefixes, args)
        for split_name, figures in blended.items():
            drawn = ", ".join(f"{each['drawn']} of {each['dataset']}, {each['epochs']} epoch(s) of its packed "
                              f"samples" for each in figures["datasets"])
            print(f"{args.output}: blend {split_name}: {figures['samples']} samples ({drawn}), padding "
                  f"{100 * figures['padding_share']:.2f} %", file=sys.stderr)
        return
    if len(args.input) != 1:
        raise TokenmillError(f"best-fit: one input without --blend, got {len(args.input)}")
    args.input = args.input[0]
    if args.input.endswith(".pbin"):
        from tokenmill.packing.sft_packing import build_sft_best_fit

        figures = build_sft_best_fit(args.input, args.output, args.seq_length)
        print(f"{args.output}: {figures['conversations']} conversations in {figures['samples']} rows of "
              f"{args.seq_length}, each whole: padding {100 * figures['padding_share']:.2f} % (one per row: "
              f"{100 * figures['unpacked_padding_share']:.2f} %)", file=sys.stderr)
        return
    if os.path.isdir(args.input):
        from tokenmill.packing.olmo_cache import write_olmo_packing_for_parts

        figures = write_olmo_packing_for_parts(args.input, args.output, args.seq_length, args.long_doc_strategy,
                                               args.job_path_prefix, args.source_group_size, args.pad_id)
        _say_packed(f"{args.output}: OLMo-core's packing", figures, args)
        return
    from tokenmill.packing.packed_index import build_packed_index

    for split_name, figures in build_packed_index(prefix_of(args.input), args.output, args.seq_length, args.seed,
                                                  args.split, args.long_doc_strategy).items():
        _say_packed(f"{args.output}: {split_name}", figures, args)


def _say_blend_datasets(prefixes: list[str], args: argparse.Namespace) -> None:
    """Each blended dataset's packing, split by split, as :func:`_say_packed` says it (the tokens each drops)."""
    from tokenmill.megatron.gpt_indices import SPLIT_NAMES
    from tokenmill.packing.packed_blend import dataset_folder
    from tokenmill.packing.packed_index import load_packed_index, packed_index_names

    for i, prefix in enumerate(prefixes):
        folder = dataset_folder(args.output, i)
        for split_name in SPLIT_NAMES:
            if (folder / packed_index_names(args.long_doc_strategy, split_name)["description"]).is_file():
                _say_packed(f"{folder} ({prefix}): {split_name}",
                            load_packed_index(folder, args.long_doc_strategy, split_name)[0], args)


def _say_packed(what: str, figures: dict, args: argparse.Namespace) -> None:
    from tokenmill.packing.packed_index import truncation_cost

    cost, warning = truncation_cost(figures)  # tokens dropped beside what it bought
    print(f"{what}: {figures['documents']} documents in {figures['samples']} samples of {args.seq_length}: "
          f"{figures['kept_whole']} whole ({figures['cut_by_concat']} that concatenation would cut), "
          f"{figures['long']} longer: {cost}; padding {100 * figures['padding_share']:.2f} % of these samples",
          file=sys.stderr)
    if warning:
        print(f"{what}: {warning}", file=sys.stderr)


def _add_report_verb(verbs) -> None:
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
    report.add_argument("--sft", action="store_true",
                        help="PATH is an SFT pair's .pbin (its loss mask beside it; --best-fit: its rows' folder)")
    report.set_defaults(run=_report)


def main(argv: list[str] | None = None) -> int:
    """Run one verb (see :mod:`tokenmill.__main__`, the console script); returns the exit code."""
    try:
        args = build_parser().parse_args(argv)
    except KeyboardInterrupt:
        print("tokenmill: interrupted", file=sys.stderr)
        return 128 + signal.SIGINT
    # SIGTERM (scancel, Snakemake stopping a job) unwinds like Ctrl-C, so writers remove their temporaries
    previous_handler = signal.signal(signal.SIGTERM, _terminate)
    try:
        args.run(args)
        sys.stdout.flush()  # here, so that a reader gone away is seen below, not at the interpreter's exit
    except KeyboardInterrupt as interruption:  # writers have removed their temporaries on the way out
        remove_temporaries()  # and these are the ones a signal caught before their writer's `with` began
        if args.debug:
            traceback.print_exc()
        terminated = isinstance(interruption, _Terminated)
        print(f"tokenmill: {'terminated' if terminated else 'interrupted'}", file=sys.stderr)
        return 128 + (signal.SIGTERM if terminated else signal.SIGINT)
    except BrokenPipeError:  # the reader went away (`tokenmill inspect ... | head`): nothing more to say
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # so that the exit's flush fails no more
        return 128 + signal.SIGPIPE
    except (TokenmillError, OSError) as exc:
        if args.debug:
            traceback.print_exc()
        message = str(exc) if isinstance(exc, TokenmillError) else f"{exc.filename or ''}: {exc.strerror}"
        print(f"tokenmill: error: {redact_text(message)}", file=sys.stderr)
        return 1
    finally:
        signal.signal(signal.SIGTERM, previous_handler)
    return 0


class _Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the program is, to unwind through the writers' clean-up."""


def _terminate(signum, frame) -> None:
    raise _Terminated()


if __name__ == "__main__":
    sys.exit(main())
