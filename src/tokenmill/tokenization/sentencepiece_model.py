"""A SentencePiece ``.model`` read without the sentencepiece library, and its BPE model as a Hugging Face
``tokenizer.json`` that encodes the same, for tokenmill's engines (:mod:`tokenmill.tokenization.families`).

A ``.model`` is a protobuf ``ModelProto``: field 1 the pieces (each: 1 piece, 2 score, 3 type), field 2 the
trainer spec (3 model type, 24 treat_whitespace_as_suffix, 35 byte fallback, 47 eos_piece), field 3 the
normalizer spec (1 name, 2 precompiled charsmap, 3 add_dummy_prefix, 4 remove_extra_whitespaces, 5
escape_whitespaces). A BPE model with the ``identity`` normalizer, a dummy prefix, whitespace escaped and kept
encodes like a BPE over the same pieces whose merge of pieces ``a`` and ``b`` ranks as the score of ``a + b``,
after ``' ' → '▁'`` and a leading ``'▁'``, with byte fallback. Control pieces (``<s>``, ``</s>``) are no added
tokens: SentencePiece encodes their spelling in a text as text, and so does Megatron. Other models (Unigram,
NFKC, whitespace as a suffix) are refused in one line.

The EOS, which Megatron's SentencePiece types append as their EOD, is what ``SentencePieceProcessor.eos_id()``
gives: the id of the trainer spec's ``eos_piece`` (``</s>`` unless the model was trained with another) where
that piece is a control piece, else none (a model trained with ``eos_id=-1``).

Cost: one pass over the file and O(total piece length) to derive the merges: ~0.2 s for a 32k model.
"""

from __future__ import annotations

import struct

import orjson

__all__ = ["read_model", "eos_piece", "conversion_refusal", "bpe_tokenizer_json", "PIECE_NORMAL", "PIECE_UNKNOWN",
           "PIECE_CONTROL", "PIECE_USER_DEFINED", "PIECE_BYTE", "MODEL_BPE", "literal_pieces"]


