"""Deprecated old import path of :mod:`tokenmill.best_fit.packed_index` (issue 53); warns once, gives that module."""

from tokenmill import alias_moved_module

alias_moved_module(__name__, "tokenmill.best_fit.packed_index")
