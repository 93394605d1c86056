"""Parquet inputs: a Parquet file packs to the bytes of the same rows written as JSONL, whole or in
row-group shards; bad rows are bad lines named by row; a damaged file is refused in one line, with no
output; the plan cuts a big file into row-group units."""

from __future__ import annotations

import json
import os
import re
import sys
from datetime import datetime, timezone
from pathlib import Path

import pytest

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

from conftest import DEMO_JSONL, GPT2, GPT2_EOD, run_tokenmill  # noqa: E402
from tokenmill.config import validate_config  # noqa: E402
from tokenmill.errors import TokenmillError  # noqa: E402
from tokenmill.formats.merge import merge_pbin  # noqa: E402
from tokenmill.inputs.file_kind import compression_of  # noqa: E402
from tokenmill.inputs.jsonl import iter_lines  # noqa: E402
from tokenmill.inputs.parquet import columns_for, open_parquet, parse_row_groups, row_group_units  # noqa: E402
from tokenmill.pack.pretraining import PackSettings, pack  # noqa: E402
from tokenmill.plan import Plan  # noqa: E402
from tokenmill.verify.checks import verify  # noqa: E402
from tokenmill.views.inspect_file import show_document  # noqa: E402

ROWS = 300
GROUP = 64  # rows per row group: 300 rows are 5 groups (4 x 64 + 44)


def demo_rows(count: int = ROWS) -> list[dict]:
    with open(DEMO_JSONL, encoding="utf-8") as handle:
        records = [json.loads(next(handle)) for _ in range(count)]
    # extra columns, one of them a struct whose field can be the text
    return [{"id": record["id"], "text": record["text"], "n": i, "meta": {"body": record["text"][::-1], "k": i}}
            for i, record in enumerate(records)]


def write_parquet(path: Path, rows: list[dict], schema=None, row_group_size: int = GROUP) -> Path:
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), path, row_group_size=row_group_size,
                   compression="zstd")
    return path


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def packed(inputs, out: Path, text: str = ".text", on_bad_line: str = "error", **options) -> dict:
    settings = PackSettings(tokenizer_path=str(GPT2), eod=GPT2_EOD, text=text, on_bad_line=on_bad_line,
                            engine="hf")
    return pack([str(path) for path in inputs], str(out), settings, log=lambda message: None, **options)


@pytest.fixture
def demo(tmp_path) -> tuple[Path, Path]:
    """The same 300 rows as a zstd Parquet file of 5 row groups and as JSONL."""
    rows = demo_rows()
    return write_parquet(tmp_path / "demo.parquet", rows), write_jsonl(tmp_path / "demo.jsonl", rows)


def test_a_parquet_file_is_told_apart_by_its_magic_bytes(demo):
    assert compression_of(demo[0].read_bytes()[:8]) == "parquet"
    assert open_parquet(demo[0]).metadata.num_row_groups == 5


@pytest.mark.parametrize("text", [".text", ".meta.body", '.id + ": " + .text'])
def test_a_parquet_file_packs_to_the_bytes_of_its_rows_as_jsonl(tmp_path, demo, text):
    parquet, jsonl = demo
    meta = packed([parquet], tmp_path / "p.pbin", text)
    packed([jsonl], tmp_path / "j.pbin", text)
    assert (tmp_path / "p.pbin").read_bytes() == (tmp_path / "j.pbin").read_bytes()
    source, = meta["sources"]
    assert source == {**source, "path": str(parquet), "format": "parquet", "rows": ROWS, "row_groups": 5,
                      "bytes": parquet.stat().st_size, "documents": ROWS}
    assert source["sha256"] == __import__("hashlib").sha256(parquet.read_bytes()).hexdigest()
    assert "row_group_range" not in source and "compression" not in source


@pytest.mark.slow
def test_row_group_shards_merge_to_the_bytes_of_one_job(tmp_path, demo):
    parquet, _ = demo
    whole = packed([parquet], tmp_path / "whole.pbin")
    shards = [tmp_path / f"s{start}.pbin" for start in (0, 2, 3)]
    metas = [packed([parquet], shard, row_groups=ranges)
             for shard, ranges in zip(shards, [(0, 2), (2, 3), (3, None)])]
    assert [(m["sources"][0]["row_group_range"], m["sources"][0]["first_row"], m["sources"][0]["rows"])
            for m in metas] == [([0, 2], 1, 128), ([2, 3], 129, 64), ([3, 5], 193, 108)]
    merge_pbin(tmp_path / "merged.pbin", shards)
    assert (tmp_path / "merged.pbin").read_bytes() == (tmp_path / "whole.pbin").read_bytes()
    assert whole["documents"] == ROWS
    assert verify(tmp_path / "merged.pbin", inputs=[str(parquet)]) == []
    assert verify(tmp_path / "merged.pbin", against_tokenizer=1.0) == []  # rows re-read and re-encoded
    merge_pbin(tmp_path / "gap.pbin", [shards[0], shards[2]])
    assert verify(tmp_path / "gap.pbin") == [f"{tmp_path / 'gap.pbin'}: row groups 2-3 of {parquet} are not packed"]


