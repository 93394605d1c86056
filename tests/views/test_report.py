"""The report pages (tokenmill report) on a real build: the samples asked for against the whole epochs
Megatron builds, histogram labels that stay apart, and megatron_args.txt whole on the page."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import numpy as np
import pytest

from conftest import DEMO_JSONL, GPT2, GPT2_EOD, REPO, built_once, run_tokenmill
from tokenmill.errors import TokenmillError
from tokenmill.megatron.index_cache import load_npy
from tokenmill.views.report import length_histogram_svg, page_recipe


@pytest.fixture(scope="module")
def demo_page(request, tmp_path_factory):
    """The demo packed with its Megatron files, one cache folder (seq 512: 20,000 / 200 / 20 samples
    asked), and the report page of the build: (folder, cache folder, page text). Made once per run for every
    xdist worker; read only."""
    root = built_once(request.config, tmp_path_factory, "report", _make_demo_page)
    return root, root / "cache", (root / "demo.html").read_text(encoding="utf-8")


def _make_demo_page(root) -> None:
    root.mkdir()
    pbin, prefix, cache = root / "demo.pbin", root / "demo_text_document", root / "cache"
    run_tokenmill("pack", DEMO_JSONL, "--tokenizer", GPT2, "--eod", GPT2_EOD, "-o", pbin, "--megatron", prefix)
    run_tokenmill("sample-index", prefix, "-o", cache, "--seq-length", "512", "--seed", "1234", "--split", "969,30,1",
                  "--num-samples", "20000", "--valid-samples", "200", "--test-samples", "20", "--vocab-size", "50257")
    run_tokenmill("report", pbin, "--cache", cache, "-o", root / "demo.html")


def _split_files(cache, split: str) -> tuple[dict, int, int]:
    """A split's description, its document-index length and its number of samples, read from the files."""
    description = next(cache.glob(f"*-GPTDataset-{split}-description.txt"))
    stem = description.name.removesuffix("-description.txt")
    return (json.loads(description.read_text()), len(load_npy(cache / f"{stem}-document_index.npy")),
            len(load_npy(cache / f"{stem}-shuffle_index.npy")))


def test_the_page_says_the_whole_epochs_that_make_more_samples_than_asked(demo_page):
    _, cache, page = demo_page
    description, document_index, samples = _split_files(cache, "train")
    train_documents = round(0.969 * 2990)  # the split's documents: round(end·N) − round(start·N)
    epochs, leftover = divmod(document_index, train_documents)
    assert leftover == 0 and epochs > 1 and samples > description["num_samples"] == 20000
    row = (f"<tr><td>train</td><td class=n>{samples:,}</td><td class=n>20,000</td><td class=n>{epochs}</td>"
           f"<td class=n>{round(samples / epochs):,}</td><td>512</td><td>1234</td>")
    assert row in page
    assert (f"train: {samples:,} samples = {epochs} whole epochs of about {round(samples / epochs):,}; 20,000 asked"
            in page)
    assert "Megatron builds whole epochs" in page
    _, _, test_samples = _split_files(cache, "test")
    note = re.search(r"<p class=note>(.*?)</p>", page).group(1)
    assert note.startswith("train: ") and "valid: " in note
    assert test_samples == 20 and "test:" not in note  # a split that got what it asked for needs no word


def test_megatron_args_appear_whole_and_wrap_instead_of_running_off_the_page(demo_page):
    _, cache, page = demo_page
    args = (cache / "megatron_args.txt").read_text()
    assert max(map(len, args.splitlines())) > 150  # a line wider than the report's frame
    assert f"<pre>{html.escape(args)}</pre>" in page
    style = re.search(r"<style>(.*?)</style>", page).group(1)
    assert "pre{white-space:pre-wrap;overflow-wrap:anywhere" in style


