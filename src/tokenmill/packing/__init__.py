"""Best-fit packing: whole documents into samples of a fixed length, computed once, offline.

Modules: :mod:`~tokenmill.packing.best_fit` (the OBFD packer over document lengths) and
:mod:`~tokenmill.packing.olmo_cache` (the three index files OLMo-core's ``NumpyPackedFSLDataset`` looks for,
named as its job names them).

May import: the root (errors, progress), ``files``, ``formats`` and the C kernels; nothing above them.
"""