def test_the_cli_packs_row_groups_and_refuses_them_for_jsonl(tmp_path, demo):
    parquet, jsonl = demo
    run_tokenmill("pack", parquet, "--row-groups", "1:2", "--tokenizer", GPT2, "--eod", GPT2_EOD,
                  "-o", tmp_path / "one.pbin")
    assert json.loads((tmp_path / "one.pbin.meta.json").read_text())["documents"] == GROUP
    for path, ranges, message in [(jsonl, "0:1", "a row-group range needs exactly one Parquet input"),
                                  (parquet, "2:9", "row groups 2:9 asked, the file has 5 (0:5)"),
                                  (parquet, "3:1", "row groups '3:1': give START:END")]:
        result = run_tokenmill("pack", path, "--row-groups", ranges, "--tokenizer", GPT2, "--no-eod", "-o",
                               tmp_path / "x.pbin", check=False)
        assert result.returncode == 1 and message in result.stderr and len(result.stderr.splitlines()) == 1
    assert parse_row_groups("4:") == (4, None)


@pytest.mark.parametrize("value, reason", [(None, "text is not a string (a NoneType)"),
                                           ("", "empty text")])
def test_a_bad_value_is_a_bad_line_named_by_its_row(tmp_path, value, reason):
    rows = [{"text": f"row {i}", "other": i} for i in range(10)]
    rows[6]["text"] = value  # row 7
    schema = pa.schema([("text", pa.string()), ("other", pa.int64())])
    parquet = write_parquet(tmp_path / "bad.parquet", rows, schema, row_group_size=4)
    with pytest.raises(TokenmillError, match="row 7: ") as stopped:
        packed([parquet], tmp_path / "x.pbin")
    assert str(stopped.value) == f"{parquet}: row 7: {reason} (on_bad_line: error; use skip to leave such lines out)"
    assert not (tmp_path / "x.pbin").exists()
    meta = packed([parquet], tmp_path / "x.pbin", on_bad_line="skip")
    assert meta["sources"][0]["skipped"] == {reason: {"count": 1, "first_lines": [7]}}
    assert meta["documents"] == 9
    assert show_document(tmp_path / "x.pbin", 6)[-1] == f"source: {parquet}, row 8"


@pytest.mark.parametrize(("arrow_type", "value"), [(pa.int64(), 7), (pa.binary(), b"bytes"), (pa.null(), None)])
@pytest.mark.parametrize("on_bad_line", ["error", "skip"])
def test_a_text_column_that_holds_no_text_is_an_error_for_the_file(tmp_path, arrow_type, value, on_bad_line):
    """Every row of it would be a bad line, so skip would drop the whole file and exit 0."""
    schema = pa.schema([("text", arrow_type), ("content", pa.string())])
    parquet = write_parquet(tmp_path / "typed.parquet", [{"text": value, "content": f"row {i}"} for i in range(10)],
                            schema)
    with pytest.raises(TokenmillError, match="not text, for the text pattern") as stopped:
        packed([parquet], tmp_path / "x.pbin", on_bad_line=on_bad_line)
    assert str(stopped.value) == (f"{parquet}: column 'text' holds {arrow_type}, not text, for the text pattern .text; "
                                  f"use text: .content (or --jq .content)")
    assert not (tmp_path / "x.pbin").exists()


def test_rows_are_numbered_through_the_whole_file_in_any_batch_and_range(tmp_path):
    rows = [{"text": f"row {i}" if i % 7 else None} for i in range(1, 31)]  # rows 7, 14, 21 and 28 are null
    parquet = write_parquet(tmp_path / "n.parquet", rows, row_group_size=4)
    settings = PackSettings(tokenizer_path=str(GPT2), eod=GPT2_EOD, on_bad_line="skip", engine="hf",
                            batch_bytes=50)  # batches of a few rows, cut across row groups
    meta = pack([str(parquet)], str(tmp_path / "n.pbin"), settings, log=lambda message: None)
    assert meta["skipped"] == {"text is not a string (a NoneType)": 4}
    assert meta["sources"][0]["skipped"]["text is not a string (a NoneType)"]["first_lines"] == [7, 14, 21, 28]
    assert list(iter_lines(parquet, row_groups=(3, 5), text=".text")) == [
        (13, b'{"text":"row 13"}'), (14, b'{"text":null}'), *((n, f'{{"text":"row {n}"}}'.encode()) for n in (15, 16)),
        *((n, f'{{"text":"row {n}"}}'.encode()) for n in range(17, 21))]
    assert show_document(tmp_path / "n.pbin", 20)[-1] == f"source: {parquet}, row 24"  # 3 null rows before it


