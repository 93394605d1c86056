"""The verbs that write what a training job reads beside the tokens: ``sample-index`` (Megatron's GPTDataset
caches), ``blend`` (its BlendedDataset caches) and ``best-fit`` (packed indices and OLMo-core's packing caches).

Each verb's arguments (``add_<verb>``) and its handler side by side. ``sample-index`` and ``blend`` share the
sampling options and the job's tokenizer identities (:func:`_add_index_options`, :func:`_job_tokenizers`) and
both write the hand-off files (``sequences_per_dataset.json``, ``megatron_args.txt``) into the cache folder.
"""

from __future__ import annotations

import argparse
import os
import sys

from tokenmill.config import default
from tokenmill.errors import TokenmillError
from tokenmill.formats.bin_idx import prefix_of


def add_sample_index(verbs: argparse._SubParsersAction) -> None:
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


def add_blend(verbs: argparse._SubParsersAction) -> None:
    """The ``blend`` verb's arguments."""
    blend = verbs.add_parser("blend", help="build Megatron BlendedDataset caches (and every part's GPT caches)")
    blend.add_argument("blend", nargs="+", metavar="[WEIGHT] PREFIX",
                       help="as Megatron's --data-path: 'w1 P1 w2 P2 ...' or 'P1 P2 ...' (weights = lengths)")
    _add_index_options(blend)
    blend.add_argument("--job-data-paths", "--megatron-paths", dest="job_data_paths", nargs="+", metavar="PATH",
                       help="the prefixes exactly as the training job spells them in --data-path, in the same "
                            "order; Megatron hashes them (default: as given)")
    blend.set_defaults(run=_blend)


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


def _report_caches(cache_dir: str, results: dict) -> None:
    for split_name, result in results.items():
        state = result["state"]
        if state == "rebuilt":
            state = "rebuilt: it had been built for another version of the dataset"
        print(f"{cache_dir}/{result['files']['description.txt']}: {split_name}, {result['samples']} samples ({state})",
              file=sys.stderr)


def _write_handoff(args: argparse.Namespace, prefixes: list[str], paths: list[str], data_path: list[str],
                   num_samples: dict, tokenizers: list) -> None:
    """sequences_per_dataset.json and megatron_args.txt in the cache folder."""
    from tokenmill.megatron.handoff import write_megatron_args, write_sequences_per_dataset

    token_dtypes = write_sequences_per_dataset(args.output, prefixes, paths)
    write_megatron_args(args.output, data_path, args.seq_length, args.seed, args.split, num_samples, tokenizers,
                        extra=0 if args.no_extra_token else 1, token_dtypes=token_dtypes)


def add_best_fit(verbs: argparse._SubParsersAction) -> None:
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
        _best_fit_blend(args)
        return
    if len(args.input) != 1:
        raise TokenmillError(f"best-fit: one input without --blend, got {len(args.input)}")
    (path,) = args.input
    if path.endswith(".pbin"):
        from tokenmill.best_fit.sft_packing import build_sft_best_fit

        figures = build_sft_best_fit(path, args.output, args.seq_length)
        print(f"{args.output}: {figures['conversations']} conversations in {figures['samples']} rows of "
              f"{args.seq_length}, each whole: padding {100 * figures['padding_share']:.2f} % (one per row: "
              f"{100 * figures['unpacked_padding_share']:.2f} %)", file=sys.stderr)
    elif os.path.isdir(path):
        from tokenmill.best_fit.olmo_cache import write_olmo_packing_for_parts

        figures = write_olmo_packing_for_parts(path, args.output, args.seq_length, args.long_doc_strategy,
                                               args.job_path_prefix, args.source_group_size, args.pad_id)
        _say_packed(f"{args.output}: OLMo-core's packing", figures, args)
    else:
        from tokenmill.best_fit.packed_index import build_packed_index

        for split_name, figures in build_packed_index(prefix_of(path), args.output, args.seq_length, args.seed,
                                                      args.split, args.long_doc_strategy).items():
            _say_packed(f"{args.output}: {split_name}", figures, args)


def _best_fit_blend(args: argparse.Namespace) -> None:
    """``best-fit --blend``: each weighted dataset packed, the blend's samples drawn from them."""
    from tokenmill.megatron.blend import parse_blend
    from tokenmill.best_fit.packed_blend import build_packed_blend

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


def _say_blend_datasets(prefixes: list[str], args: argparse.Namespace) -> None:
    """Each blended dataset's packing, split by split, as :func:`_say_packed` says it (the tokens each drops)."""
    from tokenmill.megatron.gpt_indices import SPLIT_NAMES
    from tokenmill.best_fit.packed_blend import dataset_folder
    from tokenmill.best_fit.packed_index import load_packed_index, packed_index_names

    for i, prefix in enumerate(prefixes):
        folder = dataset_folder(args.output, i)
        for split_name in SPLIT_NAMES:
            if (folder / packed_index_names(args.long_doc_strategy, split_name)["description"]).is_file():
                _say_packed(f"{folder} ({prefix}): {split_name}",
                            load_packed_index(folder, args.long_doc_strategy, split_name)[0], args)


def _say_packed(what: str, figures: dict, args: argparse.Namespace) -> None:
    from tokenmill.best_fit.packed_index import truncation_cost

    cost, warning = truncation_cost(figures)  # tokens dropped beside what it bought
    print(f"{what}: {figures['documents']} documents in {figures['samples']} samples of {args.seq_length}: "
          f"{figures['kept_whole']} whole ({figures['cut_by_concat']} that concatenation would cut), "
          f"{figures['long']} longer: {cost}; padding {100 * figures['padding_share']:.2f} % of these samples",
          file=sys.stderr)
    if warning:
        print(f"{what}: {warning}", file=sys.stderr)
