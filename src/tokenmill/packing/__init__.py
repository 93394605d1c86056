"""Deprecated old import path: issue 53 renamed this room :mod:`tokenmill.best_fit` (``pack/`` tokenizes and
writes; best-fit packing is not it). Each old module path (``tokenmill.packing.packed_index``, ...) warns once
and gives the new module itself; ``tokenmill.packing.best_fit`` is :mod:`tokenmill.best_fit.obfd`."""