def test_histogram_labels_are_separate_rotated_and_grouped():
    lengths = np.array([1, 3, 100, 5000, 140_000, 300_000, 600_000])  # bins 0, 1, 6, 12, 17, 18, 19
    svg = length_histogram_svg(lengths)
    labels = re.findall(r'<text x="([\d.]+)" y="(\d+)" font-size="10" text-anchor="end" '
                        r'transform="rotate\(-45 ([\d.]+) (\d+)\)">([\d,]+)</text>', svg)
    assert [label for *_, label in labels] == [f"{2 ** k:,}" for k in range(20)]
    assert all(x == rotate_x and y == rotate_y for x, y, rotate_x, rotate_y, _ in labels)  # each about its own point
    steps = np.diff([float(x) for x, *_ in labels])
    assert np.allclose(steps, 640 / 20)  # one label per bar, at the bar's centre
    height = int(re.search(r'<svg [^>]*height="(\d+)"', svg).group(1))
    assert height >= 220 + 6 * len("524,288")  # room below the bars for the longest label, rotated


def test_a_bin_of_one_document_among_thousands_still_shows_a_bar():
    svg = length_histogram_svg(np.array([100] * 5000 + [1 << 20]))
    last = re.findall(r'<rect x="[\d.]+" y="[\d.]+" width="[\d.]+" height="([\d.]+)"', svg)[-1]
    assert float(last) >= 1


def test_sources_and_tokenizer_are_named_as_reached_from_where_the_report_runs(tmp_path):
    """The sidecar records them from its own folder (``../../raw/a.jsonl``); the page names them as a
    reader in the working directory reaches them."""
    for folder in ("raw", "tok", "data/packed"):
        (tmp_path / folder).mkdir(parents=True)
    (tmp_path / "raw/a.jsonl").write_bytes(b"".join(DEMO_JSONL.read_bytes().splitlines(keepends=True)[:50]))
    (tmp_path / "tok/gpt2.json").write_bytes(GPT2.read_bytes())
    run_tokenmill("pack", "raw/a.jsonl", "--tokenizer", "tok/gpt2.json", "--eod", GPT2_EOD, "-o", "data/packed/a.pbin",
                  cwd=tmp_path)
    recorded = json.loads((tmp_path / "data/packed/a.pbin.meta.json").read_text())
    assert recorded["sources"][0]["path"] == "../../raw/a.jsonl"
    run_tokenmill("report", "data/packed/a.pbin", "-o", "a.html", cwd=tmp_path)
    page = (tmp_path / "a.html").read_text()
    assert "<td>raw/a.jsonl</td>" in page and "<td>tok/gpt2.json (vocabulary 50257" in page
    assert "../" not in page


def test_the_dataset_page_gives_each_sources_tokens_and_share(tmp_path):
    lines = DEMO_JSONL.read_bytes().splitlines(keepends=True)
    (tmp_path / "a.jsonl").write_bytes(b"".join(lines[:30]))
    (tmp_path / "b.jsonl").write_bytes(b"".join(lines[30:120]))
    for name in ("a", "b", "both"):
        inputs = ["a.jsonl", "b.jsonl"] if name == "both" else [f"{name}.jsonl"]
        run_tokenmill("pack", *inputs, "--tokenizer", GPT2, "--eod", GPT2_EOD, "-o", f"{name}.pbin", cwd=tmp_path)
    tokens = {name: json.loads((tmp_path / f"{name}.pbin.meta.json").read_text())["tokens"] for name in ("a", "b")}
    run_tokenmill("report", "both.pbin", "-o", "both.html", cwd=tmp_path)
    page = (tmp_path / "both.html").read_text()
    for name in ("a", "b"):  # each source's tokens in the joint .pbin are those of packing it alone
        share = f"{tokens[name] / (tokens['a'] + tokens['b']):.1%}"
        assert re.search(rf"<td>{name}.jsonl</td>.*?<td class=n>{tokens[name]:,}</td><td>{re.escape(share)}</td>",
                         page), name
    # the sidecar records them too, and verify holds it to them
    sidecar = json.loads((tmp_path / "both.pbin.meta.json").read_text())
    assert [source["tokens"] for source in sidecar["sources"]] == [tokens["a"], tokens["b"]]
    sidecar["sources"][1]["tokens"] += 1
    (tmp_path / "both.pbin.meta.json").write_text(json.dumps(sidecar))
    said = run_tokenmill("verify", "both.pbin", cwd=tmp_path, check=False).stderr
    assert f"both.pbin: its sidecar says b.jsonl gave {tokens['b'] + 1} tokens, its documents hold {tokens['b']}" \
        in said


