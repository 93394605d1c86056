"""Deprecated old import path: issue 53 renamed this module :mod:`tokenmill.formats.bin_idx` (Megatron's
``.bin/.idx``). Importing it warns once and gives that module itself."""

from tokenmill import alias_moved_module

alias_moved_module(__name__, "tokenmill.formats.bin_idx")
