"""tokenmill against megatron-core's own bytes: .bin/.idx, index caches, blends and samples.

Every hash and value in this file was produced by megatron-core 0.19.2 — not by tokenmill — in a
throwaway venv outside the project (megatron-core is no dependency and none of its code is here):

    python3 -m venv /tmp/venv-meg && . /tmp/venv-meg/bin/activate
    pip install torch==2.13.0 numpy pybind11 packaging triton tokenizers==0.23.3
    pip install --no-deps megatron-core==0.19.2
    cd /tmp/venv-meg/lib/python3.11/site-packages/megatron/core/datasets
    g++ -O3 -shared -std=c++11 -fPIC $(python -m pybind11 --includes) helpers.cpp \
        -o helpers_cpp$(python3-config --extension-suffix)

then one script, run in an empty folder so that the dataset paths below are spelled relatively:

1. Tokens: for each line of ``data/raw/demo.jsonl``, ``tokenizers.Tokenizer.from_file(
   "data/tokenizers/gpt2.tokenizer.json").encode(line["text"], add_special_tokens=True).ids + [50256]``
   (what ``preprocess_data.py --append-eod`` writes; the script also checked that these are exactly the
   documents of tokenmill's ``.pbin``).
2. ``.bin/.idx``: ``IndexedDatasetBuilder(prefix + ".bin", dtype=DType.optimal_dtype(50257))``, one
   ``add_document(tokens, [len(tokens)])`` per line, ``finalize(prefix + ".idx")``, for ``DEMO`` (all
   2,990 documents), ``PART_A`` (documents 0–1,499) and ``PART_B`` (documents 1,500–2,989).
3. Caches: ``BlendedMegatronDatasetBuilder(GPTDataset, sizes, lambda: True, config).build()`` with
   ``config = GPTDatasetConfig(random_seed, sequence_length, blend, split, path_to_cache, tokenizer,
   reset_position_ids=False, reset_attention_mask=False, eod_mask_loss=False,
   create_attention_mask=False, ...)`` and ``tokenizer = MegatronTokenizer.from_pretrained(
   metadata_path={"library": "null-text"}, vocab_size=50257)`` (eod 50256, pad -1; its ``unique_identifiers``
   are ``LIBRARY_NULL`` below: a library call's, which no training job hashes, as a job's NullTokenizer adds
   ``pad_id``; the names a job finds are in tests/megatron/test_job_tokenizer.py):

   (a) ``DEMO``, seq 512, seed 1234, split "969,30,1", sizes [20000, 200, 20], blend ([DEMO], None)
       (train: 11 epochs, valid: 4, both with a separate final epoch; test: 26 epochs, not separate);
   (b) as (a) with blend ([PART_A, PART_B], [0.7, 0.3]);
   (c) ``DEMO``, seq 256, seed 7, sizes [5000, 130, 10]: train and valid take 2 epochs, and the final
       epoch is separate (only 1,120 of train's 3,880 samples per epoch come from it, 3 of valid's 127);
   (d) as (a) with ``add_extra_token_to_sequence=False``;
   (e) as (a) with ``drop_last_partial_validation_sequence=False`` (valid files only).

   Recorded: sha256 of every file in ``path_to_cache``; per sample ``dataset[i]``, sha256 of
   ``tokens.numpy().tobytes()`` and ``labels.numpy().tobytes()`` (int64) and the first six tokens; the
   float32 ``loss_mask`` and int64 ``position_ids`` in full, written below as the positions where the
   loss mask is 0 (it is 1 elsewhere) and where positions restart at 0 (they count up in between); the
   same samples of (a) with ``eod_mask_loss=True, reset_position_ids=True``; and ``cu_seqlens`` with
   ``inter_document_masking=True`` (its padding entries after the first ``seq`` dropped).
   Sample indices were picked from (a)'s indices so that most of them span 2 to 9 documents.
"""

import hashlib
import json
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pytest

from conftest import DEMO_PREFIX, GPT2_EOD_ID, PART_A_PREFIX, PART_B_PREFIX, copy_built, run_tokenmill
from tokenmill.errors import TokenmillError
from tokenmill.formats.bin_idx import MMapIndexedDataset
from tokenmill.megatron.gpt_indices import build_sample_index
from tokenmill.megatron.handoff import HANDOFF_NAME, SEQUENCES_NAME
from tokenmill.megatron.index_cache import build_gpt_cache, load_cache
from tokenmill.training.datasets import Nanoset, NanosetBuilder, NanosetConfig

# dataset paths as the training job spells them (hashed into the cache names), relative to the work folder
DEMO, PART_A, PART_B = DEMO_PREFIX, PART_A_PREFIX, PART_B_PREFIX
SAMPLES = {"train": 20000, "valid": 200, "test": 20}
# MegatronTokenizer.from_pretrained(metadata_path={"library": "null-text"}, vocab_size=50257).unique_identifiers
LIBRARY_NULL = {"class": "megatron.core.tokenizers.text.models.default_tokenizer.DefaultTokenizerText",
                "tokenizer_path": None, "vocab_size": "50257"}


class Item(NamedTuple):
    """One ``GPTDataset.__getitem__`` result of megatron-core."""

    tokens: str  # sha256 of the int64 tokens
    labels: str  # sha256 of the int64 labels
    head: list  # the first six tokens
    loss_zeros: object = ()  # positions where the float32 loss_mask is 0; it is 1 elsewhere
    restarts: object = (0,)  # positions where the int64 position_ids restart at 0; +1 per token in between
    dataset_id: int | None = None  # for blends: the dataset the sample came from


# ---------------------------------------------------------------------------------------------
# The recorded numbers

