"""YAML files with line numbers, so that every problem reads `FILE:LINE field.path: reason`."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from repro.errors import BadInput

Location = tuple[Any, ...]


@dataclass
class YamlDocument:
    path: Path
    raw: bytes
    data: Any
    lines: dict[Location, int] = field(default_factory=dict)

    def line_of(self, loc: Location) -> int:
        """The line of the deepest part of `loc` that exists in the file."""
        loc = tuple(loc)
        while loc and loc not in self.lines:
            loc = loc[:-1]
        return self.lines.get(loc, 1)


def load_yaml_document(path: str | Path) -> YamlDocument:
    path = Path(path)
    if not path.is_file():
        raise BadInput(f"{path}: no such file")
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8")
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except UnicodeDecodeError:
        raise BadInput(f"{path}: not UTF-8 text") from None
    except yaml.MarkedYAMLError as error:
        line = error.problem_mark.line + 1 if error.problem_mark else 1
        raise BadInput(f"{path}:{line} YAML syntax error: {error.problem}") from None
    document = YamlDocument(path=path, raw=raw, data=data)
    if node is None:
        raise BadInput(f"{path}:1 the file is empty")
    duplicates = _index_lines(node, (), document.lines)
    if duplicates:
        raise BadInput(f"{path}: duplicate keys", lines=[f"{path}:{line} {dotted(loc)}: duplicate key" for loc, line in duplicates])
    if not isinstance(data, dict):
        raise BadInput(f"{path}:1 the top level must be a mapping")
    return document


def _index_lines(node: yaml.Node, loc: Location, lines: dict[Location, int]) -> list[tuple[Location, int]]:
    """Record the line of every key and item; return duplicate keys found on the way."""
    lines.setdefault(loc, node.start_mark.line + 1)
    duplicates: list[tuple[Location, int]] = []
    if isinstance(node, yaml.MappingNode):
        seen: set[str] = set()
        for key_node, value_node in node.value:
            key = key_node.value
            child = loc + (key,)
            if key in seen:
                duplicates.append((child, key_node.start_mark.line + 1))
            seen.add(key)
            lines[child] = key_node.start_mark.line + 1
            duplicates += _index_lines(value_node, child, lines)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            duplicates += _index_lines(item, loc + (index,), lines)
    return duplicates


def dotted(loc: Location) -> str:
    """('models', 2, 'sha256') -> 'models[2].sha256'."""
    text = ""
    for part in loc:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += ("." if text else "") + str(part)
    return text or "(top level)"


def format_problem(document: YamlDocument, loc: Location, reason: str) -> str:
    return f"{document.path}:{document.line_of(loc)} {dotted(loc)}: {reason}"


def pydantic_problems(document: YamlDocument, error: ValidationError) -> list[str]:
    problems = []
    for item in error.errors(include_url=False):
        loc = tuple(part for part in item["loc"] if not _is_union_tag(part))
        problems.append(format_problem(document, loc, _reason(item)))
    return sorted(set(problems), key=problems.index)


def _is_union_tag(part: Any) -> bool:
    return isinstance(part, str) and ("[" in part or part.startswith("function-"))


def _reason(item: dict) -> str:
    kind, message = item["type"], item["msg"]
    if kind == "extra_forbidden":
        return "unknown key"
    if kind == "missing":
        return "required"
    if kind == "string_pattern_mismatch":
        return f"does not match {item.get('ctx', {}).get('pattern', 'the pattern')}"
    if message.startswith("Value error, "):
        return message[len("Value error, ") :]
    return message[0].lower() + message[1:] if message else kind
