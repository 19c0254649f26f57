"""Names that resolve: every dotted `repro.…` or `harness.…` name the prose writes names something
that exists, so a reader who follows one finds it.

The prose is the docstrings (of modules, classes and functions) and comments of repro/ and
harness/, docs/*.md and README.md. A name resolves when the longest prefix of it that imports does
and the rest is found on it attribute by attribute (a pydantic or dataclass field counts); a name
that reaches a class or function through a plain module (not a package, whose `__init__` is its
public surface) must name the module that defines it: `repro.run.context.RunContext`, never
`repro.run.runner.RunContext` because runner imports it.

Not names: a file name (`harness.log`, `harness.md`), a string the code itself writes (a Docker
label such as `repro.cell`, a record's field such as `repro.passed`: found among the code's string
literals), a command (`python -m harness.probe`), and what a Markdown code block other than Python
holds (commands, YAML, output)."""

from __future__ import annotations

import ast
import dataclasses
import importlib
import inspect
import io
import re
import tokenize
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("repro", "harness")
NAME = re.compile(r"(?<![\w./-])((?:repro|harness)(?:\.[A-Za-z_]\w*)+)")
COMMAND = re.compile(r"python3? -m\s+$")  # `python -m harness.probe`: a command, not a name
FILE_SUFFIXES = {"md", "py", "log", "json", "jsonl", "yaml", "yml", "toml", "txt", "html", "tex", "sh", "ini"}
PYTHON_FENCES = {"python", "py", "pycon"}
# name -> why it cannot resolve; keep it tiny, every entry with its reason
ALLOWED: dict[str, str] = {}


# ---------------------------------------------------------------- where names are written


def python_prose(path: Path) -> Iterator[tuple[int, str]]:
    """(first line, text) of each docstring and comment of a Python file."""
    source = path.read_text()
    for node in ast.walk(ast.parse(source, str(path))):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            first = node.body[0] if node.body else None
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                yield first.lineno, first.value.value
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            yield token.start[0], token.string


def markdown_prose(path: Path) -> Iterator[tuple[int, str]]:
    """(line, text) of each line of a Markdown file outside its code blocks, and inside Python ones."""
    fence: str | None = None
    for number, line in enumerate(path.read_text().splitlines(), 1):
        stripped = line.strip()
        if stripped.startswith("```"):
            fence = None if fence is not None else stripped[3:].strip().lower()
            continue
        if fence is None or fence in PYTHON_FENCES:
            yield number, line


def prose_files() -> list[Path]:
    python = [path for package in PACKAGES for path in sorted((ROOT / package).rglob("*.py"))]
    return python + sorted((ROOT / "docs").glob("*.md")) + [ROOT / "README.md"]


def names_in(text: str) -> Iterator[tuple[int, str]]:
    """(line offset, name) of each dotted name in `text` that is neither a command nor a file name."""
    for match in NAME.finditer(text):
        name = match.group(1)
        if COMMAND.search(text[: match.start()]) or name.rsplit(".", 1)[1] in FILE_SUFFIXES:
            continue
        yield text.count("\n", 0, match.start()), name


def written_names() -> list[tuple[str, str]]:
    """(path:line, name) of every dotted name the prose writes."""
    found = []
    for path in prose_files():
        prose = python_prose(path) if path.suffix == ".py" else markdown_prose(path)
        for line, text in prose:
            for offset, name in names_in(text):
                found.append((f"{path.relative_to(ROOT).as_posix()}:{line + offset}", name))
    return found


def code_strings() -> set[str]:
    """Every dotted name (and each of its dotted prefixes) inside a string literal of the code,
    docstrings aside: the labels, fields and file names the code itself writes."""
    spelled: set[str] = set()
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            tree = ast.parse(path.read_text(), str(path))
            docstrings = {
                id(node.body[0].value)
                for node in ast.walk(tree)
                if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
                and node.body
                and isinstance(node.body[0], ast.Expr)
            }
            for node in ast.walk(tree):
                if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
                    for match in NAME.finditer(node.value):
                        parts = match.group(1).split(".")
                        spelled.update(".".join(parts[:end]) for end in range(2, len(parts) + 1))
    return spelled


