"""Pages for ``snakemake --report``: what a build holds, in numbers a person checks before training.

* :func:`dataset_page` — one build (``.pbin`` + sidecar, its verify stamp, its index caches): sources,
  documents, tokens, tokens per byte of text, skipped lines by reason, tokenizer and engine, the
  verify result, with best fit what it bought and the tokens ``truncate`` dropped (per split, warned above
  a share), a histogram of document lengths (an inline SVG, log₂ bins of tokens, each bin labelled
  with its lower bound, rotated so that six-digit bounds stay apart), and per cache folder and split:
  the samples built against the samples asked for (Megatron builds whole epochs, so a split holds more:
  ``train: 21,343 samples = 11 whole epochs of about 1,940; 20,000 asked``), and the Megatron arguments it was built
  for (``megatron_args.txt``, its long lines wrapped rather than cut off). Tokens per source, and where
  asked per value of a JSON field of the documents' lines (:func:`counts_by`: ``.meta.domain``).
* :func:`blend_page` — one blend cache folder: per split, the weights asked for against the shares
  of samples each dataset really got (``dataset_index``); with best fit, the epochs of each dataset's packed
  samples a split repeats, and each dataset's packing as below.
* :func:`sft_page` — one SFT set (its pair and sidecar): conversations, tokens, the trained tokens (those its
  loss mask keeps) and their share, conversations truncated or dropped to fit ``seq_length``, bad lines by
  reason, the chat template or message construction it was rendered with, tokenizer and engine, a histogram
  of conversation lengths, its sources, and with ``packing: best_fit`` the rows its conversations fill.

Each page is one self-contained HTML file (no scripts, no external files), written atomically. The workflow's pages
record the recipe they are made for (``<meta name='tokenmill-recipe' content='DIGEST'>``, the
:meth:`tokenmill.plan.commands.Commands.page_recipes` digest), which :func:`page_recipe` reads back before
``snakemake --report`` embeds them.
Cost: one read of the ``.pbin`` document index and of each cache's arrays (memory-mapped); counting by a
field reads every source once; an SFT page reads its loss mask once (a byte per token).
"""

from __future__ import annotations

import html
import json
import os
import re
from pathlib import Path

import numpy as np

from tokenmill.errors import TokenmillError
from tokenmill.files.atomic import atomic_output
from tokenmill.formats.kinds import TOKENS_READ_IN
from tokenmill.formats.pbin import PbinFile, read_sidecar
from tokenmill.formats.provenance import document_lines, field_values, tokens_per_source
from tokenmill.formats.sidecar import SourceRecord, resolve_sidecar_paths
from tokenmill.megatron.handoff import HANDOFF_NAME
from tokenmill.megatron.index_cache import cache_file_names, load_npy
from tokenmill.best_fit.packed_index import truncation_cost

__all__ = ["page_recipe", "best_fit_table", "packed_blend_table", "dataset_page", "blend_page", "sft_page",
           "sft_rows_table", "length_histogram_svg"]

# Long lines of a <pre> (megatron_args.txt's comments) wrap, and so may a table's last column (a cache's md5
# name) where the table is wider than the page: the report shows a page in a frame that cuts off what
# overflows it.
_STYLE = ("body{font-family:sans-serif;margin:1.5em;max-width:70em}table{border-collapse:collapse;margin:.5em 0 1.5em}"
          "td,th{border:1px solid #ccc;padding:.25em .6em;text-align:left}td.n{text-align:right;"
          "font-variant-numeric:tabular-nums}th{background:#f3f3f3;white-space:nowrap}th:last-child{white-space:normal}"
          "td:last-child{overflow-wrap:anywhere}"
          "pre{white-space:pre-wrap;overflow-wrap:anywhere;background:#f7f7f7;padding:.5em;border:1px solid #ddd}"
          "p.note{color:#444;max-width:60em}")


def _table(rows: list[tuple], header: tuple | None = None) -> str:
    def cell(value, tag="td"):
        numeric = isinstance(value, (int, float)) and not isinstance(value, bool)
        text = f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else (
            f"{value:.4g}" if isinstance(value, float) else str(value))
        return f"<{tag}{' class=n' if numeric and tag == 'td' else ''}>{html.escape(text)}</{tag}>"
    head = "<tr>" + "".join(cell(value, "th") for value in header) + "</tr>" if header else ""
    return "<table>" + head + "".join("<tr>" + "".join(map(cell, row)) + "</tr>" for row in rows) + "</table>"