def test_counting_by_a_field_sums_each_values_documents_and_tokens_over_skipped_lines(tmp_path):
    """Lines of three domains (one with none, one a number, one blank and skipped): each value's tokens are
    those of packing its lines alone."""
    from tokenmill.formats.pbin import PbinFile
    from tokenmill.views.report import counts_by

    domains = ["news", "code", None, "news", 7, "code", "news"]
    rows = [json.dumps({"text": f"text {k} " * (k + 2), **({} if domain is None else {"meta": {"domain": domain}})})
            for k, domain in enumerate(domains)]
    rows.insert(3, "")  # line 4: blank, skipped
    (tmp_path / "x.jsonl").write_text("\n".join(rows) + "\n")
    run_tokenmill("pack", "x.jsonl", "--tokenizer", GPT2, "--eod", GPT2_EOD, "--on-bad-line", "skip", "-o", "x.pbin",
                  cwd=tmp_path)
    lengths = PbinFile(tmp_path / "x.pbin").doc_lengths
    meta = json.loads((tmp_path / "x.pbin.meta.json").read_text())
    meta["sources"][0]["path"] = str(tmp_path / "x.jsonl")
    expected = {}
    for domain, length in zip(domains, lengths.tolist()):
        name = "(none)" if domain is None else str(domain)
        documents, tokens = expected.get(name, (0, 0))
        expected[name] = (documents + 1, tokens + length)
    counted = counts_by(meta["sources"], lengths, ".meta.domain")
    assert counted == expected and list(counted.values()) == sorted(counted.values(), key=lambda pair: -pair[1])
    run_tokenmill("report", "x.pbin", "-o", "x.html", "--count-by", ".meta.domain", cwd=tmp_path)
    page = (tmp_path / "x.html").read_text()
    assert f"<td>news</td><td class=n>3</td><td class=n>{expected['news'][1]:,}</td>" in page
    with pytest.raises(TokenmillError, match=r"^'\.meta\.\.x': not a field path such as \.id or \.meta\.domain$"):
        counts_by(meta["sources"], lengths, ".meta..x")
    # a field of a value per line (its text): the 100 with most tokens, then the rest in one row
    lines = [json.dumps({"text": f"document {k} " + "word " * k}) for k in range(150)]
    (tmp_path / "many.jsonl").write_text("\n".join(lines) + "\n")
    run_tokenmill("pack", "many.jsonl", "--tokenizer", GPT2, "--eod", GPT2_EOD, "-o", "many.pbin", cwd=tmp_path)
    run_tokenmill("report", "many.pbin", "-o", "many.html", "--count-by", ".text", cwd=tmp_path)
    page = (tmp_path / "many.html").read_text()
    assert page.count("<td>document ") == 100 and "<td>(50 other values)</td><td class=n>50</td>" in page


def test_a_blend_page_says_how_many_epochs_of_each_dataset_the_blend_takes(tmp_path):
    from tokenmill.megatron.blend import build_blend_cache
    from tokenmill.formats.bin_idx import MMapIndexedDatasetBuilder
    from tokenmill.views.report import blend_page
    from tokenmill.megatron.index_cache import null_tokenizer_identifiers

    # a: 1,000 documents of 5 tokens (~1,250 samples of 4 an epoch); b: 100 documents (~125 an epoch)
    for name, documents in (("a", 1000), ("b", 100)):
        with MMapIndexedDatasetBuilder(tmp_path / name, np.uint16) as builder:
            builder.add_document(np.zeros(5 * documents, np.uint16), np.full(documents, 5))
    build_blend_cache([str(tmp_path / "a"), str(tmp_path / "b")], [0.5, 0.5], tmp_path / "cache", 4, 1, "1,0,0",
                      {"train": 1000, "valid": 0, "test": 0}, null_tokenizer_identifiers(10))
    blend_page(tmp_path / "cache", tmp_path / "page.html")
    page = (tmp_path / "page.html").read_text()
    rows = re.findall(r"<tr><td>(\S+)</td><td class=n>0.5</td><td class=n>0.5</td><td class=n>500</td>"
                      r"<td class=n>([0-9.]+)</td></tr>", page)
    epochs = {Path(path).name: float(value) for path, value in rows}
    assert set(epochs) == {"a", "b"}
    assert 0.35 < epochs["a"] < 0.45 and 3.5 < epochs["b"] < 4.5  # 500 of ~1,250 and of ~125 samples an epoch