def _varint(data: bytes, position: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if position >= len(data):
            raise ValueError("truncated varint")
        byte = data[position]
        value |= (byte & 0x7F) << shift
        position += 1
        if byte < 0x80:
            return value, position
        shift += 7


def _protobuf_fields(data: bytes):
    """``(field number, wire type, value)`` of a protobuf message: an int for varints, bytes for
    length-delimited fields, the raw bytes for fixed 32/64-bit ones.

    Raises:
        ValueError: a truncated message or an unknown wire type.
    """
    position = 0
    while position < len(data):
        key, position = _varint(data, position)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, position = _varint(data, position)
        elif wire == 2:
            size, position = _varint(data, position)
            value, position = data[position:position + size], position + size
            if position > len(data):
                raise ValueError("truncated field")
        elif wire in (1, 5):
            size = 8 if wire == 1 else 4
            value, position = data[position:position + size], position + size
        else:
            raise ValueError(f"wire type {wire}")
        yield number, wire, value


# SentencePiece.Type values read here (UNUSED = 5 and BYTE = 6 are kept as pieces, never merged)
PIECE_NORMAL, PIECE_UNKNOWN, PIECE_CONTROL, PIECE_USER_DEFINED, PIECE_BYTE = 1, 2, 3, 4, 6
MODEL_BPE = 2


def read_model(content: bytes) -> tuple[list[tuple[str, float, int]], dict]:
    """The pieces ``(piece, score, type)`` and the trainer and normalizer settings of a ``ModelProto``.

    Raises:
        ValueError: a truncated message or an unknown wire type.
        UnicodeDecodeError: a piece or setting that is not UTF-8.
    """
    pieces, settings = [], {"model_type": 1, "byte_fallback": False, "treat_whitespace_as_suffix": False,
                            "eos_piece": "</s>", "normalizer": "nmt_nfkc", "add_dummy_prefix": True,
                            "remove_extra_whitespaces": True, "escape_whitespaces": True}
    for number, _, value in _protobuf_fields(content):
        if number == 1:
            pieces.append(_piece(value))
        elif number == 2:  # TrainerSpec: 3 model_type, 24 treat_whitespace_as_suffix, 35 byte_fallback, 47 eos_piece
            for sub, _, sub_value in _protobuf_fields(value):
                if sub == 3:
                    settings["model_type"] = sub_value
                elif sub == 24:
                    settings["treat_whitespace_as_suffix"] = bool(sub_value)
                elif sub == 35:
                    settings["byte_fallback"] = bool(sub_value)
                elif sub == 47:
                    settings["eos_piece"] = sub_value.decode("utf-8")
        elif number == 3:  # NormalizerSpec: 1 name (2, its precompiled charsmap, goes with it), 3-5 the switches
            names = {1: "normalizer", 3: "add_dummy_prefix", 4: "remove_extra_whitespaces", 5: "escape_whitespaces"}
            for sub, _, sub_value in _protobuf_fields(value):
                if sub in names:
                    settings[names[sub]] = sub_value.decode("utf-8") if sub == 1 else bool(sub_value)
    return pieces, settings


_FLOAT32 = struct.Struct("<f")


def _piece(message: bytes) -> tuple[str, float, int]:
    """One ``SentencePiece`` message's ``(piece, score, type)`` (1 piece, 2 score as float32, 3 type, NORMAL by
    default): the layout sentencepiece writes read directly, any other through :func:`_protobuf_fields`."""
    size = len(message)
    if size >= 2 and message[0] == 0x0A and message[1] < 0x80:
        end = 2 + message[1]
        if size == end + 7 and message[end] == 0x15 and message[end + 5] == 0x18 and message[end + 6] < 0x80:
            return message[2:end].decode("utf-8"), _FLOAT32.unpack_from(message, end + 1)[0], message[end + 6]
        if size == end + 5 and message[end] == 0x15:
            return message[2:end].decode("utf-8"), _FLOAT32.unpack_from(message, end + 1)[0], PIECE_NORMAL
    piece, score, kind = "", 0.0, PIECE_NORMAL
    for sub, _, sub_value in _protobuf_fields(message):
        if sub == 1:
            piece = sub_value.decode("utf-8")
        elif sub == 2:
            if not isinstance(sub_value, bytes) or len(sub_value) != 4:
                raise ValueError("a piece's score is not a float32")
            score = _FLOAT32.unpack(sub_value)[0]
        elif sub == 3:
            kind = sub_value
    return piece, score, kind


def eos_piece(pieces: list[tuple[str, float, int]], settings: dict) -> str | None:
    """The model's EOS piece as ``SentencePieceProcessor.eos_id()`` finds it (module docstring), or None."""
    wanted = settings["eos_piece"]
    return next((piece for piece, _, kind in pieces if piece == wanted and kind == PIECE_CONTROL), None)


def literal_pieces(pieces: list[tuple[str, float, int]]) -> tuple[str, ...]:
    """The spellings of the control, unknown and byte pieces (``<s>``, ``</s>``, ``<unk>``, ``<0x41>``...):
    SentencePiece encodes them in a text as text, so an engine that reads them as the pieces is wrong there."""
    return tuple(piece for piece, _, kind in pieces if kind in (PIECE_CONTROL, PIECE_UNKNOWN, PIECE_BYTE))


def conversion_refusal(pieces: list, settings: dict) -> str | None:
    """Why a model of these pieces and settings does not encode as :func:`bpe_tokenizer_json` does, or None."""
    if settings["model_type"] != MODEL_BPE:
        return "it is not a BPE model (Unigram, word or char models are not supported yet)"
    if settings["normalizer"] != "identity":
        return f"its normalizer is {settings['normalizer']!r}, not identity"
    if not settings["add_dummy_prefix"] or settings["remove_extra_whitespaces"] or not settings["escape_whitespaces"]:
        return "its whitespace settings are not Llama's (add_dummy_prefix, keep extra whitespace, escape it)"
    if settings["treat_whitespace_as_suffix"]:
        return "it puts whitespace at the end of pieces (treat_whitespace_as_suffix)"
    if any(kind == PIECE_USER_DEFINED for _, _, kind in pieces):
        return "it has user-defined pieces"
    return None


def bpe_tokenizer_json(pieces: list[tuple[str, float, int]], byte_fallback: bool) -> str:
    """The ``tokenizer.json`` (text) of a BPE over ``pieces`` that encodes as SentencePiece does (module docstring)."""
    vocab = {piece: index for index, (piece, _, _) in enumerate(pieces)}
    mergeable = {piece: index for index, (piece, _, kind) in enumerate(pieces) if kind == PIECE_NORMAL}
    merges = []  # (-score of the merged piece, its id, left id, right id): the order of the merges' ranks
    for piece, merged in mergeable.items():
        rank = -pieces[merged][1]
        for cut in range(1, len(piece)):
            left = mergeable.get(piece[:cut])
            if left is not None:
                right = mergeable.get(piece[cut:])
                if right is not None:
                    merges.append((rank, merged, left, right))
    merges.sort()
    unk = next((piece for piece, _, kind in pieces if kind == PIECE_UNKNOWN), None)
    config = {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": [],
        "normalizer": {"type": "Sequence", "normalizers": [
            {"type": "Prepend", "prepend": "\u2581"},
            {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}]},
        "pre_tokenizer": None, "post_processor": None,
        "decoder": {"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
            {"type": "ByteFallback"}, {"type": "Fuse"}, {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
        "model": {"type": "BPE", "dropout": None, "unk_token": unk, "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": True, "byte_fallback": byte_fallback,
                  "ignore_merges": False, "vocab": vocab,
                  "merges": [[pieces[left][0], pieces[right][0]] for _, _, left, right in merges]},
    }
    return orjson.dumps(config).decode("utf-8")