MEGATRON_BIN_IDX = {  # name: (sha256 of .bin, sha256 of .idx)
    "demo": ("222ff4b2dbcc29ceace59c9536cc8e18a0421ba6c24117dcaf1e07ca8d9c5f0d",
             "c95f1eb03800906d58f781ef8f78b7a9359b5853b0d426e6159039c069a4d077"),
    "demo_a": ("2ef9a5286625b1bad72f6359b3c8c56a94d43de219a99f905a8b85bab18ac55b",
               "78bd1385e7246352a379114180ff73f2d2cac38ef7ad21d290bc6818082d4b6b"),
    "demo_b": ("d3a194e8bbc889a2b72338432bc794bc07254c30e953a634c074e8dc7181317a",
               "cc71f2a736f8ca683ee64f3c71ef1eb2e36ff41b165e789a44106d8a15d14132"),
}

A_FILES = {  # (a): the demo, seq 512, seed 1234, 969,30,1, 20000/200/20 samples
    "4582b762b30f3ec3a1ffa211a64c9fdb-GPTDataset-test-description.txt":
        "87d1cc584c35ebe26c78cffbdf6c6ca5c4d0b470d8831fabc96bacc52154f655",
    "4582b762b30f3ec3a1ffa211a64c9fdb-GPTDataset-test-document_index.npy":
        "44bc49a386cbffd36629a1f83f05f349345725f13b5b0d5a83d3c3807508aa61",
    "4582b762b30f3ec3a1ffa211a64c9fdb-GPTDataset-test-sample_index.npy":
        "bf6b943f9e86fa7bc365e9d09e2605ccc0cb09f15115dc341bf45161f2083892",
    "4582b762b30f3ec3a1ffa211a64c9fdb-GPTDataset-test-shuffle_index.npy":
        "e1cea5f01073829e860737eda8789cf21270899045d67a3f085e8f64b4de4812",
    "466ee48891da216665f3e2362ca323ed-GPTDataset-valid-description.txt":
        "fd4e5026c22b56ebca2360a83fe5c4f20f0ca006715272a33d62a80ab991f2f1",
    "466ee48891da216665f3e2362ca323ed-GPTDataset-valid-document_index.npy":
        "beb003ea5974a0186d56df5b6a3776d56da8408afeeaa2a5b8f6d4ab9c2b56f1",
    "466ee48891da216665f3e2362ca323ed-GPTDataset-valid-sample_index.npy":
        "393bab48bf607a9f26974829a70a527e6ccaac4ed50607658e73f06a9fa68dee",
    "466ee48891da216665f3e2362ca323ed-GPTDataset-valid-shuffle_index.npy":
        "d0f01644a864ec9a6ff4f60f3ac66dca2a1c95269391b8bd43d8598183619d83",
    "d7fac598acd694476210d86c720c29bc-GPTDataset-train-description.txt":
        "e0521c8811ce0b062eea713fa1a9d6627de022e4799a62fb458e2f26b97e92e2",
    "d7fac598acd694476210d86c720c29bc-GPTDataset-train-document_index.npy":
        "7e12f59266cb9d21a6fbf94be4e2ad7e2b4eb706275528986e7cd67f272abbaa",
    "d7fac598acd694476210d86c720c29bc-GPTDataset-train-sample_index.npy":
        "41f309f0e641087bd507570be5c989f28fe3296e083c63f1e1b9fdfd242c35fc",
    "d7fac598acd694476210d86c720c29bc-GPTDataset-train-shuffle_index.npy":
        "733d66e9b5b6d9f69a19c7a2c11263086f3c1bf4d8965f4016e6ca9db5db3d21",
}

