"""The caches a user's own Megatron job finds: identifiers and cache names from the job's tokenizer flags.

Every identifier, md5 name, array hash and file below was produced by the real Megatron code — not by
tokenmill — in throwaway venvs outside the project (no Megatron code is here, none is a dependency):

* megatron-core 0.19.2: ``python3.11 -m venv /tmp/venv-meg``; ``pip install 'torch==2.13.0+cpu' numpy
  pybind11 packaging tokenizers==0.23.3 transformers==5.23.0 sentencepiece==0.2.3 tiktoken==0.14.0
  typing_extensions einops`` and ``pip install --no-deps triton``; the megatron-core 0.19.2 wheel (only a
  cp312 build exists: ``pip download --no-deps megatron-core==0.19.2`` with Python 3.12) unzipped into
  site-packages, ``helpers.cpp`` compiled for 3.11 as in tests/megatron/test_megatron_golden.py.
* Megatron-LM main (commit d98e8a6, 2026-08-22): ``megatron/`` and ``tools/`` of that commit on
  PYTHONPATH, the same packages plus gigatoken==0.10.0, ``helpers.cpp`` compiled.
* Both on Python 3.11, with a ``sitecustomize`` that sets ``typing.override =
  typing_extensions.override`` (their training modules import it; it is Python 3.12's).

In a work folder holding ``tok/gpt2/`` (``data/tokenizers/gpt2.tokenizer.json`` as ``tokenizer.json`` plus a
``tokenizer_config.json`` naming PreTrainedTokenizerFast with ``<|endoftext|>`` as bos/eos/unk), ``gpt2/``
(the same: GPT2BPETokenizer loads "gpt2" through transformers), ``gpt2-vocab.json``/``gpt2-merges.txt``
(GPT-2's vocabulary and merges taken from that tokenizer.json), ``tiktoken-big.json`` (a tiktoken vocabulary
of 130,072 distinct byte strings, the 256 single bytes first), ``tiktoken-bytes.json`` (the 256 bytes only),
``sp.model`` (a 500-piece SentencePiece BPE trained on demo texts), with HF_HUB_OFFLINE=1:

1. Identifiers: for each flag string F below, ``sys.argv = ["pretrain_gpt.py", *shlex.split(F)]``,
   ``args = megatron.training.arguments.parse_args()`` (Megatron's own parser, so its defaults),
   ``tokenizer = megatron.core.tokenizers.utils.build_tokenizer.build_tokenizer(args)``, and
   ``list(tokenizer.unique_identifiers.items())`` recorded. None: that version refuses the flags
   (argparse exits, or build_tokenizer raises: NullTokenizer without a non-zero --vocab-size,
   HuggingFaceTokenizer without --tokenizer-model, --use-gigatoken on 0.19, an unknown type).
2. Caches: the demo as ``data/megatron/demo_text_document`` (tokenmill pack + to-megatron of
   data/raw/demo.jsonl with GPT-2 and eod ``<|endoftext|>``: the bytes of tests/megatron/test_megatron_golden.py's
   MEGATRON_BIN_IDX), and its documents 0-1,499 and 1,500-2,989 as ``demo_a``/``demo_b`` (Megatron's
   IndexedDatasetBuilder); then ``BlendedMegatronDatasetBuilder(GPTDataset, [20000, 200, 20], lambda: True,
   GPTDatasetConfig(random_seed=1234, sequence_length=512, blend=([DEMO], None) or ([A, B], [0.7, 0.3]),
   split="969,30,1", path_to_cache=FOLDER, tokenizer=tokenizer, reset_position_ids=False,
   reset_attention_mask=False, eod_mask_loss=False, create_attention_mask=False)).build()`` with the
   tokenizer a job's flags build (step 1); recorded: every file name and the sha256 of every ``.npy``.
   The arrays are the same bytes for every tokenizer and both versions; only the md5 names differ.
3. ``tools/build_sequences_per_dataset.py --data-path ... --per-dataset-sequences-path OUT`` of main, for
   ``DEMO``; ``0.7 A 0.3 B``; and ``"B " A B`` (a repeated prefix, one with a trailing space): OUT's bytes.
4. ``GPTDatasetConfig(blend=..., fast_cache_load=True, ...)`` raises AssertionError on both versions
   ("--dataloader-fast-cache-load and --data-path cannot be used together"); with
   ``sequences_per_dataset=json.load(OUT)`` alone the blend of step 2 is found in its cache (no file added).
"""

import hashlib
import json
import os
from pathlib import Path

import pytest

from conftest import DEMO_PREFIX as DEMO
from conftest import PART_A_PREFIX as PART_A
from conftest import PART_B_PREFIX as PART_B
from conftest import copy_built, run_tokenmill
from tokenmill.errors import TokenmillError
from tokenmill.megatron.handoff import SEQUENCES_NAME, write_sequences_per_dataset
from tokenmill.megatron.index_cache import null_tokenizer_identifiers
from tokenmill.megatron.job_tokenizer import job_tokenizer_identifiers

DEFAULT_TEXT = "megatron.core.tokenizers.text.models.default_tokenizer.DefaultTokenizerText"  # 0.19's class
TOKENIZER_TEXT = "megatron.core.tokenizers.text.text_tokenizer.MegatronTokenizerText"  # main's class

