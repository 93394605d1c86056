"""Megatron GPTDataset index caches (docs/algorithms.md §1–§2, docs/formats.md §6): worked examples, properties.

Every table below was produced by megatron-core 0.19.2 (its C++ build_sample_idx, or GPTDataset
through BlendedMegatronDatasetBuilder) in a throwaway venv, not by tokenmill.
"""

import hashlib

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from conftest import run_tokenmill
from tokenmill.errors import TokenmillError
from tokenmill.formats.bin_idx import MMapIndexedDatasetBuilder
from tokenmill.megatron.gpt_indices import (GPTIndexSpec, build_document_index, build_gpt_indices, build_sample_index,
                                            parse_split, split_matrix, split_ranges)


def test_split_parsing_and_bookends():
    assert parse_split("969,30,1") == [0.969, 0.03, 0.001]
    assert parse_split("80/10/10") == parse_split("0.8 0.1 0.1") == parse_split("8,1,1")
    assert parse_split("1") == [1.0, 0.0, 0.0]
    assert split_matrix(parse_split("969,30,1")) == [(0, 0.969), (0.969, 0.999), (0.999, 1.0)]
    assert split_matrix(parse_split("90,5,5"))[1] == (0.9, 0.9500000000000001)  # float noise kept: it is hashed
    assert split_matrix(parse_split("98,2,0"))[2] is None


def test_split_ranges_use_bankers_rounding_and_can_be_empty():
    ranges = split_ranges(split_matrix(parse_split("969,30,1")), 12)
    assert [r.tolist() for r in ranges] == [list(range(12)), [], []]  # round(11.988) = 12
    assert [r.tolist() for r in split_ranges([(0, 0.625), (0.625, 1.0)], 4)] == [[0, 1], [2, 3]]  # round(2.5) = 2


@pytest.mark.parametrize("split", ["1,2,3,4", ",,"])
def test_bad_splits_are_refused(split):
    with pytest.raises(TokenmillError, match="split"):
        parse_split(split)


SIZES = np.array([20, 50, 60, 30, 100, 5], dtype=np.int32)


@pytest.mark.parametrize("extra, drop_last, rows", [
    # the seed docs' example: sizes [20, 50, 60, 30, 100, 5], seq 30, document_index 0..5, one epoch
    (1, True, [[0, 0], [1, 10], [1, 40], [2, 20], [2, 50], [3, 20], [4, 20], [4, 50], [4, 80]]),
    (0, True, [[0, 0], [1, 10], [1, 40], [2, 20], [2, 50], [3, 20], [4, 20], [4, 50], [4, 80]]),
    (1, False, [[0, 0], [1, 10], [1, 40], [2, 20], [2, 50], [3, 20], [4, 20], [4, 50], [4, 80], [5, 4]]),
    (0, False, [[0, 0], [1, 10], [1, 40], [2, 20], [2, 50], [3, 20], [4, 20], [4, 50], [4, 80], [5, 5]]),
])
def test_sample_index_worked_example(extra, drop_last, rows):
    sample_index = build_sample_index(SIZES, np.arange(6, dtype=np.int32), 30, 1, 265, drop_last, extra)
    assert sample_index.tolist() == rows and sample_index.dtype == np.int32


@pytest.mark.parametrize("extra, rows", [
    (1, [[0, 0], [1, 0], [3, 0]]),  # the extra token pushes a boundary start into the next sequence
    (0, [[0, 0], [0, 30], [1, 30], [3, 30]]),  # without it the row stays at the end (offset == size)
])
def test_sample_index_at_sequence_boundaries_skips_empty_sequences(extra, rows):
    sizes = np.array([30, 30, 0, 30], dtype=np.int32)
    assert build_sample_index(sizes, np.arange(4, dtype=np.int32), 30, 1, 90, True, extra).tolist() == rows