B_FILES = {  # (b): PART_A 0.7 + PART_B 0.3, otherwise as (a): each part's GPTDataset caches and the blend's
    "015d2752d006c517e39a549980551fd4-GPTDataset-test-description.txt":
        "4065f33930d808f1d76804a5968ac8861eb13aef643fa02e60905822b4fe7a6b",
    "015d2752d006c517e39a549980551fd4-GPTDataset-test-document_index.npy":
        "7a5277c019034ab436eee34542598b52152329823d149632ad4aeea2b9ceb054",
    "015d2752d006c517e39a549980551fd4-GPTDataset-test-sample_index.npy":
        "1a4a068237e0564e9229b26d04cf7fc5314e764168144382a8c410df74ce6bb3",
    "015d2752d006c517e39a549980551fd4-GPTDataset-test-shuffle_index.npy":
        "9e4b04450b0eff4a0611ed3785cba3fc798794e30601ff3194ba9dc6bab8d337",
    "5890230633071d5d70757db2f2e77781-GPTDataset-test-description.txt":
        "3a871774a67eb5c02a47c5e57ac4dc714ff487662ca8289a61e6d64fdec0cdab",
    "5890230633071d5d70757db2f2e77781-GPTDataset-test-document_index.npy":
        "4f4cfa44117d65398be81edfc80b50ebfe76e18961cd5affeaff719bd756e1de",
    "5890230633071d5d70757db2f2e77781-GPTDataset-test-sample_index.npy":
        "ef23640ccc720297f93e107c85837646bc588e2aad99bb985d176c3e02f3445d",
    "5890230633071d5d70757db2f2e77781-GPTDataset-test-shuffle_index.npy":
        "453329e790e4ee3a55a8151b4f55470cfea310af9e97f4f7550a31ec96501a31",
    "635d0ecfff379ef5cec97dd38d022aaf-BlendedDataset-valid-dataset_index.npy":
        "ba3e719f30f7ad3a80ba6575fb402e66f74d20d180e00eb3cb00178a134e2ae4",
    "635d0ecfff379ef5cec97dd38d022aaf-BlendedDataset-valid-dataset_sample_index.npy":
        "ecb8be9c5a6e87b4fb7c3df4ceb9fc637f8969dac737ee5dad4b6bd25d91d12e",
    "635d0ecfff379ef5cec97dd38d022aaf-BlendedDataset-valid-description.txt":
        "1f77d346c06dfa78ace92b574174bc9724ced7c413633caedba8a03e76c6fc7d",
    "715ed193b1f05b9f67ddc5acb223b187-GPTDataset-valid-description.txt":
        "e5c9bbb3ccb04b9bc35d1809ef62e68fe29a2f7bb34b069f63646baf154af238",
    "715ed193b1f05b9f67ddc5acb223b187-GPTDataset-valid-document_index.npy":
        "98883531772ea82df196714544e4b8d62f0b9db5286104c98d5d92588aeffd1b",
    "715ed193b1f05b9f67ddc5acb223b187-GPTDataset-valid-sample_index.npy":
        "6756cea4c71670e34e9658a3622e7a965a4e6960b73465a7662b4a4ec1a8d5ab",
    "715ed193b1f05b9f67ddc5acb223b187-GPTDataset-valid-shuffle_index.npy":
        "4233c83a3c1d6009bb5720595789dca3bbc26edcac20dcaa00c9504bcdbf52c3",
    "785c0e21cb72c2ac29b026a977d9a13a-GPTDataset-valid-description.txt":
        "984fdf7ee3067af4b9da2b239798213a35dc8882f80dde37b73b4238b29239f4",
    "785c0e21cb72c2ac29b026a977d9a13a-GPTDataset-valid-document_index.npy":
        "48c2126092b3b47d23e7dd2592ec2af1262d216cd7881cdfe0a1290f9c0bc991",
    "785c0e21cb72c2ac29b026a977d9a13a-GPTDataset-valid-sample_index.npy":
        "ab5337f70552946839b64568d2d5ca03ef6b3446ba506a9fa5aa333995f134f6",
    "785c0e21cb72c2ac29b026a977d9a13a-GPTDataset-valid-shuffle_index.npy":
        "e42b33bb873e2541fd505f1ce89a40be1918a7596c40756bddc9567c252232f4",
    "9c6b289e00fbcc03d2528d2608de8110-GPTDataset-train-description.txt":
        "5f4efde6500d49d6a6879ae3f94a524a5457ba6999d1d9a96c8b73aad7a1c76f",
    "9c6b289e00fbcc03d2528d2608de8110-GPTDataset-train-document_index.npy":
        "1668b8bbb1bcc9e227d548469b240252fb646887e05f3291fea07f09b836c047",
    "9c6b289e00fbcc03d2528d2608de8110-GPTDataset-train-sample_index.npy":
        "f6c646dcc153132ee69c63b05535bc5670f552907db1e77bac1dc17bdd84bfbb",
    "9c6b289e00fbcc03d2528d2608de8110-GPTDataset-train-shuffle_index.npy":
        "1334c4e78595e74d0dd6912a6494ada2fdc851d45520e1c1412ffee0a9c1cc32",
    "e1dc28c8e1d593bd34aa7dcdccd58276-BlendedDataset-test-dataset_index.npy":
        "4bdfd0c1e91099c4695decef624ac73f1c62b0ba464a8f4f5d2991431f254494",
    "e1dc28c8e1d593bd34aa7dcdccd58276-BlendedDataset-test-dataset_sample_index.npy":
        "231b0f5e25fd52867273f873da824db6c6ec525e645a29ba90554f37892c8f70",
    "e1dc28c8e1d593bd34aa7dcdccd58276-BlendedDataset-test-description.txt":
        "0c304c237c9acf8cb0350867258c3f021c7aaa04d79154290534414e9a05ff0f",
    "eca287d15489adf93c1ccda83e46906f-GPTDataset-train-description.txt":
        "b270f510a43e2fb2ecf7ba1e63d06b72e1b6f2ff314eaca81f00f7079cfbdf56",
    "eca287d15489adf93c1ccda83e46906f-GPTDataset-train-document_index.npy":
        "47afd558346e5c1671126e0cb30cd8f1b0a6fe2340f9685ff4e9e9de397104d3",
    "eca287d15489adf93c1ccda83e46906f-GPTDataset-train-sample_index.npy":
        "075759f2c8869a39cb3b0fb5834398bced48fe5c1f896f8493de5d371af0d256",
    "eca287d15489adf93c1ccda83e46906f-GPTDataset-train-shuffle_index.npy":
        "eb1c42a00df81c7e476e6ef8fdc4412cac74260b4998300452d0bfbfe8cee6c4",
    "ed754578005b32851d269eb03bc68da1-BlendedDataset-train-dataset_index.npy":
        "2897851dceacbcb69609a7e96489bd2659bb560e69d4b421e82334524c8a3f31",
    "ed754578005b32851d269eb03bc68da1-BlendedDataset-train-dataset_sample_index.npy":
        "e79792f6f97d6ba2f811704eba87c5583b591e5e5a3f45c2b2d8cd83d5e47102",
    "ed754578005b32851d269eb03bc68da1-BlendedDataset-train-description.txt":
        "8edbbd10ebbd35de49a36f75d8a0494649218de2e005fcd0229bb644d4df8950",
}

