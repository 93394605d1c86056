"""The packed index: best-fit samples over a Megatron ``.bin/.idx``, for any trainer that reads those files.

For one dataset, sequence length ``L``, seed and split (Megatron's ``--split``), a split holds exactly the
sequences GPTDataset's does: the contiguous range ``[round(start·N), round(end·N))`` of the ``.idx``'s ``N``
sequences (``specs/megatron.md`` §2, GPTDataset splits by sequence, not by document). A document is a run of
sequences (several with ``--split-sentences``); one that a split's bound falls inside counts in each split with
its sequences there, as its own part (:func:`split_parts`); where each document is one sequence, the splits
are whole documents. The split's documents (or parts) are cut to ``L`` tokens by the long-document strategy
and packed whole by OBFD (:mod:`tokenmill.best_fit.obfd`, stable sort: the same bytes on every numpy), and
the samples are put in the seed's order (``numpy.random.RandomState(seed).permutation``, whose stream numpy keeps
fixed). Files, in the cache folder beside the GPTDataset caches (docs/formats.md, "Packed index")::

    best_fit-<strategy>-<split>-pieces.npy          int64 (P, 3): per piece (document id, first token within
                                                    the document, tokens), samples after one another in order
    best_fit-<strategy>-<split>-sample_offsets.npy  int64 (S + 1,): sample k is pieces[offsets[k]:offsets[k+1]]
    best_fit-<strategy>-<split>-description.json    what was packed (dataset, fingerprint of its .idx, L, seed,
                                                    split, strategy) and what it bought (written last)

A sample's tokens are its pieces back to back, then padding to ``L``
(:class:`tokenmill.training.packed_samples.PackedSamples`).

Cost: one read of the ``.idx`` (no token is read), O(D) per split to find its parts, the packing's O(D log D)
sort and O(D log L) fit; memory ~100 bytes per document.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

from tokenmill.errors import TokenmillError
from tokenmill.files.atomic import atomic_output
from tokenmill.formats.bin_idx import MMapIndexedDataset
from tokenmill.megatron.gpt_indices import SPLIT_NAMES, parse_split, split_matrix, split_ranges
from tokenmill.megatron.index_cache import dataset_fingerprint, load_npy
from tokenmill.best_fit.obfd import cut_long_documents, pack_best_fit

__all__ = ["PACKED_INDEX_FORMAT", "write_packing_output", "read_description", "load_pieces", "packed_index_names",
           "document_token_ranges", "split_parts", "build_packed_index", "packed_index_of", "packed_index_problems",
           "load_packed_index", "packing_figures", "document_figures", "sample_figures", "TRUNCATION_WARNING_SHARE",
           "truncation_cost"]

PACKED_INDEX_FORMAT = "tokenmill-packed-index/1"

#: The share of a split's tokens that ``truncate`` may drop before the job's log, the summary and the report
#: warn, naming ``long_doc_strategy: fragment`` (which keeps them). On a team's web text at 2,048 tokens it
#: dropped 58.6 % of the train split's tokens; on the demo at 512, 59.0 % (586,370 of 993,430), padding 0.37 %.
TRUNCATION_WARNING_SHARE = 0.05


def packed_index_names(strategy: str, split_name: str) -> dict[str, str]:
    """The file names of one split's packed index (module docstring)."""
    stem = f"best_fit-{strategy}-{split_name}"
    return {"pieces": f"{stem}-pieces.npy", "sample_offsets": f"{stem}-sample_offsets.npy",
            "description": f"{stem}-description.json"}


def document_token_ranges(dataset: MMapIndexedDataset) -> tuple[np.ndarray, np.ndarray]:
    """Each document's first token in the ``.bin`` and its token count: its sequences lie back to back, and the
    sequences fill the ``.bin`` in order (the reader checks the pointers)."""
    before = np.concatenate([[0], np.cumsum(dataset.sequence_lengths, dtype=np.int64)])[dataset.document_indices]
    return before[:-1], np.diff(before)


