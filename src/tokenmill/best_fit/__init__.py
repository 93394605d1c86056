"""Best-fit packing: whole documents into samples of a fixed length, computed once, offline. The packer
(:mod:`~tokenmill.best_fit.obfd`: OBFD over document lengths, in C), the packed index over a Megatron
``.bin/.idx`` (:mod:`~tokenmill.best_fit.packed_index`), a blend's samples drawn from its datasets' packed indices
(:mod:`~tokenmill.best_fit.packed_blend`), an SFT pair's conversations in best-fit rows
(:mod:`~tokenmill.best_fit.sft_packing`) and the packing caches OLMo-core's ``NumpyPackedFSLDataset`` finds
(:mod:`~tokenmill.best_fit.olmo_cache`).

May import: the root's ``errors`` and ``_kernels`` (the C kernels); ``files``, ``formats``, ``megatron``.
"""
