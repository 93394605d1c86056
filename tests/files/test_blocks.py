"""files/blocks: one block size, 16 Mi units, that .pbin copies, raw-index scans and token walks take at once."""

import hashlib
import io

import numpy as np

from tokenmill.files.blocks import BLOCK
from tokenmill.formats.document_blocks import BLOCK_TOKENS, document_blocks
from tokenmill.formats.pbin import copy_bytes


def test_the_block_is_16_mib_and_the_token_walk_takes_the_same_number_of_tokens():
    assert BLOCK == 16 * 1024 * 1024 == BLOCK_TOKENS


def test_a_copy_reads_one_block_at_a_time_and_copies_every_byte(tmp_path):
    data = np.random.default_rng(3).integers(0, 256, BLOCK + 7, dtype=np.uint8).tobytes()
    source = tmp_path / "source"
    source.write_bytes(b"head" + data)
    target, digest, copied = io.BytesIO(), hashlib.sha256(), []
    with open(source, "rb") as handle:
        handle.seek(4)
        copy_bytes(handle, target, len(data), digest, copied.append)
    assert copied == [BLOCK, 7]
    assert target.getvalue() == data and digest.hexdigest() == hashlib.sha256(data).hexdigest()


def test_a_walk_of_documents_by_default_cuts_runs_of_about_one_block_of_tokens():
    ends = np.cumsum(np.full(40, BLOCK // 10, dtype=np.int64))  # 40 documents of a tenth of a block each
    runs = list(document_blocks(ends))
    assert len(runs) == 4
