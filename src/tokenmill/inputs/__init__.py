"""What a corpus is read from: JSONL, plain, compressed or in byte ranges (:mod:`~tokenmill.inputs.jsonl`),
Parquet as rows (:mod:`~tokenmill.inputs.parquet`), Modalities' raw line index (:mod:`~tokenmill.inputs.raw_index`),
a file's kind (compressed, Parquet or plain) by its first bytes (:mod:`~tokenmill.inputs.file_kind`), and a line's
text chosen by a jq pattern, or the reason it is a bad line (:mod:`~tokenmill.inputs.text_selection`).

May import: the root's ``errors``, ``progress`` and ``_kernels``; ``files``.
"""
