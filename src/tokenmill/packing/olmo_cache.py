"""Deprecated old import path of :mod:`tokenmill.best_fit.olmo_cache` (issue 53); warns once, gives that module."""

from tokenmill import alias_moved_module

alias_moved_module(__name__, "tokenmill.best_fit.olmo_cache")