C_FILES = {  # (c): seq 256, seed 7, 5000/130/10 samples: two epochs with a separate final epoch
    "6ceda74aa2a4e381988509b2509654db-GPTDataset-test-description.txt":
        "1820f145c7acfecbaf4e2c5327ca13461b26d1e6531a2d0d3cb4a3e339270f1e",
    "6ceda74aa2a4e381988509b2509654db-GPTDataset-test-document_index.npy":
        "6b57d6301b73211fd650dd9f5a08ae53f0c6a29da36e4d98bf089a5f5c308faf",
    "6ceda74aa2a4e381988509b2509654db-GPTDataset-test-sample_index.npy":
        "b89c2c937dc61dbcff8f0b07b4e5b76f296c17c095e2f684c2349b2dd8b54f23",
    "6ceda74aa2a4e381988509b2509654db-GPTDataset-test-shuffle_index.npy":
        "1869aacd8209b730e56605f13025db735925a86f99b2f600e22eca6fa82b777c",
    "74cdc80017b8991b3f2db913981bd156-GPTDataset-valid-description.txt":
        "317808e05de0ce0ec6e6cabbdc58fa3d9969cab569ae171c282464a4b533863e",
    "74cdc80017b8991b3f2db913981bd156-GPTDataset-valid-document_index.npy":
        "a0eb904befe027d0d387a7466dd423ccd2e2da7b2894515f72078b3d6f4000c2",
    "74cdc80017b8991b3f2db913981bd156-GPTDataset-valid-sample_index.npy":
        "814e8dcb2bcb2d4f5b6646f59254e248049a1e5b6d3616390ea02dac8f9f83b7",
    "74cdc80017b8991b3f2db913981bd156-GPTDataset-valid-shuffle_index.npy":
        "a4623034354290e0735db706dc7800315ff831aa1f20c91b121973a24f01e063",
    "87536e453c09e3ab58ec231915353d91-GPTDataset-train-description.txt":
        "3dc9cde60e548abe34af27f69dd39b926071f9c9815044212e208f7b01c466e4",
    "87536e453c09e3ab58ec231915353d91-GPTDataset-train-document_index.npy":
        "ed9eebc022ca9f97ed2039da6d48877a304efd2e86b6f3725a0ccfb93c84bf45",
    "87536e453c09e3ab58ec231915353d91-GPTDataset-train-sample_index.npy":
        "b7b54d47c2da97a7e6343be121ee2c77bcb6272df5265c4432ce0087a4cc2e5a",
    "87536e453c09e3ab58ec231915353d91-GPTDataset-train-shuffle_index.npy":
        "7a44cddb67ead7f8caa8acc277b98527d8584f82f4252b0b9dd5fdaea8662966",
}

D_FILES = {  # (d): (a) without the extra token: the same names (the flag is not hashed), two files differ
    **A_FILES,
    "466ee48891da216665f3e2362ca323ed-GPTDataset-valid-sample_index.npy":
        "e6a52c6150b48abe8e7596294819db206b734bdd079f4abf4c6e0df418d60fe5",
    "d7fac598acd694476210d86c720c29bc-GPTDataset-train-sample_index.npy":
        "0997ddc6020554b85700aa3d981d5334ff031a2dc8ad64367c538f09a6bb0723",
}

E_FILES = {  # (e): (a) keeping the valid split's partial last sample: one more sample, same names
    "466ee48891da216665f3e2362ca323ed-GPTDataset-valid-description.txt":
        "fd4e5026c22b56ebca2360a83fe5c4f20f0ca006715272a33d62a80ab991f2f1",
    "466ee48891da216665f3e2362ca323ed-GPTDataset-valid-document_index.npy":
        "beb003ea5974a0186d56df5b6a3776d56da8408afeeaa2a5b8f6d4ab9c2b56f1",
    "466ee48891da216665f3e2362ca323ed-GPTDataset-valid-sample_index.npy":
        "dcc2a8faa3ccfb4dfb2da37e2f2579678aeb62782c47a26befa70174fcf93342",
    "466ee48891da216665f3e2362ca323ed-GPTDataset-valid-shuffle_index.npy":
        "8109244cc5fe695e73bbc62fab7e739cada1ee6921b67df6b9d23a09e2e11137",
}

LENGTHS = {  # len() of every split of the cases
    "a": {"train": 21343, "valid": 255, "test": 20}, "b": {"train": 20000, "valid": 200, "test": 20},
    "c": {"train": 7761, "valid": 255, "test": 10}, "d": {"train": 21343, "valid": 255, "test": 20},
}

