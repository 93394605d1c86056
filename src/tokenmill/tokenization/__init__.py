"""Text → token ids: a tokenizer of any Megatron type loaded, its EOD and widths
(:mod:`~tokenmill.tokenization.tokenizer`, :mod:`~tokenmill.tokenization.families`,
:mod:`~tokenmill.tokenization.sentencepiece_model`), the Hugging Face reference encoding
(:mod:`~tokenmill.tokenization.hf_reference`), the engine a job encodes with (:mod:`~tokenmill.tokenization.engine`),
the proof that a fast engine gives the reference's ids (:mod:`~tokenmill.tokenization.proof`), and conversations
rendered with a model's own chat template (:mod:`~tokenmill.tokenization.chat_template`): read from a line
(:mod:`~tokenmill.tokenization.conversations`), rendered in transformers' Jinja sandbox
(:mod:`~tokenmill.tokenization.template_sandbox`), their trained spans made token masks
(:mod:`~tokenmill.tokenization.chat_masks`).

May import: the root's ``errors``, ``config`` and ``_kernels``; ``inputs``.
"""
