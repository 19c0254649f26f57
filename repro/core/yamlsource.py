"""User files read with bounds: YAML with line numbers (`FILE:LINE field.path: reason`), and JSON.

Every file repro reads as YAML or JSON input (a matrix, the profiles, a published results.json,
the files of a bundle) goes through `read_bounded`, then `load_yaml_document` or
`read_json_bounded`. Whatever the bytes, the answer is a value or one `BadInput` line, in well
under a second and with bounded memory:

- at most `MAX_YAML_BYTES` (1 MiB) of YAML and `repro.core.files.MAX_JSON_BYTES` (16 MiB) of JSON by default;
- a regular file (a folder, a device or a pipe is refused before it is opened);
- UTF-8 text without NUL bytes;
- at most `MAX_DEPTH` levels of nesting, `MAX_NODES` values after YAML aliases are expanded
  (an alias bomb is refused before it is built), integers of at most `MAX_INT_DIGITS` digits,
  YAML values of at most `MAX_SCALAR_CHARS` characters, and no NaN or Infinity in JSON.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError
from pydantic_core import ErrorDetails

from repro.core.errors import BadInput
from repro.core.files import MAX_JSON_BYTES, read_regular

Location = tuple[Any, ...]

MAX_YAML_BYTES = 1024 * 1024
MAX_DEPTH = 64
MAX_NODES = 100_000
MAX_INT_DIGITS = 64
MAX_SCALAR_CHARS = 4096  # one YAML value (a name, a reason, a description): each may be printed once per cell

Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
INT_TAG = "tag:yaml.org,2002:int"


# ---------------------------------------------------------------- bytes


def read_bounded(path: str | Path, limit: int, *, follow_links: bool = True) -> bytes:
    """The bytes of a regular file of at most `limit` bytes (repro.core.files.read_regular; links
    followed unless `follow_links` is False); anything else is one BadInput line."""
    return read_regular(Path(path), limit, follow_links=follow_links)


def decode_text(path: str | Path, data: bytes) -> str:
    """`data` as UTF-8 text without NUL bytes, else one BadInput line."""
    if b"\0" in data:
        line = data.count(b"\n", 0, data.index(b"\0")) + 1
        raise BadInput(f"{path}:{line} NUL byte: not a text file")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        raise BadInput(f"{path}:{line} not UTF-8 text") from None


def require_folder(path: str | Path, what: str = "folder") -> Path:
    """`path` as a folder that exists or can be made: a file (or anything else) in its place is refused."""
    path = Path(path)
    for part in [path, *path.parents]:
        if part.is_dir():
            break
        if part.exists() or part.is_symlink():
            kind = "a file" if part.is_file() else "something other than a folder"
            raise BadInput(f"{path}: {kind}, not a {what}" if part == path else f"{path}: {part} is {kind}")
    return path


def require_file_target(path: str | Path, what: str = "output file") -> Path:
    """`path` as a regular file to (re)write, checked before any work: an existing device, FIFO,
    folder or link in its place is refused (an atomic rename would replace a device node), and
    its folder must exist or be makeable."""
    path = Path(path)
    if path.is_symlink() or (path.exists() and not path.is_file()):
        kind = "a folder" if path.is_dir() else "a link" if path.is_symlink() else "not a regular file"
        raise BadInput(f"{path}: {kind}, not a {what}")
    require_folder(path.parent, f"folder for the {what}")
    return path


# ---------------------------------------------------------------- JSON


def read_json_bounded(path: str | Path, limit: int = MAX_JSON_BYTES, *, follow_links: bool = True) -> Any:
    """A JSON file's value, read within the bounds above; one BadInput line on anything else."""
    return parse_json_bounded(path, read_bounded(path, limit, follow_links=follow_links))


def read_jsonl_bounded(path: str | Path, limit: int = MAX_JSON_BYTES, *, follow_links: bool = True) -> list[Any]:
    """A JSON Lines file: one value per non-empty line; errors name `FILE:LINE`."""
    text = decode_text(path, read_bounded(path, limit, follow_links=follow_links))
    return [
        _parse_json_text(path, line, number) for number, line in enumerate(text.splitlines(), start=1) if line.strip()
    ]


