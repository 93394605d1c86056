"""The verbs that make tokens: ``index``, ``pack``, ``tokens-in``, ``sft``, ``merge``, ``preprocess-data``.

Each verb's arguments (``add_<verb>``) and its handler side by side; the handler calls one module function
and says on stderr what it wrote. The module a verb calls is imported by its handler, not here: a start
pays only for what parsing needs.
"""

from __future__ import annotations

import argparse
import os
import sys

from tokenmill.config import default
from tokenmill.errors import TokenmillError
from tokenmill.files.urls import listed, schemes_help
from tokenmill.formats.bin_idx import prefix_of


def add_index(verbs: argparse._SubParsersAction) -> None:
    """The ``index`` verb's arguments."""
    index = verbs.add_parser("index", help="write the raw line index (.idx) of a JSONL file")
    index.add_argument("input", help=f"JSONL file, or a URL ({listed()})")
    index.add_argument("-o", "--output", help="index path (default: INPUT with .idx)")
    index.add_argument("--validate", action="store_true", help="also parse every line as JSON")
    index.set_defaults(run=_index)


def _index(args: argparse.Namespace) -> None:
    from tokenmill.files.source import Source
    from tokenmill.inputs import raw_index

    source = Source.resolve(args.input) if args.output is None else args.input
    if args.output is None and source.is_url:
        raise TokenmillError(f"{source.name}: give -o for an object's raw index (it is written here, not in the "
                             f"bucket)")
    out_path = args.output or os.path.splitext(args.input)[0] + ".idx"
    lines = raw_index.index_file(source, out_path, validate=args.validate)
    print(f"{out_path}: {len(lines)} lines", file=sys.stderr)


def add_pack(verbs: argparse._SubParsersAction) -> None:
    """The ``pack`` verb's arguments."""
    pack = verbs.add_parser("pack", help="tokenize JSONL into a packed .pbin (+ .pbin.meta.json)")
    pack.add_argument("inputs", nargs="+", metavar="INPUT",
                      help="JSONL files (plain or gzip/zstd/xz/bzip2) or Parquet files, packed in this order; or "
                           f"URLs, streamed: {schemes_help()}")
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


def _add_pin_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--pin", nargs=2, action="append", metavar=("URL", "VERSION"),
                        help="read this version of the input URL (as the workflow's plan pinned it: its ETag, "
                             "Last-Modified and Hub revision): a Hub file at that commit, though its branch moved; "
                             "another object refused in one line once replaced")


def _expect_pins(args: argparse.Namespace) -> None:
    """``--pin URL VERSION``: read that version of each input URL (what the workflow's plan saw)."""
    from tokenmill.files.objects import expect

    for url, version in args.pin or ():
        expect(url, version)


def add_tokens_in(verbs: argparse._SubParsersAction) -> None:
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


def add_sft(verbs: argparse._SubParsersAction) -> None:
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


def _sft(args: argparse.Namespace) -> None:
    from tokenmill.config import read_config_file
    from tokenmill.pack.sft import summary_lines, write_sft

    _expect_pins(args)
    meta = write_sft(args.name, read_config_file(args.config), args.output, source=args.config, engine=args.engine,
                     chat_template=args.chat_template, workers=args.workers)
    print("\n".join(summary_lines(meta, args.output)), file=sys.stderr)


def add_merge(verbs: argparse._SubParsersAction) -> None:
    """The ``merge`` verb's arguments."""
    merge = verbs.add_parser("merge", help="concatenate .pbin files, or Megatron datasets, in the order given")
    merge.add_argument("inputs", nargs="+", metavar="INPUT", help=".pbin files, or Megatron prefixes")
    merge.add_argument("-o", "--output", required=True, help="output .pbin, or output Megatron prefix")
    merge.add_argument("--force", action="store_true", help="replace the output if it exists")
    merge.add_argument("--on-bad-line", choices=("error", "skip"),
                       help="the policy the .pbin parts must meet: error refuses a part with skipped lines, naming the "
                            "first (a fresh pack under error stops there); default: the parts as they are")
    merge.set_defaults(run=_merge)


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
        from tokenmill.formats.bin_idx import merge_megatron

        summary = merge_megatron(prefix_of(args.output), [prefix_of(path) for path in args.inputs], force=args.force)
        print(f"{args.output}: {summary['documents']} documents ({summary['dtype']}) from {len(args.inputs)} "
              f"datasets", file=sys.stderr)


def add_preprocess_data(verbs: argparse._SubParsersAction) -> None:
    """The ``preprocess-data`` verb's arguments."""
    preprocess = verbs.add_parser("preprocess-data", add_help=False, prefix_chars="\0",
                                  help="Megatron's tools/preprocess_data.py: its flags, its .bin/.idx bytes, "
                                       "every tokenizer type (--help lists the flags)")
    preprocess.add_argument("flags", nargs=argparse.REMAINDER)
    preprocess.set_defaults(run=_preprocess_data)


def _preprocess_data(args: argparse.Namespace) -> None:
    from tokenmill.megatron.preprocess_data import preprocess_data

    summary = preprocess_data(args.flags)
    for key, prefix in summary.prefixes.items():
        print(f"{prefix}.bin/.idx: {summary.documents} documents, {summary.tokens[key]} tokens", file=sys.stderr)
