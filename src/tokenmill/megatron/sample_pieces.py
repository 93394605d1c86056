"""Which documents and token ranges make sample ``k`` of a GPTDataset cache: index arithmetic, no torch.

Megatron's GPTDataset (and tokenmill's :class:`tokenmill.training.nanoset.Nanoset`, ``tokenmill inspect
--sample``) reads sample ``k`` through three cached arrays:

1. ``shuffle_index[k]`` is the built sample ``s`` that the trainer's sample ``k`` is;
2. ``sample_index[s]`` and ``sample_index[s + 1]`` are ``(position in document_index, token
   offset)`` pairs: where sample ``s`` starts and where the next one does;
3. ``document_index[p]`` is the sequence id (document of the ``.bin/.idx``) at position ``p`` of the
   shuffled, epoch-repeated document order.

The sample is then the tail of the first sequence from its offset, every sequence between whole,
and the head of the last sequence up to its offset plus ``extra`` (1 where Megatron adds the extra
label token, ``add_extra_token``); when both ends are in one sequence, the range between them.

Kept apart from :mod:`tokenmill.training.nanoset` so that the CLI (``inspect``) answers in an install
without torch. Cost: O(1) array lookups plus O(pieces) for the sequences the sample spans (at most
``seq_length + extra`` of them); on memory-mapped arrays that reads a few pages, never whole arrays.
"""

from __future__ import annotations

import numpy as np

__all__ = ["sample_pieces"]


def sample_pieces(document_index: np.ndarray, sample_index: np.ndarray, shuffle_index: np.ndarray,
                  sizes: np.ndarray, k: int, extra: int = 1) -> list[tuple[int, int, int]]:
    """The (sequence id, offset, length) pieces that sample ``k`` is made of, extra token included.

    Args:
        document_index, sample_index, shuffle_index: a split's cached GPTDataset arrays.
        sizes: tokens per sequence of the indexed dataset (``MMapIndexedDataset.sizes``).
        k: the sample as the trainer numbers it (before ``shuffle_index``); negative counts from the end.
        extra: 1 if samples carry Megatron's extra label token, else 0.

    Raises:
        IndexError: ``k`` outside the split's samples.
    """
    sample = int(shuffle_index[range(len(shuffle_index))[k]])
    (first, first_offset), (last, last_offset) = sample_index[sample], sample_index[sample + 1]
    first, first_offset, last, last_offset = int(first), int(first_offset), int(last), int(last_offset)
    if first == last:
        return [(int(document_index[first]), first_offset, last_offset + extra - first_offset)]
    sequences = document_index[first:last + 1].tolist()
    pieces = [(sequences[0], first_offset, int(sizes[sequences[0]]) - first_offset)]
    pieces += [(sequence, 0, int(sizes[sequence])) for sequence in sequences[1:-1]]
    pieces.append((sequences[-1], 0, last_offset + extra))
    return pieces