def seeded_sample_index_inputs(seed: int = 2024, count: int = 60):
    """The inputs megatron-core's ``helpers.build_sample_idx`` was run on for ``MEGATRON_SAMPLE_INDEX``.

    1 to 40 sequences of 0 to 60 tokens (about a fifth of them empty), seq 2 to 50 (Megatron's C++
    asserts seq > 1), 1 to 3 epochs shuffled together, extra 0 or 1, drop_last either way. The same code,
    run next to megatron-core 0.19.2 (recipe in test_megatron_golden.py), produced the table.
    """
    rs = np.random.RandomState(seed)
    for _ in range(count):
        n = int(rs.randint(1, 41))
        sizes = (rs.randint(0, 61, n) * (rs.random_sample(n) > 0.2)).astype(np.int32)
        seq, epochs, extra, drop_last = (int(rs.randint(2, 51)), int(rs.randint(1, 4)), int(rs.randint(0, 2)),
                                         bool(rs.randint(0, 2)))
        document_index = np.tile(np.arange(n, dtype=np.int32), epochs)
        rs.shuffle(document_index)
        yield sizes, document_index, seq, epochs, int(sizes.sum()), drop_last, extra


MEGATRON_ASSERTS = "megatron-core refuses (see test_megatron_golden.py)"
# Per seeded case: megatron-core's (samples, dtype, sha256 of the rows' bytes); None where the inputs hold
# less than one sample (Megatron never builds those); MEGATRON_ASSERTS where its build_sample_idx raises.
MEGATRON_SAMPLE_INDEX = [
    (75, "int32", "24c65f8f2c2054f7d56800df9b5feab9f24470f46c8972d111a106febd4fb98f"),
    (74, "int32", "df318a2d2a969f6d0069cf02d9f630b719475a7de88a79f92000e8ade6cf375d"),
    (85, "int32", "f533802d912cf1ef2f488a63b2fb502ab079bbfd22c0c1a15e75db6d233b04b8"),
    (2, "int32", "267b833e9cf3534be558bca52463a9b3851705f1104ee17a8ee1128149fd4769"),
    (29, "int32", "c3929b9b453abacfad88f1450e3074410f95450a1fa455552b3813d31a578d06"),
    (24, "int32", "b5a5b5d9d2a0182a660a99c9fcc930b8ae16d14735097fdc17118e425b3e2fac"),
    (10, "int32", "6d7208a6f7de716466c2517777bfafa8ab11cd72da5d994b9e77272ac837fe1d"),
    (173, "int32", "91f2416d32369b4a4f6d4dfe2964c4aa4c76cc74ed866e3f339c0ffc94be7374"),
    MEGATRON_ASSERTS,  # its walk wrote the end row [59, -1]
    (86, "int32", "cc211d2e0e426b8940798623d792b82155e6edff0b70bd18e8bf6a4d8dd1a815"),
    (296, "int32", "2c0e8142af417671934d346d270084e9f761ec80c7b95dc363418f90a1b4b037"),
    (62, "int32", "b96b044322a6dbcbc5990ce73aa2e48e710372b71040bf8b8c64040aaddc0916"),
    (134, "int32", "f7598bc6cc1e2083df589199a5b9ea2a3decf450a85ad4a87b337af3218c1c1f"),
    (57, "int32", "f2d626e43a5cbea14a316af518ece11a63d4fe7843f34bd8fe058f80fd476d3d"),
    (8, "int32", "6c2bd52246e59105edc2027be49d221c7e57314c82a8b8fa842301069b30eea7"),
    (26, "int32", "310c88d0a003496664df28fdaba7a1dea95072b118df925136156f704223b908"),
    (31, "int32", "b73671c1d9aa9e1f694f7f25402c2c0a25481322c89d31db770a1eaf222a5f34"),
    (58, "int32", "91de521444dea2ad9dc7c9ec8e5327497a72a56c40b809974b1cacd3b937c389"),
    (117, "int32", "f5b1e693707e32559f232be3961ac5d19e91d4209e630d9df4972920b369f614"),
    (2, "int32", "16b689908fbf9e2182120b8e81160e90abb2bd1879164a0e6a9dbad8efc998a1"),
    (16, "int32", "b4ed9cd8d3f5ecd568de3a778b37ebd889cf7fc2f95a5bd921c42fe0ea6f4318"),
    (4, "int32", "03825e5203be0580d81c8cf4b5ee633f4196d2bfab79192314b1c5587c705002"),
    (26, "int32", "edbebe8f54d90ebc15931ecce07870c9882673c836335f019ff686d45618b21a"),
    (117, "int32", "295754e85f01d31acbfd77178d9a7a868ace9135721f615d381efd50d6c2c822"),
    (10, "int32", "0c7d5894ba61500a5bdf39581fe5dbf347d6399ca3eb430f331af9b94d78e861"),
    (4, "int32", "d017d8404f59279e3a823f1eaf3b595e75d1200c1321869353df36fe38d0d516"),
    (16, "int32", "ae01e2e76fa41fcb3bd94ef24b08299915ced20eedcdfb978f7098a8b88bb0ff"),
    (257, "int32", "6bb4e230ff3157967a88d7a9bcf28b6f31dcacfd06544ba0a3db0f168f48375c"),
    (42, "int32", "af38e9617c09a98e81fa2eeec6f1414d07289c7a859508e2f7f8e9928e341ed5"),
    (46, "int32", "ed1fa9254325b121f409e95eef035d697db17d3d291a57658e6cae0f73f778e4"),
    (39, "int32", "f8ffac514e83fa8d47366f00b3256216bc4a769c78c19cba311829feea31ad80"),
    (55, "int32", "674281bcb44736919dc66da673b76d1734818ca01af625aaff323bfbfc1b3a19"),
    (107, "int32", "9c12954cfce0f3e7fb0361ca4f0614c641d974486622141634df559e0920117d"),
    (99, "int32", "ea40f31f145eeaddd767861f5ef4d42013f6ec039374ef6aaae6ba049b006324"),
    (37, "int32", "07fa4947cd20569e13a83dea4f8ca235d286ecc73a63820fd2718271157182be"),
    (2, "int32", "975504f5a476f89e8e7685e3dec40db3093113ea2bb9596da57e07e447064c67"),
    (12, "int32", "d25080b1a5fa6cce0fa6c2d0e0a938188f391821e88ab86f052165ee6c99e259"),
    (22, "int32", "cd9df0e8209fe9dfbe4664de4d3f3c8b1ab24ee2767456ce857a65bc15ecd3c2"),
    (323, "int32", "ab5070a85745c0192122cb032763532013ec7f27d9da6342cf9b736ee18cce8c"),
    (13, "int32", "6125fea11c1cba7f3b101546d7b3ba161006a939bd1dda5a912016cc666e11d1"),
    (78, "int32", "e654ad4c295499d74d1a3fe98cc518b128780f69f5be8f4335ebb9c44abb866f"),
    MEGATRON_ASSERTS,  # its walk wrote the end row [69, -1]
    (92, "int32", "b25203ee8aff81c65c1ee723718180202677adc9844898b8605b14769b87f7d0"),
    (50, "int32", "314595ce7b2eb7a9407aa33e4954d90cfe59edc3c6d2470ca6ae3dea27886376"),
    (18, "int32", "96000716340eeb654b1c6fb106e6fceeb88dfdf528958412b754b3df4e12ef78"),
    None,
    (24, "int32", "206c6c563c575be40373195482cd7c4ef5d2600cfd0d4700b0f9f18ecc17925b"),
    (66, "int32", "60f0b76395aa1076d91b1c3a8c09faef5da43f488d70b20ef2e7d188f20f61de"),
    (49, "int32", "e0800bacf2cef5c2be93a77eb78ae68139d277235b87131f182d568de01e1002"),
    (46, "int32", "fb1409fb77c8918065fdf93b3ca9351498a58159f53edd525f7738614e41b830"),
    (36, "int32", "0e43013d636c06c36999cc16d7733b6f26d45c0744437e915cad8fb1f22c6f76"),
    (6, "int32", "e8a0659b842894eb2be2c4e81a3ad732831ebebd096db820462cf37c17554836"),
    (96, "int32", "1566ec79a78f7d27ba2a64314dd81b6d8907452514522e8dc1504d44fe68a4db"),
    (83, "int32", "9d612809559ccddf647a9add8fb4f8884a583261c7510adb3445183dc6bb09c7"),
    (9, "int32", "9f1fc2a3296c7f59e69c202e37f07b32097e92b44f807011ce519aa0d64de575"),
    (8, "int32", "b04de778f877f8005ca800d72e378dd75d3762b806f2b8f85f5c6ea5ed001b76"),
    (23, "int32", "0ada2808f14fb537faaaa4fd7ba1c5d5a7658b5d46eb9e150379ec4d9066377f"),
    (63, "int32", "6c0c77716025697b1ba8b8d545ae0238f5c8a5b16985605c6de9e480bd6870db"),
    (6, "int32", "4badecd44ab684e136f28a6c8172a2fc219fc98b0b686cc3ec2ecdfa39ea2f92"),
    (48, "int32", "2b8a6c8ee99c86115d6b28dc3f4871f2ddd0c400e8d495b4489b910476d128b7"),
]