def length_histogram_svg(doc_lengths: np.ndarray, width: int = 640, height: int = 220, item: str = "documents") -> str:
    """An SVG bar chart of document lengths in log₂ bins: bin k holds lengths in ``[2^k, 2^(k+1))``.

    Each bar is labelled with its bin's lower bound (``131,072``), rotated 45° below the axis: upright
    labels of neighbouring bins ran together (``131072262144524288``)."""
    lengths = np.asarray(doc_lengths, dtype=np.int64)
    lengths = lengths[lengths > 0]
    if not len(lengths):
        return f"<p>(no {item})</p>"
    bins = np.bincount(np.floor(np.log2(lengths)).astype(np.int64))
    top, bar = int(bins.max()), width / len(bins)
    label_room = 8 + 6 * len(f"{2 ** (len(bins) - 1):,}")  # the longest label, rotated: ~6 px a character at 45°
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height + label_room + 24}" '
             f'role="img" aria-label="document lengths in tokens">']
    for k, count in enumerate(bins.tolist()):
        bar_height = max(height * count / top, 1.5) if count else 0  # a bin with documents is never invisible
        x = k * bar
        parts.append(f'<rect x="{x + 1:.1f}" y="{height - bar_height:.1f}" width="{bar - 2:.1f}" '
                     f'height="{bar_height:.1f}" fill="#4a7ab8"><title>{2 ** k:,}-{2 ** (k + 1) - 1:,} tokens: '
                     f'{count:,} {item}</title></rect>')
        label_x, label_y = x + bar / 2 + 3, height + 10
        parts.append(f'<text x="{label_x:.1f}" y="{label_y}" font-size="10" text-anchor="end" '
                     f'transform="rotate(-45 {label_x:.1f} {label_y})">{2 ** k:,}</text>')
    parts.append(f'<text x="0" y="{height + label_room + 18}" font-size="12">{item.rstrip("s")} length in tokens '
                 f'(log₂ bins, each labelled with its lower bound); tallest bar: {top:,} {item}</text></svg>')
    return "".join(parts)


_RECIPE = re.compile(r"<meta name='tokenmill-recipe' content='([^'<>]*)'>")


def page_recipe(page_path: str | os.PathLike) -> str | None:
    """The recipe a page records (module docstring), or None for a page that records none.

    Raises:
        OSError: the page cannot be read.
    """
    with open(page_path, "rb") as page:
        found = _RECIPE.search(page.read(4096).decode("utf-8", "replace"))  # (in the head, before the style)
    return found[1] if found else None


def _write_page(out_path: str | os.PathLike, title: str, body: str, recipe: str | None = None) -> None:
    recorded = f"<meta name='tokenmill-recipe' content='{html.escape(recipe)}'>" if recipe else ""
    page = (f"<!DOCTYPE html><html><head><meta charset='utf-8'>{recorded}<title>{html.escape(title)}</title>"
            f"<style>{_STYLE}</style></head><body><h1>{html.escape(title)}</h1>{body}</body></html>")
    with atomic_output(out_path) as tmp_path:
        Path(tmp_path).write_text(page, encoding="utf-8")


def _text_bytes(source: SourceRecord) -> int:
    if "decompressed_bytes" in source:
        return source["decompressed_bytes"]
    if "byte_range" in source:
        return source["byte_range"][1] - source["byte_range"][0]
    return source.get("bytes", 0)