def test_the_dataset_page_says_what_best_fit_packing_bought(tmp_path):
    run_tokenmill("pack", DEMO_JSONL, "--tokenizer", GPT2, "--eod", GPT2_EOD, "-o", tmp_path / "d.pbin",
                  "--megatron", tmp_path / "d")
    run_tokenmill("best-fit", tmp_path / "d", "-o", tmp_path / "bf", "--seq-length", "512", "--split", "1")
    description = json.loads((tmp_path / "bf/best_fit-truncate-train-description.json").read_text())
    run_tokenmill("report", tmp_path / "d.pbin", "-o", tmp_path / "d.html", "--best-fit", tmp_path / "bf")
    page = (tmp_path / "d.html").read_text()
    row = re.search(r"<tr><td>[^<]*bf \(train\)</td>(.*?)</tr>", page.split("Best-fit packing")[1]).group(1)
    cells = [html.unescape(cell) for cell in re.findall(r"<td[^>]*>([^<]*)</td>", row)]
    assert cells == ["512", "truncate", f"{description['documents']:,}", f"{description['tokens']:,}",
                     f"{description['kept_whole']:,}", f"{description['cut_by_concat']:,}", f"{description['long']:,}",
                     f"{description['long_tokens_dropped']:,}",
                     f"{description['long_tokens_dropped'] / description['tokens']:.2%}",
                     f"{description['samples']:,}", f"{description['padding']:,}",
                     f"{description['padding_share']:.2%}"]
    assert description["documents"] == 2990 and description["cut_by_concat"] > 0