@pytest.mark.parametrize("case", [case for case, expected in enumerate(MEGATRON_SAMPLE_INDEX)
                                  if isinstance(expected, tuple)])
def test_sample_index_equals_megatrons_on_seeded_random_inputs(case):
    sizes, document_index, seq, epochs, tokens, drop_last, extra = list(seeded_sample_index_inputs())[case]
    rows = build_sample_index(sizes, document_index, seq, epochs, tokens, drop_last, extra)
    assert (len(rows) - 1, str(rows.dtype), hashlib.sha256(rows.tobytes()).hexdigest()) == MEGATRON_SAMPLE_INDEX[case]


def test_the_seeded_table_covers_both_flags_and_empty_sequences():
    inputs = [case for case, expected in zip(seeded_sample_index_inputs(), MEGATRON_SAMPLE_INDEX)
              if isinstance(expected, tuple)]
    assert len(inputs) >= 50
    assert {(extra, drop_last) for *_, drop_last, extra in inputs} == {(0, False), (0, True), (1, False), (1, True)}
    assert sum(int((sizes == 0).any()) for sizes, *_ in inputs) >= 40


def test_valid_sample_count_is_computed_in_float32_like_megatron():
    # megatron-core: T = 2**24 + 2 tokens, seq 1024, keeping the partial sample: ceil(float32(2**24 + 1) / 1024)
    # = 16384 samples (the exact ceil is 16385), the last row at token 16384 * 1024
    rows = build_sample_index(np.array([2**24 + 2], np.int32), np.array([0], np.int32), 1024, 1, 2**24 + 2, False, 1)
    assert len(rows) - 1 == 16384 and rows[-1].tolist() == [0, 16777216]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(0, 60), min_size=1, max_size=40), st.integers(2, 50), st.integers(1, 3),
       st.sampled_from([0, 1]), st.booleans(), st.randoms(use_true_random=False))
