"""A small, bounded reader of a GGUF file's metadata header, on the host.

Only what the chat-template preflight, the replica count and `repro models describe` need is
kept: the embedded chat template, the special token ids (eos, eot, eom), the vocabulary with each
token's type (from which the end-of-generation set is derived the way llama.cpp derives it), the
model's shape, its `general.*` name, architecture and file type, and its trained context length.
Every length read from the file is bounded before it is used, so a hostile or corrupt file is
refused with one line (BadInput) instead of exhausting memory; arrays the preflight does not need
(merges, scores) are passed over by their element type and count, never parsed, and the two it
keeps (tokens, token types) are read in bulk. A file is read once per command (`read_header`
remembers it by its identity), so planning a matrix whose thousand models name one file reads it
once. `read_metadata(path)` with no filter is the full parse, every value, which the tests hold the
reader to.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Callable
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Any, BinaryIO

from pydantic import BaseModel, ConfigDict

from repro.core.errors import BadInput

MAGIC = b"GGUF"
MAX_KEY_BYTES = 64 * 1024
MAX_STRING_BYTES = 4 * 1024 * 1024  # a chat template is a few KiB; a token is a few bytes
MAX_ARRAY_ITEMS = 4 * 1024 * 1024
MAX_KV_COUNT = 100_000
MAX_KEPT_BYTES = 64 * 1024 * 1024  # every kept string together (a 256k-token vocabulary is about 4 MiB)
WINDOW_BYTES = 1024 * 1024  # read ahead this much at a time
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
# The model's shape, kept for the GPU memory a replica needs (repro.plan.replicas): keys
# "<architecture>.<suffix>"; a per-layer array (head_count_kv of some models) counts by its largest.
SHAPE_SUFFIXES = (
    ".block_count",
    ".embedding_length",
    ".attention.head_count",
    ".attention.head_count_kv",
    ".attention.key_length",
    ".attention.value_length",
)
# What `repro models describe` reads: the model's name and kind, and "<architecture>.context_length".
GENERAL_KEYS = ("general.name", "general.basename", "general.size_label", "general.architecture", "general.file_type")
CONTEXT_SUFFIX = ".context_length"
WANTED = frozenset({TEMPLATE_KEY, *KEPT_ARRAYS, *SPECIAL_ID_KEYS.values(), *GENERAL_KEYS})
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
LENGTH = struct.Struct("<Q")  # a string's length prefix


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
        return list(self.marks[0])

    def eog_tokens(self) -> list[str]:
        """The end-of-generation token texts, as llama.cpp derives them."""
        return list(self.marks[1])

    @cached_property
    def marks(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(special tokens, end-of-generation tokens): one pass over the vocabulary per header."""
        kinds = {TOKEN_TYPE_CONTROL, TOKEN_TYPE_USER_DEFINED}
        special = tuple(text for text, kind in zip(self.tokens, self.token_types, strict=False) if kind in kinds)
        ids = {i for i in self.special_ids.values() if 0 <= i < len(self.tokens)}
        ids |= {i for i, text in enumerate(self.tokens) if text in EOG_TEXTS}
        return special, tuple(sorted({self.tokens[i] for i in ids}))