def test_the_best_fit_table_says_the_tokens_truncate_dropped_per_split_and_warns_above_the_share(tmp_path):
    """Documents of 20, 3 and 10 tokens, L = 8, split "2,1" (sequences [0, 2) train, [2, 3) valid): truncate
    drops 12 of train's 23 tokens (52.17 %) and 2 of valid's 10 (20 %), each row naming its split, with a
    warning above the table for each (both over 5 %) that names long_doc_strategy: fragment. The blend page
    shows the same table for each dataset of a packed blend."""
    from tokenmill.formats.bin_idx import MMapIndexedDatasetBuilder
    from tokenmill.megatron.blend import build_blend_cache
    from tokenmill.megatron.index_cache import null_tokenizer_identifiers
    from tokenmill.best_fit.packed_blend import build_packed_blend
    from tokenmill.views.report import best_fit_table, blend_page

    with MMapIndexedDatasetBuilder(tmp_path / "d", np.uint16) as builder:
        for length in (20, 3, 10):
            builder.add_document(np.ones(length, np.uint16), [length])
    run_tokenmill("best-fit", tmp_path / "d", "-o", tmp_path / "bf", "--seq-length", "8", "--split", "2,1")
    table = best_fit_table([str(tmp_path / "bf")])
    rows = {cells[0]: cells[1:] for cells in ([html.unescape(cell) for cell in re.findall(r"<td[^>]*>([^<]*)</td>",
                                                                                          row)]
                                              for row in re.findall(r"<tr><td>.*?</tr>", table))}
    assert rows == {f"{tmp_path / 'bf'} (train)": ["8", "truncate", "2", "23", "1", "1", "1", "12", "52.17%", "2",
                                                   "5", "31.25%"],
                    f"{tmp_path / 'bf'} (valid)": ["8", "truncate", "1", "10", "0", "1", "1", "2", "20.00%", "1",
                                                   "0", "0.00%"]}
    warnings = [html.unescape(line) for line in re.findall(r"<p class=note><strong>(.*?)</p>", table)]
    assert warnings == [f"{tmp_path / 'bf'} (train)</strong>: warning: truncate dropped 52.2 % of the train split's "
                        f"tokens (documents over 8 tokens cut to their first 8; more than 5 %): long_doc_strategy: "
                        f"fragment (--long-doc-strategy fragment) keeps them, as pieces of 8",
                        f"{tmp_path / 'bf'} (valid)</strong>: warning: truncate dropped 20.0 % of the valid split's "
                        f"tokens (documents over 8 tokens cut to their first 8; more than 5 %): long_doc_strategy: "
                        f"fragment (--long-doc-strategy fragment) keeps them, as pieces of 8"]
    assert table.index("<p class=note>") < table.index("<table>")

    build_packed_blend([tmp_path / "d"], [1], tmp_path / "pb", 8, 1, "2,1", {"train": 4})
    build_blend_cache([str(tmp_path / "d")], [1.0], tmp_path / "cache", 4, 1, "2,1",
                      {"train": 2, "valid": 0, "test": 0}, null_tokenizer_identifiers(10))
    blend_page(tmp_path / "cache", tmp_path / "page.html", [str(tmp_path / "pb")])
    page = (tmp_path / "page.html").read_text()
    assert f"{tmp_path / 'pb' / 'dataset-0'} (train)</strong>: warning: truncate dropped 52.2 %" in html.unescape(page)


def test_a_packed_blend_table_gives_each_datasets_draws_and_the_splits_padding(tmp_path):
    from tokenmill.formats.bin_idx import MMapIndexedDatasetBuilder
    from tokenmill.best_fit.packed_blend import build_packed_blend
    from tokenmill.views.report import packed_blend_table

    for name, documents in (("a", [[1, 2, 3, 9], [4, 5, 9], [6, 9]]), ("b", [[7] * 6 + [9], [8, 9]])):
        with MMapIndexedDatasetBuilder(tmp_path / name, np.uint16) as builder:
            for document in documents:
                builder.add_document(document, [len(document)])
    build_packed_blend([tmp_path / "a", tmp_path / "b"], [3, 1], tmp_path / "pb", 8, 1, "1,0,0", {"train": 6})
    rows = [[html.unescape(cell) for cell in re.findall(r"<td[^>]*>([^<]*)</td>", row)]
            for row in re.findall(r"<tr><td>(?:[^<]*)</td>.*?</tr>", packed_blend_table([str(tmp_path / "pb")]))]
    where = f"{tmp_path / 'pb'} (train, truncate)"
    assert rows == [[where, str(tmp_path / "a"), "2", "5", "3", "3", "1", "", ""],
                    [where, str(tmp_path / "b"), "2", "2", "1", "2", "1", "", ""],
                    [where, "all", "", "7", "", "", "", "22", "39.29%"]]


def _facts(page: str) -> dict[str, str]:
    """The page's first table, as its rows' two cells."""
    table = page[page.index("<table>"):page.index("</table>")]
    return {html.unescape(key): html.unescape(value)
            for key, value in re.findall(r"<tr><td>([^<]*)</td><td[^>]*>([^<]*)</td></tr>", table)}


