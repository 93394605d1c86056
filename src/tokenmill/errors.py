"""The one exception type that user-facing failures raise.

A :class:`TokenmillError` carries a complete one-line message that names the file, the line or
byte offset, and what is wrong. The CLI prints it without a traceback (``--debug`` shows one);
anything else escaping the package is a bug.
"""


class TokenmillError(Exception):
    """Bad input, bad configuration or an unusable file; the message is meant for the user."""
