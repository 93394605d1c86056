"""OLMo-core's packing caches (tokenmill.best_fit.olmo_cache): the bytes and names ai2-olmo-core 3.0.0's
NumpyPackedFSLDataset.prepare() writes, found by its job.

Recipe of the reference (a throwaway venv: ``pip install torch==2.13.0 ai2-olmo-core==3.0.0``, numpy 2.4.6, on
an x86-64 CPU with AVX-512): the demo packed with GPT-2 (``tokenmill pack data/raw/demo.jsonl --tokenizer
data/tokenizers/gpt2.tokenizer.json --eod '<|endoftext|>'``), converted with ``tokenmill to-olmo demo.pbin -o
parts --max-tokens 400000`` (3 parts, :data:`PARTS_SHA256`); then, from the folder holding ``parts``::

    NumpyPackedFSLDataset("parts/part-00000.npy", "parts/part-00001.npy", "parts/part-00002.npy",
                          sequence_length=L, pad_token_id=50256, eos_token_id=50256, vocab_size=50257,
                          dtype=np.uint16, bos_token_id=None, long_doc_strategy=S)
    dataset.work_dir = "work"; dataset.prepare()

and the sha256 of each file it wrote under ``work/dataset-common``. Its sort is numpy's default argsort, whose
order of equal lengths depends on the CPU numpy dispatches to: ``document-indices`` is compared byte for byte
where numpy sorts with AVX-512 as the reference machine did, and elsewhere as its rows ordered by (length
descending, start) — the second hash of each; the other two files never depend on it.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import shutil

import numpy as np
import pytest
import yaml
from numpy._core._multiarray_umath import __cpu_features__

from conftest import DEMO_JSONL, GPT2, GPT2_EOD, REPO, TEKKEN, built_once, copy_built, run_tokenmill
from tokenmill.errors import TokenmillError
from tokenmill.best_fit.olmo_cache import olmo_cache_names, write_olmo_packing_for_parts

OLMO_CORE_FILES = {
    (512, "fragment", 2009): {
        "document-indices-512-2b4303dec9e4b64df697f65a4c15557cd4c6e0a770bac3ef2cb398fbc7c50e23":
            ("6cce45bd6cc4bc92c0f76b58fa7ecd3a2df7afe6539afbc794b05f32d6247949",
             "294a742e729cb60cd5c5727e22fa8d808e615367dc672b3288fb2c1a9eecbf06"),
        "document-indices-512-6a84cdff6d5cdc13690712b04aa2a01bc7aba86d44921a786e0052a9505eed38":
            ("15149990e2d0c790093ff4ac42fd9b3c774d234745901ce806c79f3f885c9295",
             "9e0c04bc09df5cb93619f29d41378939ff6db4fca52219519d6674f837b379c0"),
        "document-indices-512-8cc6247145c7543f273867124344e4bc351d2ef8002cba3c75e7c16952432a29":
            ("7c5ea431d3061652caf7242b12743e115ff5a0a45f749aceaa41be6051e6a9b4",
             "080eff7a4e76bdbbc3aed8e115177af4a58e67d36d2def55dad693ff00595b1d"),
        "documents-by-instance-512-2b4303dec9e4b64df697f65a4c15557cd4c6e0a770bac3ef2cb398fbc7c50e23":
            ("aac9d9296269051ae4c00d02d04fd79aea4c4aa9ac043287af77cfb9d0460cef",
             None),
        "documents-by-instance-512-6a84cdff6d5cdc13690712b04aa2a01bc7aba86d44921a786e0052a9505eed38":
            ("5ab1e3156b2b3ddc8b8da6a2b9726b812a62bfb2819062de9356b51e144c850e",
             None),
        "documents-by-instance-512-8cc6247145c7543f273867124344e4bc351d2ef8002cba3c75e7c16952432a29":
            ("c077bb91b5d0cfde198616f2ad9d18eb559d45e822f5826ff213883846a6d6a1",
             None),
        "instance-offsets-512-2b4303dec9e4b64df697f65a4c15557cd4c6e0a770bac3ef2cb398fbc7c50e23":
            ("1f7ecd83d3450939d33e737bb211a52e4391a22f9d61747b15cecde401a4092f",
             None),
        "instance-offsets-512-6a84cdff6d5cdc13690712b04aa2a01bc7aba86d44921a786e0052a9505eed38":
            ("aa43ecc8941d68c90f44e10fe675eae744a0474525aacb90abfca626d0d6fdb6",
             None),
        "instance-offsets-512-8cc6247145c7543f273867124344e4bc351d2ef8002cba3c75e7c16952432a29":
            ("65b0241bd15cbf11ed140e1d5499f762e3c30f690bdd6d6423f58b8bdf8b9a53",
             None),
    },
    (2048, "truncate", 271): {
        "document-indices-2048-1e5064df01b845a79c1fec563b7e36636943f17cca9100367ba83f48f293e381":
            ("15a8e59a76ae3daa7b75f90d71695c3bc832c357c0329caf9db01af07d191896",
             "bdf28758a8477a256caebd4ecf16f8d7e3468386cc46fe77c861b3b49aed5077"),
        "document-indices-2048-423032d9c6b3e3fed9eea8988b3a39cbaf36f1e52372c5c4862402108f57bfbd":
            ("2647862c9988744fd80fad7c4082cb7e1a2f855c2463ac09120e1f1de71fe170",
             "d5d095f5cb0796faf053bcaf41a59836ec8fc436883ae4230e31220b1670605d"),
        "document-indices-2048-f50e111de5a26a4aed441bbbb978003cd27996f5b119e810619c1b43d1d22724":
            ("71cab60ad7d7fdf74200d63296b5eba78d4bebbb50aec00cd13c2bdcab8acc8e",
             "c1a75011e99817ce87ba3727b194da301e5bcb5e5335c0be7c844d27fbd361a1"),
        "documents-by-instance-2048-1e5064df01b845a79c1fec563b7e36636943f17cca9100367ba83f48f293e381":
            ("3a40dcb6865a17d9e000391dc2151c1fd457c8c0b11b829bc9458b8311f9946b",
             None),
        "documents-by-instance-2048-423032d9c6b3e3fed9eea8988b3a39cbaf36f1e52372c5c4862402108f57bfbd":
            ("2111f7ab734e0bf475a48988b0db59317e84c41f1370bdd58076022dfa635831",
             None),
        "documents-by-instance-2048-f50e111de5a26a4aed441bbbb978003cd27996f5b119e810619c1b43d1d22724":
            ("58dc5f05e51fd1032838e1fed77609cf19db45d893bf974f243a334fd44ae60a",
             None),
        "instance-offsets-2048-1e5064df01b845a79c1fec563b7e36636943f17cca9100367ba83f48f293e381":
            ("f9f3a354c6025ceb3ba5b4a36f3ca2131d99042e32b5b88e6718f47122471352",
             None),
        "instance-offsets-2048-423032d9c6b3e3fed9eea8988b3a39cbaf36f1e52372c5c4862402108f57bfbd":
            ("44e419e6a2e494f33b80c8cdd2f25a466b503b7e9f3d99bf7d90ddd0a3482d70",
             None),
        "instance-offsets-2048-f50e111de5a26a4aed441bbbb978003cd27996f5b119e810619c1b43d1d22724":
            ("c0a94e369013dab92ddeb3f9a990ab30ad01f94eca529142db76709d1d3be258",
             None),
    },
}
PARTS_SHA256 = {
    "part-00000.npy": "e58130cf8c10179973d7fbe122237febaecaba8e7cfc37fda3a13c59833f6d6c",
    "part-00001.npy": "76112d85a284760ea9945d318e612c509b91d0a9aef96d7ba6af8f93f20bb3ee",
    "part-00002.npy": "d2c51e6fd5853f75c902e0e69fc513bf96127a8d4145305a59a7ca8c3a8b46a7"
}


# The same with a vocabulary over 65,535 ids (uint32 parts): the demo packed with Tekken (``tokenmill pack
# data/raw/demo.jsonl --tokenizer tests/data/tekken.tokenizer.json --eod '</s>'``), ``to-olmo ... --max-tokens
# 400000``, and the job as above with ``pad_token_id=2, eos_token_id=2, vocab_size=131072, dtype=np.uint32``.
OLMO_CORE_FILES_UINT32 = {
    (512, "fragment", 1569): {
        "document-indices-512-63573c51e5658a56add27dd8f0e2f24f3925ed2fd987b8a25881106086976bab":
            ("7b90ee7ca3846ae027ee7d2b7a73e4d80c77a4244bb01095ab7677e22e24aee2",
             "3fe5822e22ae69df268c4937312d1002c1c596b7f37f62368ae89a8daf39c7d6"),
        "document-indices-512-96539661a24fe62198e7af7304412012e2db52bf754deb2fca1c8a5953fa18e3":
            ("d9336c14d3ae524339663ded8d2a5902dbd1455e86da66bad49fa41e91c87432",
             "1718d612d878bd5b0727409d4045db1b555ea99bcccaee68547499aaa830c0ea"),
        "document-indices-512-efafa688a5e718b7c1206b9677273a74619986be90a570c42fc66cb2f28b5295":
            ("42cb58df404abb1a24f8cba5f701e368f3798b80485736f0edea71f3a84cbcfa",
             "1f8b8628e7095718acdba3c61f8cc7c4156df10995576bdf478c39d1c17ff3c1"),
        "documents-by-instance-512-63573c51e5658a56add27dd8f0e2f24f3925ed2fd987b8a25881106086976bab":
            ("1b0947778c338d9a0f6ee7256f2d93bc5d0ef73acd21465dc093defa710a262b",
             None),
        "documents-by-instance-512-96539661a24fe62198e7af7304412012e2db52bf754deb2fca1c8a5953fa18e3":
            ("4fc147607e597041c6a16613b83fac834b8ed5d48f25139863c83222a2b7b9e6",
             None),
        "documents-by-instance-512-efafa688a5e718b7c1206b9677273a74619986be90a570c42fc66cb2f28b5295":
            ("9055c83fe82b5c1c3765327014efb9b97d00e403a1a5de8a566e0648a4a12128",
             None),
        "instance-offsets-512-63573c51e5658a56add27dd8f0e2f24f3925ed2fd987b8a25881106086976bab":
            ("8ba74bbef49421bc6458d0023e543434bea0d4432bc1b85ed8261c19964b154f",
             None),
        "instance-offsets-512-96539661a24fe62198e7af7304412012e2db52bf754deb2fca1c8a5953fa18e3":
            ("49353ba42577ce393b6fc477a1ccd13beb76727f51620f530b68af3668f4bb34",
             None),
        "instance-offsets-512-efafa688a5e718b7c1206b9677273a74619986be90a570c42fc66cb2f28b5295":
            ("e7fb519fafe8cb2271bbc5db535819c2c89b8eaa098e8fd8506ebc849b022939",
             None),
    },
    (2048, "truncate", 236): {
        "document-indices-2048-dd80f17f4759fdd222cf36f1f780268480c87482c63107a0f736381b9474d3e0":
            ("61ea430743e5f75e484143e94403d181a0cfe56dc15799bc7e4c14e9d22cbc44",
             "baf3868b0fb0ed29a65e18d08526bcf6c1133d09d36ac89813af00c9f07c7e1a"),
        "document-indices-2048-e88751bb28e9cd9d637138186e23cac7b1b06191fb78b5be1eb83bf3523503f4":
            ("2be04ff44297f958e4db70376abcfc8e9ce7246443358c129449551d5507661b",
             "1cbbb2084f393055fea7097e1fb667c077883b331ce8b465768b9ddefb9a73c3"),
        "document-indices-2048-f62fded9fb1cc7cc1cdc1ebc857028d0febb1ac68cfc6728a9fcf914bccf2250":
            ("e0616241dabceb75554463e016aa44614d5fee236827691f1bdac1618324247f",
             "9db0f5ea68e789bbdc9a73427bb31e80fbd6bcbe9dfaa7edd9fee3672d08aba0"),
        "documents-by-instance-2048-dd80f17f4759fdd222cf36f1f780268480c87482c63107a0f736381b9474d3e0":
            ("72c37c6914a936e79ee099961d872a6bda563c5dcb861333b42d8394c2909448",
             None),
        "documents-by-instance-2048-e88751bb28e9cd9d637138186e23cac7b1b06191fb78b5be1eb83bf3523503f4":
            ("8e0d8ab16a788175e268f9c855ce05e13bfb40ea59249e5878559bd65410a22a",
             None),
        "documents-by-instance-2048-f62fded9fb1cc7cc1cdc1ebc857028d0febb1ac68cfc6728a9fcf914bccf2250":
            ("94afc1d425e682b763dc6cb03e4b510231b9957d0341162fc8ac3d6e213aa8f8",
             None),
        "instance-offsets-2048-dd80f17f4759fdd222cf36f1f780268480c87482c63107a0f736381b9474d3e0":
            ("d96629c93de7501638a6f89f55a2458fc9d0f632444734e23a9a6ee4ab6ed01c",
             None),
        "instance-offsets-2048-e88751bb28e9cd9d637138186e23cac7b1b06191fb78b5be1eb83bf3523503f4":
            ("f5cbd3913c1bd08b22b63714979825010f5ce561bdccc1c32b0e9d8d02865a9e",
             None),
        "instance-offsets-2048-f62fded9fb1cc7cc1cdc1ebc857028d0febb1ac68cfc6728a9fcf914bccf2250":
            ("b63ccae389a244ba5ad13503e8cbc1a9960983af7a8debfa9133172a3ee8a7e9",
             None),
    },
}
PARTS_SHA256_UINT32 = {
    "part-00000.npy": "8c4aed87e9a60984b168f41aec53d0f811213c1a9da40eb1912692dc836366da",
    "part-00001.npy": "6fe4158966092c9750b04c67e7549fd697b8a4436b27754b87af65930f10de9a",
    "part-00002.npy": "79b2827ba0a6e77bd908fc071f857638369408c8d8337d319801c6e3e30c9956",
}

@pytest.fixture
def parts(request, tmp_path_factory, tmp_path, shared_demo_megatron):
    """The demo packed with GPT-2 (the run's demo.pbin) and cut into parts, made once per run for every xdist
    worker, copied for the test: it writes its work folder beside them."""
    def make(folder):
        folder.mkdir()
        for name in ("demo.pbin", "demo.pbin.meta.json"):
            shutil.copy2(shared_demo_megatron / name, folder / name)
        _cut_into_parts(folder, PARTS_SHA256)

    return copy_built(built_once(request.config, tmp_path_factory, "olmo-packing", make), tmp_path / "olmo-packing")


@pytest.fixture
def uint32_parts(request, tmp_path_factory, tmp_path):
    """The demo packed with Tekken (uint32 ids) and cut into parts, as :func:`parts`."""
    def make(folder):
        folder.mkdir()
        run_tokenmill("pack", DEMO_JSONL, "--tokenizer", TEKKEN, "--eod", "</s>", "-o", folder / "demo.pbin")
        _cut_into_parts(folder, PARTS_SHA256_UINT32)

    return copy_built(built_once(request.config, tmp_path_factory, "olmo-packing-uint32", make),
                      tmp_path / "olmo-packing-uint32")


def _cut_into_parts(folder, expected: dict) -> None:
    run_tokenmill("to-olmo", folder / "demo.pbin", "-o", folder / "parts", "--max-tokens", "400000")
    assert {name: hashlib.sha256((folder / "parts" / name).read_bytes()).hexdigest() for name in expected} == expected


def assert_olmo_cores_files(folder, expected: dict) -> None:
    """The work dir's ``dataset-common/`` holds exactly the files of ``expected``, with its bytes (module
    docstring: ``document-indices`` exactly where numpy sorts with AVX-512, else as ordered rows)."""
    assert sorted(path.stem for path in (folder / "dataset-common").iterdir()) == sorted(expected)
    for name, (sha256, ordered_sha256) in expected.items():
        path = folder / "dataset-common" / f"{name}.npy"
        if ordered_sha256 is None:
            assert hashlib.sha256(path.read_bytes()).hexdigest() == sha256, name
        elif __cpu_features__.get("AVX512_SKX"):
            assert document_indices_digest(path) == (sha256, ordered_sha256), name
        else:
            assert document_indices_digest(path)[1] == ordered_sha256, name


def document_indices_digest(path) -> tuple[str, str]:
    """The file's sha256, and that of its rows ordered by (length descending, start)."""
    rows = np.fromfile(path, "<u8").reshape(-1, 2)
    ordered = rows[np.lexsort((rows[:, 0], -(rows[:, 1] - rows[:, 0]).astype(np.int64)))]
    return hashlib.sha256(path.read_bytes()).hexdigest(), hashlib.sha256(ordered.tobytes()).hexdigest()


