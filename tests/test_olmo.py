"""OLMo-core's token files (tokenmill.olmo): raw parts, their csv.gz, read back by the real trainer.

The values below were recorded with ai2-olmo-core 3.0.0 in a throwaway venv (never a dependency):

    python3 -m venv /tmp/peer-olmo && /tmp/peer-olmo/bin/pip install --no-deps ai2-olmo-core==3.0.0 \\
        cached_path omegaconf rich dataclass_extensions bettermap   # torch and numpy: any recent ones
    tokenmill pack data/raw/demo.jsonl --tokenizer data/tokenizers/gpt2.tokenizer.json \\
        --eod '<|endoftext|>' -o demo.pbin
    tokenmill to-olmo demo.pbin -o out --max-tokens 400000
    # then, with paths = sorted(glob("out/part-*.npy")):
    ds = NumpyFSLDataset(*paths, sequence_length=512, pad_token_id=50256, eos_token_id=50256,
                         vocab_size=50257, dtype=np.uint16, generate_doc_lengths=True); ds.prepare()
    len(ds)                                   # 2003
    ds[0]["input_ids"][:8]                    # [13940, 301, 14064, 1326, 1490, 2731, 1311, 391]
    ds[0]["doc_lens"]                         # [100, 85, 147, 34, 146]
    sha256 of every window's input_ids as <u2, in order:
        adb5cc1e797ca09b40738440dbdd7faff0e37bdd404bd64763d15ed79494ecda
"""

from __future__ import annotations

import csv
import gzip
import hashlib
import io
import json

import numpy as np
import pytest

from conftest import DEMO_JSONL, GPT2, GPT2_EOD, run_tokenmill
from tokenmill.errors import TokenmillError
from tokenmill.olmo import pbin_to_olmo
from tokenmill.pbin import PbinFile

OLMO_FSL_WINDOWS = 2003
OLMO_FIRST_IDS = [13940, 301, 14064, 1326, 1490, 2731, 1311, 391]
OLMO_FIRST_DOC_LENS = [100, 85, 147, 34, 146]
OLMO_WINDOWS_SHA256 = "adb5cc1e797ca09b40738440dbdd7faff0e37bdd404bd64763d15ed79494ecda"


@pytest.fixture(scope="module")
def demo_pbin(tmp_path_factory):
    folder = tmp_path_factory.mktemp("olmo")
    run_tokenmill("pack", DEMO_JSONL, "--tokenizer", GPT2, "--eod", GPT2_EOD, "-o", folder / "demo.pbin")
    return folder / "demo.pbin"


def fsl_windows(out, sequence_length: int) -> np.ndarray:
    """What NumpyFSLDataset reads: each part cut into windows, its remainder dropped."""
    windows = []
    for path in sorted(out.glob("part-*.npy")):
        tokens = np.fromfile(path, dtype="<u2")
        windows.append(tokens[:len(tokens) // sequence_length * sequence_length].reshape(-1, sequence_length))
    return np.concatenate(windows)


def test_olmo_core_reads_the_parts_as_recorded(demo_pbin, tmp_path):
    out = tmp_path / "out"
    meta = pbin_to_olmo(demo_pbin, out, max_tokens=400_000)
    assert [part["tokens"] for part in meta["parts"]] == [399931, 398268, 228298]  # whole documents only
    windows = fsl_windows(out, 512)
    assert len(windows) == OLMO_FSL_WINDOWS and windows[0][:8].tolist() == OLMO_FIRST_IDS
    assert hashlib.sha256(windows.astype("<u2").tobytes()).hexdigest() == OLMO_WINDOWS_SHA256
    # the parts, back to back, are the .pbin's token stream, and the csv.gz its documents
    pbin = PbinFile(demo_pbin)
    stream = np.concatenate([np.fromfile(path, dtype="<u2") for path in sorted(out.glob("part-*.npy"))])
    assert np.array_equal(stream, np.asarray(pbin.tokens))
    rows = [row for path in sorted(out.glob("part-*.csv.gz"))
            for row in csv.reader(io.StringIO(gzip.decompress(path.read_bytes()).decode()))]
    assert [int(end) - int(start) for start, end, *_ in rows] == pbin.doc_lengths.tolist()
    first = [min(int(end), 512) for _, end, *_ in rows[:5]]  # within the first window, as OLMo-core counts them
    assert np.diff([0, *first]).tolist() == OLMO_FIRST_DOC_LENS  # the boundaries OLMo-core found by EOS
    ids = [json.loads(line)["id"] for line in DEMO_JSONL.read_text().splitlines()]
    assert rows[0] == ["0", "100", ids[0], str(DEMO_JSONL), "1"] and [row[4] for row in rows] == [
        str(n) for n in range(1, 2991)]
    assert [row[2] for row in rows] == ids and any("," in value for value in ids)  # quoted where needed
    assert meta["dtype"] == "uint16" and meta["eos_token_id"] == 50256 and meta["documents"] == 2990


def test_the_same_pbin_gives_the_same_bytes_and_fewer_parts_leave_none_behind(demo_pbin, tmp_path):
    pbin_to_olmo(demo_pbin, tmp_path / "a", max_tokens=400_000)
    pbin_to_olmo(demo_pbin, tmp_path / "b", max_tokens=400_000)
    files = sorted(path.name for path in (tmp_path / "a").iterdir())
    assert files == sorted(path.name for path in (tmp_path / "b").iterdir())
    assert all((tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes() for name in files)
    (tmp_path / "a/part-00009.jsonl").write_text("a user's file, not a part\n")
    meta = pbin_to_olmo(demo_pbin, tmp_path / "a", id_field=None)  # one part now: the other two are removed
    assert sorted(path.name for path in (tmp_path / "a").iterdir()) == ["metadata.json", "part-00000.csv.gz",
                                                                      "part-00000.npy", "part-00009.jsonl"]
    first = gzip.decompress((tmp_path / "a/part-00000.csv.gz").read_bytes()).decode().splitlines()[0]
    assert first == f"0,100,1,{DEMO_JSONL},1" and meta["parts"][0]["tokens"] == 1026497  # ids: line numbers


def test_data_without_an_eod_is_refused_in_one_line(tmp_path):
    run_tokenmill("pack", DEMO_JSONL, "--tokenizer", GPT2, "--no-eod", "-o", tmp_path / "x.pbin")
    with pytest.raises(TokenmillError, match=r"x.pbin: packed without an EOD; OLMo-core finds documents by their EOS"):
        pbin_to_olmo(tmp_path / "x.pbin", tmp_path / "out")
    result = run_tokenmill("to-olmo", tmp_path / "x.pbin", "-o", tmp_path / "out", check=False)
    assert result.returncode == 1 and result.stderr.count("\n") == 1 and not (tmp_path / "out").exists()
    for arguments, said in (((tmp_path / "none.pbin", tmp_path / "out"), f"{tmp_path / 'none.pbin'}: no such .pbin"),
                            ((tmp_path / "x.pbin", tmp_path / "x.pbin"), f"{tmp_path / 'x.pbin'}: is a file; give "
                                                                          f"the folder to write the parts into")):
        with pytest.raises(TokenmillError, match=f"^{said}$"):
            pbin_to_olmo(*arguments)
