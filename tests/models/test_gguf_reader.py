"""The GGUF header reader that passes over arrays, held to a full parse value by value.

`reference_parse` below is a stand-in written for these tests only: the plain reading of the GGUF
format (every value parsed one by one, nothing skipped, no bound but the file's end), as the
reader was before it learnt to pass over arrays. The reader must give exactly the header the
reference gives, on crafted headers and on the real GGUFs of the smoke matrix (when stored), and
must refuse a hostile header in one line with bounded memory.
"""

from __future__ import annotations

import struct
import tracemalloc
from pathlib import Path
from typing import Any, BinaryIO

import pytest

from repro.core.errors import BadInput
from repro.store import gguf
from repro.store.gguf import MAX_ARRAY_ITEMS, header_from, read_header, read_metadata
from tests.fixtures.models import QWEN_ID, SMOLLM2_ID
from tests.models.test_chat_template import CHATML, model, write_gguf

ROOT = Path(__file__).resolve().parents[2]
SCALAR_FORMATS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}


def reference_parse(path: Path) -> dict[str, Any]:
    """Every key and value of the header, each value parsed one by one (the stand-in full parser)."""

    def take(handle: BinaryIO, fmt: str) -> Any:
        size = struct.calcsize(fmt)
        data = handle.read(size)
        assert len(data) == size, "the header ends early"
        return struct.unpack(fmt, data)[0]

    def text(handle: BinaryIO) -> str:
        return handle.read(take(handle, "<Q")).decode("utf-8", errors="replace")

    def value(handle: BinaryIO, kind: int) -> Any:
        if kind == 8:
            return text(handle)
        if kind == 9:
            inner, count = take(handle, "<I"), take(handle, "<Q")
            return [value(handle, inner) for _ in range(count)]
        return take(handle, SCALAR_FORMATS[kind])

    with open(path, "rb") as handle:
        assert handle.read(4) == b"GGUF"
        take(handle, "<I"), take(handle, "<Q")
        return {text(handle): value(handle, take(handle, "<I")) for _ in range(take(handle, "<Q"))}


def entry(key: str, kind: int, payload: bytes) -> bytes:
    return pack_string(key) + struct.pack("<I", kind) + payload


def pack_string(text: str) -> bytes:
    data = text.encode()
    return struct.pack("<Q", len(data)) + data


def strings(items: list[str]) -> bytes:
    return struct.pack("<IQ", 8, len(items)) + b"".join(pack_string(item) for item in items)


def header_file(path: Path, entries: list[bytes]) -> Path:
    path.write_bytes(b"GGUF" + struct.pack("<IQQ", 3, 0, len(entries)) + b"".join(entries))
    return path


def rich_header(path: Path) -> Path:
    """Every value type, kept and passed-over arrays of each kind, nested arrays, shape keys."""
    tokens = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "é", "a" * 300, ""] + [f"t{i}" for i in range(5000)]
    types = [3, 3, 3, 1, 1, 4] + [1] * 5000
    return header_file(
        path,
        [
            entry("general.architecture", 8, pack_string("qwen2")),
            entry("general.name", 8, pack_string("Crafted Model")),
            entry("general.file_type", 4, struct.pack("<I", 15)),
            entry("general.flag", 7, b"\x01"),
            *(entry(f"x.scalar{kind}", kind, struct.pack(fmt, 1)) for kind, fmt in SCALAR_FORMATS.items()),
            entry("qwen2.block_count", 4, struct.pack("<I", 24)),
            entry("qwen2.context_length", 4, struct.pack("<I", 32768)),
            entry("qwen2.attention.head_count_kv", 9, struct.pack("<IQ", 5, 3) + struct.pack("<3i", 2, 8, 4)),
            entry("tokenizer.ggml.tokens", 9, strings(tokens)),
            entry("tokenizer.ggml.merges", 9, strings([f"m {i}" for i in range(7000)])),
            entry("tokenizer.ggml.scores", 9, struct.pack("<IQ", 6, 5006) + struct.pack("<5006f", *range(5006))),
            entry(
                "tokenizer.ggml.token_type",
                9,
                struct.pack("<IQ", 5, len(types)) + struct.pack(f"<{len(types)}i", *types),
            ),
            entry(
                "x.nested",
                9,
                struct.pack("<IQ", 9, 2) + struct.pack("<IQ", 4, 2) + struct.pack("<2I", 1, 2) + strings(["a", "b"]),
            ),
            entry("tokenizer.ggml.eos_token_id", 4, struct.pack("<I", 2)),
            entry("tokenizer.chat_template", 8, pack_string(CHATML)),
            entry("x.after", 8, pack_string("the last value")),
        ],
    )


