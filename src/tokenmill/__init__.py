"""tokenmill: raw JSONL corpora → tokenized, packed, Megatron- and Modalities-compatible training data.

Every stage is a plain function in one module and a verb of the ``tokenmill`` CLI. The modules live in rooms by
concern, each a subpackage whose docstring says what it holds and which rooms it may import. The import order,
bottom to top: the root's ``errors``, ``progress``, ``config`` (the schema and its defaults), the ``_kernels``
extension and this module; then the rooms in :data:`ROOMS` order, each importing only from its own room and the
rooms before it; ``cli`` (and ``__main__``, the console script) at the top. ``tests/test_layers.py`` keeps the
order, function-level imports included, and checks each room's "May import:" line against it.

The Snakemake workflow imports the format versions below and puts them in each rule's ``params:``,
so a change of an on-disk format reruns exactly the rules whose outputs it affects.
"""

import importlib
import sys
import warnings

__version__ = "0.1.0"

#: The rooms (subpackages) in import order, bottom to top: the one statement of the order (module docstring).
ROOMS = ("files", "inputs", "tokenization", "formats", "megatron", "best_fit", "training", "pack", "verify", "plan",
         "views")

#: Version of each file format tokenmill writes. Bump one when the bytes a stage writes change.
FORMAT_VERSIONS = {
    "raw_index": "modalities-raw-index/1",
    # /2: sidecar records the file identity and ignored tokenizer settings; /3: eod_in_text,
    # allow_duplicate_inputs, and inputs hashed up to the size they had when packing began; /4: relative
    # paths in the sidecar count from its own folder, not from where pack ran
    # /5: the tokenizer's vocab_size as loaded (len(tokenizer)), its post-processor's ids and, with gaps, id_limit
    # /6: eod_within_documents, the EOD ids inside documents (an ordinary token as EOD, or one the text spells)
    # /7: no on_bad_line (a unit packed under error is what skip makes of it: one identity for both)
    "pbin": "modalities-pbin-0.5.0/7",
    # /2: a second EOD after documents whose text ends with one, as Megatron; /3: dtype from len(tokenizer)
    "mmidx": "megatron-mmidx-v1/3",
    # /2: a fingerprint of the .idx beside each split; /3: names a real job computes (pad_id, flags,
    # versions) and sequences_per_dataset.json
    # /4: megatron_args.txt says what --tokenizer-model must hold for HuggingFaceTokenizer
    "sample_index": "megatron-gpt-cache-0.19/4",
    # /2: two caches of one dataset and split in a cache folder are a problem; /3: the .bin and .ds made from
    # a .pbin follow Megatron's dtype and datatrove's document rules
    "verify": "checks/3",
    # /3: relative paths in the sidecar count from its own folder; /4: a chat template's strftime_now gives a fixed
    # date (template_date), recorded in chat_template.date, never the build's; /5: each source's skipped and
    # dropped lines by reason, and left_out, every line that gave no document (so document k names its own line)
    "sft": "tokenmill-sft-pbin-pair/5",
    # /2: the files of every format, with their sizes; /3: samples asked vs built in whole epochs, histogram
    # labels rotated, megatron_args.txt wrapped; /4: sidecar paths as reached from the working directory
    # /5: a blend page gives the epochs of each dataset the blend takes, a dataset page each source's tokens
    # /6: a best-fit table gives the tokens truncate dropped and their share of the split, with a warning above
    # TRUNCATION_WARNING_SHARE; a blend page each dataset's best-fit table
    "report": "tokenmill-report/6",
    # NAME.ds/.ds.index/.ds.metadata(/.ds.loss) as datatrove 0.10.1 writes them; /2: its post-processor rule
    # (the text's ids and one EOS) and its token size from the vocabulary as loaded
    "datatrove": "datatrove-ds-0.10.1/2",
    # OLMo-core 3.0.0's token files: raw ids, part-NNNNN.csv.gz of start,end,id,src,loc, metadata.json
    "olmo": "tokenmill-olmo/1",
    # best-fit packing: the packed index over .bin/.idx, and OLMo-core 3.0.0's packing caches
    "packing": "tokenmill-best-fit/1",
    # what tokens-in writes beyond the pbin and mmidx formats (/1: those alone); /2: eod_within_documents and
    # empty_texts in the sidecar (Megatron's empty documents taken)
    "tokens_in": "tokenmill-tokens-in/2",
}


def alias_moved_module(old: str, new: str) -> None:
    """Make the old import path ``old`` (a module issue 41 moved into a room) the module ``new`` itself:
    ``sys.modules[old] is sys.modules[new]``, so a name or a monkeypatch set through either is seen through both.
    Warns once, a DeprecationWarning pointing at the code that imported ``old``."""
    module = importlib.import_module(new)
    # 3: the importer of the old path's module (warnings skips the import machinery's frames)
    warnings.warn(f"{old} is deprecated: import {new}", DeprecationWarning, stacklevel=3)
    sys.modules[old] = module