def dataset_page(pbin_path: str | os.PathLike, out_path: str | os.PathLike, verify_stamp: str | None = None,
                 caches: list[str] = (), files: list[str] = (), count_by: str | None = None,
                 best_fit: list[str] = (), recipe: str | None = None) -> None:
    """Write the report page of one build; ``files``: its files in the other formats (Megatron's
    ``.bin/.idx``, datatrove's ``.ds``...), listed with their sizes beside the ``.pbin``; ``count_by``: a
    JSON field (``.meta.domain``) whose values get their documents and tokens counted (:func:`counts_by`);
    ``best_fit``: its best-fit packing folders, what each bought and what it cost (:func:`best_fit_table`);
    ``recipe``: what it is made for, recorded in it (module docstring).

    Raises:
        TokenmillError: the ``.pbin`` or its sidecar is missing or unreadable, a source cannot be read for
            ``count_by``.
    """
    pbin, meta = PbinFile(pbin_path), read_sidecar(pbin_path)
    if not meta or "sources" not in meta:
        raise TokenmillError(f"{pbin_path}: no pack sidecar to report on")
    meta = resolve_sidecar_paths(meta, pbin_path)  # its tokenizer and sources as reached from here, not `../raw/`
    text_bytes = sum(_text_bytes(source) for source in meta["sources"])
    tokenizer, engine = meta.get("tokenizer", {}), meta.get("engine", {})
    read_in = [source for source in meta["sources"] if source.get("format") in TOKENS_READ_IN]
    facts = [("documents", pbin.num_documents), ("tokens", pbin.num_tokens),
             ("text", f"none: tokens read in from {len(read_in)} source(s), nothing tokenized (tokens-in)" if read_in
              else f"{text_bytes / 1e6:,.1f} MB in {len(meta['sources'])} source(s)"),
             ("tokens per byte of text", "-" if read_in else round(pbin.num_tokens / max(text_bytes, 1), 4)),
             ("mean / median / max document (tokens)",
              f"{pbin.doc_lengths.mean():,.0f} / {np.median(pbin.doc_lengths):,.0f} / {pbin.doc_lengths.max():,}"
              if pbin.num_documents else "-"),
             ("tokenizer", f"{tokenizer.get('path')} (vocabulary {tokenizer.get('vocab_size')}, EOD id "
                           f"{tokenizer.get('eod_id')}, sha256 {str(tokenizer.get('sha256'))[:12]}…)"),
             ("engine", f"{engine.get('reason') or engine.get('name')}; {engine.get('checked_documents', 0):,} "
                        f"documents re-encoded with Hugging Face, {engine.get('mismatches', 0)} mismatches"
              if engine else "(not recorded)"),
             ("token width", f"{meta.get('token_width')} bytes")]
    if verify_stamp:
        stamp = Path(verify_stamp).read_text(encoding="utf-8").strip().splitlines()
        facts.append(("verify", f"{len(stamp)} file(s) checked, no problem found" if stamp else "not run"))
    skipped = sorted(meta.get("skipped", {}).items())
    body = _table(facts)
    body += "<h2>Skipped lines</h2>" + (_table(skipped, ("reason", "lines")) if skipped else "<p>none</p>")
    body += "<h2>Document lengths</h2>" + length_histogram_svg(pbin.doc_lengths)
    counted = tokens_per_source([source.get("documents", 0) for source in meta["sources"]], pbin.doc_lengths)
    tokens = [0] * len(meta["sources"]) if counted is None else counted.tolist()  # None: not these documents
    body += "<h2>Sources</h2>" + _table(
        [(source["path"], source.get("compression", source.get("format", "plain")),
          "{}-{}".format(*source["byte_range"]) if "byte_range" in source
          else "row groups {}-{}".format(*source["row_group_range"]) if "row_group_range" in source else "whole file",
          source.get("lines", source.get("rows", 0)), source.get("documents", 0), count,
          f"{count / max(int(pbin.doc_lengths.sum()), 1):.1%}",
          sum(entry["count"] for entry in source.get("skipped", {}).values()))
         for source, count in zip(meta["sources"], tokens)],
        ("file", "compression", "bytes", "lines", "documents", "tokens", "share of tokens", "skipped lines"))
    if count_by is not None:
        counted = list(counts_by(meta["sources"], pbin.doc_lengths, count_by,
                                 meta.get("max_line_bytes", 1 << 62)).items())
        total = max(int(pbin.doc_lengths.sum()), 1)
        rows = [(_shortened(value), documents, count, f"{count / total:.1%}")
                for value, (documents, count) in counted[:_VALUES_SHOWN]]
        if len(counted) > _VALUES_SHOWN:  # a field of many values (an id, a text): the rest in one row
            documents, count = (sum(pair[k] for _, pair in counted[_VALUES_SHOWN:]) for k in (0, 1))
            rows.append((f"({len(counted) - _VALUES_SHOWN:,} other values)", documents, count, f"{count / total:.1%}"))
        body += f"<h2>Tokens by {html.escape(count_by)}</h2>" + _table(rows, (count_by, "documents", "tokens",
                                                                             "share of tokens"))
    built = [pbin_path, *files]
    body += "<h2>Files</h2>" + _table([(str(path), _bytes(Path(path))) for path in built], ("file", "bytes"))
    for cache in caches:
        body += f"<h2>Index caches: {html.escape(str(cache))}</h2>" + _cache_table(Path(cache), pbin.num_documents)
    if best_fit:
        body += "<h2>Best-fit packing</h2>" + best_fit_table(best_fit)
    _write_page(out_path, f"Dataset {Path(pbin_path).stem}", body, recipe)