def test_the_reader_gives_the_full_parse_on_a_crafted_header(tmp_path: Path) -> None:
    path = rich_header(tmp_path / "rich.gguf")
    full = reference_parse(path)
    assert read_metadata(path) == full
    header = read_header(path)
    assert header == header_from(full)
    assert (header.chat_template, header.special_ids, header.context_length) == (CHATML, {"eos": 2}, 32768)
    assert header.shape == {"block_count": 24, "attention.head_count_kv": 8}
    assert header.eog_tokens() == ["<|endoftext|>", "<|im_end|>"] and header.special_tokens() == [
        "<|endoftext|>",
        "<|im_start|>",
        "<|im_end|>",
        "",
    ]


@pytest.mark.parametrize("model_id", [SMOLLM2_ID, QWEN_ID])
def test_the_reader_gives_the_full_parse_on_the_real_ggufs(model_id: str, smoke_ggufs: dict[str, Path]) -> None:
    path = smoke_ggufs[model_id]
    full = reference_parse(path)
    header = read_header(path)
    assert header == header_from(full)
    assert header.chat_template == full["tokenizer.chat_template"] and len(header.tokens) == len(
        full["tokenizer.ggml.tokens"]
    )
    assert header.eog_tokens() and header.special_tokens() and header.quant() in {"Q4_1", "Q4_K_M"}


def test_a_file_is_read_once_per_identity(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    reads: list[Path] = []
    real = gguf.read_metadata
    monkeypatch.setattr(
        gguf, "read_metadata", lambda path, wanted=gguf.wanted_key: reads.append(path) or real(path, wanted)
    )
    path = write_gguf(tmp_path / "m.gguf", template=CHATML)
    for _ in range(50):
        read_header(path)
    assert len(reads) == 1
    write_gguf(path, template=CHATML + " ")  # changed: another size, another header
    assert read_header(path).chat_template == CHATML + " " and len(reads) == 2


def test_a_thousand_models_naming_one_file_render_its_template_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from repro.store import chat_template

    renders: list[str] = []
    real = chat_template.render
    monkeypatch.setattr(
        chat_template,
        "render",
        lambda text, messages, **context: renders.append(text) or real(text, messages, **context),
    )
    path = write_gguf(tmp_path / "one.gguf", template=CHATML + "{# once #}")
    facts = [chat_template.template_facts(model(id=f"m{i}"), path) for i in range(1000)]
    assert all(f == facts[0] for f in facts) and len(renders) == 3  # tools, tool calls, end of turn: once each


def bad_array(kind: int, count: int, payload: bytes = b"", key: str = "tokenizer.ggml.merges") -> list[bytes]:
    return [entry(key, 9, struct.pack("<IQ", kind, count) + payload)]


HOSTILE = {
    "huge-array-count": bad_array(8, 2**62),
    "count-over-the-bound": bad_array(5, MAX_ARRAY_ITEMS + 1),
    "skipped-scalars-past-the-file": bad_array(10, MAX_ARRAY_ITEMS),
    "skipped-string-past-the-file": bad_array(8, 1, struct.pack("<Q", 4 * 1024 * 1024)),
    "skipped-string-over-the-bound": bad_array(8, 1, struct.pack("<Q", 2**60)),
    "kept-strings-past-the-file": bad_array(
        8, MAX_ARRAY_ITEMS, struct.pack("<Q", 4 * 1024 * 1024), key="tokenizer.ggml.tokens"
    ),
    "kept-scalars-past-the-file": bad_array(5, MAX_ARRAY_ITEMS, key="tokenizer.ggml.token_type"),
    "nested-past-the-file": bad_array(9, MAX_ARRAY_ITEMS, struct.pack("<IQ", 9, MAX_ARRAY_ITEMS)),
    "template-past-the-file": [entry("tokenizer.chat_template", 8, struct.pack("<Q", 1000) + b"{{")],
    "unknown-type": [entry("x.odd", 99, b"")],
}


@pytest.mark.parametrize("reader", [read_metadata, read_header], ids=["full", "header"])
@pytest.mark.parametrize("entries", HOSTILE.values(), ids=HOSTILE.keys())
def test_a_hostile_header_is_refused_in_one_line_with_bounded_memory(
    tmp_path: Path, entries: list[bytes], reader: Any
) -> None:
    path = header_file(tmp_path / "hostile.gguf", [entry("general.name", 8, pack_string("x")), *entries])
    tracemalloc.start()
    try:
        with pytest.raises(BadInput) as error:
            reader(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert "\n" not in str(error.value) and str(path) in str(error.value)
    assert peak < 16 * 1024 * 1024


def test_kept_strings_are_bounded_in_all(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gguf, "MAX_KEPT_BYTES", 10_000)
    path = header_file(tmp_path / "vocab.gguf", [entry("tokenizer.ggml.tokens", 9, strings(["x" * 100] * 101))])
    with pytest.raises(BadInput, match="kept arrays exceed the 10000-byte bound"):
        read_header(path)