def split_parts(dataset: MMapIndexedDataset, sequences: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The documents of a split whose sequence ids are ``sequences`` (a contiguous range, GPTDataset's), each as
    the part of it that lies in the split: ``(documents, first token within the document, tokens)``, int64, in
    document order, parts without tokens left out. A document inside the split is whole (first token 0)."""
    begin, end = (int(sequences[0]), int(sequences[-1]) + 1) if len(sequences) else (0, 0)
    bounds = np.asarray(dataset.document_indices, dtype=np.int64)
    first, stop = np.clip(bounds[:-1], begin, end), np.clip(bounds[1:], begin, end)
    before = np.concatenate([[0], np.cumsum(dataset.sequence_lengths, dtype=np.int64)])
    tokens = before[stop] - before[first]
    documents = np.flatnonzero(tokens > 0)
    return documents, before[first[documents]] - before[bounds[documents]], tokens[documents]


def packing_figures(lengths: np.ndarray, sequence_length: int, strategy: str, sample_lengths: np.ndarray) -> dict:
    """What packing bought over concatenate-and-chunk, for documents of ``lengths`` tokens (document order)
    packed into samples of ``sample_lengths`` tokens: :func:`document_figures` and :func:`sample_figures`."""
    return {**document_figures(lengths, sequence_length, strategy), **sample_figures(sample_lengths, sequence_length)}


def document_figures(lengths: np.ndarray, sequence_length: int, strategy: str) -> dict:
    """``documents``, ``tokens``; ``cut_by_concat``: documents that samples cut back to back every ``L`` tokens
    would split (a document ending exactly at a boundary is whole); ``kept_whole``: documents of at most ``L``
    tokens, each in one sample when packed; ``long``/``long_tokens_dropped``: documents over ``L`` and, with
    ``truncate``, the tokens left out."""
    ends = np.cumsum(lengths, dtype=np.int64)
    starts = ends - lengths
    nonempty = lengths > 0
    cut = int(np.count_nonzero(nonempty & (starts // sequence_length != (ends - 1) // sequence_length)))
    long = lengths > sequence_length
    return {"documents": int(np.count_nonzero(nonempty)), "tokens": int(lengths.sum()), "cut_by_concat": cut,
            "kept_whole": int(np.count_nonzero(nonempty & ~long)), "long": int(np.count_nonzero(long)),
            "long_tokens_dropped": int((lengths[long] - sequence_length).sum()) if strategy == "truncate" else 0}


def truncation_cost(figures: dict) -> tuple[str, str | None]:
    """What best fit's long-document strategy cost, from a packing's figures (a packed index's description, an
    OLMo-core packing's sidecar), each figure naming what it is of (``train split``; ``whole dataset`` for
    OLMo-core, which packs no split): ``"truncate dropped 4,499,165 of the train split's 7,676,865 tokens
    (58.6 %)"`` or ``"fragment kept every one of ..."``; and a warning, above :data:`TRUNCATION_WARNING_SHARE`,
    that names ``long_doc_strategy: fragment``, else None.

    Raises:
        KeyError: figures without ``tokens``, ``long_tokens_dropped`` or ``sequence_length``.
    """
    whose = f"the {figures['split_name']} split's" if "split_name" in figures else "the whole dataset's"
    strategy = figures.get("long_document_strategy", figures.get("long_doc_strategy"))
    tokens, dropped = int(figures["tokens"]), int(figures["long_tokens_dropped"])
    if strategy != "truncate":
        return f"{strategy} kept every one of {whose} {tokens:,} tokens", None
    share = dropped / tokens if tokens else 0.0
    cost = f"truncate dropped {dropped:,} of {whose} {tokens:,} tokens ({100 * share:.1f} %)"
    if share <= TRUNCATION_WARNING_SHARE:
        return cost, None
    length = int(figures["sequence_length"])
    return cost, (f"warning: truncate dropped {100 * share:.1f} % of {whose} tokens (documents over {length:,} "
                  f"tokens cut to their first {length:,}; more than {100 * TRUNCATION_WARNING_SHARE:g} %): "
                  f"long_doc_strategy: fragment (--long-doc-strategy fragment) keeps them, as pieces of {length:,}")


def sample_figures(sample_lengths: np.ndarray, sequence_length: int) -> dict:
    """``samples``; ``padding``: tokens that fill the samples up, and its ``padding_share`` of their tokens."""
    samples = len(sample_lengths)
    padding = int(samples * sequence_length - sample_lengths.sum())
    return {"samples": samples, "padding": padding,
            "padding_share": round(padding / (samples * sequence_length), 6) if samples else 0.0}


def build_packed_index(prefix: str | os.PathLike, cache_dir: str | os.PathLike, sequence_length: int, seed: int,
                       split: str = "969,30,1", strategy: str = "truncate") -> dict[str, dict]:
    """Pack every split of ``prefix`` and write its packed index into ``cache_dir`` (module docstring); each
    file atomically, the description last. Returns each split's description.

    Raises:
        TokenmillError: an unreadable dataset, a bad split, length or strategy.
    """
    cache_dir = Path(cache_dir)
    descriptions = {}
    for split_name, (description, arrays) in packed_index_of(prefix, sequence_length, seed, split,
                                                             strategy).items():
        cache_dir.mkdir(parents=True, exist_ok=True)
        names = packed_index_names(strategy, split_name)
        write_packing_output(cache_dir, names, arrays, description)
        descriptions[split_name] = description
    return descriptions


def packed_index_of(prefix: str | os.PathLike, sequence_length: int, seed: int, split: str,
                    strategy: str) -> dict[str, tuple[dict, dict[str, np.ndarray]]]:
    """Each split's description and arrays (``pieces``, ``sample_offsets``), computed, not written.

    Raises:
        TokenmillError: an unreadable dataset, a bad split, length or strategy.
    """
    if sequence_length < 1:
        raise TokenmillError(f"sequence length {sequence_length}: must be positive")
    dataset = MMapIndexedDataset(prefix)
    token_starts = document_token_ranges(dataset)[0]
    packed_splits = {}
    for split_name, sequences in zip(SPLIT_NAMES, split_ranges(split_matrix(parse_split(split)), len(dataset))):
        if sequences is None:
            continue
        documents, firsts, lengths = split_parts(dataset, sequences)
        part_starts = token_starts[documents] + firsts
        piece_starts, piece_ends, owners = cut_long_documents(part_starts, part_starts + lengths, sequence_length,
                                                              strategy)
        packed = pack_best_fit(piece_starts, piece_ends, sequence_length)
        # the samples in the seed's order: each piece's sample by its new position, the pieces stably sorted by it
        order = np.random.RandomState(seed).permutation(packed.num_samples)
        position = np.empty(packed.num_samples, dtype=np.int64)
        position[order] = np.arange(packed.num_samples)
        counts = np.diff(packed.sample_offsets)
        by_sample = packed.documents_by_sample[np.argsort(np.repeat(position, counts), kind="stable")]
        given = packed.order[by_sample]  # each piece in sample order, as numbered when cut
        piece_documents = documents[owners[given]]
        pieces = np.stack([piece_documents, piece_starts[given] - token_starts[piece_documents],
                           packed.sorted_lengths[by_sample]], axis=1).astype(np.int64)
        offsets = np.concatenate([[0], np.cumsum(counts[order])]).astype(np.int64)
        description = {"format": PACKED_INDEX_FORMAT, "dataset": str(prefix), "fingerprint":
                       dataset_fingerprint(dataset), "sequence_length": sequence_length, "seed": seed,
                       "split": split, "split_name": split_name, "long_document_strategy": strategy,
                       **packing_figures(lengths, sequence_length, strategy, packed.sample_lengths())}
        packed_splits[split_name] = description, {"pieces": pieces, "sample_offsets": offsets}
    return packed_splits


def packed_index_problems(cache_dir: str | os.PathLike) -> list[str]:
    """Every problem of the packed indices in ``cache_dir``, one line each: a description that is not one, a
    dataset changed since, a document of the split (its part there: :func:`split_parts`) missing, twice, or not
    covered exactly by its pieces (its first ``L`` tokens with ``truncate``), a document of another split, a
    sample over ``L`` tokens, or arrays other than the packer makes.
    Cost: the packing again, in memory, per split.
    """
    problems = []
    for path in sorted(Path(cache_dir).glob("best_fit-*-description.json")):
        strategy, _, split_name = path.name[len("best_fit-"):-len("-description.json")].rpartition("-")
        try:
            description, pieces, offsets = load_packed_index(cache_dir, strategy, split_name)
            dataset = MMapIndexedDataset(description["dataset"])
            if description["fingerprint"] != dataset_fingerprint(dataset):
                problems.append(f"{path}: {dataset.idx_path} changed since it was packed")
                continue
            length = int(description["sequence_length"])
            sequences = dict(zip(SPLIT_NAMES, split_ranges(split_matrix(parse_split(description["split"])),
                                                           len(dataset))))[split_name]
            problems += _piece_problems(path, pieces, offsets, split_parts(dataset, sequences), length, strategy)
            expected, arrays = packed_index_of(description["dataset"], length, int(description["seed"]),
                                               description["split"], strategy)[split_name]
        except TokenmillError as exc:
            problems.append(str(exc))
            continue
        except (KeyError, TypeError, ValueError) as exc:
            problems.append(f"{path}: not a packed index description ({exc})")
            continue
        for key, array in (("pieces", pieces), ("sample_offsets", offsets)):
            if not np.array_equal(array, arrays[key]):
                problems.append(f"{path.with_name(packed_index_names(strategy, split_name)[key])}: not what the "
                                f"packer makes from {description['dataset']}")
        if {key: description.get(key) for key in expected} != expected:
            problems.append(f"{path}: its figures are not the packing's")
    return problems


def _piece_problems(path: Path, pieces: np.ndarray, offsets: np.ndarray,
                    parts: tuple[np.ndarray, np.ndarray, np.ndarray], length: int, strategy: str) -> list[str]:
    """Each part of the split (:func:`split_parts`) whole in one sample (or its fragments covering it back to
    back, from its first token), no other document, no sample over ``length`` tokens."""
    problems = []
    totals = np.concatenate([[0], np.cumsum(pieces[:, 2])])[offsets]
    totals = totals[1:] - totals[:-1]
    over = np.flatnonzero((totals > length) | (totals < 1))
    if len(over):
        problems.append(f"{path}: sample {int(over[0])} holds {int(totals[over[0]])} tokens, not 1..{length}")
    part_documents, part_firsts, part_lengths = parts
    ordered = pieces[np.lexsort((pieces[:, 1], pieces[:, 0]))]
    documents, first = np.unique(ordered[:, 0], return_index=True)
    if not np.array_equal(documents, part_documents):
        document = int(np.setxor1d(documents, part_documents)[0])
        return problems + [f"{path}: document {document} is not in its samples exactly once, whole"]
    covered = np.add.reduceat(ordered[:, 2], first) if len(ordered) else np.zeros(0, np.int64)
    wanted = np.minimum(part_lengths, length) if strategy == "truncate" else part_lengths
    back_to_back = np.ones(len(ordered), bool)
    back_to_back[1:] = ordered[1:, 1] == ordered[:-1, 1] + ordered[:-1, 2]
    back_to_back[first] = ordered[first, 1] == part_firsts  # each document's first piece: where its part begins
    wrong = np.flatnonzero(covered != wanted)
    if len(wrong) or not back_to_back.all():
        document = int(documents[wrong[0]]) if len(wrong) else int(ordered[np.argmin(back_to_back), 0])
        problems.append(f"{path}: document {document} is not in its samples exactly once, whole")
    return problems


def write_packing_output(folder: Path, names: dict[str, str], arrays: dict[str, np.ndarray], description: dict) -> None:
    """Each array as ``.npy`` and the description as JSON (sorted keys), under ``names``, each written atomically;
    the description last, so that a folder with one holds its arrays whole: an earlier description goes first, as
    a run killed while rewriting the folder would leave it beside the new arrays."""
    (folder / names["description"]).unlink(missing_ok=True)
    for key, array in arrays.items():
        with atomic_output(folder / names[key]) as temporary, open(temporary, "wb") as handle:
            np.save(handle, array, allow_pickle=False)
    with atomic_output(folder / names["description"]) as temporary:
        temporary.write_text(json.dumps(description, indent=1, sort_keys=True) + "\n", encoding="utf-8")


def read_description(path: Path, format_name: str, missing: str) -> dict:
    """The JSON description of a packing output at ``path``, of format ``format_name``.

    Raises:
        TokenmillError: no such file (``missing`` says what builds it), unreadable, or not that format.
    """
    try:
        description = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise TokenmillError(f"{path}: {missing}") from None
    except (OSError, ValueError) as exc:
        raise TokenmillError(f"{path}: unreadable ({exc})") from None
    if not isinstance(description, dict) or description.get("format") != format_name:
        raise TokenmillError(f"{path}: not a {format_name} description")
    return description


def load_pieces(folder: Path, names: dict[str, str]) -> tuple[np.ndarray, np.ndarray]:
    """``(pieces, sample_offsets)`` of a packing output, memory-mapped: ``(document, start, end)`` rows and each
    sample's first row (the layout of docs/formats.md §13, which SFT rows share).

    Raises:
        TokenmillError: a missing or unreadable file, or arrays that do not fit each other.
    """
    pieces, offsets = (load_npy(folder / names[key]) for key in ("pieces", "sample_offsets"))
    if pieces.ndim != 2 or pieces.shape[1] != 3 or offsets.ndim != 1 or not len(offsets) or \
            offsets[-1] != len(pieces):
        raise TokenmillError(f"{folder / names['pieces']}: does not match {names['sample_offsets']}")
    return pieces, offsets


def load_packed_index(cache_dir: str | os.PathLike, strategy: str,
                      split_name: str) -> tuple[dict, np.ndarray, np.ndarray]:
    """One split's ``(description, pieces, sample_offsets)``, the arrays memory-mapped.

    Raises:
        TokenmillError: a missing or unreadable file, or one that is not a packed index.
    """
    names = packed_index_names(strategy, split_name)
    description = read_description(Path(cache_dir) / names["description"], PACKED_INDEX_FORMAT,
                                   "no packed index (tokenmill best-fit builds it)")
    return (description, *load_pieces(Path(cache_dir), names))
