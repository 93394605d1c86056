"""The torch-facing readers a training loop holds: datasets over ``.pbin`` and JSONL
(:mod:`~tokenmill.training.datasets`), Megatron-style Nanosets (:mod:`~tokenmill.training.nanoset`), instruction
(SFT) datasets and collators (:mod:`~tokenmill.training.sft_datasets`), collate functions and the resumable sampler
(:mod:`~tokenmill.training.loader`), best-fit samples (:mod:`~tokenmill.training.packed_samples`). Only these
modules may import torch, and only where they need it.

May import: the root's ``errors``; ``files``, ``inputs``, ``tokenization``, ``formats``, ``megatron``, ``best_fit``.
"""