def no_text_column(tmp_path) -> Path:
    """A file whose text is in ``content``, not ``text``."""
    return write_parquet(tmp_path / "x.parquet", [{"id": i, "content": f"row {i}", "meta": {"k": i, "lang": "en"}}
                                                  for i in range(10)], row_group_size=4)


@pytest.mark.parametrize("on_bad_line", ["error", "skip"])
def test_a_missing_column_is_an_error_for_the_file_whatever_on_bad_line_says(tmp_path, on_bad_line):
    parquet = no_text_column(tmp_path)
    expected = (f"{parquet}: no column 'text' for the text pattern .text; its columns: id, content, meta; "
                f"use text: .content (or --jq .content), or another of its string columns: .meta.lang")
    with pytest.raises(TokenmillError, match=re.escape(expected)) as stopped:
        packed([parquet], tmp_path / "x.pbin", on_bad_line=on_bad_line)
    assert str(stopped.value) == expected
    with pytest.raises(TokenmillError, match="has no field 'body'") as stopped:
        packed([parquet], tmp_path / "x.pbin", text=".meta.body", on_bad_line=on_bad_line)
    assert str(stopped.value).startswith(f"{parquet}: column 'meta' has no field 'body' for the text pattern "
                                         f".meta.body; its fields: k, lang; use text: .content")
    assert not (tmp_path / "x.pbin").exists()
    assert columns_for(".body") == ["body"] and columns_for(".a | .b") is None


def test_the_cli_stops_on_a_missing_column_in_one_line_with_no_skip_count(tmp_path):
    parquet = no_text_column(tmp_path)
    result = run_tokenmill("pack", parquet, "--on-bad-line", "skip", "--tokenizer", GPT2, "--no-eod",
                           "-o", tmp_path / "x.pbin", check=False)
    assert result.returncode == 1
    line, = result.stderr.splitlines()
    assert line.startswith(f"tokenmill: error: {parquet}: no column 'text' for the text pattern .text; "
                           f"its columns: id, content, meta; use text: .content (or --jq .content)")
    assert not (tmp_path / "x.pbin").exists()
    run_tokenmill("pack", parquet, "--jq", ".content", "--tokenizer", GPT2, "--no-eod", "-o", tmp_path / "x.pbin")


def invalid_utf8_file(tmp_path) -> tuple[Path, list[dict]]:
    """10 rows in groups of 4 whose ``text`` of rows 3 and 8 is not UTF-8 (pyarrow writes the bytes
    as they are), and the good rows."""
    texts = [f"row {i} of the file".encode() for i in range(1, 11)]
    texts[2], texts[7] = b"caf\xe9 latin-1", b"cut \xe2\x82"
    strings = pa.array(texts, pa.binary()).view(pa.string())  # unchecked: the bytes stay as they are
    table = pa.table({"text": strings, "id": list(range(1, 11))})
    parquet = tmp_path / "utf8.parquet"
    pq.write_table(table, parquet, row_group_size=4)
    return parquet, [{"text": text.decode(), "id": i} for i, text in enumerate(texts, 1) if i not in (3, 8)]


def test_invalid_utf8_in_a_string_column_is_a_bad_row_naming_the_column(tmp_path):
    parquet, good = invalid_utf8_file(tmp_path)
    reason = "column 'text': invalid UTF-8 in a string value"
    meta = packed([parquet], tmp_path / "p.pbin", on_bad_line="skip")
    assert meta["sources"][0]["skipped"] == {reason: {"count": 2, "first_lines": [3, 8]}}
    assert meta["documents"] == 8
    packed([write_jsonl(tmp_path / "good.jsonl", good)], tmp_path / "j.pbin")
    assert (tmp_path / "p.pbin").read_bytes() == (tmp_path / "j.pbin").read_bytes()
    assert show_document(tmp_path / "p.pbin", 6)[-2:] == [f"source: {parquet}, row 9", "id: 9"]  # its id column
    with pytest.raises(TokenmillError, match="row 3: ") as stopped:
        packed([parquet], tmp_path / "x.pbin")
    assert str(stopped.value) == f"{parquet}: row 3: {reason} (on_bad_line: error; use skip to leave such lines out)"