A_ITEMS = {  # (a); (split, index) -> the sample
    ("train", 0): Item(
        tokens="db05e8378ae356b92931409182bdebb794e6701ab3ef7d26a477bcf17201fd33",
        labels="a0514d7f8d808885eb09f467e68d8466f94306530e0c399ca5808b8314f3ff86",
        head=[31115, 3134, 2327, 2791, 41544, 1731]),
    ("train", 4): Item(
        tokens="c3ee6b2f37f9ff0c5a7ed572b75dc5682d4fed4ba40da559778b360af41ad44e",
        labels="c7cdfe3ac82dd78c2d2aff4049bd52ee88286b0b93fe565fb84f7c9e109c1102",
        head=[39, 459, 654, 347, 5282, 198]),
    ("train", 6): Item(
        tokens="fa0747e4d905466d9f99a183a5d858b5be152412a1172aaeeb2e6a1b159b5c51",
        labels="caced65417733cc858c0c28ecd3defdd35c4c0da93d0cde0a084d679938b4eb0",
        head=[10224, 3660, 7777, 287, 4885, 13817]),
    ("train", 1001): Item(
        tokens="343c7b4037d499e55b5b54feeab7a879a2b2f041935d5126dc7cb3578e2af49f",
        labels="6915c933c5a2a8e97e3d52a0427aa6652d71acada37e09210b7df9e73647b284",
        head=[50256, 39, 31059, 198, 198, 35882]),
    ("train", 12345): Item(
        tokens="0d8bae7dd7e5643156e9fbc30a3927a47cb5c017a68029822d4c12365920fed7",
        labels="03f4b3368f750247c1dda182618f0836efc7b028e18dbbd7cfe1ff8ff1b655f1",
        head=[36918, 2848, 3419, 628, 220, 220]),
    ("train", 21342): Item(
        tokens="f43b0e8bd4aa56927b5459a33a4938e8468fb3b7387c09aa8082cbc506385a23",
        labels="62bee26daabffd4691f26df15c874cf603a7f62f6288658893308179f893150b",
        head=[220, 407, 3177, 284, 4961, 284]),
    ("valid", 0): Item(
        tokens="3e8fb1f58f5bb8e6fb856e617776a270d60876d5a5210cb6bad6eb2701ac4b51",
        labels="34ceecc54773643f2d9f83918d3e6de5089d21d5554fa8b276851ddf7b939211",
        head=[8619, 13, 198, 198, 6423, 345]),
    ("valid", 67): Item(
        tokens="f3c5e71cddf63cf74624f87de9b60d345bee7fa0a53340919e61e92741f705da",
        labels="2b05667f6bc4022a56f1b3052ec708eff86aa11db6f4585449871d9bc1001d6f",
        head=[11, 8591, 7918, 928, 494, 308]),
    ("valid", 254): Item(
        tokens="771350365dadfafead816885e6651ad4caaf30c1771770e7f1d3c1b55be7c6a4",
        labels="2fef01d5c8366f1470eae00d89d54f88e0ed2823a792a5de86a94777216ac1a9",
        head=[220, 220, 220, 220, 220, 1058]),
    ("test", 0): Item(
        tokens="79dea5ac2c4449403cb637f0826df24636f95b67776a173d454c94809d6d61b8",
        labels="17c4d0efb5f42f7970f2454b88279bacf88841c2c717de853a5f1345a461f804",
        head=[18020, 319, 262, 7022, 286, 13600]),
    ("test", 1): Item(
        tokens="14430c3a87c4b395bf4ee37f4a3b22936bbbd3069762335a22417442eb78b05f",
        labels="35e3fb79df4dffe2fe0df46bbe914a79d661d178bc2eed4db0e28e1bc2888c42",
        head=[18020, 1499, 13, 383, 3139, 290]),
    ("test", 19): Item(
        tokens="d630572d89f3f96ce26347d8b11c9807f7f32019984b2a3a7c942bf6263aa939",
        labels="3d563ace1c26289c190ba7a1423f6f1242b7f9f2f3f2222a7b07e11665eddb15",
        head=[293, 1055, 4548, 551, 344, 600]),
}

EOD_MASKS = {  # (a) with eod_mask_loss and reset_position_ids: (loss-mask zeros, position restarts)
    ("train", 4): ([82, 184, 443],
                  [0, 83, 185, 444]),
    ("train", 6): ([84, 182, 379, 444, 486],
                  [0, 85, 183, 380, 445, 487]),
    ("train", 1001): ([0, 75, 129, 231, 273, 377, 454, 508],
                     [0, 1, 76, 130, 232, 274, 378, 455, 509]),
    ("valid", 0): ([300, 402],
                  [0, 301, 403]),
    ("valid", 67): ([37, 160, 262, 312, 384, 420, 506],
                   [0, 38, 161, 263, 313, 385, 421, 507]),
}

CU_SEQLENS = {  # (a) with inter_document_masking
    ("train", 4): [0, 83, 185, 444, 512],
    ("train", 6): [0, 85, 183, 380, 445, 487, 512],
    ("train", 1001): [0, 1, 76, 130, 232, 274, 378, 455, 509, 512],
    ("valid", 0): [0, 301, 403, 512],
    ("valid", 67): [0, 38, 161, 263, 313, 385, 421, 507, 512],
}

B_ITEMS = {  # (b)
    ("train", 0): Item(
        tokens="3586e4633df7e642059cee0eae8e9fa71c56e5f88eec09c23226f929730a457e",
        labels="5df09ff77499ca36986e3b0a228a5cfc2caedf8a20680673067065e037184942",
        head=[779, 584, 7559, 20519, 26796, 62], dataset_id=0),
    ("train", 1): Item(
        tokens="9af5dbb130ee10b2c26237f25a74e033128aa3c4c0e5868196be27923f85c2c0",
        labels="d5ea2d60963660d6e61fdd19532b41f4733671e4568dc9d4ae3c9e8fc1191f25",
        head=[30753, 198, 220, 5563, 389, 5563], dataset_id=1),
    ("train", 2): Item(
        tokens="d46dc415a123e1ab75e108fdaba27585341cb8c13c31633978d2e6c11858999d",
        labels="f332c37053977553d320289bb9ef36e92584b46986d10876890c3aa9676b924b",
        head=[220, 9217, 326, 9706, 286, 257], dataset_id=0),
    ("train", 9999): Item(
        tokens="929d0475f5bb31b084c543f1aaa3033c1750abcb4fa80507b4151f895e0241cc",
        labels="80c4c8c3e6037689f2d4d14e08e442985f86cd3efdb45a04bfcea1fbb2d1c2a5",
        head=[9485, 27608, 7469, 18084, 62, 4906], dataset_id=0),
    ("train", 19999): Item(
        tokens="6d8f9cc763ef9c5a4dba7f7086a9436c5a4f0e61a8c89f264904cbe20b3d92b2",
        labels="7709134b841bf54b630ad2f55efd09ac9ebc8199802fe9c845b60bd7ef162412",
        head=[307, 1444, 1635, 5661, 9, 393], dataset_id=0),
    ("valid", 0): Item(
        tokens="6492c026479ff4a15b195041d2d05eee03eb9d2454b5a2db65f15a9b4151848d",
        labels="272b9f9fd5ae089988ad0127e79249af3a573a53cec0b191aa21ea802df90da6",
        head=[1538, 528, 4533, 424, 41282, 13], dataset_id=0),
    ("valid", 199): Item(
        tokens="4e69c73b130c6dce45e1cd9b172f0198f9b5b7776bc651c319fdd2dbff586829",
        labels="d6f12a8f7bc5c4d8feb994ffe0e199063520b9e2439cc71329900cdfbdcdb948",
        head=[756, 24748, 48169, 11, 285, 15152], dataset_id=0),
    ("test", 0): Item(
        tokens="c855547d3fc7312763036072b854d717255ea8bc0d3078374256ffd2df745afa",
        labels="75f970fb5c4752968ce5048b23cc2bcaca82fa7a47158e5a34ccff0c7e2585b4",
        head=[43415, 318, 262, 347, 1586, 6896], dataset_id=0),
    ("test", 19): Item(
        tokens="7d937cc3ee272e2555dbbebc1225116ce7e02bfefab8895247978ab0ad048424",
        labels="98fb9f79cc793cfcfa608d9c19dbfec21890aabdd435ac7c538433393847913f",
        head=[11, 8054, 12, 4164, 260, 12], dataset_id=0),
}