RECORDED = {  # case: (the job's tokenizer flags, {version: its unique_identifiers, in order; None: refused})
    'null': ('--tokenizer-type NullTokenizer --vocab-size 50257',
        {'0.19': {'class': DEFAULT_TEXT, 'tokenizer_path': None, 'vocab_size': '50257', 'pad_id': '-1'},
         'main': {'class': TOKENIZER_TEXT, 'tokenizer_path': None, 'vocab_size': '50257', 'pad_id': '-1'}}),
    'null_leading0': ('--tokenizer-type NullTokenizer --vocab-size 050257',
        {'0.19': {'class': DEFAULT_TEXT, 'tokenizer_path': None, 'vocab_size': '50257', 'pad_id': '-1'},
         'main': {'class': TOKENIZER_TEXT, 'tokenizer_path': None, 'vocab_size': '50257', 'pad_id': '-1'}}),
    'null_eod': ('--tokenizer-type NullTokenizer --vocab-size 50257 --null-tokenizer-eod-id 0',
        {'0.19': {'class': DEFAULT_TEXT, 'tokenizer_path': None, 'vocab_size': '50257', 'eod_id': '0',
                  'pad_id': '-1'},
         'main': {'class': TOKENIZER_TEXT, 'tokenizer_path': None, 'vocab_size': '50257', 'eod_id': '0',
                  'pad_id': '-1'}}),
    'null_pad': ('--tokenizer-type NullTokenizer --vocab-size 50257 --null-tokenizer-pad-id 50256',
        {'0.19': {'class': DEFAULT_TEXT, 'tokenizer_path': None, 'vocab_size': '50257', 'pad_id': '50256'},
         'main': {'class': TOKENIZER_TEXT, 'tokenizer_path': None, 'vocab_size': '50257', 'pad_id': '50256'}}),
    'null_eod_pad': (
        '--tokenizer-type NullTokenizer --vocab-size 131072 --null-tokenizer-pad-id 11 --null-tokenizer-eod-id 2',
        {'0.19': {'class': DEFAULT_TEXT, 'tokenizer_path': None, 'vocab_size': '131072', 'eod_id': '2',
                  'pad_id': '11'},
         'main': {'class': TOKENIZER_TEXT, 'tokenizer_path': None, 'vocab_size': '131072', 'eod_id': '2',
                  'pad_id': '11'}}),
    'null_novocab': ('--tokenizer-type NullTokenizer',
        {'0.19': None,
         'main': None}),
    'null_vocab0': ('--tokenizer-type NullTokenizer --vocab-size 0',
        {'0.19': None,
         'main': None}),
    'null_gigatoken': ('--tokenizer-type NullTokenizer --vocab-size 50257 --use-gigatoken',
        {'0.19': None,
         'main': {'class': TOKENIZER_TEXT, 'tokenizer_path': None, 'vocab_size': '50257', 'pad_id': '-1'}}),
    'hf': ('--tokenizer-type HuggingFaceTokenizer --tokenizer-model tok/gpt2',
        {'0.19': {'class': DEFAULT_TEXT, 'tokenizer_path': 'tok/gpt2', 'chat_template': 'None', 'vocab_file': 'None',
                  'merges_file': 'None', 'additional_special_tokens': '[]', 'use_fast': 'True',
                  'trust_remote_code': 'False', 'include_special_tokens': 'True'},
         'main': {'class': TOKENIZER_TEXT, 'tokenizer_path': 'tok/gpt2', 'chat_template': 'None',
                  'vocab_file': 'None', 'merges_file': 'None', 'additional_special_tokens': '[]', 'use_fast': 'True',
                  'trust_remote_code': 'False', 'include_special_tokens': 'True', 'use_gigatoken': 'False'}}),
    'hf_abs_slash': ('--tokenizer-type HuggingFaceTokenizer --tokenizer-model /tmp/megrec/work/tok/gpt2/',
        {'0.19': {'class': DEFAULT_TEXT, 'tokenizer_path': '/tmp/megrec/work/tok/gpt2/', 'chat_template': 'None',
                  'vocab_file': 'None', 'merges_file': 'None', 'additional_special_tokens': '[]', 'use_fast': 'True',
                  'trust_remote_code': 'False', 'include_special_tokens': 'True'},
         'main': {'class': TOKENIZER_TEXT, 'tokenizer_path': '/tmp/megrec/work/tok/gpt2/', 'chat_template': 'None',
                  'vocab_file': 'None', 'merges_file': 'None', 'additional_special_tokens': '[]', 'use_fast': 'True',
                  'trust_remote_code': 'False', 'include_special_tokens': 'True', 'use_gigatoken': 'False'}}),
    'hf_gigatoken': ('--tokenizer-type HuggingFaceTokenizer --tokenizer-model tok/gpt2 --use-gigatoken',
        {'0.19': None,
         'main': {'class': TOKENIZER_TEXT, 'tokenizer_path': 'tok/gpt2', 'chat_template': 'None',
                  'vocab_file': 'None', 'merges_file': 'None', 'additional_special_tokens': '[]', 'use_fast': 'True',
                  'trust_remote_code': 'False', 'include_special_tokens': 'True', 'use_gigatoken': 'True'}}),
    'hf_flags': (
        '--tokenizer-type HuggingFaceTokenizer --tokenizer-model tok/gpt2 --tokenizer-hf-no-use-fast '
        '--trust-remote-code --tokenizer-hf-no-include-special-tokens',
        {'0.19': {'class': DEFAULT_TEXT, 'tokenizer_path': 'tok/gpt2', 'chat_template': 'None', 'vocab_file': 'None',
                  'merges_file': 'None', 'additional_special_tokens': '[]', 'use_fast': 'False',
                  'trust_remote_code': 'True', 'include_special_tokens': 'False'},
         'main': {'class': TOKENIZER_TEXT, 'tokenizer_path': 'tok/gpt2', 'chat_template': 'None',
                  'vocab_file': 'None', 'merges_file': 'None', 'additional_special_tokens': '[]',
                  'use_fast': 'False', 'trust_remote_code': 'True', 'include_special_tokens': 'False',
                  'use_gigatoken': 'False'}}),
    'hf_special': (
        '--tokenizer-type HuggingFaceTokenizer --tokenizer-model tok/gpt2 --tokenizer-special-tokens \'<a>\' "<b\'x>"',
        {'0.19': {'class': DEFAULT_TEXT, 'tokenizer_path': 'tok/gpt2', 'chat_template': 'None', 'vocab_file': 'None',
                  'merges_file': 'None', 'additional_special_tokens': '[\'<a>\', "<b\'x>"]', 'use_fast': 'True',
                  'trust_remote_code': 'False', 'include_special_tokens': 'True'},
         'main': {'class': TOKENIZER_TEXT, 'tokenizer_path': 'tok/gpt2', 'chat_template': 'None',
                  'vocab_file': 'None', 'merges_file': 'None', 'additional_special_tokens': '[\'<a>\', "<b\'x>"]',
                  'use_fast': 'True', 'trust_remote_code': 'False', 'include_special_tokens': 'True',
                  'use_gigatoken': 'False'}}),
    'hf_chat': ("--tokenizer-type HuggingFaceTokenizer --tokenizer-model tok/gpt2 --chat-template '{{ messages }}\n'",
        {'0.19': {'class': DEFAULT_TEXT, 'tokenizer_path': 'tok/gpt2', 'chat_template': '{{ messages }}\n',
                  'vocab_file': 'None', 'merges_file': 'None', 'additional_special_tokens': '[]', 'use_fast': 'True',
                  'trust_remote_code': 'False', 'include_special_tokens': 'True'},
         'main': {'class': TOKENIZER_TEXT, 'tokenizer_path': 'tok/gpt2', 'chat_template': '{{ messages }}\n',
                  'vocab_file': 'None', 'merges_file': 'None', 'additional_special_tokens': '[]', 'use_fast': 'True',
                  'trust_remote_code': 'False', 'include_special_tokens': 'True', 'use_gigatoken': 'False'}}),
    'hf_files': (
        '--tokenizer-type HuggingFaceTokenizer --tokenizer-model tok/gpt2 --vocab-file gpt2-vocab.json '
        '--merge-file gpt2-merges.txt',
        {'0.19': {'class': DEFAULT_TEXT, 'tokenizer_path': 'tok/gpt2', 'chat_template': 'None',
                  'vocab_file': 'gpt2-vocab.json', 'merges_file': 'gpt2-merges.txt',
                  'additional_special_tokens': '[]', 'use_fast': 'True', 'trust_remote_code': 'False',
                  'include_special_tokens': 'True'},
         'main': {'class': TOKENIZER_TEXT, 'tokenizer_path': 'tok/gpt2', 'chat_template': 'None',
                  'vocab_file': 'gpt2-vocab.json', 'merges_file': 'gpt2-merges.txt',
                  'additional_special_tokens': '[]', 'use_fast': 'True', 'trust_remote_code': 'False',
                  'include_special_tokens': 'True', 'use_gigatoken': 'False'}}),
    'hf_vocab_file_only': (
        '--tokenizer-type HuggingFaceTokenizer --tokenizer-model tok/gpt2 --vocab-file gpt2-vocab.json',
        {'0.19': {'class': DEFAULT_TEXT, 'tokenizer_path': 'tok/gpt2', 'chat_template': 'None',
                  'vocab_file': 'gpt2-vocab.json', 'merges_file': 'None', 'additional_special_tokens': '[]',
                  'use_fast': 'True', 'trust_remote_code': 'False', 'include_special_tokens': 'True'},
         'main': {'class': TOKENIZER_TEXT, 'tokenizer_path': 'tok/gpt2', 'chat_template': 'None',
                  'vocab_file': 'gpt2-vocab.json', 'merges_file': 'None', 'additional_special_tokens': '[]',
                  'use_fast': 'True', 'trust_remote_code': 'False', 'include_special_tokens': 'True',
                  'use_gigatoken': 'False'}}),
    'hf_vocabsize': (
        '--tokenizer-type HuggingFaceTokenizer --tokenizer-model tok/gpt2 --vocab-size 50304 '
        '--null-tokenizer-eod-id 5',
        {'0.19': {'class': DEFAULT_TEXT, 'tokenizer_path': 'tok/gpt2', 'chat_template': 'None', 'vocab_file': 'None',
                  'merges_file': 'None', 'additional_special_tokens': '[]', 'use_fast': 'True',
                  'trust_remote_code': 'False', 'include_special_tokens': 'True'},
         'main': {'class': TOKENIZER_TEXT, 'tokenizer_path': 'tok/gpt2', 'chat_template': 'None',
                  'vocab_file': 'None', 'merges_file': 'None', 'additional_special_tokens': '[]', 'use_fast': 'True',
                  'trust_remote_code': 'False', 'include_special_tokens': 'True', 'use_gigatoken': 'False'}}),
    'hf_nomodel': ('--tokenizer-type HuggingFaceTokenizer',
        {'0.19': None,
         'main': None}),
    'gpt2bpe': ('--tokenizer-type GPT2BPETokenizer --vocab-file gpt2-vocab.json --merge-file gpt2-merges.txt',
        {'0.19': {'class': DEFAULT_TEXT, 'tokenizer_path': 'GPT2BPETokenizer', 'additional_special_tokens': '[]',
                  'vocab_file': 'gpt2-vocab.json', 'merges_file': 'gpt2-merges.txt', 'use_fast': 'True',
                  'trust_remote_code': 'False', 'include_special_tokens': 'True'},
         'main': {'class': TOKENIZER_TEXT, 'tokenizer_path': 'GPT2BPETokenizer', 'additional_special_tokens': '[]',
                  'vocab_file': 'gpt2-vocab.json', 'merges_file': 'gpt2-merges.txt', 'use_fast': 'True',
                  'trust_remote_code': 'False', 'include_special_tokens': 'True', 'use_gigatoken': 'False'}}),
    'gpt2bpe_gigatoken': (
        '--tokenizer-type GPT2BPETokenizer --vocab-file gpt2-vocab.json --merge-file gpt2-merges.txt '
        '--use-gigatoken',
        {'0.19': None,
         'main': {'class': TOKENIZER_TEXT, 'tokenizer_path': 'GPT2BPETokenizer', 'additional_special_tokens': '[]',
                  'vocab_file': 'gpt2-vocab.json', 'merges_file': 'gpt2-merges.txt', 'use_fast': 'True',
                  'trust_remote_code': 'False', 'include_special_tokens': 'True', 'use_gigatoken': 'True'}}),
    'gpt2bpe_special': (
        '--tokenizer-type GPT2BPETokenizer --vocab-file gpt2-vocab.json --merge-file gpt2-merges.txt '
        "--tokenizer-special-tokens '<a>'",
        {'0.19': {'class': DEFAULT_TEXT, 'tokenizer_path': 'GPT2BPETokenizer',
                  'additional_special_tokens': "['<a>']", 'vocab_file': 'gpt2-vocab.json',
                  'merges_file': 'gpt2-merges.txt', 'use_fast': 'True', 'trust_remote_code': 'False',
                  'include_special_tokens': 'True'},
         'main': {'class': TOKENIZER_TEXT, 'tokenizer_path': 'GPT2BPETokenizer',
                  'additional_special_tokens': "['<a>']", 'vocab_file': 'gpt2-vocab.json',
                  'merges_file': 'gpt2-merges.txt', 'use_fast': 'True', 'trust_remote_code': 'False',
                  'include_special_tokens': 'True', 'use_gigatoken': 'False'}}),
    'tiktoken': ('--tokenizer-type TikTokenizer --tokenizer-model tiktoken-big.json',
        {'0.19': {'class': DEFAULT_TEXT, 'tokenizer_path': 'tiktoken-big.json', 'chat_template': 'None',
                  'num_special_tokens': '1000', 'special_tokens': 'None'},
         'main': {'class': TOKENIZER_TEXT, 'tokenizer_path': 'tiktoken-big.json', 'chat_template': 'None',
                  'num_special_tokens': '1000', 'special_tokens': 'None'}}),
    'tiktoken_opts': (
        '--tokenizer-type TikTokenizer --tokenizer-model tiktoken-bytes.json --tiktoken-pattern v1 '
        '--vocab-size 1256 --tiktoken-num-special-tokens 1000',
        {'0.19': {'class': DEFAULT_TEXT, 'tokenizer_path': 'tiktoken-bytes.json', 'chat_template': 'None',
                  'pattern': 'v1', 'vocab_size': '1256', 'num_special_tokens': '1000', 'special_tokens': 'None'},
         'main': {'class': TOKENIZER_TEXT, 'tokenizer_path': 'tiktoken-bytes.json', 'chat_template': 'None',
                  'pattern': 'v1', 'vocab_size': '1256', 'num_special_tokens': '1000', 'special_tokens': 'None'}}),
    'tiktoken_special': (
        '--tokenizer-type TikTokenizer --tokenizer-model tiktoken-big.json --tokenizer-special-tokens '
        "'<unk>' '<s>' '</s>' '<mask>' '<pad>' '<cls>' '<sep>' '<x>'",
        {'0.19': {'class': DEFAULT_TEXT, 'tokenizer_path': 'tiktoken-big.json', 'chat_template': 'None',
                  'num_special_tokens': '1000',
                  'special_tokens': "['<unk>', '<s>', '</s>', '<mask>', '<pad>', '<cls>', '<sep>', '<x>']"},
         'main': {'class': TOKENIZER_TEXT, 'tokenizer_path': 'tiktoken-big.json', 'chat_template': 'None',
                  'num_special_tokens': '1000',
                  'special_tokens': "['<unk>', '<s>', '</s>', '<mask>', '<pad>', '<cls>', '<sep>', '<x>']"}}),
    'tiktoken_chat': (
        "--tokenizer-type TikTokenizer --tokenizer-model tiktoken-big.json --chat-template 'T' "
        '--tiktoken-pattern v2',
        {'0.19': {'class': DEFAULT_TEXT, 'tokenizer_path': 'tiktoken-big.json', 'chat_template': 'T',
                  'pattern': 'v2', 'num_special_tokens': '1000', 'special_tokens': 'None'},
         'main': {'class': TOKENIZER_TEXT, 'tokenizer_path': 'tiktoken-big.json', 'chat_template': 'T',
                  'pattern': 'v2', 'num_special_tokens': '1000', 'special_tokens': 'None'}}),
    'sp': ('--tokenizer-type SentencePieceTokenizer --tokenizer-model sp.model',
        {'0.19': {'class': DEFAULT_TEXT, 'tokenizer_path': 'sp.model', 'chat_template': 'None',
                  'ignore_extra_whitespaces': 'True', 'legacy': 'False', 'special_tokens': 'None'},
         'main': {'class': TOKENIZER_TEXT, 'tokenizer_path': 'sp.model', 'chat_template': 'None',
                  'ignore_extra_whitespaces': 'True', 'legacy': 'False', 'special_tokens': 'None'}}),
    'gptsp': ('--tokenizer-type GPTSentencePieceTokenizer --tokenizer-model sp.model',
        {'0.19': {'class': DEFAULT_TEXT, 'tokenizer_path': 'sp.model', 'chat_template': 'None',
                  'ignore_extra_whitespaces': 'True', 'legacy': 'False', 'special_tokens': 'None'},
         'main': {'class': TOKENIZER_TEXT, 'tokenizer_path': 'sp.model', 'chat_template': 'None',
                  'ignore_extra_whitespaces': 'True', 'legacy': 'False', 'special_tokens': 'None'}}),
    'llama2': ('--tokenizer-type Llama2Tokenizer --tokenizer-model sp.model',
        {'0.19': {'class': DEFAULT_TEXT, 'tokenizer_path': 'sp.model', 'chat_template': 'None',
                  'ignore_extra_whitespaces': 'True', 'legacy': 'False', 'special_tokens': 'None'},
         'main': {'class': TOKENIZER_TEXT, 'tokenizer_path': 'sp.model', 'chat_template': 'None',
                  'ignore_extra_whitespaces': 'True', 'legacy': 'False', 'special_tokens': 'None'}}),
    'sp_opts': (
        '--tokenizer-type SentencePieceTokenizer --tokenizer-model sp.model --tokenizer-sentencepiece-legacy '
        '--no-tokenizer-sentencepiece-ignore-extra-whitespaces',
        {'0.19': {'class': DEFAULT_TEXT, 'tokenizer_path': 'sp.model', 'chat_template': 'None',
                  'ignore_extra_whitespaces': 'False', 'legacy': 'True', 'special_tokens': 'None'},
         'main': {'class': TOKENIZER_TEXT, 'tokenizer_path': 'sp.model', 'chat_template': 'None',
                  'ignore_extra_whitespaces': 'False', 'legacy': 'True', 'special_tokens': 'None'}}),
    'sp_opts_alias': (
        '--tokenizer-type SentencePieceTokenizer --tokenizer-model sp.model '
        '--disable-tokenizer-sentencepiece-ignore-extra-whitespaces',
        {'0.19': {'class': DEFAULT_TEXT, 'tokenizer_path': 'sp.model', 'chat_template': 'None',
                  'ignore_extra_whitespaces': 'False', 'legacy': 'False', 'special_tokens': 'None'},
         'main': {'class': TOKENIZER_TEXT, 'tokenizer_path': 'sp.model', 'chat_template': 'None',
                  'ignore_extra_whitespaces': 'False', 'legacy': 'False', 'special_tokens': 'None'}}),
    'sp_special': (
        "--tokenizer-type SentencePieceTokenizer --tokenizer-model sp.model --tokenizer-special-tokens '<x>' "
        "'<y>' --tokenizer-sentencepiece-legacy",
        {'0.19': {'class': DEFAULT_TEXT, 'tokenizer_path': 'sp.model', 'chat_template': 'None',
                  'ignore_extra_whitespaces': 'True', 'legacy': 'True', 'special_tokens': "['<x>', '<y>']"},
         'main': {'class': TOKENIZER_TEXT, 'tokenizer_path': 'sp.model', 'chat_template': 'None',
                  'ignore_extra_whitespaces': 'True', 'legacy': 'True', 'special_tokens': "['<x>', '<y>']"}}),
    'sp_chat': ("--tokenizer-type SentencePieceTokenizer --tokenizer-model sp.model --chat-template 'T'",
        {'0.19': {'class': DEFAULT_TEXT, 'tokenizer_path': 'sp.model', 'chat_template': 'T',
                  'ignore_extra_whitespaces': 'True', 'legacy': 'False', 'special_tokens': 'None'},
         'main': {'class': TOKENIZER_TEXT, 'tokenizer_path': 'sp.model', 'chat_template': 'T',
                  'ignore_extra_whitespaces': 'True', 'legacy': 'False', 'special_tokens': 'None'}}),
    'unknown_type': ('--tokenizer-type FooTokenizer',
        {'0.19': None,
         'main': None}),
    'tiktoken_vocab_eq': ('--tokenizer-type TikTokenizer --tokenizer-model tiktoken-big.json --vocab-size=131072',
        {'0.19': {'class': DEFAULT_TEXT, 'tokenizer_path': 'tiktoken-big.json', 'chat_template': 'None',
                  'vocab_size': '131072', 'num_special_tokens': '1000', 'special_tokens': 'None'},
         'main': {'class': TOKENIZER_TEXT, 'tokenizer_path': 'tiktoken-big.json', 'chat_template': 'None',
                  'vocab_size': '131072', 'num_special_tokens': '1000', 'special_tokens': 'None'}}),
    'hf_repeat': (
        '--tokenizer-type NullTokenizer --tokenizer-type HuggingFaceTokenizer --tokenizer-model=x '
        '--tokenizer-model tok/gpt2',
        {'0.19': {'class': DEFAULT_TEXT, 'tokenizer_path': 'tok/gpt2', 'chat_template': 'None', 'vocab_file': 'None',
                  'merges_file': 'None', 'additional_special_tokens': '[]', 'use_fast': 'True',
                  'trust_remote_code': 'False', 'include_special_tokens': 'True'},
         'main': {'class': TOKENIZER_TEXT, 'tokenizer_path': 'tok/gpt2', 'chat_template': 'None',
                  'vocab_file': 'None', 'merges_file': 'None', 'additional_special_tokens': '[]', 'use_fast': 'True',
                  'trust_remote_code': 'False', 'include_special_tokens': 'True', 'use_gigatoken': 'False'}}),
    'hf_special_eq': (
        '--tokenizer-type HuggingFaceTokenizer --tokenizer-model tok/gpt2 --tokenizer-special-tokens=<a>',
        {'0.19': {'class': DEFAULT_TEXT, 'tokenizer_path': 'tok/gpt2', 'chat_template': 'None', 'vocab_file': 'None',
                  'merges_file': 'None', 'additional_special_tokens': "['<a>']", 'use_fast': 'True',
                  'trust_remote_code': 'False', 'include_special_tokens': 'True'},
         'main': {'class': TOKENIZER_TEXT, 'tokenizer_path': 'tok/gpt2', 'chat_template': 'None',
                  'vocab_file': 'None', 'merges_file': 'None', 'additional_special_tokens': "['<a>']",
                  'use_fast': 'True', 'trust_remote_code': 'False', 'include_special_tokens': 'True',
                  'use_gigatoken': 'False'}}),
}