def sft_page(pbin_path: str | os.PathLike, out_path: str | os.PathLike, verify_stamp: str | None = None,
             best_fit: list[str] = (), recipe: str | None = None) -> None:
    """Write the report page of one SFT set: its pair (``.pbin`` and ``.loss_mask.pbin``) and sidecar, its verify
    stamp, and ``best_fit``: its best-fit rows folders (:func:`sft_rows_table`); ``recipe`` as :func:`dataset_page`'s.

    Raises:
        TokenmillError: the ``.pbin``, its loss mask or its SFT sidecar is missing or unreadable.
    """
    pbin, meta = PbinFile(pbin_path), read_sidecar(pbin_path)
    if not meta or "loss_mask" not in meta:
        raise TokenmillError(f"{pbin_path}: no SFT sidecar to report on")
    meta = resolve_sidecar_paths(meta, pbin_path)
    mask_path = Path(pbin_path).with_name(meta["loss_mask"])
    trained = int(np.count_nonzero(PbinFile(mask_path).tokens))
    tokenizer, engine = meta.get("tokenizer", {}), meta.get("engine", {})
    skipped = sorted(meta.get("skipped", {}).items())
    lengths = pbin.doc_lengths
    facts = [("conversations", pbin.num_documents), ("tokens", pbin.num_tokens),
             ("trained tokens (loss mask)", trained),
             ("share of tokens trained", f"{trained / max(pbin.num_tokens, 1):.1%}"),
             ("mean / median / max conversation (tokens)",
              f"{lengths.mean():,.0f} / {np.median(lengths):,.0f} / {lengths.max():,}" if len(lengths) else "-"),
             ("sequence length", meta.get("seq_length")),
             ("truncated to fit", f"{meta.get('truncated', 0):,} (truncation: {meta.get('truncation')})"),
             ("dropped", f"{meta.get('dropped', 0):,} (too long to fit, or nothing trained)"),
             ("bad lines", sum(entry.get("count", 0) for _, entry in skipped))]
    if "chat_template" in meta:
        template = meta["chat_template"]
        masks = "{% generation %} blocks" if template.get("generation_blocks") else "prefixes"
        facts.append(("chat template", f"{template.get('source')} (sha256 {str(template.get('sha256'))[:12]}…); "
                                       f"trained: {template.get('train_on')}, masks from {masks}"))
    else:
        facts.append(("message construction", ", ".join(meta.get("message_construction", [])) or "-"))
        facts.append(("not trained (jq patterns)", "; ".join(meta.get("loss_masking_jq_patterns", [])) or "none"))
    specials = tokenizer.get("special_ids", {})
    facts += [("tokenizer", f"{tokenizer.get('path')} (vocabulary {tokenizer.get('vocab_size')}, sha256 "
                            f"{str(tokenizer.get('sha256'))[:12]}…)"),
              ("special tokens", ", ".join(f"{key} {token!r} = {specials.get(key)}"
                                           for key, token in tokenizer.get("special_tokens", {}).items()) or "none"),
              ("engine", engine.get("reason") or engine.get("name") or "(not recorded)")]
    if verify_stamp:
        stamp = Path(verify_stamp).read_text(encoding="utf-8").strip().splitlines()
        facts.append(("verify", f"{len(stamp)} file(s) checked, no problem found" if stamp else "not run"))
    body = _table(facts)
    body += "<h2>Bad lines</h2>" + (_table(
        [(reason, entry.get("count", 0), ", ".join(map(str, entry.get("first_lines", []))))
         for reason, entry in skipped], ("reason", "lines", "first line numbers")) if skipped else "<p>none</p>")
    body += "<h2>Conversation lengths</h2>" + length_histogram_svg(lengths, item="conversations")
    body += "<h2>Sources</h2>" + _table(
        [(source["path"], source.get("lines", 0), source.get("documents", 0), source.get("tokens", 0))
         for source in meta.get("sources", [])], ("file", "lines", "conversations", "tokens"))
    body += "<h2>Files</h2>" + _table([(str(path), _bytes(Path(path))) for path in (pbin_path, mask_path)],
                                      ("file", "bytes"))
    if best_fit:
        body += "<h2>Best-fit packing</h2>" + sft_rows_table(best_fit)
    _write_page(out_path, f"SFT set {Path(pbin_path).stem}", body, recipe)