@pytest.mark.parametrize("sequence_length, strategy, instances", list(OLMO_CORE_FILES))
def test_the_files_are_olmo_cores_under_the_names_its_job_computes(parts, sequence_length, strategy, instances,
                                                                  monkeypatch):
    monkeypatch.chdir(parts)  # the job spells the parts parts/part-0000N.npy
    run_tokenmill("best-fit", "parts", "-o", f"work-{sequence_length}-{strategy}", "--seq-length",
                  str(sequence_length), "--long-doc-strategy", strategy)
    folder = parts / f"work-{sequence_length}-{strategy}"
    assert_olmo_cores_files(folder, OLMO_CORE_FILES[(sequence_length, strategy, instances)])
    sidecar = json.loads((folder / "tokenmill-olmo-packing.meta.json").read_text())
    assert sidecar["samples"] == instances and sidecar["documents"] == 2990
    config = yaml.safe_load((folder / "tokenmill-olmo-packing.yaml").read_text())
    assert config == {"paths": [f"parts/part-0000{k}.npy" for k in range(3)], "sequence_length": sequence_length,
                      "long_doc_strategy": strategy, "source_group_size": 1, "dtype": "uint16",
                      "work_dir": f"work-{sequence_length}-{strategy}",
                      "tokenizer": {"vocab_size": 50257, "eos_token_id": 50256, "pad_token_id": 50256,
                                    "bos_token_id": None}}


