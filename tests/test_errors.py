"""errors: one exception type for user-facing failures, its message one line naming file, line and what is
wrong; a BadLine keeps path, line and reason apart (for the sidecars' skip counts) and crosses worker
processes with its fields."""

import pickle

from hypothesis import given
from hypothesis import strategies as st

from tokenmill.errors import BadLine, TokenmillError


def test_a_bad_line_is_a_tokenmill_error_whose_message_is_file_line_and_reason():
    reason = "not valid JSON (Expecting value at column 1)"
    error = BadLine("data/x.jsonl", 17, reason)
    assert isinstance(error, TokenmillError)
    assert str(error) == "data/x.jsonl:17: not valid JSON (Expecting value at column 1)"
    assert (error.path, error.line, error.reason) == ("data/x.jsonl", 17, reason)


@given(path=st.text(min_size=1, max_size=40), line=st.integers(1, 10**12), reason=st.text(max_size=80))
def test_a_bad_line_crosses_a_process_boundary_with_its_fields(path, line, reason):
    # a worker process pickles it back to the job, which counts it by reason
    copy = pickle.loads(pickle.dumps(BadLine(path, line, reason)))
    assert type(copy) is BadLine
    assert (copy.path, copy.line, copy.reason, str(copy)) == (path, line, reason, f"{path}:{line}: {reason}")