# Step 2: the names of the demo's caches (seq 512, seed 1234, 969,30,1, 20000/200/20 samples) per job.
CACHE_NAMES = {  # case: (the job's tokenizer flags, blend or not, {version: {(split, dataset): md5}})
    'null': ('--tokenizer-type NullTokenizer --vocab-size 50257', False,
        {'0.19': {('train', 'demo'): '9f855c467e240b61d400d8f93f51828c',
                 ('valid', 'demo'): 'a6bf0a119bedb5dc63bb3c0c0cb44153',
                 ('test', 'demo'): '1c69f37a227c591fd1e9caa176a49734'},
         'main': {('train', 'demo'): '5c99251e5470e26a45b4fa1f8da85fb2',
                 ('valid', 'demo'): 'b39cd323a6bdf6f66bd4983fba6c2711',
                 ('test', 'demo'): '2fbda4bd9518a01c4010de809950f447'}}),
    'null_eod': ('--tokenizer-type NullTokenizer --vocab-size 50304 --null-tokenizer-eod-id 50256', False,
        {'0.19': {('train', 'demo'): '895f64dbcb7be2b0770a6dc2795988c0',
                 ('valid', 'demo'): '5ed227ec075206c039cf07b08e13e3e0',
                 ('test', 'demo'): 'db9525c452772389401f71e2c60a21fe'},
         'main': {('train', 'demo'): '31c1d6565a925d82bd88cd823fcea1f3',
                 ('valid', 'demo'): '9f28133f29f0e1589603977745c02a26',
                 ('test', 'demo'): 'c6f5baaa3d592f1d57d65dd1ed34f638'}}),
    'hf': ('--tokenizer-type HuggingFaceTokenizer --tokenizer-model tok/gpt2', False,
        {'0.19': {('train', 'demo'): '0d00600ffe3dc1a0662570b50bfd974e',
                 ('valid', 'demo'): '1915f2fc555831a6d0015c21373947dc',
                 ('test', 'demo'): '765c87a735ff01d19452a863778d62d7'},
         'main': {('train', 'demo'): '699bb55f28ee30ff2dda2524305ff883',
                 ('valid', 'demo'): 'e7db7481dab15acc28a5fd97d5f30587',
                 ('test', 'demo'): '593a788d4059294daf08118c4412dd31'}}),
    'gpt2bpe': ('--tokenizer-type GPT2BPETokenizer --vocab-file gpt2-vocab.json --merge-file gpt2-merges.txt', False,
        {'0.19': {('train', 'demo'): '46efe41b1cbe3a965acec1cd7c88035e',
                 ('valid', 'demo'): '0191cc8989c7c26f88bd3ea574893b93',
                 ('test', 'demo'): '73d32547e5e76ae31424dd6161738f65'},
         'main': {('train', 'demo'): '21e21c70ccc64f649536ea993bad3617',
                 ('valid', 'demo'): '0f8584c6050aa57db77bb8caa0b94408',
                 ('test', 'demo'): '873a9353b05ca84b564fdd75b5bb29e8'}}),
    'tiktoken': ('--tokenizer-type TikTokenizer --tokenizer-model tiktoken-big.json', False,
        {'0.19': {('train', 'demo'): 'b41a91179634ed44b2738830f92a96eb',
                 ('valid', 'demo'): '22154516da36192660a37c63c47254d7',
                 ('test', 'demo'): '1967443f506cc905bc82135605b3c567'},
         'main': {('train', 'demo'): '28d98164c873f50da1749d5e63644a69',
                 ('valid', 'demo'): '2d205eae19325c3b6462d3457ff2e12d',
                 ('test', 'demo'): 'c22b3ca9e7c47087d71fca3542c58705'}}),
    'sp': ('--tokenizer-type SentencePieceTokenizer --tokenizer-model sp.model', False,
        {'0.19': {('train', 'demo'): '6f3686285719749772a9129305b3a75f',
                 ('valid', 'demo'): '04774dbd331648f7f40fd79c8cc17ad0',
                 ('test', 'demo'): '3169472666302ed96aa14a45097f7a65'},
         'main': {('train', 'demo'): '5284ea766186a67779a745e4cc384266',
                 ('valid', 'demo'): 'c9ed1e359bc618dda2523898fd6f36dd',
                 ('test', 'demo'): 'c14176e1a92b0f3b762130d1305488c0'}}),
    'blend_null': ('--tokenizer-type NullTokenizer --vocab-size 50257', True,
        {'0.19': {('train', 'blend'): '18b24c616b14cc4af7cbfc818437e25d',
                 ('train', 'demo_a'): '9334fefad248a3ff51eecfe7d31ff23a',
                 ('train', 'demo_b'): '34379ed66d9ae5e3549d7b5d71a9dd24',
                 ('valid', 'blend'): 'd1c313949030c6cf1862e79748d158f4',
                 ('valid', 'demo_a'): '98b2e76077ee9d91f356b8e05586010f',
                 ('valid', 'demo_b'): 'd3d2b8d612e329ee20ce734e274da861',
                 ('test', 'blend'): '0f0c560ae804aea4af81e6bd8bd7d204',
                 ('test', 'demo_a'): 'b360ebe98a1d5910273d18d6649f24cb',
                 ('test', 'demo_b'): '17c42d7d94e3c89f3b25afadf4fbc780'},
         'main': {('train', 'blend'): 'f3f73d5a8d8e7bcde4700ce933675466',
                 ('train', 'demo_a'): '86bdb7248b6e6d6a95fcb428a30dc5ad',
                 ('train', 'demo_b'): 'c6754814fe930fe5b800a6450881e48a',
                 ('valid', 'blend'): '282c9f4a71aed2704216484e827df50e',
                 ('valid', 'demo_a'): 'a575399e56a24cf05787387b5e68d39b',
                 ('valid', 'demo_b'): 'a3a2a900ee5bd25d0658aebe8224cecd',
                 ('test', 'blend'): 'e339305ea49d59bf6c8548b02c741917',
                 ('test', 'demo_a'): '324f43872392fc914078a101839bb112',
                 ('test', 'demo_b'): '6ed907566ccddf0a555fd993f1da8513'}}),
    'blend_hf': ('--tokenizer-type HuggingFaceTokenizer --tokenizer-model tok/gpt2', True,
        {'0.19': {('train', 'blend'): '4275b7a84f9056780c8c926460ddec37',
                 ('train', 'demo_a'): 'b015225e5a967a9205ed6ee468a55d67',
                 ('train', 'demo_b'): 'b6c4dbdc7ee335101a1f71f5fbafe31c',
                 ('valid', 'blend'): '12e70fcf86f0b64a4b6df81ab1924418',
                 ('valid', 'demo_a'): 'd83dd3db90948b621b7e66869694cec5',
                 ('valid', 'demo_b'): '611b6d900978231dc067158734a0731b',
                 ('test', 'blend'): '526334d8bf0286e6ddbd821eb85440a8',
                 ('test', 'demo_a'): '1657a96c610bc0ebdfe9a47920e6c3e4',
                 ('test', 'demo_b'): '4d383469fa0a8390c5aa40df36fada38'},
         'main': {('train', 'blend'): 'd80d3165fbc04d2ef7977cceebbe94ac',
                 ('train', 'demo_a'): '739cb33cbd81bb6efbc0cfc8fd78c870',
                 ('train', 'demo_b'): '99f16ad177e5c918d02a06d6bd915d38',
                 ('valid', 'blend'): '578a4ca7fccf7c4dd3461e2d3f9e279d',
                 ('valid', 'demo_a'): '27d273915aea50474a90c1cbbdcf1604',
                 ('valid', 'demo_b'): 'bc563d58168cf1813a010f5306b19be5',
                 ('test', 'blend'): '8d659e78ef69b813a913af9cfd0f032d',
                 ('test', 'demo_a'): '0393b3dff830c6efc8734d5e29ca10a7',
                 ('test', 'demo_b'): '36c31e25d2172e8861a9c92a3e57d81a'}}),
    'hf_gigatoken': ('--tokenizer-type HuggingFaceTokenizer --tokenizer-model tok/gpt2 --use-gigatoken', False,
        {'0.19': None,
         'main': {('train', 'demo'): 'ac06f37bfe68dc05da0000cdeadf1ed1',
                 ('valid', 'demo'): '06a957d9a12eda801beeb3f53143305e',
                 ('test', 'demo'): '35c85a1f3f337cb13aa5357403483b40'}}),
    'blend_hf_gigatoken': ('--tokenizer-type HuggingFaceTokenizer --tokenizer-model tok/gpt2 --use-gigatoken', True,
        {'0.19': None,
         'main': {('train', 'blend'): 'd40b0b76d3d81117da817804000f86ed',
                 ('train', 'demo_a'): '35ea7b80e55b4017033d2dedab506674',
                 ('train', 'demo_b'): '72a17cfcb14aaa2a01db4af50547d847',
                 ('valid', 'blend'): '5bed02ecb80fcff013aab2eee456b59a',
                 ('valid', 'demo_a'): 'cc974a4e2f3cbc3204591911bde9df27',
                 ('valid', 'demo_b'): 'd686cb3d379992559aba3a3bee09fddf',
                 ('test', 'blend'): '5a70cc06205c8de3b36c444d870cbabb',
                 ('test', 'demo_a'): '470bc615750ef0e095dc525221fe042b',
                 ('test', 'demo_b'): '60cc55d12a947ea1e920026f99f48e9b'}}),
}
ARRAYS = {  # (dataset, split, array): sha256 of the .npy, the same for every case and both versions
    ('blend', 'test', 'dataset_index'): '4bdfd0c1e91099c4695decef624ac73f1c62b0ba464a8f4f5d2991431f254494',
    ('blend', 'test', 'dataset_sample_index'): '231b0f5e25fd52867273f873da824db6c6ec525e645a29ba90554f37892c8f70',
    ('blend', 'train', 'dataset_index'): '2897851dceacbcb69609a7e96489bd2659bb560e69d4b421e82334524c8a3f31',
    ('blend', 'train', 'dataset_sample_index'): 'e79792f6f97d6ba2f811704eba87c5583b591e5e5a3f45c2b2d8cd83d5e47102',
    ('blend', 'valid', 'dataset_index'): 'ba3e719f30f7ad3a80ba6575fb402e66f74d20d180e00eb3cb00178a134e2ae4',
    ('blend', 'valid', 'dataset_sample_index'): 'ecb8be9c5a6e87b4fb7c3df4ceb9fc637f8969dac737ee5dad4b6bd25d91d12e',
    ('demo', 'test', 'document_index'): '44bc49a386cbffd36629a1f83f05f349345725f13b5b0d5a83d3c3807508aa61',
    ('demo', 'test', 'sample_index'): 'bf6b943f9e86fa7bc365e9d09e2605ccc0cb09f15115dc341bf45161f2083892',
    ('demo', 'test', 'shuffle_index'): 'e1cea5f01073829e860737eda8789cf21270899045d67a3f085e8f64b4de4812',
    ('demo', 'train', 'document_index'): '7e12f59266cb9d21a6fbf94be4e2ad7e2b4eb706275528986e7cd67f272abbaa',
    ('demo', 'train', 'sample_index'): '41f309f0e641087bd507570be5c989f28fe3296e083c63f1e1b9fdfd242c35fc',
    ('demo', 'train', 'shuffle_index'): '733d66e9b5b6d9f69a19c7a2c11263086f3c1bf4d8965f4016e6ca9db5db3d21',
    ('demo', 'valid', 'document_index'): 'beb003ea5974a0186d56df5b6a3776d56da8408afeeaa2a5b8f6d4ab9c2b56f1',
    ('demo', 'valid', 'sample_index'): '393bab48bf607a9f26974829a70a527e6ccaac4ed50607658e73f06a9fa68dee',
    ('demo', 'valid', 'shuffle_index'): 'd0f01644a864ec9a6ff4f60f3ac66dca2a1c95269391b8bd43d8598183619d83',
    ('demo_a', 'test', 'document_index'): '7a5277c019034ab436eee34542598b52152329823d149632ad4aeea2b9ceb054',
    ('demo_a', 'test', 'sample_index'): '1a4a068237e0564e9229b26d04cf7fc5314e764168144382a8c410df74ce6bb3',
    ('demo_a', 'test', 'shuffle_index'): '9e4b04450b0eff4a0611ed3785cba3fc798794e30601ff3194ba9dc6bab8d337',
    ('demo_a', 'train', 'document_index'): '1668b8bbb1bcc9e227d548469b240252fb646887e05f3291fea07f09b836c047',
    ('demo_a', 'train', 'sample_index'): 'f6c646dcc153132ee69c63b05535bc5670f552907db1e77bac1dc17bdd84bfbb',
    ('demo_a', 'train', 'shuffle_index'): '1334c4e78595e74d0dd6912a6494ada2fdc851d45520e1c1412ffee0a9c1cc32',
    ('demo_a', 'valid', 'document_index'): '98883531772ea82df196714544e4b8d62f0b9db5286104c98d5d92588aeffd1b',
    ('demo_a', 'valid', 'sample_index'): '6756cea4c71670e34e9658a3622e7a965a4e6960b73465a7662b4a4ec1a8d5ab',
    ('demo_a', 'valid', 'shuffle_index'): '4233c83a3c1d6009bb5720595789dca3bbc26edcac20dcaa00c9504bcdbf52c3',
    ('demo_b', 'test', 'document_index'): '4f4cfa44117d65398be81edfc80b50ebfe76e18961cd5affeaff719bd756e1de',
    ('demo_b', 'test', 'sample_index'): 'ef23640ccc720297f93e107c85837646bc588e2aad99bb985d176c3e02f3445d',
    ('demo_b', 'test', 'shuffle_index'): '453329e790e4ee3a55a8151b4f55470cfea310af9e97f4f7550a31ec96501a31',
    ('demo_b', 'train', 'document_index'): '47afd558346e5c1671126e0cb30cd8f1b0a6fe2340f9685ff4e9e9de397104d3',
    ('demo_b', 'train', 'sample_index'): '075759f2c8869a39cb3b0fb5834398bced48fe5c1f896f8493de5d371af0d256',
    ('demo_b', 'train', 'shuffle_index'): 'eb1c42a00df81c7e476e6ef8fdc4412cac74260b4998300452d0bfbfe8cee6c4',
    ('demo_b', 'valid', 'document_index'): '48c2126092b3b47d23e7dd2592ec2af1262d216cd7881cdfe0a1290f9c0bc991',
    ('demo_b', 'valid', 'sample_index'): 'ab5337f70552946839b64568d2d5ca03ef6b3446ba506a9fa5aa333995f134f6',
    ('demo_b', 'valid', 'shuffle_index'): 'e42b33bb873e2541fd505f1ce89a40be1918a7596c40756bddc9567c252232f4',
}

