"""What ``tokenmill pack`` takes from each line and how it tokenizes it (:class:`PackSettings`, its defaults the
workflow config's), and the threads a job of a given size keeps busy (:func:`useful_workers`, which the workflow
asks for each job's ``threads:``). The batches themselves: :mod:`tokenmill.pack.batches`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from tokenmill.config import default
from tokenmill.errors import TokenmillError
from tokenmill.tokenization.engine import ENGINES
from tokenmill.tokenization.families import HF_TYPE, TIKTOKEN_DEFAULT_SPECIALS, TokenizerSpec
from tokenmill.tokenization.proof import DEFAULT_CHECK_FRACTION

__all__ = ["PackSettings", "BATCH_BYTES", "BAD_LINE_POLICIES", "MISMATCH_POLICIES", "useful_workers"]

# JSONL bytes per batch: big enough that the proof's HF calls use both threads (1.1x over 1 MiB).
BATCH_BYTES = 4 << 20
BAD_LINE_POLICIES = ("error", "skip")
MISMATCH_POLICIES = ("error", "hf")
def useful_workers(text_bytes: float, workers: int, batch_bytes: int = BATCH_BYTES) -> int:
    """The threads a job of ``text_bytes`` keeps busy, at most ``workers``: one per batch (a scheduler then
    runs small jobs side by side instead of holding idle cores)."""
    return max(1, min(workers, math.ceil(text_bytes / batch_bytes)))


@dataclass(frozen=True)
class PackSettings:
    """What to take from each line and how to tokenize it.

    Args:
        tokenizer_path: a Hugging Face ``tokenizer.json``, or the files of ``tokenizer_type``.
        text: jq pattern selecting the text; a plain ``.key`` is read with orjson directly.
        eod: end-of-document token string appended to every document; None appends nothing.
        add_special_tokens: let the tokenizer's post-processor add its BOS/EOS (HF default, as
            Modalities does).
        on_bad_line: ``"error"`` stops at the first bad line, ``"skip"`` counts and leaves it out.
        workers: tokenizer threads of this process, at most this many cores (see
            :func:`~tokenmill.pack.batches.ordered_results`).
        batch_bytes: approximate JSONL bytes per batch.
        engine: ``auto``, ``hf`` or ``fastokens`` (see :class:`tokenmill.tokenization.engine.Encoder`).
        check_fraction: with a fast engine, the share of documents re-encoded whole with HF, besides
            excerpts around risky spots (1.0: all of them; see :mod:`tokenmill.tokenization.proof`).
        on_mismatch: a fast-engine document that differs from HF: ``"error"`` stops the run naming
            file, line and token; ``"hf"`` re-encodes that whole input with HF.
        max_line_bytes: longer lines are bad lines, never read: Hugging Face's encoder holds ~125
            bytes per input byte (a 20 MB document peaks at 2.6 GB; fastokens ~10), so this bounds
            a worker's memory at ~125 × max_line_bytes.
        allow_duplicate_inputs: pack a file named twice among the inputs twice (recorded in the
            sidecar); by default that is an error, as it would count its documents twice.
        tokenizer_type, tiktoken_pattern, tiktoken_num_special_tokens, vocab_size: a Megatron tokenizer
            type and its options (see :class:`tokenmill.tokenization.families.TokenizerSpec`).
    """

    # The defaults are the workflow config's (its schema), as the CLI's are.
    tokenizer_path: str
    text: str = field(default_factory=lambda: default("datasets.*.text"))
    eod: str | None = None
    add_special_tokens: bool = field(default_factory=lambda: default("tokenizers.*.add_special_tokens"))
    on_bad_line: str = field(default_factory=lambda: default("datasets.*.on_bad_line"))
    workers: int = 1
    batch_bytes: int = BATCH_BYTES
    engine: str = field(default_factory=lambda: default("tokenizers.*.engine"))
    check_fraction: float = DEFAULT_CHECK_FRACTION
    on_mismatch: str = field(default_factory=lambda: default("tokenizers.*.on_mismatch"))
    max_line_bytes: int = field(default_factory=lambda: default("datasets.*.max_line_bytes"))
    allow_duplicate_inputs: bool = field(default_factory=lambda: default("datasets.*.allow_duplicate_inputs"))
    tokenizer_type: str = HF_TYPE
    tiktoken_pattern: str = "v2"
    tiktoken_num_special_tokens: int = TIKTOKEN_DEFAULT_SPECIALS
    vocab_size: int | None = None

    @property
    def tokenizer_spec(self) -> TokenizerSpec:
        """The tokenizer as :func:`tokenmill.tokenization.tokenizer.load_tokenizer` takes it."""
        return TokenizerSpec(str(self.tokenizer_path), self.tokenizer_type, self.tiktoken_pattern,
                             self.tiktoken_num_special_tokens, self.vocab_size)

    def __post_init__(self):
        if self.on_bad_line not in BAD_LINE_POLICIES:
            raise TokenmillError(f"on_bad_line must be one of {BAD_LINE_POLICIES}, not {self.on_bad_line!r}")
        if self.workers < 1:
            raise TokenmillError(f"workers must be at least 1, not {self.workers}")
        if self.engine not in ENGINES:
            raise TokenmillError(f"engine must be one of {ENGINES}, not {self.engine!r}")
        if not 0 <= self.check_fraction <= 1:
            raise TokenmillError(f"check fraction must lie in [0, 1], not {self.check_fraction}")
        if self.max_line_bytes < 1:
            raise TokenmillError(f"max_line_bytes must be at least 1, not {self.max_line_bytes}")
        if self.on_mismatch not in MISMATCH_POLICIES:
            raise TokenmillError(f"on_mismatch must be one of {MISMATCH_POLICIES}, not {self.on_mismatch!r}")