C_ITEMS = {  # (c)
    ("train", 0): Item(
        tokens="21acfac69b258baa195ef8290603211e66290700199affa3c3a2a86b7ff55c64",
        labels="0be2d0875c6aa86a306c4567dff8b13c138c5eaad13f2bb86dad8aa960a3c87f",
        head=[287, 262, 42859, 506, 16978, 3814]),
    ("train", 19): Item(
        tokens="dc29616a460dbdf1bc16b2f1c1943ad4ee7ba86ebc9942af1f17f2f5cba0dcdb",
        labels="5a7711b01df7da035b21d6017840eab0b3013e8ed7050d0941687be5ab9ac9e8",
        head=[555, 1132, 431, 390, 629, 444]),
    ("train", 4999): Item(
        tokens="649c638f6ad52ca24ca56f171e60d7a7d0fe7898e68221bfc797995509877ae5",
        labels="261196bc85133bef68b25e86ea4d251ce47a102f37d94fbea34d12439ff44697",
        head=[3143, 437, 257, 6196, 21596, 3108]),
    ("train", 7760): Item(
        tokens="38bebf0a472e4395e96732aea8d666b495462579ef4d6be812e8ae1dd66f0c3d",
        labels="adafce62df527490e3dca50b4f50d73bcaf5374f94e62bfcc15274fab54ef585",
        head=[36439, 16281, 60, 198, 220, 220]),
    ("valid", 2): Item(
        tokens="893733bf88ec00d6c71e44e48adeef5a69a97bd0a95008a126c5a6770763413e",
        labels="dd0e256320745dcf41514b47fe5f10fe7575b8d88237956584254893b283ec86",
        head=[516, 12, 44769, 8270, 748, 440]),
    ("valid", 117): Item(
        tokens="7f77edced6baed5e3d4121c0120d957e5489a75e5b11101bc2c89e09481bc3a3",
        labels="058bb674e439be1284946fcc89c78d436db466606fc5e1a5e2c77037de7e4a75",
        head=[1736, 39588, 979, 431, 318, 262]),
}

D_ITEMS = {  # (d): the last label is padding (-1 → 0), its loss masked
    ("train", 0): Item(
        tokens="db05e8378ae356b92931409182bdebb794e6701ab3ef7d26a477bcf17201fd33",
        labels="88aba479f361c69e77a9974f83ae3bd603965490f098a7536ba636ef4f4afe42",
        head=[31115, 3134, 2327, 2791, 41544, 1731], loss_zeros=[511]),
    ("train", 4): Item(
        tokens="c3ee6b2f37f9ff0c5a7ed572b75dc5682d4fed4ba40da559778b360af41ad44e",
        labels="055177757258589b1a356b5e0bc5746886c7c8baa700e005cbe9244f76f3468e",
        head=[39, 459, 654, 347, 5282, 198], loss_zeros=[511]),
    ("train", 6): Item(
        tokens="fa0747e4d905466d9f99a183a5d858b5be152412a1172aaeeb2e6a1b159b5c51",
        labels="8b2caab0554a9b83879a50766bb40d09d9664b774abf0b86846e59ff0babe022",
        head=[10224, 3660, 7777, 287, 4885, 13817], loss_zeros=[511]),
    ("train", 1001): Item(
        tokens="343c7b4037d499e55b5b54feeab7a879a2b2f041935d5126dc7cb3578e2af49f",
        labels="8d5ff57f0d31cb3d0ed7cdd837ec88b490b77263bcfbb1bff15d8dcd9d47c769",
        head=[50256, 39, 31059, 198, 198, 35882], loss_zeros=[511]),
    ("train", 12345): Item(
        tokens="0d8bae7dd7e5643156e9fbc30a3927a47cb5c017a68029822d4c12365920fed7",
        labels="bf787b603c422efa934c02da9e56620005d7082bf23ba86e7308cfe40a3a3662",
        head=[36918, 2848, 3419, 628, 220, 220], loss_zeros=[511]),
    ("train", 21342): Item(
        tokens="f43b0e8bd4aa56927b5459a33a4938e8468fb3b7387c09aa8082cbc506385a23",
        labels="d6a2444f480de6211eee9f3cd04ee06b971f62f837c703dc1258227817aae74e",
        head=[220, 407, 3177, 284, 4961, 284], loss_zeros=[511]),
    ("valid", 0): Item(
        tokens="3e8fb1f58f5bb8e6fb856e617776a270d60876d5a5210cb6bad6eb2701ac4b51",
        labels="4f16db05bff41b38d136f3eefeceacc7501059e1caa16636cbf7a2a98a2ebe11",
        head=[8619, 13, 198, 198, 6423, 345], loss_zeros=[511]),
    ("valid", 67): Item(
        tokens="f3c5e71cddf63cf74624f87de9b60d345bee7fa0a53340919e61e92741f705da",
        labels="4ea533b2f1634f2930e8d4d8411e4eb52f0f969af8249c8d4c4b2fb722d1093e",
        head=[11, 8591, 7918, 928, 494, 308], loss_zeros=[511]),
    ("valid", 254): Item(
        tokens="771350365dadfafead816885e6651ad4caaf30c1771770e7f1d3c1b55be7c6a4",
        labels="7e91600af317fd4655eec27a0064f04bf80f94816d22c167f8da99020fedde89",
        head=[220, 220, 220, 220, 220, 1058], loss_zeros=[511]),
    ("test", 0): Item(
        tokens="79dea5ac2c4449403cb637f0826df24636f95b67776a173d454c94809d6d61b8",
        labels="341238da869a9d3cca8885ff8195e22152103b27e6c20381839a7135e1312f8a",
        head=[18020, 319, 262, 7022, 286, 13600], loss_zeros=[511]),
    ("test", 1): Item(
        tokens="14430c3a87c4b395bf4ee37f4a3b22936bbbd3069762335a22417442eb78b05f",
        labels="436adbfd57f8e1a9ac6839706eb7e9bba531c0dd273a0cf5f0e861320488abe2",
        head=[18020, 1499, 13, 383, 3139, 290], loss_zeros=[511]),
    ("test", 19): Item(
        tokens="d630572d89f3f96ce26347d8b11c9807f7f32019984b2a3a7c942bf6263aa939",
        labels="c99f4dbbb8c5360ac670ebcd91716e5ac7b96668b0dfee2245427a62517a9b73",
        head=[293, 1055, 4548, 551, 344, 600], loss_zeros=[511]),
}

