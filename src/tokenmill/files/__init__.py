"""Files as tokenmill reads and writes them, below every format: outputs written atomically
(:mod:`~tokenmill.files.atomic`), a file's identity and inputs that are outputs (:mod:`~tokenmill.files.identity`),
inputs by URL (``s3://``, ``gs://``, ``https://``, ``hf://``) read as files (:mod:`~tokenmill.files.objects`, one
interface in :mod:`~tokenmill.files.remote` and a module per scheme), the restricted pair-list pickle
(:mod:`~tokenmill.files.safe_pickle`), and the one block size files are read and copied in
(:mod:`~tokenmill.files.blocks`).

May import: the root's ``errors``, ``progress`` and ``config``. Imported by every room above it.
"""