def read_model_bounded(
    path: str | Path, model: type[BaseModel], what: str, limit: int = MAX_JSON_BYTES, *, follow_links: bool = True
) -> Any:
    """A JSON file validated as `model`: `FILE: not WHAT (N problems)` when it does not fit."""
    value = read_json_bounded(path, limit, follow_links=follow_links)
    try:
        return model.model_validate(value)
    except ValidationError as error:
        raise BadInput(f"{path}: not {what} ({error.error_count()} problems)") from None


def parse_json_bounded(name: str | Path, data: bytes) -> Any:
    """Bytes already read (within a limit) as a JSON value, within the bounds above."""
    return _parse_json_text(name, decode_text(name, data))


def _parse_json_text(path: str | Path, text: str, line: int | None = None) -> Any:
    """`text` as JSON; `line` is its line in a JSON Lines file (errors then name that line)."""
    where = f"{path}:{line}" if line else str(path)
    try:
        value = json.loads(
            text,
            parse_int=lambda digits: _json_int(where, digits),
            parse_constant=lambda name: _json_constant(where, name),
            parse_float=lambda digits: _json_float(where, digits),
        )
    except json.JSONDecodeError as error:
        raise BadInput(f"{path}:{line or error.lineno} not JSON: {error.msg}") from None
    except RecursionError:
        raise BadInput(f"{where}: nested deeper than {MAX_DEPTH} levels") from None
    _check_depth(where, value)
    return value


def _json_int(where: str, digits: str) -> int:
    if len(digits.lstrip("-")) > MAX_INT_DIGITS:
        raise BadInput(f"{where}: an integer of {len(digits)} digits (at most {MAX_INT_DIGITS})")
    return int(digits)


def _json_float(where: str, digits: str) -> float:
    """A JSON number as a float; one written too large for a float (1e999) is not read as infinity."""
    value = float(digits)
    if not math.isfinite(value):
        raise BadInput(f"{where}: the number {digits[:40]} is out of range (non-finite numbers are refused)")
    return value


def _json_constant(where: str, name: str) -> float:
    raise BadInput(f"{where}: {name} is not JSON")


def _check_depth(where: str, value: Any) -> None:
    """Refuse values nested deeper than MAX_DEPTH (walked without recursion)."""
    level = [value] if isinstance(value, (dict, list)) else []
    for _ in range(MAX_DEPTH):
        level = [child for item in level for child in _children(item) if isinstance(child, (dict, list))]
        if not level:
            return
    raise BadInput(f"{where}: nested deeper than {MAX_DEPTH} levels")


def _children(item: Any) -> Iterator[Any]:
    return iter(item.values()) if isinstance(item, dict) else iter(item)


# ---------------------------------------------------------------- YAML


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


def load_yaml_document(
    path: str | Path, limit: int = MAX_YAML_BYTES, *, follow_links: bool = True, values: int = MAX_NODES
) -> YamlDocument:
    """A YAML file whose top level is a mapping, read within the bounds above (`limit` bytes and
    `values` values instead of the defaults, for a kind of file that needs more), with the line of
    every key."""
    path = Path(path)
    raw = read_bounded(path, limit, follow_links=follow_links)
    text = decode_text(path, raw)
    node = _compose(path, text, values)
    if node is None:
        raise BadInput(f"{path}:1 the file is empty")
    document = YamlDocument(path=path, raw=raw, data=_construct(path, node))
    duplicates = _index_lines(node, (), document.lines)
    if duplicates:
        raise BadInput(
            f"{path}: duplicate keys", lines=[f"{path}:{line} {dotted(loc)}: duplicate key" for loc, line in duplicates]
        )
    if not isinstance(document.data, dict):
        raise BadInput(f"{path}:1 the top level must be a mapping")
    return document


