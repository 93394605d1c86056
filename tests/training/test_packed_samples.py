"""training/packed_samples: best-fit samples as fixed-length items shaped like a Nanoset's — each sample's pieces
back to back then padding, labels the next token, no loss on padding or the last real token (nor on the EOD with
eod_mask_loss), positions restarting at every piece, cu_seqlens at the pieces' bounds — and a packed blend's item
s as packed sample dataset_sample_index[s] of dataset dataset_index[s]. The packed index itself:
tests/best_fit/test_packed_index.py and test_packed_blend.py."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenmill.errors import TokenmillError
from tokenmill.formats.bin_idx import MMapIndexedDatasetBuilder
from tokenmill.best_fit.packed_blend import build_packed_blend
from tokenmill.best_fit.packed_index import build_packed_index
from tokenmill.training.packed_samples import PackedBlend, PackedSamples


def write_documents(prefix, documents: list[list[int]]) -> None:
    """A uint16 Megatron dataset of ``documents``, each one document of one sequence."""
    with MMapIndexedDatasetBuilder(prefix, np.uint16) as builder:
        for document in documents:
            builder.add_document(document, [len(document)])


@settings(max_examples=30, deadline=None)
@given(lengths=st.lists(st.integers(1, 20), min_size=1, max_size=10), length=st.integers(2, 12),
       seed=st.integers(0, 100), eod_mask_loss=st.booleans())
def test_every_token_is_in_one_item_once_and_each_item_is_laid_out_as_a_nanoset_s(tmp_path_factory, lengths, length,
                                                                                   seed, eod_mask_loss):
    folder = tmp_path_factory.mktemp("p")
    first = np.concatenate([[0], np.cumsum(lengths)])  # token t of document d is first[d] + t + 100, its last the EOD
    documents = [[*range(first[d] + 100, first[d] + 99 + size), 9] for d, size in enumerate(lengths)]
    write_documents(folder / "d", documents)
    build_packed_index(folder / "d", folder / "cache", length, seed, "1,0,0", "fragment")
    samples = PackedSamples(folder / "d", folder / "cache", "train", "fragment", eod_id=9, pad_id=7,
                            eod_mask_loss=eod_mask_loss)
    seen = []
    for k in range(len(samples)):
        item = samples[k]
        bounds = item["cu_seqlens"].tolist()
        used = int(samples.pieces[samples.sample_offsets[k]:samples.sample_offsets[k + 1], 2].sum())
        tokens = item["tokens"].tolist()
        assert len(tokens) == length and bounds[0] == 0 and bounds[-1] == length
        assert tokens[used:] == [0] * (length - used)  # padding reads as 0
        assert item["labels"].tolist() == tokens[1:used] + [0] * (length - used + 1)
        expected_mask = [0.0 if i >= used - 1 or (eod_mask_loss and tokens[i] == 9) else 1.0 for i in range(length)]
        assert item["loss_mask"].tolist() == expected_mask
        assert item["position_ids"].tolist() == [i - max(s for s in bounds[:-1] if s <= i) for i in range(length)]
        seen += tokens[:used]
    every = [token for document in documents for token in document]
    assert sorted(seen) == sorted(every)
    with pytest.raises(IndexError):
        samples[len(samples)]


def test_a_blend_item_is_its_dataset_s_packed_sample_and_the_prefixes_must_match(tmp_path):
    write_documents(tmp_path / "a", [[1, 2, 3, 9], [4, 5, 9], [6, 9]])
    write_documents(tmp_path / "b", [[7, 7, 7, 7, 7, 7, 9], [8, 9]])
    build_packed_blend([tmp_path / "a", tmp_path / "b"], [3, 1], tmp_path / "c", 8, 1, "1,0,0", {"train": 6})
    blend = PackedBlend(tmp_path / "c", prefixes=[tmp_path / "a", tmp_path / "b"], eod_id=9)
    parts = [PackedSamples(tmp_path / name, tmp_path / "c" / f"dataset-{i}", "train") for i, name in enumerate("ab")]
    for s in range(len(blend)):
        item = blend[s]
        own = parts[int(blend.dataset_index[s])][int(blend.dataset_sample_index[s])]
        assert item["dataset_id"] == int(blend.dataset_index[s])
        assert all(item[key].tolist() == own[key].tolist() for key in own)
    with pytest.raises(IndexError):
        blend[len(blend)]
    with pytest.raises(TokenmillError, match=r"c: a blend of 2 datasets, given 1 prefixes$"):
        PackedBlend(tmp_path / "c", prefixes=[tmp_path / "a"])
