"""A small, bounded reader of a GGUF file's metadata header, on the host.

Only what the chat-template preflight, the replica count and `repro models describe` need is
kept: the embedded chat template, the special token ids (eos, eot, eom), the vocabulary with each
token's type (from which the end-of-generation set is derived the way llama.cpp derives it), the
model's shape, its `general.*` name, architecture and file type, and its trained context length. Every length read from the file
is bounded before it is used, so a hostile or corrupt file is refused with one line (BadInput)
instead of exhausting memory; arrays the preflight does not need (merges, scores) are skipped
without being read.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any, BinaryIO

from pydantic import BaseModel, ConfigDict

from repro.core.errors import BadInput

MAGIC = b"GGUF"
MAX_KEY_BYTES = 64 * 1024
MAX_STRING_BYTES = 4 * 1024 * 1024  # a chat template is a few KiB; a token is a few bytes
MAX_ARRAY_ITEMS = 4 * 1024 * 1024
MAX_KV_COUNT = 100_000
TEMPLATE_KEY = "tokenizer.chat_template"
KEPT_ARRAYS = {"tokenizer.ggml.tokens", "tokenizer.ggml.token_type"}
SPECIAL_ID_KEYS = {
    "eos": "tokenizer.ggml.eos_token_id",
    "eot": "tokenizer.ggml.eot_token_id",
    "eom": "tokenizer.ggml.eom_token_id",
}
# Token texts that llama.cpp (src/llama-vocab.cpp, b11434) adds to the end-of-generation set
# whenever the vocabulary holds them, besides the eos, eot and eom ids of the header.
EOG_TEXTS = frozenset(
    {
        "<|eot_id|>",
        "<|im_end|>",
        "<|end|>",
        "<|return|>",
        "<|call|>",
        "<|flush|>",
        "<|calls|>",
        "<end_of_turn>",
        "<|endoftext|>",
        "<|eom_id|>",
        "<EOT>",
        "_<EOT>",
        "<｜end▁of▁sentence｜>",
        "<|end_of_text|>",
        "<end_of_utterance>",
    }
)
# The model's shape, kept for the GPU memory a replica needs (repro.replicas): keys
# "<architecture>.<suffix>"; a per-layer array (head_count_kv of some models) counts by its largest.
SHAPE_SUFFIXES = (".block_count", ".embedding_length", ".attention.head_count", ".attention.head_count_kv", ".attention.key_length", ".attention.value_length")
# What `repro models describe` reads: the model's name and kind, and "<architecture>.context_length".
GENERAL_KEYS = ("general.name", "general.basename", "general.size_label", "general.architecture", "general.file_type")
CONTEXT_SUFFIX = ".context_length"
# llama.cpp's file types (llama.h `llama_ftype`, the value of general.file_type): the quantization
# of most tensors; the numbers llama.cpp dropped (4 to 6, 33 to 35) are not named.
FILE_TYPES = {
    0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 7: "Q8_0", 8: "Q5_0", 9: "Q5_1", 10: "Q2_K", 11: "Q3_K_S", 12: "Q3_K_M",
    13: "Q3_K_L", 14: "Q4_K_S", 15: "Q4_K_M", 16: "Q5_K_S", 17: "Q5_K_M", 18: "Q6_K", 19: "IQ2_XXS", 20: "IQ2_XS",
    21: "Q2_K_S", 22: "IQ3_XS", 23: "IQ3_XXS", 24: "IQ1_S", 25: "IQ4_NL", 26: "IQ3_S", 27: "IQ3_M", 28: "IQ2_S",
    29: "IQ2_M", 30: "IQ4_XS", 31: "IQ1_M", 32: "BF16", 36: "TQ1_0", 37: "TQ2_0", 38: "MXFP4_MOE",
}  # fmt: skip
TOKEN_TYPE_CONTROL = 3
TOKEN_TYPE_USER_DEFINED = 4

# GGUF value types: (struct format, size) of the scalar ones; 8 is a string, 9 an array.
SCALARS: dict[int, tuple[str, int]] = {
    0: ("<B", 1),
    1: ("<b", 1),
    2: ("<H", 2),
    3: ("<h", 2),
    4: ("<I", 4),
    5: ("<i", 4),
    6: ("<f", 4),
    7: ("<?", 1),
    10: ("<Q", 8),
    11: ("<q", 8),
    12: ("<d", 8),
}
STRING, ARRAY = 8, 9


class GgufHeader(BaseModel):
    """What the preflight reads from a GGUF header."""

    model_config = ConfigDict(frozen=True)

    chat_template: str | None
    special_ids: dict[str, int]  # eos / eot / eom, when the header names them
    tokens: list[str]
    token_types: list[int]
    shape: dict[str, int] = {}  # suffix of SHAPE_SUFFIXES without its dot ("block_count") -> value
    general: dict[str, str | int] = {}  # the GENERAL_KEYS the header gives, by key
    context_length: int | None = None  # "<architecture>.context_length": the context it was trained for

    def quant(self) -> str | None:
        """The file type's name (general.file_type 15 -> Q4_K_M), or None when unknown or absent."""
        kind = self.general.get("general.file_type")
        return FILE_TYPES.get(kind) if isinstance(kind, int) else None

    def special_tokens(self) -> list[str]:
        """Control and user-defined tokens: those a template writes as markers."""
        kinds = {TOKEN_TYPE_CONTROL, TOKEN_TYPE_USER_DEFINED}
        return [text for text, kind in zip(self.tokens, self.token_types, strict=False) if kind in kinds]

    def eog_tokens(self) -> list[str]:
        """The end-of-generation token texts, as llama.cpp derives them."""
        ids = {i for i in self.special_ids.values() if 0 <= i < len(self.tokens)}
        ids |= {i for i, text in enumerate(self.tokens) if text in EOG_TEXTS}
        return sorted({self.tokens[i] for i in ids})