SEQUENCES = {  # step 3: --data-path as the job gives it → the bytes of the file Megatron's tool writes
    "one": ('{"data/megatron/demo_text_document": [2990, 2991]}'),
    "blend": ('{"data/megatron/demo_a_text_document": [1500, 1501], '
              '"data/megatron/demo_b_text_document": [1490, 1491]}'),
    "repeated": ('{"data/megatron/demo_b_text_document": [1490, 1491], '
                 '"data/megatron/demo_a_text_document": [1500, 1501]}'),
}

SAMPLING = ["--seq-length", "512", "--seed", "1234", "--num-samples", "20000", "--valid-samples", "200",
            "--test-samples", "20"]


@pytest.mark.parametrize("case, version", [(case, version) for case in RECORDED for version in ("0.19", "main")])
def test_identifiers_equal_those_megatrons_build_tokenizer_builds(case, version):
    flags, expected = RECORDED[case]
    if expected[version] is None:
        refused = r"^(Megatron tokenizer flags: .* (needs|is not supported)|--use-gigatoken: megatron-core 0.19 has no)"
        with pytest.raises(TokenmillError, match=refused):
            job_tokenizer_identifiers(version, flags)
        return
    identifiers = job_tokenizer_identifiers(version, flags)
    assert list(identifiers.items()) == list(expected[version].items())  # the order is hashed too
    assert json.dumps(identifiers, indent=4) == json.dumps(expected[version], indent=4)


