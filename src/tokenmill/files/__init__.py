"""Files as tokenmill reads and writes them, below every format: outputs written atomically
(:mod:`~tokenmill.files.atomic`), a file's identity and inputs that are outputs (:mod:`~tokenmill.files.identity`),
inputs by URL (``s3://``, ``gs://``, ``https://``, ``hf://``) read as files (:mod:`~tokenmill.files.objects`, one
interface in :mod:`~tokenmill.files.remote` and a module per scheme), the one table of those schemes and the
redaction of the secrets a URL may carry (:mod:`~tokenmill.files.urls`: outputs name a URL by its redacted name
only; the full URL is looked up where a request is made), an input resolved once into one value, local or a
pinned URL (:mod:`~tokenmill.files.source`), the restricted pair-list pickle
(:mod:`~tokenmill.files.safe_pickle`), and the one block size files are read and copied in
(:mod:`~tokenmill.files.blocks`).

May import: the root's ``errors``. Imported by every room above it.
"""
