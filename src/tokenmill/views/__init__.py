"""What a person reads: ``tokenmill inspect`` (:mod:`~tokenmill.views.inspect_file`, a cache folder's in
:mod:`~tokenmill.views.cache_folder`) and the report pages
(:mod:`~tokenmill.views.report`).

May import: every room but the CLI (the root's ``errors``, ``progress`` and ``config``; ``files``, ``inputs``,
``tokenization``, ``formats``, ``megatron``, ``packing``, ``training``, ``pack``, ``verify``, ``plan``).
"""