class _Reader:
    """The header's values, read through a bounded window of the file: every length is checked
    before it is used, an array the caller does not keep is passed over by its element type and
    count (scalars by one seek, strings length by length in the window) and a kept one is read
    in bulk; never more than `MAX_KEPT_BYTES` of strings is held."""

    def __init__(self, handle: BinaryIO, name: str, size: int) -> None:
        self.handle = handle
        self.name = name
        self.size = size  # the file's size: nothing is read or skipped past it
        self.window = b""
        self.at = 0  # the read position inside `window`
        self.kept = 0  # bytes of strings kept so far

    def exact(self, size: int) -> bytes:
        if self.at + size > len(self.window):
            self.fill(size)
        data = self.window[self.at : self.at + size]
        self.at += size
        return data

    def fill(self, size: int) -> None:
        """At least `size` unread bytes in the window, or the header ends early (refused)."""
        rest = self.window[self.at :]
        if self.handle.tell() + size - len(rest) > self.size:  # never ask for more than the file holds
            raise BadInput(f"{self.name}: not a GGUF file (the header ends early)")
        more = self.handle.read(max(size - len(rest), WINDOW_BYTES))
        self.window, self.at = rest + more, 0
        if len(self.window) < size:
            raise BadInput(f"{self.name}: not a GGUF file (the header ends early)")

    def skip(self, size: int) -> None:
        """Pass over `size` bytes; refused when they run past the end of the file."""
        unread = len(self.window) - self.at
        if size <= unread:
            self.at += size
            return
        position = self.handle.tell() + size - unread
        if position > self.size:
            raise BadInput(f"{self.name}: not a GGUF file (a value runs past the end of the file)")
        self.handle.seek(position)
        self.window, self.at = b"", 0

    def unpack(self, fmt: str, size: int) -> Any:
        return struct.unpack(fmt, self.exact(size))[0]

    def length(self, limit: int = MAX_STRING_BYTES) -> int:
        length = self.unpack("<Q", 8)
        if length > limit:
            raise BadInput(f"{self.name}: a GGUF string of {length} bytes exceeds the {limit}-byte bound")
        return int(length)

    def string(self, limit: int = MAX_STRING_BYTES) -> str:
        return self.exact(self.length(limit)).decode("utf-8", errors="replace")

    def value(self, kind: int, keep: bool) -> Any:
        if kind in SCALARS:
            fmt, size = SCALARS[kind]
            if not keep:
                self.skip(size)
                return None
            return self.unpack(fmt, size)
        if kind == STRING:
            if not keep:
                self.skip(self.length())
                return None
            return self.string()
        if kind == ARRAY:
            return self.array(keep)
        raise BadInput(f"{self.name}: unknown GGUF value type {kind}")

    def array(self, keep: bool) -> list[Any] | None:
        kind = self.unpack("<I", 4)
        count = self.unpack("<Q", 8)
        if count > MAX_ARRAY_ITEMS:
            raise BadInput(f"{self.name}: a GGUF array of {count} items exceeds the {MAX_ARRAY_ITEMS}-item bound")
        if kind in SCALARS:
            fmt, size = SCALARS[kind]
            if not keep:
                self.skip(count * size)
                return None
            return list(struct.unpack(f"<{count}{fmt[1]}", self.exact(count * size)))
        if kind == STRING:
            return self.strings(count, keep)
        items = [self.value(kind, keep) for _ in range(count)]
        return items if keep else None

    def strings(self, count: int, keep: bool) -> list[str] | None:
        """`count` strings, each read off the window (kept: decoded, within MAX_KEPT_BYTES). The
        common case, a string wholly inside the window, is read in place: a vocabulary of 150k
        tokens and as many merges take a fraction of a second."""
        items: list[str] = []
        for _ in range(count):
            window, at = self.window, self.at
            if at + 8 <= len(window):
                length = LENGTH.unpack_from(window, at)[0]
                if length <= MAX_STRING_BYTES and at + 8 + length <= len(window):
                    self.at = at + 8 + length
                    if keep:
                        self.keep_bytes(length)
                        items.append(window[at + 8 : self.at].decode("utf-8", errors="replace"))
                    continue
            length = self.length()  # past the window's end, or over the bound: the checked way
            if not keep:
                self.skip(length)
                continue
            self.keep_bytes(length)
            items.append(self.exact(length).decode("utf-8", errors="replace"))
        return items if keep else None

    def keep_bytes(self, length: int) -> None:
        self.kept += length
        if self.kept > MAX_KEPT_BYTES:
            raise BadInput(f"{self.name}: the GGUF header's kept arrays exceed the {MAX_KEPT_BYTES}-byte bound")