def test_row_k_is_where_token_k_times_seq_of_the_stream_lies(sizes, seq, epochs, extra, drop_last, rng):
    """The stream is the sequences in document_index order. Row k (k ≥ 1) of a whole sample lies in the
    first sequence whose end reaches token ``k·seq + extra``, at offset ``k·seq`` minus its start; a kept
    partial last sample ends at the last sequence, ``extra`` tokens before its end."""
    sizes = np.array(sizes, dtype=np.int32)
    tokens = int(sizes.sum())
    document_index = np.tile(np.arange(len(sizes), dtype=np.int32), epochs)
    rng.shuffle(document_index)
    assume(tokens * epochs > seq + extra)  # at least one sample
    assume(drop_last or sizes[document_index[-1]] >= extra)  # else Megatron refuses (test_megatron_golden.py)
    rows = build_sample_index(sizes, document_index, seq, epochs, tokens, drop_last, extra)
    ends = np.cumsum(sizes[document_index], dtype=np.int64)
    starts = ends - sizes[document_index]
    whole = (epochs * tokens - extra) // seq
    partial = not drop_last and (epochs * tokens - extra) % seq != 0
    assert len(rows) - 1 == whole + partial and rows.dtype == np.int32
    assert rows[0].tolist() == [0, 0]
    for k in range(1, whole + 1):
        position, offset = rows[k]
        assert starts[position] + offset == k * seq
        assert ends[position] >= k * seq + extra
        assert position == 0 or ends[position - 1] < k * seq + extra
    if partial:
        assert rows[-1].tolist() == [len(document_index) - 1, sizes[document_index[-1]] - extra]


