"""Every on-disk token format, its writer, its reader and its conversion from ``.pbin``: the packed file
(:mod:`~tokenmill.formats.pbin`) and its sidecar record (:mod:`~tokenmill.formats.sidecar`), their merge
(:mod:`~tokenmill.formats.merge`), Megatron's ``.bin/.idx`` (:mod:`~tokenmill.formats.bin_idx`), datatrove's ``.ds``
(:mod:`~tokenmill.formats.datatrove`), OLMo-core's token files (:mod:`~tokenmill.formats.olmo`), each
document's way back to its source line (:mod:`~tokenmill.formats.provenance`), the one table of the token
dtype each format takes for a vocabulary (:mod:`~tokenmill.formats.dtypes`), the one walk over whole documents
in blocks (:mod:`~tokenmill.formats.document_blocks`) and the one table of the kinds of format and of source, with
what each is (:mod:`~tokenmill.formats.kinds`).

May import: ``tokenmill.FORMAT_VERSIONS``, the root's ``errors``, ``progress`` and ``config``; ``files``,
``inputs``, ``tokenization``.
"""