def sft_rows_table(folders: list[str]) -> str:
    """What packing an SFT set's conversations whole into rows bought over one conversation a row, a row per
    best-fit folder (``sft_best_fit-description.json``) or OLMo-core work dir (its packing sidecar)."""
    rows = []
    for folder in folders:
        for name in ("sft_best_fit-description.json", "tokenmill-olmo-packing.meta.json"):
            path = Path(folder, name)
            if not path.exists():
                continue
            figures = json.loads(path.read_text(encoding="utf-8"))
            count = figures.get("conversations", figures.get("documents", 0))
            unpacked = figures.get("unpacked_padding_share")
            rows.append((str(folder), figures["sequence_length"], count, figures["samples"], figures["padding"],
                         f"{figures['padding_share']:.2%}", "-" if unpacked is None else f"{unpacked:.2%}"))
    return _table(rows, ("packing", "length", "conversations", "rows", "padding tokens", "padding share",
                         "padding share, one conversation a row"))


def best_fit_table(folders: list[str]) -> str:
    """What best-fit packing bought over concatenate-and-chunk and what it cost, a row per packed index split or
    OLMo-core work dir (their descriptions' and sidecars' figures: :func:`tokenmill.best_fit.packed_index
    .packing_figures`): the split's tokens (OLMo-core's: the whole dataset's), those ``truncate`` dropped and
    their share beside the padding, with a warning above the table for each row over
    :data:`tokenmill.best_fit.packed_index.TRUNCATION_WARNING_SHARE`."""
    rows, warnings = [], []
    for folder in folders:
        for path in sorted(Path(folder).glob("best_fit-*-description.json")) + \
                sorted(Path(folder).glob("tokenmill-olmo-packing.meta.json")):
            figures = json.loads(path.read_text(encoding="utf-8"))
            of = figures["split_name"] if "split_name" in figures else "OLMo-core: the whole dataset"
            where = f"{folder} ({of})"
            strategy = figures.get("long_document_strategy", figures.get("long_doc_strategy"))
            dropped = figures["long_tokens_dropped"]
            rows.append((where, figures["sequence_length"], strategy, figures["documents"], figures["tokens"],
                         figures["kept_whole"], figures["cut_by_concat"], figures["long"], dropped,
                         f"{dropped / figures['tokens']:.2%}" if figures["tokens"] else "-",
                         figures["samples"], figures["padding"], f"{figures['padding_share']:.2%}"))
            warning = truncation_cost(figures)[1]
            if warning:
                warnings.append(f"<p class=note><strong>{html.escape(where)}</strong>: {html.escape(warning)}</p>")
    return "".join(warnings) + _table(rows, (
        "packing (split)", "length", "long documents", "documents", "tokens", "kept whole",
        "of which concatenation cuts", "longer than the length", "tokens dropped (truncate)",
        "share of the split's tokens dropped", "samples", "padding tokens", "padding share"))


