"""Pickled ``(int, int)`` pair lists, the index format of Modalities' raw index and ``.pbin`` files.

Reading: a restricted unpickler whose ``find_class`` refuses everything, so a pickle can build
only lists, tuples, ints and other built-in atoms — never call a function. Any global, reduce or
persistent-id opcode therefore fails before anything runs. The result must then have exactly the
shape of an index — a list of 2-tuples of ints — checked level by level at C speed (``map(type,
...)`` into a set) *before* anything walks it deeply: a crafted pickle of a few hundred bytes can
nest shared references into a graph whose expansion (by ``np.array`` or ``repr``) would take
gigabytes. Unpickling does O(1) work per opcode and the shape checks O(1) per element built, so
reading costs O(file size) whatever the file holds; error messages describe a bad value by its
type, never by its ``repr``. The pairs are returned as an ``(n, 2)`` int64 array.

Writing: :func:`dumps_pairs` produces the exact bytes of CPython's
``pickle.dumps(list_of_tuples, protocol=4)`` — what Modalities writes — from two numpy arrays,
vectorised, without creating a Python object per pair (about 12 bytes per pair of output, ~25 bytes
per pair of scratch). The protocol-4 stream for a list of pairs is::

    80 04                      PROTO 4
    95 <u64 n>                 FRAME of n bytes (repeated; see below)
    5d 94                      EMPTY_LIST, MEMOIZE
    28 <pair>*1000 65          MARK, up to 1000 pairs, APPENDS   (a 1-element list: <pair> 61 APPEND)
    2e                         STOP
    <pair> = <int> <int> 86 94 (TUPLE2, MEMOIZE)
    <int>  = 4b u8 | 4d u16 | 4a i32 | 8a <n> <n bytes two's complement>   (BININT1/2/BININT/LONG1)

CPython's C pickler checks, before it saves each object (each tuple and each int in it), whether the
current frame holds ≥ 64 KiB and if so closes it there; a final frame shorter than 4 bytes gets no
FRAME header. Both rules are reproduced below; the test suite compares with ``pickle.dumps``.
"""

from __future__ import annotations

import io
import itertools
import pickle

import numpy as np

from tokenmill.errors import TokenmillError

__all__ = ["dumps_pairs", "loads_pairs"]

_FRAME_SIZE_TARGET = 64 * 1024  # CPython's _pickle.c FRAME_SIZE_TARGET
_FRAME_SIZE_MIN = 4  # frames shorter than this are written without a FRAME header
_APPENDS_BATCH = 1000  # CPython's BATCHSIZE for list appends
_MAX_INT_SLOT = 10  # opcode + LONG1 length byte + at most 8 value bytes


class _RefusingUnpickler(pickle.Unpickler):
    """Unpickler that can build containers and atoms but can look up no global at all."""

    def find_class(self, module: str, name: str):  # noqa: D401 - pickle API
        raise pickle.UnpicklingError(f"refusing to load global {module}.{name}: data files hold no code")

    def persistent_load(self, pid):
        raise pickle.UnpicklingError("refusing persistent id: data files hold no code")


def loads_pairs(data: bytes | memoryview, source: str) -> np.ndarray:
    """Unpickle a list of ``(int, int)`` pairs without running any code.

    Args:
        data: the pickle bytes.
        source: how to name the data in errors (file and byte offset).

    Returns:
        An ``(n, 2)`` int64 array.

    Raises:
        TokenmillError: the bytes are not a pickle, would need code to load, or hold anything
            but a list of pairs of non-negative ints.
    """
    try:
        value = _RefusingUnpickler(io.BytesIO(data)).load()
    except Exception as exc:  # the C unpickler raises many types on corrupt input
        raise TokenmillError(f"{source}: not a readable index pickle ({type(exc).__name__}: "
                             f"{_excerpt(str(exc))})") from None
    if type(value) is not list:
        raise TokenmillError(f"{source}: index pickle holds a {type(value).__name__}, expected a list of pairs")
    if not value:
        return np.empty((0, 2), dtype=np.int64)
    # Shape first, one level at a time, without recursing into anything: the entries must all be
    # tuples, of length 2, holding ints (bool and int subclasses excluded by `type(...) is`).
    entry_types = set(map(type, value))
    if entry_types != {tuple}:
        raise TokenmillError(f"{source}: index pickle is not a list of (int, int) pairs (it holds "
                             f"{_type_names(entry_types)} entries)")
    entry_lengths = set(map(len, value))
    if entry_lengths != {2}:
        raise TokenmillError(f"{source}: index pickle is not a list of (int, int) pairs (it holds tuples of "
                             f"{_excerpt(', '.join(map(str, sorted(entry_lengths))))} elements)")
    element_types = set(map(type, itertools.chain.from_iterable(value)))
    if element_types != {int}:
        raise TokenmillError(f"{source}: index pickle is not a list of (int, int) pairs (its pairs hold "
                             f"{_type_names(element_types)} values)")
    try:
        pairs = np.array(value, dtype=np.int64)
    except OverflowError:
        raise TokenmillError(f"{source}: index pickle holds an int beyond 64 bits") from None
    if pairs.min() < 0:
        raise TokenmillError(f"{source}: index entry {int(np.argmin(pairs.min(axis=1)))} is negative")
    return pairs


_EXCERPT_CHARACTERS = 120