E_ITEMS = {  # (e): the valid split's partial last sample (shuffled to index 221 of 256), padded
    ("valid", 221): Item(
        tokens="c7d3583748e403ce71fb464a8ed7f384ca28cfdb8813ec68b60f316eec442192",
        labels="2be0cefedc6e2ae11b3d3b9fc32a35ace0c01b70efad4efe025e2e4756d34999",
        head=[26180, 357, 12496, 8368, 295, 828], loss_zeros=range(103, 512)),
}


# ---------------------------------------------------------------------------------------------
# Building the same things with tokenmill

def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def folder_hashes(folder: Path) -> dict[str, str]:
    """sha256 of every file Megatron would write there (tokenmill's fingerprints and hand-off files beside
    them are its own)."""
    return {path.name: sha256(path.read_bytes()) for path in sorted(folder.iterdir())
            if not path.name.endswith("-tokenmill_fingerprint.json")
            and path.name not in (HANDOFF_NAME, SEQUENCES_NAME)}


@pytest.fixture(scope="module")
def root(shared_demo_megatron, tmp_path_factory) -> Path:
    """The demo packed and converted by the tokenmill CLI into ``DEMO``, and the two blend parts: a copy of the run's
    (:func:`shared_demo_megatron`), as the tests write their caches beside them."""
    return copy_built(shared_demo_megatron, tmp_path_factory.mktemp("golden") / "demo")


SAMPLING = ["--seq-length", "512", "--seed", "1234", "--num-samples", "20000", "--valid-samples", "200",
            "--test-samples", "20", "--tokenizer-identifiers", json.dumps(LIBRARY_NULL)]
CLI = {  # the tokenmill command of each case, given its cache folder
    "a": lambda root: ["sample-index", root / DEMO, *SAMPLING, "--megatron-path-prefix", DEMO],
    "b": lambda root: ["blend", "0.7", root / PART_A, "0.3", root / PART_B, *SAMPLING, "--megatron-paths", PART_A,
                       PART_B],
    "c": lambda root: ["sample-index", root / DEMO, "--seq-length", "256", "--seed", "7", "--num-samples", "5000",
                       "--valid-samples", "130", "--test-samples", "10", "--tokenizer-identifiers",
                       json.dumps(LIBRARY_NULL), "--megatron-path-prefix", DEMO],
    "d": lambda root: ["sample-index", root / DEMO, *SAMPLING, "--no-extra-token", "--megatron-path-prefix", DEMO],
}
CONFIGS = {  # the Nanoset of each case
    "a": dict(seq_length=512, seed=1234, num_samples=SAMPLES),
    "c": dict(seq_length=256, seed=7, num_samples={"train": 5000, "valid": 130, "test": 10}),
    "d": dict(seq_length=512, seed=1234, num_samples=SAMPLES, add_extra_token=False),
}


@pytest.fixture(scope="module")
def cache(root):
    """``cache(case)``: the folder the tokenmill CLI built for a case (built once per module)."""
    built = {}

    def build(case: str) -> Path:
        if case not in built:
            folder = root / f"cache_{case}"
            if case == "e":  # not a CLI option: the library call
                build_gpt_cache(root / DEMO, folder, 512, 1234, "969,30,1", SAMPLES, LIBRARY_NULL,
                                dataset_path=DEMO, drop_last_partial_validation_sequence=False)
            else:
                run_tokenmill(*CLI[case](root), "-o", folder)
            built[case] = folder
        return built[case]

    return build


def nanosets(root, cache, case, **options):
    config = NanosetConfig(str(root / DEMO), str(cache(case)), tokenizer_identifiers=LIBRARY_NULL,
                           dataset_path=DEMO, eod_id=GPT2_EOD_ID, **{**CONFIGS[case], **options})
    return NanosetBuilder(config).build()