def test_the_default_null_tokenizer_is_the_one_a_job_builds():
    assert null_tokenizer_identifiers(50257) == RECORDED["null"][1]["0.19"]
    assert null_tokenizer_identifiers(50257, "main") == RECORDED["null"][1]["main"]


def test_flags_megatron_does_not_have_are_one_line_errors():
    for version, flags, said in [("0.19", "--tokenizer-type NullTokenizer --vocab-size 8 --seq-length 4",
                                  "--seq-length"),
                                 ("main", "--tokenizer-type BertWordPieceCase", "supported: NullTokenizer"),
                                 ("main", "--tokenizer-type NullTokenizer --vocab-size x", "invalid int value"),
                                 ("main", "--tokenizer-type HuggingFaceTokenizer --tokenizer-model m "
                                          "--tokenizer-metadata m.json", "--tokenizer-metadata"),
                                 ("0.19", "--tokenizer-type GPT2BPETokenizer", "--vocab-file"),
                                 ("0.19", "--tokenizer-type 'NullTokenizer", "quotation"),
                                 ("1.0", "--tokenizer-type NullTokenizer --vocab-size 8", "0.19")]:
        with pytest.raises(TokenmillError, match=said) as raised:
            job_tokenizer_identifiers(version, flags)
        assert "\n" not in str(raised.value)


