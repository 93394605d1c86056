"""Seeded mutation fuzzing: every reader and `verify` either succeed or raise TokenmillError.

Each format gets 2,000 mutations of a valid file (byte flips, 8-byte overwrites with extreme values,
truncation, appended garbage); no other exception, crash or hang is allowed.
"""

import random
import shutil
import struct

import numpy as np
import pytest

from conftest import GPT2, GPT2_EOD, MIXED_JSONL, built_once, run_tokenmill
from tokenmill.errors import TokenmillError
from tokenmill.formats.bin_idx import MMapIndexedDataset
from tokenmill.formats.pbin import PbinFile
from tokenmill.inputs.raw_index import read_index
from tokenmill.megatron.index_cache import load_cache
from tokenmill.verify.checks import verify

pytestmark = pytest.mark.slow  # thousands of mutated files per format

MUTATIONS = 2000


def mutate(data: bytes, rng: random.Random) -> bytes:
    data = bytearray(data)
    kind = rng.randrange(4)
    if kind == 0 and data:  # flip a few bytes
        for _ in range(rng.randint(1, 4)):
            data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
    elif kind == 1 and len(data) >= 8:  # an extreme 8-byte value somewhere (lengths, counts, offsets)
        at = rng.randrange(len(data) - 7)
        data[at:at + 8] = struct.pack("<Q", rng.choice([0, 1, 2**31, 2**32 - 1, 2**63 - 1, 2**64 - 1]))
    elif kind == 2:  # truncate
        del data[rng.randrange(len(data) + 1):]
    else:  # append garbage
        data += bytes(rng.randrange(256) for _ in range(rng.randint(1, 16)))
    return bytes(data)


def read_pbin(path):
    pbin = PbinFile(path)
    if pbin.num_documents:
        pbin.document(pbin.num_documents - 1).sum()


def read_megatron(prefix):
    dataset = MMapIndexedDataset(prefix)
    if len(dataset):
        dataset[len(dataset) - 1].sum()


@pytest.fixture(scope="module")
def originals(request, tmp_path_factory):
    """The valid files, made once per run for every xdist worker; the tests mutate copies."""
    return built_once(request.config, tmp_path_factory, "fuzz-originals", _make_originals)


def _make_originals(folder) -> None:
    folder.mkdir()
    run_tokenmill("index", MIXED_JSONL, "-o", folder / "mixed.idx")
    run_tokenmill("pack", MIXED_JSONL, "--tokenizer", GPT2, "--eod", GPT2_EOD, "-o", folder / "mixed.pbin")
    run_tokenmill("to-megatron", folder / "mixed.pbin", "-o", folder / "mixed")
    run_tokenmill("sample-index", folder / "mixed", "-o", folder / "cache", "--seq-length", "16", "--seed", "1",
                  "--split", "1,0,0", "--num-samples", "100", "--vocab-size", "50257")


def fuzz(target, original: bytes, readers, seed: int) -> int:
    rng = random.Random(seed)
    refused = 0
    for _ in range(MUTATIONS):
        target.write_bytes(mutate(original, rng))
        for read in readers:
            try:
                read()
            except TokenmillError:
                refused += 1
    target.write_bytes(original)
    return refused


def test_fuzz_raw_index(originals, tmp_path):
    target = tmp_path / "mixed.idx"
    refused = fuzz(target, (originals / "mixed.idx").read_bytes(),
                   [lambda: read_index(target, MIXED_JSONL), lambda: verify(target, jsonl=MIXED_JSONL)], seed=1)
    assert refused > MUTATIONS // 4  # most mutations are caught, none escapes as another exception


def test_fuzz_pbin(originals, tmp_path):
    shutil.copy(originals / "mixed.pbin.meta.json", tmp_path / "mixed.pbin.meta.json")
    target = tmp_path / "mixed.pbin"
    refused = fuzz(target, (originals / "mixed.pbin").read_bytes(), [lambda: read_pbin(target), lambda: verify(target)],
                   seed=2)
    assert refused > MUTATIONS // 4


@pytest.mark.parametrize("extension", ["idx", "bin"])
def test_fuzz_megatron(originals, tmp_path, extension):
    for name in ("mixed.bin", "mixed.idx"):
        shutil.copy(originals / name, tmp_path / name)
    target = tmp_path / f"mixed.{extension}"
    refused = fuzz(target, (originals / f"mixed.{extension}").read_bytes(),
                   [lambda: read_megatron(tmp_path / "mixed"), lambda: verify(tmp_path / "mixed")], seed=3)
    assert refused > MUTATIONS // 10


def test_fuzz_cache_npy(originals, tmp_path):
    cache = tmp_path / "cache"
    shutil.copytree(originals / "cache", cache)
    description = next(cache.glob("*-train-description.txt"))
    text = description.read_text()
    for target in sorted(cache.glob("*-train-*.npy")):
        original = target.read_bytes()

        def load():
            arrays = load_cache(cache, text, "train")
            assert arrays is not None
            np.asarray(arrays["sample_index"]).sum()

        fuzz(target, original, [load, lambda: verify(cache)], seed=4)