# ---------------------------------------------------------------- resolving


def has_field(obj: object, name: str) -> bool:
    """A pydantic field, a dataclass field or an annotated attribute (no class attribute at run time)."""
    fields = getattr(obj, "model_fields", None)
    if isinstance(fields, dict) and name in fields:
        return True
    if dataclasses.is_dataclass(obj) and any(field.name == name for field in dataclasses.fields(obj)):
        return True
    return inspect.isclass(obj) and any(name in vars(cls).get("__annotations__", {}) for cls in obj.__mro__)


def import_longest(parts: list[str]) -> tuple[ModuleType, int] | None:
    """The module of the longest prefix of `parts` that imports, and how many parts it took."""
    for end in range(len(parts), 0, -1):
        dotted = ".".join(parts[:end])
        try:
            return importlib.import_module(dotted), end
        except ModuleNotFoundError as error:
            if error.name is None or not (dotted == error.name or dotted.startswith(error.name + ".")):
                raise  # the module is there but something it imports is not: not this test's to judge
    return None


def unresolved(name: str) -> str | None:
    """Why `name` does not resolve, or None when it does."""
    parts = name.split(".")
    found = import_longest(parts)
    if found is None:
        return "no such module"
    module, end = found
    obj: object = module
    for index in range(end, len(parts)):
        attribute, owner = parts[index], ".".join(parts[:index])
        if not hasattr(obj, attribute):
            if has_field(obj, attribute) and index == len(parts) - 1:
                return None
            return f"{owner} has no {attribute}"
        obj = getattr(obj, attribute)
        defined = getattr(obj, "__module__", None)
        through_module = index == end and not hasattr(module, "__path__")  # a package re-exports its surface
        if through_module and (inspect.isclass(obj) or inspect.isfunction(obj)) and defined != module.__name__:
            return f"{attribute} is defined in {defined} (imported into {module.__name__})"
    return None


# ---------------------------------------------------------------- the tests


def test_the_collector_reads_docstrings_comments_and_docs():
    where = {place.split(":")[0] for place, _ in written_names()}
    assert {"repro/core/__init__.py", "docs/architecture.md", "README.md"} & where
    assert any(path.startswith("harness/") for path in where)
    assert any(path.startswith("docs/") for path in where)


def test_the_resolver_tells_stale_names_from_live_ones():
    assert unresolved("repro.bundle.setup") is None
    assert unresolved("repro.verify.exact") is None
    assert unresolved("repro.run.context.RunContext") is None
    assert unresolved("repro.spec.matrix.ExternalSuite.harness") is None  # a pydantic field
    assert unresolved("harness.tools.ToolContext") is None  # a package's re-export is its surface
    assert unresolved("repro.suite_sources") == "repro has no suite_sources"
    assert unresolved("harness.regrade.MAX_LINE_CHARS") == "harness.regrade has no MAX_LINE_CHARS"
    assert unresolved("repro.check.check_run") == "repro.check has no check_run"
    assert unresolved("repro.run.runner.RunContext") == (
        "RunContext is defined in repro.run.context (imported into repro.run.runner)"
    )
    assert list(names_in("run `python -m harness.probe` or read harness.log")) == []
    assert list(names_in("see repro.plan.replicas.\nand harness.io.inputs")) == [
        (0, "repro.plan.replicas"),
        (1, "harness.io.inputs"),
    ]


def test_every_written_name_resolves():
    spelled = code_strings()
    stale = []
    for place, name in written_names():
        if name in ALLOWED or name in spelled:
            continue
        why = unresolved(name)
        if why is not None:
            stale.append(f"{place}: {name} ({why})")
    assert not stale, "names that do not resolve:\n" + "\n".join(stale)


def test_the_allow_list_holds_only_names_that_are_written_and_do_not_resolve():
    written = {name for _, name in written_names()}
    for name, why in ALLOWED.items():
        assert why, f"{name}: say why it cannot resolve"
        assert name in written, f"{name} is no longer written: remove it from ALLOWED"
        assert unresolved(name) is not None, f"{name} resolves now: remove it from ALLOWED"
