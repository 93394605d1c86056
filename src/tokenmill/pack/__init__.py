"""The tokenize-and-write verbs: ``tokenmill pack`` (:mod:`~tokenmill.pack.pretraining`), its settings
(:mod:`~tokenmill.pack.settings`) and a batch's two stages in threads (:mod:`~tokenmill.pack.batches`),
``tokenmill sft`` (:mod:`~tokenmill.pack.sft`), and ``tokenmill tokens-in`` (:mod:`~tokenmill.pack.tokens_in`): a build
from tokens already made, written as pack writes it.

May import: ``tokenmill.FORMAT_VERSIONS``, the root's ``errors``, ``progress``, ``config`` and ``_kernels``;
``files``, ``inputs``, ``tokenization``, ``formats``, ``training``.
"""
