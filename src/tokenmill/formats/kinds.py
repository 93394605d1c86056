"""The kinds of format, each named once with what it is: the output formats a dataset is made in (the config's
``datasets.*.formats``) and the kinds of source a sidecar records (a ``SourceRecord``'s ``format``). The plan,
``verify`` and the views ask this table (or the name sets drawn from it below) instead of spelling names.

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

Kinds of source in a sidecar: absent for JSONL (numbered by line), ``parquet`` (by row), and the tokens read in
by ``tokens-in``, numbered by document: ``megatron`` (a ``.bin/.idx`` prefix, recorded by its ``.bin``) and
``pbin``.

Cost: constants.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["OutputFormat", "OUTPUT_FORMATS", "MADE_FROM_PBIN", "EOS_SCANNED", "BEST_FIT_FORMATS",
           "BEST_FIT_POWER_OF_TWO", "SourceKind", "SOURCE_KINDS", "TOKENS_READ_IN", "source_unit"]


@dataclass(frozen=True)
class OutputFormat:
    """An output format of a build (the config's ``datasets.*.formats``)."""

    name: str
    version_key: str  # its key in tokenmill.FORMAT_VERSIONS
    pack_flag: str  # the `tokenmill pack` option that writes it in pack's own pass
    made_from_pbin: bool  # holds the build's .pbin tokens, checked against it (verify --made-from)
    eos_scanned: bool  # its reader finds documents by scanning for the EOS: an ordinary-token EOD cuts them
    best_fit: bool  # best-fit packing packs for it
    power_of_two_lengths: bool = False  # best-fit packing for it takes only sequence lengths that are powers of 2


#: Every output format, in the order the config's schema lists them.
OUTPUT_FORMATS: dict[str, OutputFormat] = {kind.name: kind for kind in (
    OutputFormat("pbin", "pbin", "-o", made_from_pbin=False, eos_scanned=False, best_fit=False),
    OutputFormat("megatron", "mmidx", "--megatron", made_from_pbin=True, eos_scanned=False, best_fit=True),
    OutputFormat("datatrove", "datatrove", "--datatrove", made_from_pbin=True, eos_scanned=True, best_fit=False),
    OutputFormat("olmo", "olmo", "--olmo", made_from_pbin=True, eos_scanned=True, best_fit=True,
                 power_of_two_lengths=True),
)}
MADE_FROM_PBIN = frozenset(name for name, kind in OUTPUT_FORMATS.items() if kind.made_from_pbin)
EOS_SCANNED = frozenset(name for name, kind in OUTPUT_FORMATS.items() if kind.eos_scanned)
BEST_FIT_FORMATS = frozenset(name for name, kind in OUTPUT_FORMATS.items() if kind.best_fit)
BEST_FIT_POWER_OF_TWO = frozenset(name for name, kind in OUTPUT_FORMATS.items() if kind.power_of_two_lengths)


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