def _compose(path: Path, text: str, values: int) -> yaml.Node | None:
    """The node graph of a single document, refused when too deep, too large or recursive."""
    try:
        _check_events(path, text, values)
        loader = Loader(text)
        try:
            node = loader.get_single_node()
        finally:
            loader.dispose()
    except yaml.MarkedYAMLError as error:
        line = error.problem_mark.line + 1 if error.problem_mark else 1
        raise BadInput(f"{path}:{line} YAML syntax error: {error.problem}") from None
    except yaml.YAMLError as error:
        raise BadInput(f"{path}: YAML error: {' '.join(str(error).split())}") from None
    if node is not None:
        _check_expansion(path, node, values)
    return node


def _check_events(path: Path, text: str, values: int) -> None:
    """Refuse deep nesting and huge documents from the event stream, before any node is built."""
    depth = count = 0
    for event in yaml.parse(text, Loader=Loader):
        count += 1
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_DEPTH:
                raise BadInput(f"{path}:{_event_line(event)} nested deeper than {MAX_DEPTH} levels")
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1
        if count > values:
            raise BadInput(f"{path}:{_event_line(event)} more than {values} values")


def _event_line(event: yaml.Event) -> int | str:
    """The 1-based line a parser event starts on (the parser marks every event)."""
    return event.start_mark.line + 1 if event.start_mark is not None else "?"


def _check_expansion(path: Path, root: yaml.Node, values: int) -> None:
    """Measure the document as aliases expand it (each node once): refuse bombs, cycles, deep chains, huge integers."""
    sizes: dict[int, int] = {}
    depths: dict[int, int] = {}
    ancestors: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, measured = stack.pop()
        key = id(node)
        if measured:
            ancestors.discard(key)
            _record_size(path, node, sizes, depths, values)
            continue
        if key in sizes:
            continue
        _check_scalar(path, node)
        ancestors.add(key)
        stack.append((node, True))
        for child in _node_children(node):
            if id(child) in ancestors:
                raise BadInput(f"{path}:{child.start_mark.line + 1} a recursive alias (a value that contains itself)")
            if id(child) not in sizes:
                stack.append((child, False))


def _record_size(path: Path, node: yaml.Node, sizes: dict[int, int], depths: dict[int, int], values: int) -> None:
    children = _node_children(node)
    sizes[id(node)] = 1 + sum(sizes[id(child)] for child in children)
    depths[id(node)] = 1 + max((depths[id(child)] for child in children), default=0)
    line = node.start_mark.line + 1
    if sizes[id(node)] > values:
        raise BadInput(f"{path}:{line} more than {values} values once aliases are expanded (an alias bomb?)")
    if depths[id(node)] > MAX_DEPTH:
        raise BadInput(f"{path}:{line} nested deeper than {MAX_DEPTH} levels once aliases are expanded")


def _check_scalar(path: Path, node: yaml.Node) -> None:
    if isinstance(node, yaml.ScalarNode) and len(node.value) > MAX_SCALAR_CHARS:
        raise BadInput(
            f"{path}:{node.start_mark.line + 1} a value of {len(node.value)} characters (at most {MAX_SCALAR_CHARS})"
        )
    if isinstance(node, yaml.ScalarNode) and node.tag == INT_TAG and len(node.value) > MAX_INT_DIGITS:
        raise BadInput(
            f"{path}:{node.start_mark.line + 1} an integer of {len(node.value)} digits (at most {MAX_INT_DIGITS})"
        )


def _node_children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def _construct(path: Path, node: yaml.Node) -> Any:
    loader = Loader("")
    try:
        return loader.construct_document(node)
    except yaml.MarkedYAMLError as error:
        line = error.problem_mark.line + 1 if error.problem_mark else 1
        raise BadInput(f"{path}:{line} YAML error: {error.problem}") from None
    except (ValueError, TypeError, OverflowError) as error:
        raise BadInput(f"{path}: a value cannot be read ({' '.join(str(error).split())})") from None
    finally:
        loader.dispose()


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


def _reason(item: ErrorDetails) -> str:
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