def test_document_index_shuffles_all_epochs_at_once_or_the_final_one_apart():
    documents = np.arange(5, 10, dtype=np.int32)
    together = build_document_index(documents, 3, np.random.RandomState(1), separate_final_epoch=False)
    apart = build_document_index(documents, 3, np.random.RandomState(1), separate_final_epoch=True)
    assert together.dtype == apart.dtype == np.int32
    assert sorted(together.tolist()) == sorted(apart.tolist()) == sorted(documents.tolist() * 3)
    assert sorted(apart[-5:].tolist()) == documents.tolist()  # the final epoch stays at the end


def test_separate_final_epoch_keeps_final_samples_at_the_end_of_the_shuffle():
    sizes = np.full(100, 10, dtype=np.int32)  # 1000 tokens, 99 samples of 10 (+1) per epoch
    # 2 epochs for 110 samples: only 11 come from the final epoch, fewer than int(0.8 * 99) = 79
    indices = build_gpt_indices(sizes, np.arange(100, dtype=np.int32), GPTIndexSpec(10, 7, 110))
    samples_before_final = (1000 - 1) // 10
    assert len(indices.shuffle_index) == (2000 - 1) // 10
    assert sorted(indices.shuffle_index[:samples_before_final].tolist()) == list(range(samples_before_final))
    assert indices.shuffle_index.dtype == np.uint32


def test_a_split_without_tokens_is_an_error_not_a_hang():
    with pytest.raises(TokenmillError, match="the valid split has 0 sequences and no tokens"):
        build_gpt_indices(np.full(12, 5, np.int32), np.arange(12, 12, dtype=np.int32),
                          GPTIndexSpec(4, 1, 10, "valid"), where="x")


def test_uint16_and_int32_datasets_give_the_same_indices(tmp_path):
    lengths = np.random.default_rng(3).integers(1, 200, 3000)
    for dtype in (np.uint16, np.int32):
        with MMapIndexedDatasetBuilder(tmp_path / dtype.__name__, dtype) as builder:
            builder.add_document(np.zeros(int(lengths.sum()), dtype), lengths)
        run_tokenmill("sample-index", tmp_path / dtype.__name__, "-o", tmp_path / f"c_{dtype.__name__}",
                      "--seq-length", "64", "--seed", "5", "--epochs", "3", "--job-data-path", "same",
                      "--vocab-size", "1000")
    files = sorted(path.name for path in (tmp_path / "c_uint16").iterdir())
    assert files == sorted(path.name for path in (tmp_path / "c_int32").iterdir()) and len(files) == 17
    # 12 of Megatron, 3 fingerprints, megatron_args.txt, sequences_per_dataset.json
    for name in files:
        if name != "megatron_args.txt":  # it names its own folder
            assert (tmp_path / "c_uint16" / name).read_bytes() == (tmp_path / "c_int32" / name).read_bytes()
