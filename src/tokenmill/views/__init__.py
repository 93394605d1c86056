"""What a person reads: ``tokenmill inspect`` (:mod:`~tokenmill.views.inspect_file`, a cache folder's in
:mod:`~tokenmill.views.cache_folder`) and the report pages
(:mod:`~tokenmill.views.report`).

May import: the root's ``errors``; ``files``, ``inputs``, ``tokenization``, ``formats``, ``megatron``, ``best_fit``,
``training``, ``verify``, ``plan``.
"""
