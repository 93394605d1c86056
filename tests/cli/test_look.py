"""cli.look: inspect, verify, report and prune take what they are to look at and refuse, in one line, what names
two things at once (what they show and check: tests/views/, tests/verify/, tests/plan/test_prune.py)."""

import pytest

from conftest import run_tokenmill


def test_report_writes_a_blend_page_or_an_sft_page_not_both(tmp_path):
    result = run_tokenmill("report", tmp_path / "x.pbin", "-o", tmp_path / "x.html", "--blend", "--sft", check=False)
    assert (result.returncode, result.stderr) == (
        1, f"tokenmill: error: {tmp_path / 'x.pbin'}: --blend and --sft name different pages; give one\n")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("given, kept", [("1", 1), ("12", 12), ("all", "all")])
def test_prune_keeps_a_number_of_stale_runs_or_all(given, kept):
    from tokenmill.cli import build_parser

    args = build_parser().parse_args(["prune", "--config", "c.yaml", "--keep-stale-runs", given])
    assert args.keep_stale_runs == kept


@pytest.mark.parametrize("given", ["0", "-1", "two", ""])
def test_prune_refuses_a_number_of_stale_runs_under_one_as_a_usage_error(tmp_path, given):
    result = run_tokenmill("prune", "--config", tmp_path / "c.yaml", "--keep-stale-runs", given, check=False)
    assert result.returncode == 2
    assert result.stderr.endswith(f"argument --keep-stale-runs: {given!r}: give a number of runs, at least 1, or all\n")


def test_a_verify_stamp_that_is_a_file_it_verifies_is_refused_and_the_file_kept(tmp_path):
    pbin = tmp_path / "x.pbin"
    pbin.write_bytes(b"not a pbin")
    result = run_tokenmill("verify", pbin, "--stamp", pbin, check=False)
    assert result.returncode == 1 and result.stderr.startswith(f"tokenmill: error: {pbin}: is the input {pbin}")
    assert pbin.read_bytes() == b"not a pbin"
