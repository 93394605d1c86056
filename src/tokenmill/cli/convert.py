"""The verbs that convert what is built for another trainer: ``to-megatron``, ``to-datatrove``, ``to-olmo``
(each from a ``.pbin``) and ``hf-tokenizer-folder`` (the tokenizer folder Megatron's HuggingFaceTokenizer loads).

Each verb's arguments (``add_<verb>``) and its handler side by side; the converter is imported by the handler.
"""

from __future__ import annotations

import argparse
import sys

from tokenmill.config import default
from tokenmill.formats.dtypes import MEGATRON_UINT16_BELOW, UINT16_VOCAB_LIMIT
from tokenmill.formats.bin_idx import prefix_of


def add_to_megatron(verbs: argparse._SubParsersAction) -> None:
    """The ``to-megatron`` verb's arguments."""
    to_megatron = verbs.add_parser("to-megatron", help="convert a .pbin into Megatron MMIDIDX .bin/.idx")
    to_megatron.add_argument("input", help=".pbin file")
    to_megatron.add_argument("-o", "--output", required=True, help="output prefix (PREFIX.bin, PREFIX.idx)")
    to_megatron.add_argument("--vocab-size", type=int,
                             help=f"vocabulary size that picks uint16 (< {MEGATRON_UINT16_BELOW}) or int32 (default: "
                                  "from the sidecar)")
    to_megatron.set_defaults(run=_to_megatron)


def _to_megatron(args: argparse.Namespace) -> None:
    from tokenmill.formats.bin_idx import pbin_to_megatron

    summary = pbin_to_megatron(args.input, prefix_of(args.output), vocab_size=args.vocab_size)
    print(f"{args.output}: {summary['documents']} documents, {summary['tokens']} tokens as {summary['dtype']}",
          file=sys.stderr)


def add_to_datatrove(verbs: argparse._SubParsersAction) -> None:
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


def _to_datatrove(args: argparse.Namespace) -> None:
    from tokenmill.formats.datatrove import datatrove_paths, pbin_to_datatrove

    summary = pbin_to_datatrove(args.input, args.output, tokenizer_name=args.tokenizer_name,
                                vocab_size=args.vocab_size)
    print(f"{datatrove_paths(args.output)['.ds']}: {summary['documents']} documents, {summary['tokens']} tokens "
          f"of {summary['token_size']} bytes{', with .ds.loss' if summary['loss'] else ''}", file=sys.stderr)


def add_to_olmo(verbs: argparse._SubParsersAction) -> None:
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


def _to_olmo(args: argparse.Namespace) -> None:
    from tokenmill.formats.olmo import pbin_to_olmo

    meta = pbin_to_olmo(args.input, args.output, args.max_tokens, args.id_field or None)
    print(f"{args.output}: {len(meta['parts'])} part(s), {meta['documents']} documents, {meta['tokens']} tokens "
          f"({meta['dtype']})")


def add_hf_tokenizer_folder(verbs: argparse._SubParsersAction) -> None:
    """The ``hf-tokenizer-folder`` verb's arguments."""
    folder = verbs.add_parser("hf-tokenizer-folder",
                              help="write the folder Megatron's HuggingFaceTokenizer loads (--tokenizer-model DIR): "
                                   "tokenizer.json and a tokenizer_config.json naming the EOD its eos_token")
    folder.add_argument("tokenizer", help="Hugging Face tokenizer.json")
    folder.add_argument("--eod", required=True, metavar="TOKEN", help="the data's end-of-document token")
    folder.add_argument("-o", "--output", required=True, metavar="DIR", help="the folder to write")
    folder.set_defaults(run=_hf_tokenizer_folder)


def _hf_tokenizer_folder(args: argparse.Namespace) -> None:
    from tokenmill.megatron.handoff import write_hf_tokenizer_folder

    print(f"{write_hf_tokenizer_folder(args.tokenizer, args.eod, args.output)}: tokenizer.json and "
          f"tokenizer_config.json (eos_token {args.eod!r})")
