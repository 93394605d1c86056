"""Deprecated: the old import path of :mod:`tokenmill.training.sft_datasets`, the same module object."""

from tokenmill import alias_moved_module

alias_moved_module(__name__, "tokenmill.training.sft_datasets")