@pytest.mark.parametrize("sequence_length, strategy, instances", list(OLMO_CORE_FILES_UINT32))
def test_uint32_parts_are_olmo_cores_too(uint32_parts, sequence_length, strategy, instances, monkeypatch):
    monkeypatch.chdir(uint32_parts)
    run_tokenmill("best-fit", "parts", "-o", "work", "--seq-length", str(sequence_length), "--long-doc-strategy",
                  strategy)
    assert_olmo_cores_files(uint32_parts / "work", OLMO_CORE_FILES_UINT32[(sequence_length, strategy, instances)])
    sidecar = json.loads((uint32_parts / "work/tokenmill-olmo-packing.meta.json").read_text())
    assert (sidecar["samples"], sidecar["dtype"], sidecar["tokenizer"]["eos_token_id"]) == (instances, "uint32", 2)
    shutil.rmtree(uint32_parts / "work")


def test_the_names_hash_the_paths_as_the_job_spells_them(parts):
    """OLMo-core hashes str(path) as given, not the sequence length: another spelling of the same file is another
    cache (the name below is the reference run's at L = 2048, the same hash)."""
    sizes = [(parts / "parts" / f"part-0000{k}.npy").stat().st_size for k in range(3)]
    relative = olmo_cache_names(["parts/part-00000.npy"], sizes[:1], 512, "truncate")
    assert relative["document-indices"] == ("document-indices-512-"
                                            "1e5064df01b845a79c1fec563b7e36636943f17cca9100367ba83f48f293e381.npy")
    assert olmo_cache_names(["./parts/part-00000.npy"], sizes[:1], 512, "truncate") != relative
    written = write_olmo_packing_for_parts(parts / "parts", parts / "prefixed", 512, job_path_prefix="/data/parts")
    assert written["paths"][0] == "/data/parts/part-00000.npy"
    names = olmo_cache_names(["/data/parts/part-00000.npy"], sizes[:1], 512, "truncate")
    assert f"dataset-common/{names['instance-offsets']}" in written["files"]


