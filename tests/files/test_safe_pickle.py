"""The pair-list pickle: byte-identical to CPython's, and never runs code when read."""

import os
import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tokenmill.errors import TokenmillError
from tokenmill.files.safe_pickle import dumps_pairs, loads_pairs


def test_two_pairs_worked_example():
    # PROTO 4 | FRAME 18 | EMPTY_LIST MEMOIZE MARK | K 0 K 5 TUPLE2 MEMOIZE | K 5 M 300 TUPLE2 MEMOIZE | APPENDS STOP
    expected = (b"\x80\x04" b"\x95\x12\x00\x00\x00\x00\x00\x00\x00" b"]\x94("
                b"K\x00K\x05\x86\x94" b"K\x05M,\x01\x86\x94" b"e.")
    assert dumps_pairs(np.array([0, 5]), np.array([5, 300])) == expected
    assert pickle.dumps([(0, 5), (5, 300)], protocol=4) == expected


def test_empty_and_single_element_lists():
    assert dumps_pairs(np.array([], np.int64), np.array([], np.int64)) == b"\x80\x04]\x94."
    # one element: APPEND ('a') instead of MARK ... APPENDS
    assert dumps_pairs(np.array([0]), np.array([5])) == pickle.dumps([(0, 5)], protocol=4)


def test_every_int_opcode_boundary():
    values = [0, 255, 256, 65535, 65536, 2**31 - 1, 2**31, 2**32, 2**39 - 1, 2**39, 2**47, 2**55, 2**63 - 1]
    pairs = [(a, b) for a in values for b in values]
    first, second = np.array([p[0] for p in pairs]), np.array([p[1] for p in pairs])
    assert dumps_pairs(first, second) == pickle.dumps(pairs, protocol=4)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2**63 - 1), st.integers(0, 2**40)), max_size=300),
       st.sampled_from([1, 3, 999, 1000, 1001, 7000]))
@pytest.mark.slow
def test_equals_cpython_pickle_across_batches_and_frames(pairs, repeat):
    # Repeating the drawn pairs pushes lists across the 1000-item batches and 64 KiB frames. Each
    # pair must be a new tuple object, as in a real index: pickle memoizes a repeated object.
    pairs = [(a, b) for a, b in pairs * repeat]
    first = np.array([p[0] for p in pairs], dtype=np.int64)
    second = np.array([p[1] for p in pairs], dtype=np.int64)
    payload = dumps_pairs(first, second)
    assert payload == pickle.dumps(pairs, protocol=4)
    assert loads_pairs(payload, "x").tolist() == [list(p) for p in pairs]


def test_a_pickle_that_would_run_code_is_refused_and_nothing_runs(tmp_path):
    marker = tmp_path / "ran"

    class Exploit:
        def __reduce__(self):
            return os.system, (f"touch {marker}",)

    with pytest.raises(TokenmillError, match=r"evil\.idx: .*refusing to load global .*system"):
        loads_pairs(pickle.dumps([Exploit()]), "evil.idx")
    assert not marker.exists()


@pytest.mark.parametrize("value, message", [
    ({"a": 1}, "holds a dict"),
    ([(1, 2, 3)], "not a list of \\(int, int\\) pairs"),
    ([(1, 2.5)], "not a list of \\(int, int\\) pairs"),
    ([(1, "2")], "not a list of \\(int, int\\) pairs"),
    ([(0, 1), (5, -1)], "entry 1 is negative"),
    ([(0, 2**70)], "an int beyond 64 bits"),
    ([(0, True)], "not a list of \\(int, int\\) pairs"),
    ([[0, 1]], "not a list of \\(int, int\\) pairs"),
])
def test_anything_but_pairs_of_ints_is_refused(value, message):
    with pytest.raises(TokenmillError, match=message):
        loads_pairs(pickle.dumps(value), "f.idx")


def test_truncated_pickle_is_refused():
    payload = pickle.dumps([(i, i) for i in range(100)], protocol=4)
    with pytest.raises(TokenmillError, match="f.idx: not a readable index pickle"):
        loads_pairs(payload[:-7], "f.idx")