def assert_sample(sample, expected: Item, seq_length: int):
    assert [str(sample[key].dtype) for key in ("tokens", "labels", "loss_mask", "position_ids")] == [
        "torch.int64", "torch.int64", "torch.float32", "torch.int64"]
    assert sample["tokens"][:6].tolist() == expected.head
    assert sha256(sample["tokens"].numpy().tobytes()) == expected.tokens
    assert sha256(sample["labels"].numpy().tobytes()) == expected.labels
    assert np.flatnonzero(sample["loss_mask"].numpy() != 1).tolist() == list(expected.loss_zeros)
    assert set(sample["loss_mask"].tolist()) <= {0.0, 1.0}
    restarts = list(expected.restarts)
    positions = np.concatenate([np.arange(end - start) for start, end in zip(restarts, restarts[1:] + [seq_length])])
    assert sample["position_ids"].tolist() == positions.tolist()


# ---------------------------------------------------------------------------------------------
# The tests

@pytest.mark.parametrize("name, prefix", [("demo", DEMO), ("demo_a", PART_A), ("demo_b", PART_B)], ids=str)
def test_bin_and_idx_equal_megatrons_indexed_dataset_builder(root, name, prefix):
    assert (sha256((root / f"{prefix}.bin").read_bytes()),
            sha256((root / f"{prefix}.idx").read_bytes())) == MEGATRON_BIN_IDX[name]


@pytest.mark.parametrize("case", ["a", "b", "c", "d"])
def test_cache_folder_equals_megatrons_file_for_file(cache, case):
    assert folder_hashes(cache(case)) == {"a": A_FILES, "b": B_FILES, "c": C_FILES, "d": D_FILES}[case]


def test_keeping_the_partial_validation_sample_equals_megatron(cache):
    assert {name: digest for name, digest in folder_hashes(cache("e")).items() if "-valid-" in name} == E_FILES


@pytest.mark.parametrize("case", ["a", "c", "d"])
def test_split_lengths_equal_megatrons(root, cache, case):
    assert {split: len(dataset) for split, dataset in nanosets(root, cache, case).items()} == LENGTHS[case]


@pytest.mark.parametrize("case, split, index", [(case, split, index)
                                                for case, items in (("a", A_ITEMS), ("c", C_ITEMS), ("d", D_ITEMS))
                                                for split, index in items])
def test_nanoset_samples_equal_gptdataset_getitem(root, cache, case, split, index):
    expected = {"a": A_ITEMS, "c": C_ITEMS, "d": D_ITEMS}[case][split, index]
    assert_sample(nanosets(root, cache, case)[split][index], expected, CONFIGS[case]["seq_length"])


@pytest.mark.parametrize("split, index", list(EOD_MASKS))
def test_eod_mask_loss_and_reset_position_ids_equal_megatrons(root, cache, split, index):
    sample = nanosets(root, cache, "a", eod_mask_loss=True, reset_position_ids=True)[split][index]
    loss_zeros, restarts = EOD_MASKS[split, index]
    assert_sample(sample, A_ITEMS[split, index]._replace(loss_zeros=loss_zeros, restarts=restarts), 512)


@pytest.mark.parametrize("split, index", list(CU_SEQLENS))
def test_cu_seqlens_equal_megatrons_inter_document_masking(root, cache, split, index):
    assert nanosets(root, cache, "a")[split][index]["cu_seqlens"].tolist() == CU_SEQLENS[split, index]


def test_partial_validation_sample_is_padded_like_megatrons(root, cache):
    result = build_gpt_cache(root / DEMO, cache("e"), 512, 1234, "969,30,1", SAMPLES, LIBRARY_NULL,
                             dataset_path=DEMO, drop_last_partial_validation_sequence=False)
    assert result["valid"]["state"] == "found"
    config = NanosetConfig(str(root / DEMO), str(cache("e")), 512, 1234, LIBRARY_NULL,
                           num_samples=SAMPLES, dataset_path=DEMO, eod_id=GPT2_EOD_ID)
    valid = Nanoset(MMapIndexedDataset(root / DEMO), load_cache(cache("e"), result["valid"]["description"], "valid"),
                    config)
    assert len(valid) == 256
    for (_, index), expected in E_ITEMS.items():
        assert_sample(valid[index], expected, 512)


def test_blended_samples_equal_blended_dataset_getitem(root, cache):
    config = NanosetConfig("", str(cache("b")), 512, 1234, LIBRARY_NULL, num_samples=SAMPLES,
                           eod_id=GPT2_EOD_ID)
    blends = NanosetBuilder(config).build_blend([str(root / PART_A), str(root / PART_B)], [0.7, 0.3],
                                                dataset_paths=[PART_A, PART_B])
    assert {split: len(blend) for split, blend in blends.items()} == LENGTHS["b"]
    assert folder_hashes(cache("b")) == B_FILES  # found, not rebuilt
    for (split, index), expected in B_ITEMS.items():
        sample = blends[split][index]
        assert sample["dataset_id"] == expected.dataset_id
        assert_sample(sample, expected, 512)


def test_where_megatron_refuses_a_negative_offset_tokenmill_refuses_too():
    """Keeping the partial last sample when the last sequence of the document index is empty.

    megatron-core's walk then writes the end row ``(1, size - extra) = (1, -1)``, and its
    ``helpers.build_sample_idx`` stops with ``AssertionError`` (``sample_idx.min() >= 0``): for
    sizes [10, 0], document_index [0, 1], seq 4, 1 epoch, 10 tokens, drop_last False, extra 1 it
    computes rows [[0, 0], [0, 4], [0, 8], [1, -1]] and raises. Megatron builds no cache for such a
    split (valid, with ``drop_last_partial_validation_sequence=False``, whose shuffled document index
    ends on a zero-length sequence of the ``.idx``), so tokenmill must not write one either.
    """
    with pytest.raises(TokenmillError, match=r"^sample index row 3 would have offset -1 "):
        build_sample_index(np.array([10, 0], np.int32), np.array([0, 1], np.int32), 4, 1, 10, False, 1)