def _excerpt(text: str) -> str:
    """``text`` cut to a short excerpt, so that a crafted file cannot flood an error message."""
    return text if len(text) <= _EXCERPT_CHARACTERS else text[:_EXCERPT_CHARACTERS] + "..."


def _type_names(types: set[type]) -> str:
    return _excerpt(" and ".join(sorted(kind.__name__ for kind in types)))


def _encode_ints(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Encode non-negative ints as pickle int opcodes in fixed ``_MAX_INT_SLOT``-byte slots.

    Returns ``(slots, used)``: an ``(n, 10)`` uint8 array and how many leading bytes of each slot
    belong to the encoding.
    """
    values = values.astype(np.uint64)
    value_bytes = values.astype("<u8").view(np.uint8).reshape(-1, 8)
    slots = np.zeros((len(values), _MAX_INT_SLOT), dtype=np.uint8)
    used = np.empty(len(values), dtype=np.int64)

    small = values < 256  # BININT1: 'K' u8
    medium = ~small & (values < 65536)  # BININT2: 'M' u16
    word = ~small & ~medium & (values < 2**31)  # BININT: 'J' i32
    long1 = ~small & ~medium & ~word  # LONG1: 0x8a, n, n bytes little-endian two's complement

    slots[small, 0] = ord("K")
    slots[medium, 0] = ord("M")
    slots[word, 0] = ord("J")
    slots[long1, 0] = 0x8A
    slots[:, 1:5] = value_bytes[:, 0:4]  # K/M/J payloads; unused bytes are masked off by `used`
    used[small], used[medium], used[word] = 2, 3, 5

    # LONG1 length = bit_length // 8 + 1 (room for a clear sign bit): one more byte for every
    # power 2**(8k - 1) the value reaches.
    n_bytes = 1 + sum((values >= np.uint64(2 ** (8 * k - 1))).astype(np.int64) for k in range(1, 8))
    slots[long1, 1] = n_bytes[long1]
    slots[long1, 2:10] = value_bytes[long1]
    used[long1] = 2 + n_bytes[long1]
    return slots, used


def dumps_pairs(first: np.ndarray, second: np.ndarray) -> bytes:
    """The bytes of ``pickle.dumps(list(zip(first, second)), protocol=4)`` for non-negative ints.

    Args:
        first: the first element of every pair (e.g. byte offsets).
        second: the second element of every pair (e.g. byte lengths).

    Returns:
        The pickle, byte-identical to CPython's C pickler.

    Raises:
        ValueError: the arrays differ in length or hold a negative value or one ≥ 2**63.
    """
    first, second = np.asarray(first), np.asarray(second)
    if first.shape != second.shape or first.ndim != 1:
        raise ValueError("dumps_pairs needs two 1-D arrays of the same length")
    n_pairs = len(first)
    if n_pairs and (min(first.min(), second.min()) < 0 or max(first.max(), second.max()) >= 2**63):
        raise ValueError("dumps_pairs encodes ints in [0, 2**63) only")

    # Each pair becomes one row [MARK? | int slot | int slot | TUPLE2 MEMOIZE | APPENDS?]: the
    # first pair of each batch of 1000 carries the MARK, the last one the APPENDS (a list of exactly
    # one element uses a single APPEND instead). Masking unused bytes and flattening row-major
    # yields the list's opcodes.
    first_slots, first_used = _encode_ints(first)
    second_slots, second_used = _encode_ints(second)
    pair_index = np.arange(n_pairs)
    has_mark = (pair_index % _APPENDS_BATCH == 0) & (n_pairs > 1)
    has_append = ((pair_index % _APPENDS_BATCH == _APPENDS_BATCH - 1) | (pair_index == n_pairs - 1))
    mark = np.full((n_pairs, 1), ord("("), np.uint8)
    append = np.full((n_pairs, 1), ord("e") if n_pairs > 1 else ord("a"), np.uint8)
    tuple2 = np.tile(np.array([0x86, 0x94], np.uint8), (n_pairs, 1))
    rows = np.concatenate([mark, first_slots, second_slots, tuple2, append], axis=1)
    column = np.arange(rows.shape[1])
    second_column = 1 + _MAX_INT_SLOT
    keep = (((column == 0) & has_mark[:, None])
            | ((column >= 1) & (column < 1 + first_used[:, None]))
            | ((column >= second_column) & (column < second_column + second_used[:, None]))
            | ((column > 2 * _MAX_INT_SLOT) & (column < rows.shape[1] - 1))
            | ((column == rows.shape[1] - 1) & has_append[:, None]))
    row_sizes = keep.sum(axis=1)
    stream = np.concatenate([np.array([0x5D, 0x94], np.uint8), rows[keep], np.array([ord(".")], np.uint8)])

    # Frame checks happen before each tuple and before each of its ints (the check before the
    # first int is at the tuple's own start, so it adds nothing).
    pair_start = 2 + np.cumsum(row_sizes) - row_sizes + has_mark
    checks = np.sort(np.concatenate([pair_start, pair_start + first_used]))
    out = [b"\x80\x04"]
    frame_start = 0
    while True:
        k = np.searchsorted(checks, frame_start + _FRAME_SIZE_TARGET)
        frame_end = int(checks[k]) if k < len(checks) else len(stream)
        frame = stream[frame_start:frame_end].tobytes()
        if len(frame) >= _FRAME_SIZE_MIN:
            out.append(b"\x95" + len(frame).to_bytes(8, "little"))
        out.append(frame)
        if frame_end == len(stream):
            return b"".join(out)
        frame_start = frame_end
