"""Every check ``tokenmill verify`` makes: the files of each format (:mod:`~tokenmill.verify.checks`), index
cache folders (:mod:`~tokenmill.verify.index_caches`), every input byte packed exactly once
(:mod:`~tokenmill.verify.exactly_once`) and a re-encoding with the tokenizer (:mod:`~tokenmill.verify.reencode`).

May import: the root's ``errors``; ``files``, ``inputs``, ``tokenization``, ``formats``, ``megatron``, ``best_fit``.
"""