def test_the_cli_stops_on_invalid_utf8_in_one_line_naming_file_and_row(tmp_path):
    parquet, _ = invalid_utf8_file(tmp_path)
    result = run_tokenmill("pack", parquet, "--tokenizer", GPT2, "--no-eod", "-o", tmp_path / "x.pbin", check=False)
    assert result.returncode == 1
    assert result.stderr.splitlines() == [f"tokenmill: error: {parquet}: row 3: column 'text': invalid UTF-8 in a "
                                          f"string value (on_bad_line: error; use skip to leave such lines out)"]


YEAR_10000 = 253402300800  # 10000-01-01T00:00:00 in seconds since 1970


@pytest.mark.parametrize("pattern", ['"\\(.ts) \\(.text)"', ".ts | tostring"])
def test_a_timestamp_past_year_9999_is_a_bad_row_for_a_pattern_that_reads_it(tmp_path, pattern):
    seconds = [1_700_000_000 + i * 3600 for i in range(10)]
    seconds[4] = YEAR_10000  # row 5
    rows = [{"text": f"row {i}", "ts": moment} for i, moment in enumerate(seconds, 1)]
    parquet = write_parquet(tmp_path / "ts.parquet", rows, pa.schema([("text", pa.string()),
                                                                      ("ts", pa.timestamp("s"))]), row_group_size=4)
    reason = "column 'ts': a date or time outside the years 1 to 9999 that Python's datetime holds"
    with pytest.raises(TokenmillError, match="row 5: ") as stopped:
        packed([parquet], tmp_path / "x.pbin", text=pattern)
    assert str(stopped.value) == f"{parquet}: row 5: {reason} (on_bad_line: error; use skip to leave such lines out)"
    meta = packed([parquet], tmp_path / "p.pbin", text=pattern, on_bad_line="skip")
    assert meta["sources"][0]["skipped"] == {reason: {"count": 1, "first_lines": [5]}}
    good = [{"text": row["text"], "ts": datetime.fromtimestamp(row["ts"], timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")}
            for row in rows if row["ts"] != YEAR_10000]
    packed([write_jsonl(tmp_path / "good.jsonl", good)], tmp_path / "j.pbin", text=pattern)
    assert (tmp_path / "p.pbin").read_bytes() == (tmp_path / "j.pbin").read_bytes()
    assert [line for _, line in iter_lines(parquet, text=".text")][4] == b'{"text":"row 5"}'  # reads text alone


def test_nanosecond_times_are_iso_text_whatever_is_installed(tmp_path):
    nanoseconds = [1_700_000_000_000_000_000, 1_700_000_000_000_001_000, 1_700_000_000_000_000_007]
    table = pa.table({"text": ["a", "b", "c"], "ts": pa.array(nanoseconds, pa.timestamp("ns", tz="UTC")),
                      "meta": pa.array([{"at": n} for n in nanoseconds], pa.struct([("at", pa.timestamp("ns"))]))})
    parquet = tmp_path / "ns.parquet"
    pq.write_table(table, parquet)
    assert [line for _, line in iter_lines(parquet, text=".")] == [
        b'{"text":"a","ts":"2023-11-14T22:13:20+00:00","meta":{"at":"2023-11-14T22:13:20"}}',
        b'{"text":"b","ts":"2023-11-14T22:13:20.000001+00:00","meta":{"at":"2023-11-14T22:13:20.000001"}}',
        b"\x00tokenmill: bad row\x00column 'meta': a time with nanoseconds inside a struct or list, which "
        b"tokenmill writes to the microsecond only"]
    meta = packed([parquet], tmp_path / "p.pbin", text=".ts", on_bad_line="skip")
    assert meta["skipped"] == {} and meta["documents"] == 3  # .ts reads column ts alone: nine digits for row 3
    assert [line for _, line in iter_lines(parquet, text=".ts")][2] == b'{"ts":"2023-11-14T22:13:20.000000007+00:00"}'


def test_a_row_over_max_line_bytes_is_a_bad_line(tmp_path):
    parquet = write_parquet(tmp_path / "long.parquet", [{"text": "short"}, {"text": "x" * 500}, {"text": "fine"}])
    settings = PackSettings(tokenizer_path=str(GPT2), eod=GPT2_EOD, on_bad_line="skip", engine="hf",
                            max_line_bytes=100)
    meta = pack([str(parquet)], str(tmp_path / "x.pbin"), settings, log=lambda message: None)
    reason, = meta["skipped"]  # {"text":"x...x"}: 9 + 500 + 2 bytes of JSON
    assert reason.startswith("line of 511 bytes, over max_line_bytes (100)") and meta["documents"] == 2
    assert meta["sources"][0]["skipped"][reason]["first_lines"] == [2]


@pytest.mark.parametrize("damage", ["truncated", "corrupt page"])
def test_a_damaged_file_is_refused_in_one_line_and_nothing_is_written(tmp_path, demo, damage):
    data = bytearray(demo[0].read_bytes())
    if damage == "truncated":
        data = data[:len(data) * 2 // 3]
    else:
        start = open_parquet(demo[0]).metadata.row_group(3).column(1).data_page_offset
        data[start:start + 64] = bytes(64)  # the page header of row group 3's text
    broken = tmp_path / "broken.parquet"
    broken.write_bytes(bytes(data))
    (tmp_path / "out").mkdir()
    result = run_tokenmill("pack", broken, "--tokenizer", GPT2, "--no-eod", "-o", tmp_path / "out" / "x.pbin",
                           check=False)
    assert result.returncode == 1
    line, = result.stderr.splitlines()
    assert line.startswith(f"tokenmill: error: {broken}: not a readable Parquet file, truncated or corrupt (")
    assert line.endswith("; no output was written")
    assert os.listdir(tmp_path / "out") == []


def test_without_pyarrow_a_parquet_input_says_how_to_install_it(tmp_path, demo, monkeypatch):
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)  # import pyarrow.parquet now fails
    with pytest.raises(TokenmillError, match=r"^reading Parquet needs pyarrow: pip install 'tokenmill\[parquet\]'$"):
        packed([demo[0]], tmp_path / "x.pbin")


def test_an_index_is_refused_for_a_parquet_file(tmp_path, demo):
    result = run_tokenmill("index", demo[0], "-o", tmp_path / "x.idx", check=False)
    assert result.returncode == 1 and "a Parquet file: a raw index" in result.stderr


# ---- The plan: row groups are the shard unit of a big Parquet file


def plan_of(folder: Path, **datasets) -> Plan:
    os.symlink(GPT2, folder / "gpt2.json")
    config = {"tokenizers": {"gpt2": {"path": "gpt2.json", "eod": GPT2_EOD}},
              "datasets": {name: {"tokenizer": "gpt2", **entry} for name, entry in datasets.items()},
              "sampling": {"seq_lengths": [512], "seeds": [1]}}
    return Plan(validate_config(config, "my.yaml"))


def test_a_big_parquet_file_is_cut_into_row_group_units_and_a_small_one_is_one_unit(tmp_path, demo, monkeypatch):
    monkeypatch.chdir(tmp_path)
    ranges, sizes = row_group_units("demo.parquet", 2 * max(row_group_units("demo.parquet", 1)[1]))
    assert ranges == [(0, 2), (2, 4), (4, 5)] and len(sizes) == 5
    shard_bytes = 2 * max(sizes)
    plan = plan_of(tmp_path, web={"inputs": ["demo.parquet"], "shard_bytes": shard_bytes},
                   small={"inputs": ["demo.parquet"], "shard_bytes": 10 ** 9, "allow_duplicate_inputs": True})
    assert plan.units.builds["web"].units == ("web.shard0", "web.shard1", "web.shard2")
    assert [plan.units.units[unit].row_groups for unit in plan.units.builds["web"].units] == ["0:2", "2:4", "4:5"]
    assert plan.commands.pack_options("web.shard1")[-4:] == ["--row-groups", "2:4", "--eod", GPT2_EOD]
    assert plan.outputs.unit_index("web.shard1") == [] and plan.units.files["web"].compression == "parquet"
    assert plan.units.unit_text_bytes("web.shard1") == 4 * sum(sizes[2:4])
    assert plan.units.builds["small"].units == ("small",) and "--row-groups" not in plan.commands.pack_options("small")
    assert "data/index/web.idx" not in plan.outputs.all_targets()
    assert "data/index/web.idx" not in plan.outputs.verify_files("web")


def test_a_damaged_parquet_input_stops_the_plan_naming_the_key(tmp_path, demo, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("broken.parquet").write_bytes(demo[0].read_bytes()[:100])
    with pytest.raises(TokenmillError, match=r"^datasets.web.inputs: broken.parquet: not a readable Parquet file"):
        plan_of(tmp_path, web={"inputs": ["broken.parquet"], "shard_bytes": 50})
