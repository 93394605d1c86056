"""The one exception type that user-facing failures raise, and its bad-line kind.

A :class:`TokenmillError` carries a complete one-line message that names the file, the line or
byte offset, and what is wrong. The CLI prints it without a traceback (``--debug`` shows one);
anything else escaping the package is a bug. A :class:`BadLine` also keeps the file, line and
reason apart, for the sidecars' counts of skipped lines.
"""


class TokenmillError(Exception):
    """Bad input, bad configuration or an unusable file; the message is meant for the user."""


class BadLine(TokenmillError):
    """One input line that cannot be used; ``on_bad_line: skip`` counts it by ``reason``.

    Args:
        path: the input file.
        line: its 1-based line number.
        reason: what is wrong, in words (kept whole for the sidecar's counts).
    """

    def __init__(self, path: str, line: int, reason: str):
        super().__init__(f"{path}:{line}: {reason}")
        self.path, self.line, self.reason = path, line, reason

    def __reduce__(self):  # pickled across worker processes with its fields
        return BadLine, (self.path, self.line, self.reason)