@pytest.fixture(scope="module")
def root(shared_demo_megatron, tmp_path_factory) -> Path:
    """The demo packed and converted by the tokenmill CLI, and its two halves: a copy of the run's
    (:func:`shared_demo_megatron`), as the tests write their caches beside them."""
    return copy_built(shared_demo_megatron, tmp_path_factory.mktemp("identifiers") / "demo")


def expected_files(names: dict) -> dict[str, str]:
    """Megatron's file names of one version's caches → the sha256 of the .npy (None: a description)."""
    files = {}
    for (split, dataset), md5 in names.items():
        class_name, keys = (("BlendedDataset", ("dataset_index", "dataset_sample_index")) if dataset == "blend" else
                            ("GPTDataset", ("document_index", "sample_index", "shuffle_index")))
        files[f"{md5}-{class_name}-{split}-description.txt"] = None
        files.update({f"{md5}-{class_name}-{split}-{key}.npy": ARRAYS[dataset, split, key] for key in keys})
    return files


def build(root: Path, folder: Path, blend: bool, *options) -> None:
    where = (["blend", "0.7", root / PART_A, "0.3", root / PART_B, "--job-data-paths", PART_A, PART_B] if blend else
             ["sample-index", root / DEMO, "--megatron-path-prefix", DEMO])
    run_tokenmill(*where, *SAMPLING, "-o", folder, *options)