def test_a_sequence_length_that_is_no_power_of_two_is_refused(parts, tmp_path):
    result = run_tokenmill("best-fit", parts / "parts", "-o", tmp_path / "work", "--seq-length", "1000",
                           check=False)
    assert result.returncode == 1 and result.stderr == ("tokenmill: error: sequence length 1000: OLMo-core packs only "
                                                        "powers of two (e.g. 512 or 1024)\n")
    assert not (tmp_path / "work").exists()
    with pytest.raises(TokenmillError, match=r"no metadata.json; give a folder of parts that tokenmill to-olmo wrote"):
        write_olmo_packing_for_parts(tmp_path, tmp_path / "work", 512)


# The demo chat set (an SFT set, its parts with label masks) as OLMo-core 3.0.0 packed it, from its .csv.gz.
# Recipe, in a folder /w holding data/raw/chat.jsonl: `tokenmill sft c.yaml chat -o chat.pbin` with the demo
# config's `sft.chat` entry (GPT-2, inputs [data/raw/chat.jsonl] spelt so: the .csv.gz names its source, and its
# sha256 is hashed), `tokenmill to-olmo chat.pbin -o chat.olmo`; then in /w, with ai2-olmo-core 3.0.0 (numpy 2.4.6,
# AVX-512):
#     NumpyPackedFSLDataset("chat.olmo/part-00000.npy", sequence_length=2048, pad_token_id=50256,
#                           eos_token_id=50256, vocab_size=50257, dtype=np.uint16, bos_token_id=None,
#                           label_mask_paths=["chat.olmo/part-00000.label_mask.npy"], use_array_if_local=False)
#     dataset.work_dir = "fresh"; dataset.prepare()
# The same job in tokenmill's work dir wrote no file, and its 27 instances (input_ids, label_mask) equal fresh's.
SFT_OLMO_FILES = {
    "document-indices-2048-f4dc34d90a1e142abe4e3affbb9143eafa15d4ef60520245acd2d7b55cf9479f":
        ("3151b1218f18c9ba69c02630de149c4eccb025a142ff78a90431c47990ba5d35",
         "70a990919e24a4d4b94ecc6e244c61681fa81e528b73e413a0b6232a0cb5700f"),
    "documents-by-instance-2048-f4dc34d90a1e142abe4e3affbb9143eafa15d4ef60520245acd2d7b55cf9479f":
        ("ab6561c32ad8eba28081bbc7ab1f0353ba8b2048fadfd9d4796aa1ded2e8f8a2", None),
    "instance-offsets-2048-f4dc34d90a1e142abe4e3affbb9143eafa15d4ef60520245acd2d7b55cf9479f":
        ("9aa7e6da4f01cabb9704d07e66a790b1aad1a0840f881c07274dbdf13b9e1c26", None),
}
SFT_PARTS_SHA256 = {"part-00000.npy": "be54fc88e298068e18a758066ced22ee1862a70775182dd1d292af57fadc6ed4",
                    "part-00000.csv.gz": "53e9644553a3c5f298ae95dd6093eda4956ed408e79273cde2b354a54fa8d2a4",
                    "part-00000.label_mask.npy": "c64bfa19d0f4b8ed58fe872222554643e7106986e373e5a98f89cba4a61e3e6a"}