def packed_blend_table(folders: list[str]) -> str:
    """A packed blend's samples per split and dataset: packed samples, drawn, epochs, documents kept whole and
    those concatenation cuts, and the padding of the split's samples (its descriptions' figures:
    :mod:`tokenmill.best_fit.packed_blend`)."""
    rows = []
    for folder in folders:
        for path in sorted(Path(folder).glob("blend-*-description.json"),  # train, valid, test
                           key=lambda path: ("train", "valid", "test").index(path.name.split("-")[-2])):
            figures = json.loads(path.read_text(encoding="utf-8"))
            where = f"{folder} ({figures['split_name']}, {figures['long_document_strategy']})"
            rows += [(where, each["dataset"], each["packed_samples"], each["drawn"], each["epochs"],
                      each["kept_whole"], each["cut_by_concat"], "", "") for each in figures["datasets"]]
            rows.append((where, "all", "", figures["samples"], "", "", "", figures["padding"],
                         f"{figures['padding_share']:.2%}"))
    return _table(rows, ("packing", "dataset", "packed samples", "drawn", "epochs of it", "kept whole",
                         "of which concatenation cuts", "padding tokens", "padding share"))


def _bytes(path: Path) -> int:
    """A file's size, or the total of a folder's files (OLMo's parts)."""
    return sum(file.stat().st_size for file in path.rglob("*") if file.is_file()) if path.is_dir() else \
        path.stat().st_size


_VALUES_SHOWN = 100  # values of a count_by field listed one by one, most tokens first


def _shortened(value: str, limit: int = 80) -> str:
    return value if len(value) <= limit else f"{value[:limit]}… ({len(value):,} characters)"


def counts_by(sources: list[SourceRecord], doc_lengths: np.ndarray, field: str,
              max_line_bytes: int = 1 << 62) -> dict[str, tuple[int, int]]:
    """Documents and tokens (EODs included) per value of ``field`` on the documents' lines, most tokens
    first: ``"(none)"`` for lines without it, ``"(unknown line)"`` for a source whose sidecar lists only its
    first skipped lines. Cost: one read of every source (:func:`tokenmill.formats.provenance.field_values`).

    Raises:
        TokenmillError: a bad field path, or a source that cannot be read, naming it.
    """
    values: list[str] = []
    for source in sources:
        lines = document_lines(source)
        if lines is None:
            values += ["(unknown line)"] * source.get("documents", 0)
            continue
        try:
            found = field_values(source, lines, field, max_line_bytes)
        except OSError as exc:
            raise TokenmillError(f"{source['path']}: cannot be read to count by {field} ({exc.strerror})") from None
        values += ["(none)" if value is None else value for value in found]
    if len(values) != len(doc_lengths):
        raise TokenmillError(f"its sidecar's sources hold {len(values)} documents, the file {len(doc_lengths)}")
    names, which = np.unique(np.array(values, dtype=object), return_inverse=True)
    documents = np.bincount(which, minlength=len(names))
    tokens = np.bincount(which, weights=doc_lengths, minlength=len(names)).astype(np.int64)
    order = np.lexsort((names.astype(str), -tokens))
    return {str(names[k]): (int(documents[k]), int(tokens[k])) for k in order}


def _cache_table(folder: Path, num_documents: int) -> str:
    """Per split of a GPTDataset cache folder: samples built and asked for, whole epochs and samples per
    epoch, sequence length, seed, the md5 name; why a split holds more samples than asked for; then
    ``megatron_args.txt``."""
    rows, sentences = [], []
    for description_path in sorted(folder.glob("*-GPTDataset-*-description.txt"), key=_split_order):
        stem = description_path.name[:-len("-description.txt")]
        description = json.loads(description_path.read_text(encoding="utf-8"))
        split = description["index_split"]
        low, high = description["split_matrix"][["train", "valid", "test"].index(split)]
        split_documents = max(round(high * num_documents) - round(low * num_documents), 1)
        # The document index is the split's documents once per epoch, so its length counts the epochs.
        epochs = len(load_npy(folder / f"{stem}-document_index.npy")) / split_documents
        epochs = int(epochs) if epochs == int(epochs) else round(epochs, 2)  # a fraction: not this dataset's cache
        samples = len(load_npy(folder / f"{stem}-shuffle_index.npy"))
        # Samples run across epoch ends, so an epoch's count is an average.
        per_epoch = samples / max(epochs, 1e-9)
        per_epoch = round(per_epoch) if per_epoch >= 10 else float(f"{per_epoch:.2g}")
        asked = description.get("num_samples")
        rows.append((split, samples, "one epoch" if asked is None else asked, epochs, per_epoch,
                     # as typed on Megatron's command line, not as numbers
                     str(description["sequence_length"]), str(description["random_seed"]), description["dataset_path"],
                     stem.split("-")[0]))
        if asked is not None and samples != asked:
            whole = "1 whole epoch" if epochs == 1 else f"{epochs} whole epochs of about {per_epoch:,}"
            sentences.append(f"{split}: {samples:,} samples = {whole}; {asked:,} asked")
    table = _table(rows, ("split", "samples", "asked", "whole epochs", "per epoch", "--seq-length", "--seed",
                          "--data-path", "cache name (md5)"))
    if sentences:
        table += (f"<p class=note>{html.escape('. '.join(sentences))}. Megatron builds whole epochs: a split holds "
                  f"every sample of the fewest whole epochs that give the number asked for, in shuffled order, and "
                  f"a training job stops after the number it asks for.</p>")
    handoff = folder / HANDOFF_NAME
    if handoff.is_file():  # every argument a Megatron job needs to reuse the folder
        table += f"<p>{HANDOFF_NAME}:</p><pre>{html.escape(handoff.read_text(encoding='utf-8'))}</pre>"
    return table


