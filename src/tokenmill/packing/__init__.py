"""Best-fit packing: whole documents into samples of a fixed length, computed once, offline. The packer
(:mod:`~tokenmill.packing.best_fit`: OBFD over document lengths, in C), the packed index over a Megatron
``.bin/.idx`` (:mod:`~tokenmill.packing.packed_index`), a blend's samples drawn from its datasets' packed indices
(:mod:`~tokenmill.packing.packed_blend`), an SFT pair's conversations in best-fit rows
(:mod:`~tokenmill.packing.sft_packing`) and the packing caches OLMo-core's ``NumpyPackedFSLDataset`` finds
(:mod:`~tokenmill.packing.olmo_cache`).

May import: the root's ``errors`` and ``_kernels`` (the C kernels); ``files``, ``formats``, ``megatron``.
"""