def test_an_sft_sets_parts_pack_by_their_csv_with_their_label_masks(tmp_path, monkeypatch):
    """A conversation holds an EOS per message: its parts are packed by their .csv.gz, as a job told
    use_array_if_local=False does, under the names that job computes, and the fragment tells the job so."""
    from tokenmill.pack.sft import write_sft

    (tmp_path / "data/raw").mkdir(parents=True)
    shutil.copy(REPO / "data/raw/chat.jsonl", tmp_path / "data/raw/chat.jsonl")
    monkeypatch.chdir(tmp_path)
    entry = {"inputs": ["data/raw/chat.jsonl"], "tokenizer": "gpt2",
             "special_tokens": {"bos_token": GPT2_EOD, "eos_token": GPT2_EOD}, "seq_length": 2048,
             "loss_masking_jq_patterns": ['.conversations | select(.from == "human")', ".instruction", ".role"],
             "message_construction": ["role", "instruction", "conversations"]}
    write_sft("chat", {"tokenizers": {"gpt2": {"path": str(GPT2)}}, "sft": {"chat": entry}}, "chat.pbin")
    run_tokenmill("to-olmo", "chat.pbin", "-o", "chat.olmo")
    assert {name: hashlib.sha256((tmp_path / "chat.olmo" / name).read_bytes()).hexdigest()
            for name in SFT_PARTS_SHA256} == SFT_PARTS_SHA256
    run_tokenmill("best-fit", "chat.olmo", "-o", "work", "--seq-length", "2048")
    assert sorted(path.stem for path in (tmp_path / "work/dataset-common").iterdir()) == sorted(SFT_OLMO_FILES)
    for name, (sha256, ordered_sha256) in SFT_OLMO_FILES.items():
        path = tmp_path / "work/dataset-common" / f"{name}.npy"
        if ordered_sha256 is None or __cpu_features__.get("AVX512_SKX"):
            assert hashlib.sha256(path.read_bytes()).hexdigest() == sha256, name
        else:  # one tie among the 65 lengths: numpy orders it by the CPU
            assert document_indices_digest(path)[1] == ordered_sha256, name
    config = yaml.safe_load((tmp_path / "work/tokenmill-olmo-packing.yaml").read_text())
    assert config["label_mask_paths"] == ["chat.olmo/part-00000.label_mask.npy"]
    assert config["use_array_if_local"] is False
    sidecar = json.loads((tmp_path / "work/tokenmill-olmo-packing.meta.json").read_text())
    assert (sidecar["documents"], sidecar["samples"], sidecar["boundaries"]) == (65, 27, "metadata")
    assert run_tokenmill("verify", "work").returncode == 0
    csv = tmp_path / "chat.olmo/part-00000.csv.gz"
    csv.write_bytes(gzip.compress(gzip.decompress(csv.read_bytes()).replace(b"0,541,", b"0,542,", 1), mtime=0))
    result = run_tokenmill("verify", "work", check=False)
    assert result.returncode == 1 and "(the job would pack again)" in result.stderr  # another .csv.gz: other names