def test_the_sft_page_gives_the_trained_tokens_bad_lines_truncations_and_best_fit_rows(tmp_path):
    """The demo's chat set with a bad line appended, at 1,024 tokens: its conversations and tokens as the pair
    holds them, the trained tokens counted in the loss mask, the conversations truncated, the bad line by reason
    and number, the message construction, and what best-fit rows bought as their description says."""
    from tokenmill.formats.pbin import PbinFile
    from tokenmill.pack.sft import write_sft

    chat = REPO / "data/raw/chat.jsonl"
    lines = chat.read_bytes().count(b"\n")
    (tmp_path / "chat.jsonl").write_bytes(chat.read_bytes() + b"not json\n")
    config = {"tokenizers": {"gpt2": {"path": str(GPT2)}},
              "sft": {"chat": {"inputs": [str(tmp_path / "chat.jsonl")], "tokenizer": "gpt2", "seq_length": 1024,
                               "special_tokens": {"bos_token": GPT2_EOD, "eos_token": GPT2_EOD},
                               "loss_masking_jq_patterns": [".role"], "message_construction": ["role", "conversations"],
                               "on_bad_line": "skip"}}}
    pbin = tmp_path / "chat.pbin"
    write_sft("chat", config, pbin)
    run_tokenmill("best-fit", pbin, "-o", tmp_path / "rows", "--seq-length", "1024")
    run_tokenmill("report", "--sft", pbin, "--best-fit", tmp_path / "rows", "-o", tmp_path / "chat.html")
    page = (tmp_path / "chat.html").read_text(encoding="utf-8")
    meta, pair = json.loads((tmp_path / "chat.pbin.meta.json").read_text()), PbinFile(pbin)
    trained = int(np.count_nonzero(PbinFile(tmp_path / "chat.loss_mask.pbin").tokens))
    facts = _facts(page)
    assert facts["conversations"] == f"{pair.num_documents:,}" and facts["tokens"] == f"{pair.num_tokens:,}"
    assert facts["trained tokens (loss mask)"] == f"{trained:,}" and 0 < trained < pair.num_tokens
    assert facts["share of tokens trained"] == f"{trained / pair.num_tokens:.1%}"
    assert meta["truncated"] > 0 and facts["truncated to fit"] == f"{meta['truncated']:,} (truncation: truncate)"
    assert facts["bad lines"] == "1" and facts["message construction"] == "role, conversations"
    assert facts["sequence length"] == "1,024" and facts["not trained (jq patterns)"] == ".role"
    bad = re.search(r"<h2>Bad lines</h2><table>.*?</table>", page).group(0)
    assert f"<td class=n>1</td><td>{lines + 1}</td>" in bad
    description = json.loads((tmp_path / "rows/sft_best_fit-description.json").read_text())
    row = re.search(r"<tr><td>[^<]*rows</td>(.*?)</tr>", page.split("Best-fit packing")[1]).group(1)
    assert [html.unescape(cell) for cell in re.findall(r"<td[^>]*>([^<]*)</td>", row)] == [
        "1,024", f"{pair.num_documents:,}", f"{description['samples']:,}", f"{description['padding']:,}",
        f"{description['padding_share']:.2%}", f"{description['unpacked_padding_share']:.2%}"]
    assert "<title>" in page and "conversations</title>" in page  # the histogram counts conversations


def test_an_sft_page_of_a_pretraining_pbin_is_one_line(tmp_path):
    run_tokenmill("pack", DEMO_JSONL, "--tokenizer", GPT2, "--eod", GPT2_EOD, "-o", tmp_path / "d.pbin")
    result = run_tokenmill("report", "--sft", tmp_path / "d.pbin", "-o", tmp_path / "d.html", check=False)
    assert result.returncode == 1
    assert result.stderr.strip() == f"tokenmill: error: {tmp_path / 'd.pbin'}: no SFT sidecar to report on"
    assert not (tmp_path / "d.html").exists()


def test_a_page_records_the_recipe_it_is_made_for_and_one_without_records_none(demo_page):
    """The workflow's pages record the digest of what they are made for (`--recipe`), which `--report` compares with
    its config's before embedding them (tokenmill.plan.records.page_conflict)."""
    root, cache, _ = demo_page
    run_tokenmill("report", root / "demo.pbin", "--cache", cache, "--recipe", "0123456789abcdef",
                  "-o", root / "recipe.html")
    assert page_recipe(root / "recipe.html") == "0123456789abcdef"
    assert page_recipe(root / "demo.html") is None
