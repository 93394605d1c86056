"""What a Megatron job reads and hashes: GPTDataset's document, sample and shuffle indices
(:mod:`~tokenmill.megatron.gpt_indices`), their cache folder (:mod:`~tokenmill.megatron.index_cache`), the pieces
of one sample (:mod:`~tokenmill.megatron.sample_pieces`, torch-free), blends (:mod:`~tokenmill.megatron.blend`),
the job's tokenizer identity (:mod:`~tokenmill.megatron.job_tokenizer`), the hand-off folder
(:mod:`~tokenmill.megatron.handoff`) and ``tools/preprocess_data.py``'s bytes
(:mod:`~tokenmill.megatron.preprocess_data`).

May import: the root's ``errors`` and ``_kernels``; ``files``, ``inputs``, ``tokenization``, ``formats``.
"""