def megatrons_files(folder: Path) -> dict[str, str | None]:
    """What Megatron reads in a folder: descriptions (checked against their md5 name) and .npy hashes."""
    files = {}
    for path in folder.iterdir():
        if path.name.endswith("-description.txt"):
            assert hashlib.md5(path.read_bytes()).hexdigest() == path.name[:32]
            files[path.name] = None
        elif path.name.endswith(".npy"):
            files[path.name] = hashlib.sha256(path.read_bytes()).hexdigest()
    return files


@pytest.mark.parametrize("case", CACHE_NAMES)
def test_one_folder_holds_each_versions_names_over_the_same_arrays(root, case):
    flags, blend, names = CACHE_NAMES[case]
    versions = [version for version, version_names in names.items() if version_names is not None]
    folder = root / f"cache_{case}"
    build(root, folder, blend, "--megatron-tokenizer-args", flags, "--megatron-version", ",".join(versions))
    expected = {name: digest for version in versions for name, digest in expected_files(names[version]).items()}
    assert megatrons_files(folder) == expected
    if len(versions) == 2:  # each array has two names: hard links to one file, not two copies
        arrays = [name for name in expected if name.endswith(".npy")]
        assert len({os.stat(folder / name).st_ino for name in arrays}) == len(arrays) // 2