def _split_order(description_path: Path) -> int:
    """train, valid, test: the order of Megatron's --split."""
    return ("train", "valid", "test").index(description_path.name.split("-GPTDataset-")[1].split("-")[0])


def _epochs_taken(folder: Path, part: dict, count: int) -> float | str:
    """How many epochs of one blended dataset's split its ``count`` samples are: an epoch's samples from
    the dataset's own GPTDataset cache in ``folder`` (whole epochs of its split's documents), or "-"."""
    names = cache_file_names(json.dumps(part, indent=4), part.get("index_split", ""))
    try:
        document_index = load_npy(folder / names["document_index.npy"])
        samples = len(load_npy(folder / names["shuffle_index.npy"]))
    except (TokenmillError, OSError):
        return "-"
    documents = len(np.unique(document_index))  # each of the split's documents, once per epoch
    epochs = len(document_index) / max(documents, 1)
    return round(count / max(samples / epochs, 1e-9), 2)


def blend_page(cache_dir: str | os.PathLike, out_path: str | os.PathLike, best_fit: list[str] = (),
               recipe: str | None = None) -> None:
    """Write the report page of one blend cache folder: weights asked vs realised shares per split; with
    ``best_fit``, its packed blend's draws, epochs and padding per split (:func:`packed_blend_table`) and what
    each dataset's packing bought and cost (:func:`best_fit_table`); ``recipe`` as :func:`dataset_page`'s.

    Raises:
        TokenmillError: the folder holds no BlendedDataset cache.
    """
    folder = Path(cache_dir)
    descriptions = sorted(folder.glob("*-BlendedDataset-*-description.txt"))
    if not descriptions:
        raise TokenmillError(f"{folder}: no BlendedDataset cache to report on")
    body = ""
    for description_path in descriptions:
        stem = description_path.name[:-len("-description.txt")]
        description = json.loads(description_path.read_text(encoding="utf-8"))
        dataset_index = load_npy(folder / f"{stem}-dataset_index.npy")
        counts = np.bincount(dataset_index, minlength=len(description["datasets"]))
        weights = np.asarray(description["weights"], dtype=np.float64)
        rows = [(part["dataset_path"], round(float(weight / weights.sum()), 4),
                 round(float(count / max(len(dataset_index), 1)), 4), int(count), _epochs_taken(folder, part, count))
                for part, weight, count in zip(description["datasets"], weights, counts)]
        body += (f"<h2>{html.escape(description['split'])}: {len(dataset_index):,} samples</h2>"
                 + _table(rows, ("dataset", "weight asked", "share realised", "samples", "epochs of it")))
    body += ("<p class=note>epochs of it: the samples the blend takes from a dataset over the samples of one epoch of "
             "its split (from the dataset's own cache in this folder): above 1, the blend repeats its "
             "documents.</p>")
    if best_fit:
        body += "<h2>Best-fit packing</h2>" + packed_blend_table(best_fit)
        body += "<h3>Each dataset's packing</h3>" + best_fit_table(
            [str(each) for folder in best_fit for each in sorted(Path(folder).glob("dataset-*"))])
    _write_page(out_path, f"Blend {folder.parent.name.removeprefix('blend_')} ({folder.name})", body, recipe)
