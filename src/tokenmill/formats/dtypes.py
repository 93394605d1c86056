"""The token dtype each format takes for a vocabulary of ``vocab_size`` tokens: one table, each row the peer's own
rule, which messages and help texts quote from here.

========================================  ====================================  ================================
format                                    rule                                  the peer's code
========================================  ====================================  ================================
Megatron ``.bin`` (``preprocess_data``)   uint16 below 65,500, else int32       ``DType.optimal_dtype``
Megatron's fast path (no ``.idx`` read)   uint16 up to 65,536, int32 above      ``--per-dataset-sequences-path``
datatrove ``.ds``                         2 bytes up to 65,536, 4 above         ``get_vocab_size() > 65536``
OLMo-core token files                     uint16 up to 65,536 ids, uint32 above ``NumpyDatasetDType``
========================================  ====================================  ================================

So a vocabulary of 65,500 to 65,536 tokens is uint16 in a ``.ds`` and in OLMo's files but int32 in a ``.bin``.
(A ``.pbin`` takes 1, 2 or 4 bytes by its largest id: :func:`tokenmill.tokenization.tokenizer.token_width_for`.)
"""

__all__ = ["MEGATRON_UINT16_BELOW", "UINT16_VOCAB_LIMIT", "megatron_dtype_name"]

#: Megatron's ``DType.optimal_dtype``: uint16 for a vocabulary smaller than this, else int32 (not 65,536).
MEGATRON_UINT16_BELOW = 65500
#: The largest vocabulary stored as uint16 (ids 0..65535) by datatrove, OLMo-core and Megatron's fast path.
UINT16_VOCAB_LIMIT = 65536


def megatron_dtype_name(vocab_size: int) -> str:
    """``uint16`` if ``vocab_size`` < 65,500, else ``int32``: the dtype of Megatron's ``.bin`` for it."""
    return "uint16" if vocab_size < MEGATRON_UINT16_BELOW else "int32"
