"""The tokenize-and-write verbs: ``tokenmill pack`` (:mod:`~tokenmill.pack.pretraining`), its settings
(:mod:`~tokenmill.pack.settings`) and a batch's two stages in threads (:mod:`~tokenmill.pack.batches`), and
``tokenmill sft`` (:mod:`~tokenmill.pack.sft`).

May import: the root's ``errors``, ``progress`` and ``config``; ``files``, ``inputs``, ``tokenization``, ``formats``,
``megatron``, ``packing``, ``training``.
"""
