"""The kinds of format, each named once with what it is and what it does: the output formats a dataset is made
in (the config's ``datasets.*.formats``) and the kinds of source a sidecar records (a ``SourceRecord``'s
``format``). The plan, ``verify`` and the views loop over this table (or the name sets drawn from it below)
instead of spelling names: a format is its module (writer, reader, conversion) plus its row here.

Output formats:

==========  =================  ===============  =====================  =============  ====================
name        version key        ``pack`` option  holds the .pbin's      reader ends a  best-fit packs for it
            (FORMAT_VERSIONS)                   tokens (verify         document at    (powers of two only)
                                                ``--made-from``)       every EOS
==========  =================  ===============  =====================  =============  ====================
pbin        pbin               ``-o``           (it is the .pbin)      no             no
megatron    mmidx              ``--megatron``   yes: in pack's pass    no             yes
datatrove   datatrove          ``--datatrove``  yes: converted         yes            no
olmo        olmo               ``--olmo``       yes: converted         yes            yes (yes)
==========  =================  ===============  =====================  =============  ====================

(The workflow converts datatrove's and OLMo's files from the build's ``.pbin``, so that adding either format to a
built dataset never tokenizes it again; ``tokenmill pack`` can also write them in its own pass.)

==========  ==========  =========================  ==========================  ==============  ===============
name        folder      stem (a build's name)      files (the stem followed    verify and      sample indices
                                                   by each)                    inspect given   built over it
==========  ==========  =========================  ==========================  ==============  ===============
pbin        packed      ``{build}.pbin``           "", ``.meta.json``          the stem        no
megatron    megatron    ``{build}_text_document``  ``.bin``, ``.idx``          the prefix      yes
datatrove   datatrove   ``{build}/{build}``        ``.ds``, ``.ds.index``,     ``NAME.ds``     no
                                                   ``.ds.metadata``
olmo        olmo        ``{build}``                "" (a folder)               the folder      no
==========  ==========  =========================  ==========================  ==============  ===============

Where a row's files lie is data of the row, relative to the workflow's data folder: its ``folder``, the name a
build's files take there (``stem``, what its tools are given: a Megatron prefix, a datatrove ``NAME``) and the
files beside that name; :mod:`tokenmill.plan.layout` (a room above this one) puts them under the data folder,
so each format's names are spelled here once and the layout spells the tree. What a row does are plain
functions of its own module: how a path given to ``verify`` or ``inspect`` is known as one of its files, its
structural check, its check against the ``.pbin`` it was made from (:mod:`tokenmill.formats.peer_rules`), its
``inspect`` lines and documents, its conversion from a ``.pbin``. The ``.pbin`` itself has none of these hooks:
its checks and views read its sidecar, and ``verify`` and the views hold them.

Kinds of source in a sidecar: absent for JSONL (numbered by line), ``parquet`` (by row), and the tokens read in
by ``tokens-in``, numbered by document: ``megatron`` (a ``.bin/.idx`` prefix, recorded by its ``.bin``) and
``pbin``.

Cost: constants; each hook costs what its docstring says.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from tokenmill.errors import TokenmillError
from tokenmill.formats import datatrove, bin_idx, olmo, peer_rules
from tokenmill.formats.pbin import PbinFile

__all__ = ["OutputFormat", "OUTPUT_FORMATS", "MADE_FROM_PBIN", "EOS_SCANNED", "BEST_FIT_FORMATS",
           "BEST_FIT_POWER_OF_TWO", "SAMPLED", "formats_of", "format_of", "SourceKind", "SOURCE_KINDS",
           "TOKENS_READ_IN", "source_unit"]


@dataclass(frozen=True)
class OutputFormat:
    """An output format of a build (the config's ``datasets.*.formats``): what it is, where its files lie, what
    it does. Paths are relative to the workflow's data folder, ``{build}`` standing for a build's (or a pack
    unit's) name."""

    name: str
    version_key: str  # its key in tokenmill.FORMAT_VERSIONS
    pack_flag: str  # the `tokenmill pack` option that writes it in pack's own pass
    made_from_pbin: bool  # holds the build's .pbin tokens, checked against it (verify --made-from); False: the .pbin
    eos_scanned: bool  # its reader finds documents by scanning for the EOS: an ordinary-token EOD cuts them
    best_fit: bool  # best-fit packing packs for it
    folder: str  # its folder in the data folder
    stem: str  # a build's name in it, as its tools take it ("{build}_text_document": a Megatron prefix)
    files: tuple[str, ...]  # what it writes: the stem followed by each ("": the stem itself, a file or a folder)
    in_pack_pass: bool  # the workflow writes it in each pack unit's pass (merged as the .pbin), else converts it
    sampled: bool  # Megatron's sample indices are built over it: index caches, blends, the packed index
    same_documents: bool  # its document i is the .pbin's document i: inspect shows that document's source
    summary: str  # the build summary's word for it: "{path}" its stem, "{folder}" the stem's folder
    recognises: Callable[[Path], bool]  # whether a path given to verify or inspect is one of its files
    named_by: str = ""  # the file verify and inspect are given: the stem followed by this
    summary_size: bool = False  # the summary adds the size of its first file
    power_of_two_lengths: bool = False  # best-fit packing for it takes only sequence lengths that are powers of 2
    check: Callable[[Path], list[str]] | None = None  # its structure's problems (None: the .pbin, verify's own)
    made_from: Callable[[Path, Path], list[str]] | None = None  # (.pbin, its file): problems against the .pbin
    describe: Callable[[Path], list[str]] | None = None  # inspect's lines (None: the .pbin, the views' own)
    document: Callable[[Path, int], np.ndarray] | None = None  # inspect --doc: document i's tokens (None: none)
    convert: Callable[..., dict] | None = None  # convert(pbin_path, stem path, **its options): from a .pbin


def _pbin_document(path: Path, document: int) -> np.ndarray:
    """Document ``document`` of a ``.pbin``.

    Raises:
        TokenmillError: no such document.
    """
    pbin = PbinFile(path)
    if not 0 <= document < pbin.num_documents:
        raise TokenmillError(f"{path}: no document {document} (it has {pbin.num_documents})")
    return pbin.document(document)


#: Every output format, in the order the config's schema lists them (and every loop over a build's formats).
OUTPUT_FORMATS: dict[str, OutputFormat] = {kind.name: kind for kind in (
    OutputFormat("pbin", "pbin", "-o", made_from_pbin=False, eos_scanned=False, best_fit=False,
                 folder="packed", stem="{build}.pbin", files=("", ".meta.json"), in_pack_pass=True, sampled=False,
                 same_documents=True, summary="{path}", summary_size=True,
                 recognises=lambda path: Path(path).suffix == ".pbin", document=_pbin_document),
    OutputFormat("megatron", "mmidx", "--megatron", made_from_pbin=True, eos_scanned=False, best_fit=True,
                 folder="megatron", stem="{build}_text_document", files=(".bin", ".idx"), in_pack_pass=True,
                 sampled=True, same_documents=True, summary="Megatron {path}", summary_size=True,
                 recognises=bin_idx.is_megatron_dataset, check=bin_idx.megatron_problems,
                 made_from=peer_rules.megatron_made_from, describe=bin_idx.describe_megatron,
                 document=bin_idx.megatron_document, convert=bin_idx.pbin_to_megatron),
    OutputFormat("datatrove", "datatrove", "--datatrove", made_from_pbin=True, eos_scanned=True, best_fit=False,
                 folder="datatrove", stem="{build}/{build}", files=(".ds", ".ds.index", ".ds.metadata"),
                 named_by=".ds", in_pack_pass=False, sampled=False, same_documents=False,
                 summary="datatrove {folder}/", recognises=datatrove.is_datatrove,
                 check=peer_rules.datatrove_problems, made_from=peer_rules.datatrove_made_from,
                 describe=datatrove.describe_datatrove,
                 document=lambda path, document: datatrove.DatatroveFile(path).document(document),
                 convert=datatrove.pbin_to_datatrove),
    OutputFormat("olmo", "olmo", "--olmo", made_from_pbin=True, eos_scanned=True, best_fit=True,
                 power_of_two_lengths=True, folder="olmo", stem="{build}", files=("",), in_pack_pass=False,
                 sampled=False, same_documents=False, summary="OLMo {path}/", recognises=olmo.is_olmo_folder,
                 check=olmo.verify_olmo, made_from=lambda pbin, folder: olmo.verify_olmo(folder, pbin),
                 describe=olmo.describe_olmo, convert=olmo.pbin_to_olmo),
)}
MADE_FROM_PBIN = frozenset(name for name, kind in OUTPUT_FORMATS.items() if kind.made_from_pbin)
EOS_SCANNED = frozenset(name for name, kind in OUTPUT_FORMATS.items() if kind.eos_scanned)
BEST_FIT_FORMATS = frozenset(name for name, kind in OUTPUT_FORMATS.items() if kind.best_fit)
BEST_FIT_POWER_OF_TWO = frozenset(name for name, kind in OUTPUT_FORMATS.items() if kind.power_of_two_lengths)
SAMPLED = frozenset(name for name, kind in OUTPUT_FORMATS.items() if kind.sampled)


def formats_of(names: list[str] | tuple[str, ...] | set[str]) -> list[OutputFormat]:
    """The rows of the formats ``names`` (a build's ``formats``), in the table's order, the ``.pbin``'s always
    (every other format is made from it)."""
    return [kind for name, kind in OUTPUT_FORMATS.items() if name in names or not kind.made_from_pbin]


def format_of(path: str | Path) -> OutputFormat | None:
    """The format a path given to ``verify`` or ``inspect`` is a file of (a Megatron dataset by its prefix,
    ``.bin`` or ``.idx``; a datatrove dataset by any of its files), or None: a raw index, a cache folder..."""
    path = Path(path)
    return next((kind for kind in OUTPUT_FORMATS.values() if kind.recognises(path)), None)


@dataclass(frozen=True)
class SourceKind:
    """A kind of source a sidecar records (its ``format``; absent: JSONL)."""

    name: str | None
    unit: str  # what its documents are numbered by in messages: "line", "row" or "document"
    tokens_read_in: bool  # tokens made elsewhere, read in by tokens-in: no text behind them


SOURCE_KINDS: dict[str | None, SourceKind] = {kind.name: kind for kind in (
    SourceKind(None, "line", tokens_read_in=False),
    SourceKind("parquet", "row", tokens_read_in=False),
    SourceKind("megatron", "document", tokens_read_in=True),
    SourceKind("pbin", "document", tokens_read_in=True),
)}
TOKENS_READ_IN = frozenset(name for name, kind in SOURCE_KINDS.items() if kind.tokens_read_in)


def source_unit(kinds: set[str | None]) -> str:
    """What the documents of sources of these kinds are numbered by: ``document`` where tokens were read in, else
    ``row`` for Parquet, else ``line``."""
    units = {SOURCE_KINDS[kind].unit for kind in kinds if kind in SOURCE_KINDS}
    return next((unit for unit in ("document", "row") if unit in units), "line")
