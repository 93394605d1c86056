"""``verify --against-tokenizer``: a share of a ``.pbin``'s documents encoded again, from the lines they were
packed from, with the reference library of the tokenizer it was packed with (Hugging Face's, or the one a
Megatron type encodes with), and compared token by token.

What is re-encoded is the proof's choice (:class:`tokenmill.tokenization.proof.ProofSampler`), so the same documents are
checked on every run. Cost: one JSON parse of every source line plus the reference library's speed on the
checked share.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from tokenmill.errors import TokenmillError
from tokenmill.formats.kinds import TOKENS_READ_IN
from tokenmill.formats.pbin import PbinFile, read_sidecar
from tokenmill.formats.sidecar import resolve_sidecar_paths, resolved_against
from tokenmill.inputs.jsonl import iter_lines, source_sha256
from tokenmill.inputs.text_selection import TextSelector
from tokenmill.tokenization.engine import split_flat
from tokenmill.tokenization.families import TokenizerSpec
from tokenmill.tokenization.proof import ProofSampler, first_difference, input_key
from tokenmill.tokenization.tokenizer import load_tokenizer

__all__ = ["verify_against_tokenizer"]


def verify_against_tokenizer(path: str | os.PathLike, fraction: float) -> tuple[list[str], int]:
    """Re-encode documents of a ``.pbin`` from their JSONL lines with Hugging Face's tokenizer.

    The sources, text pattern, tokenizer and EOD come from the sidecar; each source must still be
    the file that was packed (sha256). Documents are matched to lines by re-reading every line the
    way ``pack`` did (bad lines are skipped again); the ones checked, whole, are a hash-selected
    ``fraction`` of them (``1.0``: every document) and those in which :class:`tokenmill.tokenization.proof.ProofSampler`
    would check an excerpt (a source being one batch). Cost: one JSON parse of every source line plus
    Hugging Face's speed on the checked share.

    Returns:
        (problems, documents checked).

    Raises:
        TokenmillError: a fraction outside ``[0, 1]``, or a ``.pbin`` without a pack sidecar.
    """
    path = Path(path)
    meta = read_sidecar(path)
    if meta and any(source.get("format") in TOKENS_READ_IN for source in meta.get("sources", [])):
        raise TokenmillError(f"{path}: its tokens were read in from existing files (tokens-in), not packed from text: "
                             f"there is no text to re-encode; tokenmill verify without --against-tokenizer checks it")
    if not meta or not {"sources", "tokenizer", "text"} <= meta.keys():
        raise TokenmillError(f"{path}: no pack sidecar (sources, tokenizer, text) to check it against")
    meta = resolve_sidecar_paths(meta, path)
    entry = meta["tokenizer"]
    if not os.path.exists(entry["path"]):
        return [f"{path}: cannot check against the tokenizer: {entry['path']} not found "
                f"({resolved_against(meta, path)})"], 0
    try:
        tokenizer = load_tokenizer(TokenizerSpec.from_config(entry), entry.get("eod_token"))
    except TokenmillError as exc:
        return [f"{path}: cannot check against the tokenizer: {exc}"], 0
    if tokenizer.sha256 != entry.get("sha256"):
        return [f"{path}: {entry['path']} is no longer the tokenizer it was packed with (sha256 differs)"], 0
    added = [token.content for token in tokenizer.tokenizer.get_added_tokens_decoder().values()]
    sampler, selector = ProofSampler(added, fraction), TextSelector(meta["text"])
    pbin, document, checked = PbinFile(path), 0, 0
    for source in meta["sources"]:
        if "object" not in source and not os.path.isfile(source["path"]):  # (an object: its version is checked)
            where = resolved_against(meta, path)
            return [f"{path}: source {source['path']} not found ({where}); cannot check"], checked
        if source_sha256(source) != source.get("sha256"):
            return [f"{path}: source {source['path']} has changed since it was packed; cannot check"], checked
        no_tokens = source.get("skipped", {}).get("text gives no tokens", {"count": 0, "first_lines": []})
        if no_tokens["count"] > len(no_tokens["first_lines"]):
            return [f"{path}: {source['path']} had {no_tokens['count']} lines without tokens, more than the sidecar "
                    f"lists; cannot match its documents to lines"], checked
        texts, line_numbers = [], []
        for line_number, line in iter_lines(source["path"], source.get("byte_range"),
                                            meta.get("max_line_bytes", 1 << 62), source.get("row_group_range"),
                                            meta["text"]):
            text, reason = selector.select(line)
            if reason is None and line_number not in no_tokens["first_lines"]:
                texts.append(text)
                line_numbers.append(line_number)
        choice = sampler.choose(texts, np.array(line_numbers, np.int64), input_key(source["path"]))
        chosen = sorted(set(choice.documents) | {excerpt.text for excerpt in choice.excerpts})  # re-encoded whole
        references = split_flat(*tokenizer.encode_reference([texts[i] for i in chosen],
                                                            entry.get("add_special_tokens", True)))
        for i, reference in zip(chosen, (ids.tolist() for ids in references)):
            expected = np.array(reference + ([tokenizer.eod_id] if tokenizer.eod_id is not None and
                                             reference[-1:] != [tokenizer.eod_id] else []), np.int64)
            position = first_difference(pbin.document(document + i), expected)
            if position is not None:
                return [f"{path}: document {document + i} ({source['path']}:{line_numbers[i]}) differs from what the "
                        f"tokenizer gives at token {position}"], checked
        checked += len(chosen)
        document += len(texts)
    if document != pbin.num_documents:
        return [f"{path}: its sources give {document} documents, the file holds {pbin.num_documents}"], checked
    return [], checked