class _Reader:
    def __init__(self, handle: BinaryIO, name: str) -> None:
        self.handle = handle
        self.name = name

    def exact(self, size: int) -> bytes:
        data = self.handle.read(size)
        if len(data) != size:
            raise BadInput(f"{self.name}: not a GGUF file (the header ends early)")
        return data

    def unpack(self, fmt: str, size: int) -> Any:
        return struct.unpack(fmt, self.exact(size))[0]

    def string(self, limit: int = MAX_STRING_BYTES) -> str:
        length = self.unpack("<Q", 8)
        if length > limit:
            raise BadInput(f"{self.name}: a GGUF string of {length} bytes exceeds the {limit}-byte bound")
        return self.exact(length).decode("utf-8", errors="replace")

    def skip_string(self) -> None:
        length = self.unpack("<Q", 8)
        if length > MAX_STRING_BYTES:
            raise BadInput(f"{self.name}: a GGUF string of {length} bytes exceeds the {MAX_STRING_BYTES}-byte bound")
        self.handle.seek(length, 1)

    def value(self, kind: int, keep: bool) -> Any:
        if kind in SCALARS:
            fmt, size = SCALARS[kind]
            return self.unpack(fmt, size)
        if kind == STRING:
            return self.string() if keep else self.skip_string()
        if kind == ARRAY:
            return self.array(keep)
        raise BadInput(f"{self.name}: unknown GGUF value type {kind}")

    def array(self, keep: bool) -> list[Any] | None:
        kind = self.unpack("<I", 4)
        count = self.unpack("<Q", 8)
        if count > MAX_ARRAY_ITEMS:
            raise BadInput(f"{self.name}: a GGUF array of {count} items exceeds the {MAX_ARRAY_ITEMS}-item bound")
        if not keep and kind in SCALARS:
            self.handle.seek(count * SCALARS[kind][1], 1)
            return None
        items = [self.value(kind, keep) for _ in range(count)]
        return items if keep else None


def read_header(path: Path) -> GgufHeader:
    """The chat template, special ids and vocabulary of a GGUF file; BadInput when it is not one."""
    try:
        with open(path, "rb") as handle:
            return _read(_Reader(handle, str(path)))
    except OSError as error:
        raise BadInput(f"{path}: cannot read the GGUF header ({error.strerror or error})") from None


def _read(reader: _Reader) -> GgufHeader:
    if reader.exact(4) != MAGIC:
        raise BadInput(f"{reader.name}: not a GGUF file (no GGUF magic)")
    version = reader.unpack("<I", 4)
    if version < 2:
        raise BadInput(f"{reader.name}: GGUF version {version} is not supported (2 or newer)")
    reader.unpack("<Q", 8)  # tensor count
    kv_count = reader.unpack("<Q", 8)
    if kv_count > MAX_KV_COUNT:
        raise BadInput(f"{reader.name}: {kv_count} metadata entries exceed the {MAX_KV_COUNT}-entry bound")
    wanted = {TEMPLATE_KEY, *KEPT_ARRAYS, *SPECIAL_ID_KEYS.values(), *GENERAL_KEYS}
    found: dict[str, Any] = {}
    for _ in range(kv_count):
        key = reader.string(MAX_KEY_BYTES)
        kind = reader.unpack("<I", 4)
        shape = next((suffix for suffix in (*SHAPE_SUFFIXES, CONTEXT_SUFFIX) if key.endswith(suffix) and key.count(".") == suffix.count(".")), None)
        value = reader.value(kind, keep=key in wanted or shape is not None)
        if key in wanted:
            found[key] = value
        elif shape is not None:
            found[f"shape:{shape[1:]}"] = value
    return _header(found)


def _header(found: dict[str, Any]) -> GgufHeader:
    template = found.get(TEMPLATE_KEY)
    special = {name: int(found[key]) for name, key in SPECIAL_ID_KEYS.items() if isinstance(found.get(key), int)}
    tokens = [t for t in found.get("tokenizer.ggml.tokens") or [] if isinstance(t, str)]
    types = [int(t) for t in found.get("tokenizer.ggml.token_type") or [] if isinstance(t, int)]
    shape = {key[len("shape:") :]: shape_value(value) for key, value in found.items() if key.startswith("shape:") and shape_value(value) is not None}
    context = shape.pop(CONTEXT_SUFFIX[1:], None)
    general = {key: found[key] for key in GENERAL_KEYS if isinstance(found.get(key), str | int) and not isinstance(found[key], bool)}
    return GgufHeader(
        chat_template=template if isinstance(template, str) and template.strip() else None,
        special_ids=special,
        tokens=tokens,
        token_types=types,
        shape={key: value for key, value in shape.items() if value is not None},
        general=general,
        context_length=context,
    )


def shape_value(value: Any) -> int | None:
    """An integer, or the largest of a per-layer array of them."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, list):
        numbers = [item for item in value if isinstance(item, int) and not isinstance(item, bool)]
        return max(numbers) if numbers else None
    return None
