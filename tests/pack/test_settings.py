"""pack/settings: what `tokenmill pack` takes from each line and how it tokenizes it (PackSettings, its
defaults the workflow config's, each option refused in one line when out of range), and the threads a job of a
given size keeps busy (useful_workers: one per batch, at most the workers asked)."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tokenmill.errors import TokenmillError
from tokenmill.pack.settings import BATCH_BYTES, PackSettings, useful_workers
from tokenmill.tokenization.families import TokenizerSpec


def test_a_job_keeps_one_thread_per_batch_busy_and_at_least_one():
    assert BATCH_BYTES == 4 << 20
    assert useful_workers(0, 8) == 1  # an empty input still takes one
    assert useful_workers(BATCH_BYTES, 8) == 1
    assert useful_workers(BATCH_BYTES + 1, 8) == 2
    assert useful_workers(100 * BATCH_BYTES, 8) == 8
    assert useful_workers(10_000, 8, batch_bytes=1000) == 8 and useful_workers(3000, 8, batch_bytes=1000) == 3


@given(text_bytes=st.integers(0, 1 << 40), workers=st.integers(1, 256), batch_bytes=st.integers(1, 1 << 26))
def test_useful_workers_never_exceed_the_batches_or_the_workers_asked(text_bytes, workers, batch_bytes):
    threads = useful_workers(text_bytes, workers, batch_bytes)
    assert 1 <= threads <= workers
    assert threads == workers or (threads - 1) * batch_bytes < max(text_bytes, 1)


@pytest.mark.parametrize("option, value, message", [
    ("on_bad_line", "ignore", r"on_bad_line must be one of \('error', 'skip'\), not 'ignore'"),
    ("workers", 0, "workers must be at least 1, not 0"),
    ("engine", "fast", "engine must be one of"),
    ("check_fraction", 1.5, r"check fraction must lie in \[0, 1\], not 1.5"),
    ("max_line_bytes", 0, "max_line_bytes must be at least 1, not 0"),
    ("on_mismatch", "warn", r"on_mismatch must be one of \('error', 'hf'\), not 'warn'"),
])
def test_each_option_out_of_range_is_refused_in_one_line(option, value, message):
    with pytest.raises(TokenmillError, match=message):
        PackSettings("t.json", **{option: value})


def test_the_tokenizer_spec_carries_the_megatron_type_and_its_options():
    settings = PackSettings("tok.model", tokenizer_type="TikTokenizer", tiktoken_pattern="v1",
                            tiktoken_num_special_tokens=100, vocab_size=1000)
    assert settings.tokenizer_spec == TokenizerSpec("tok.model", "TikTokenizer", "v1", 100, 1000)
    assert PackSettings("t.json").tokenizer_spec.path == "t.json"