def test_the_default_is_the_null_tokenizer_job_of_the_sidecars_vocabulary(root):
    """No tokenizer flags: a 0.19 NullTokenizer job with the .pbin's vocabulary (50257; its EOD 50256 is
    Megatron's default, vocab_size - 1, so no --null-tokenizer-eod-id)."""
    flags, _, names = CACHE_NAMES["null"]
    build(root, root / "default", False, "--vocab-size-from", root / "demo.pbin.meta.json")
    assert megatrons_files(root / "default") == expected_files(names["0.19"])
    handoff = (root / "default/megatron_args.txt").read_text()
    assert [line for line in handoff.splitlines() if line.startswith("--tokenizer") or line.startswith("--vocab")] == [
        "--tokenizer-type NullTokenizer", "--vocab-size 50257"]
    build(root, root / "default_main", False, "--vocab-size", "50257", "--megatron-version", "main")
    assert megatrons_files(root / "default_main") == expected_files(names["main"])


def test_a_second_run_finds_both_name_sets(root):
    flags, _, names = CACHE_NAMES["hf"]
    folder = root / "again"
    build(root, folder, False, "--megatron-tokenizer-args", flags, "--megatron-version", "0.19,main")
    before = {path.name: path.stat().st_mtime_ns for path in folder.iterdir()}
    result = run_tokenmill("sample-index", root / DEMO, "--megatron-path-prefix", DEMO, *SAMPLING, "-o", folder,
                           "--megatron-tokenizer-args", flags, "--megatron-version", "main",
                           "--megatron-version", "0.19")
    assert result.stderr.count("(found)") == 6
    assert before == {path.name: path.stat().st_mtime_ns for path in folder.iterdir()}


def test_sequences_per_dataset_equals_megatrons_tool(root):
    build(root, root / "seq_one", False, "--vocab-size", "50257")
    assert (root / "seq_one" / SEQUENCES_NAME).read_text() == SEQUENCES["one"]
    build(root, root / "seq_blend", True, "--vocab-size", "50257")
    assert (root / "seq_blend" / SEQUENCES_NAME).read_text() == SEQUENCES["blend"]
    # a prefix named twice is listed once, where it first appears
    write_sequences_per_dataset(root, [root / PART_B, root / PART_A, root / PART_B], [PART_B, PART_A, PART_B])
    assert (root / SEQUENCES_NAME).read_text() == SEQUENCES["repeated"]


def test_megatron_args_lists_each_versions_flags_and_the_sequences_file(root):
    flags, _, _ = CACHE_NAMES["blend_hf_gigatoken"]
    folder = root / "handoff"
    build(root, folder, True, "--megatron-tokenizer-args", flags, "--megatron-version", "main")
    arguments = [line for line in (folder / "megatron_args.txt").read_text().splitlines() if not line.startswith("#")]
    assert arguments[-4:] == ["--tokenizer-type HuggingFaceTokenizer", "--tokenizer-model tok/gpt2", "--use-gigatoken",
                              f"--per-dataset-sequences-path {folder / SEQUENCES_NAME}"]
    # Megatron refuses --dataloader-fast-cache-load with --data-path (step 4): never listed as an argument
    assert not any("--dataloader-fast-cache-load" in line for line in arguments)


def test_inspect_reads_a_folder_named_for_both_versions(root):
    """Two name sets over one set of arrays are one cache to ``tokenmill inspect``, whichever it picks."""
    for case, folder in (("hf", root / "inspect_one"), ("blend_hf", root / "inspect_blend")):
        flags, blend, _ = CACHE_NAMES[case]
        build(root, folder, blend, "--megatron-tokenizer-args", flags, "--megatron-version", "0.19,main")
        shown = run_tokenmill("inspect", folder, "--sample", "3", cwd=root).stdout
        assert shown.startswith("sample 3 of the train blend = dataset" if blend else "sample 3 of train")