def read_header(path: Path) -> GgufHeader:
    """The chat template, special ids, vocabulary and shape of a GGUF file; BadInput when it is
    not one. Read once per file and command: remembered by the file's identity (device, inode,
    size, modification time), so a matrix naming one file a thousand times reads it once."""
    try:
        info = path.stat()
    except OSError as error:
        raise BadInput(f"{path}: cannot read the GGUF header ({error.strerror or error})") from None
    return header_of(str(path), (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns))


@lru_cache(maxsize=64)
def header_of(path: str, identity: tuple[int, int, int, int]) -> GgufHeader:
    """The header of the file at `path` whose stat identity is `identity` (the cache's key)."""
    return header_from(read_metadata(Path(path), wanted=wanted_key))


def read_metadata(path: Path, wanted: Callable[[str], bool] = lambda key: True) -> dict[str, Any]:
    """The header's key-value pairs whose key `wanted` keeps (every one by default: the full
    parse), the rest passed over unparsed; BadInput (one line) when it is not a GGUF file."""
    try:
        with open(path, "rb") as handle:
            return _read(_Reader(handle, str(path), os.fstat(handle.fileno()).st_size), wanted)
    except OSError as error:
        raise BadInput(f"{path}: cannot read the GGUF header ({error.strerror or error})") from None


def wanted_key(key: str) -> bool:
    """The keys GgufHeader is made of: the template, tokenizer ids and arrays, general.*, shape."""
    return key in WANTED or shape_suffix(key) is not None


def shape_suffix(key: str) -> str | None:
    """The SHAPE_SUFFIXES or CONTEXT_SUFFIX entry `key` is "<architecture><suffix>" of, or None."""
    return next(
        (
            suffix
            for suffix in (*SHAPE_SUFFIXES, CONTEXT_SUFFIX)
            if key.endswith(suffix) and key.count(".") == suffix.count(".")
        ),
        None,
    )


def _read(reader: _Reader, wanted: Callable[[str], bool]) -> dict[str, Any]:
    if reader.exact(4) != MAGIC:
        raise BadInput(f"{reader.name}: not a GGUF file (no GGUF magic)")
    version = reader.unpack("<I", 4)
    if version < 2:
        raise BadInput(f"{reader.name}: GGUF version {version} is not supported (2 or newer)")
    reader.unpack("<Q", 8)  # tensor count
    kv_count = reader.unpack("<Q", 8)
    if kv_count > MAX_KV_COUNT:
        raise BadInput(f"{reader.name}: {kv_count} metadata entries exceed the {MAX_KV_COUNT}-entry bound")
    found: dict[str, Any] = {}
    for _ in range(kv_count):
        key = reader.string(MAX_KEY_BYTES)
        kind = reader.unpack("<I", 4)
        keep = wanted(key)
        value = reader.value(kind, keep)
        if keep:
            found[key] = value
    return found


def header_from(metadata: dict[str, Any]) -> GgufHeader:
    """The GgufHeader a header's key-value pairs give (all of them, or only the wanted ones)."""
    found = {key: value for key, value in metadata.items() if key in WANTED}
    found |= {
        f"shape:{suffix[1:]}": value
        for key, value in metadata.items()
        if (suffix := shape_suffix(key)) is not None and key not in WANTED
    }
    template = found.get(TEMPLATE_KEY)
    special = {name: int(found[key]) for name, key in SPECIAL_ID_KEYS.items() if isinstance(found.get(key), int)}
    tokens = [t for t in found.get("tokenizer.ggml.tokens") or [] if isinstance(t, str)]
    types = [int(t) for t in found.get("tokenizer.ggml.token_type") or [] if isinstance(t, int)]
    shape = {
        key[len("shape:") :]: shape_value(value)
        for key, value in found.items()
        if key.startswith("shape:") and shape_value(value) is not None
    }
    context = shape.pop(CONTEXT_SUFFIX[1:], None)
    general = {
        key: found[key]
        for key in GENERAL_KEYS
        if isinstance(found.get(key), str | int) and not isinstance(found[key], bool)
    }
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
