"""Every package's module map lists exactly its modules.

A package's `__init__` docstring maps its modules as bullets, each opening with the names it
covers and a colon:

    - `names`: the layout's names, and the checks every path into a bundle passes;
    - `writer`, `reader`: ...
    - `external/`: a subpackage

A package whose docstring has such bullets has a map, and the names the bullets open with are
exactly its modules and subpackages (`__init__` aside): none missing, none that is not there,
none twice. Names inside a bullet's text (`reader.BundleReader`, a class, a field) are not
entries; every module heads a bullet of its own or shares one.

Three maps of harness/ are known stale and held as they are (`HELD`, with why): the published
bundles record the harness tree's digest, which any byte of harness/ changes."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("repro", "harness")
NAME = r"``?(\w+)/?``?"
HEAD = re.compile(rf"^- ((?:{NAME}(?:,\s*|\s+and\s+))*{NAME}):")
REPUBLISH = (
    "harness/'s bytes, docstrings included, are the harness tree digest that the published bundles "
    "record (paper/published/identity.yaml holds them `current`): fixing this map makes them all "
    "`older`, so it waits for the next republish"
)
# package -> (what its map gets wrong, why it is left so); the test fails once it changes
HELD: dict[str, tuple[str, str]] = {
    "harness/model": ("not listed ['clock']", REPUBLISH),
    "harness/protocols": ("not listed ['base']", REPUBLISH),
    "harness/tools": ("not listed ['pages']; listed but not there ['specs']", REPUBLISH),
}


def packages() -> list[Path]:
    return sorted(path.parent for package in PACKAGES for path in (ROOT / package).rglob("__init__.py"))


def module_map(package: Path) -> list[str]:
    """The names the bullets of the package's docstring open with, in order (empty: no map)."""
    docstring = ast.get_docstring(ast.parse((package / "__init__.py").read_text())) or ""
    listed = []
    for line in docstring.splitlines():
        head = HEAD.match(line)
        if head:
            listed += re.findall(NAME, head.group(1))
    return listed


def modules(package: Path) -> set[str]:
    """The package's modules and subpackages, `__init__` aside."""
    files = {path.stem for path in package.glob("*.py") if path.name != "__init__.py"}
    return files | {path.name for path in package.iterdir() if (path / "__init__.py").is_file()}


def mapped() -> list[Path]:
    return [package for package in packages() if module_map(package)]


def test_the_parser_reads_bullet_heads():
    assert HEAD.match("- `base`: `Adapter`, the raw files") is not None
    assert re.findall(NAME, HEAD.match("- ``values``, ``query``: cell values").group(1)) == ["values", "query"]
    assert re.findall(NAME, HEAD.match("- `external/`: harnesses").group(1)) == ["external"]
    assert HEAD.match("- the kind's `repro check` rules: text") is None


def test_the_packages_with_a_map_include_the_known_ones():
    names = {package.relative_to(ROOT).as_posix() for package in mapped()}
    assert {"repro/core", "repro/suites/external", "repro/check", "harness/tools"} <= names


def map_problems(package: Path) -> str:
    """What the package's map gets wrong, in one line ("" when it lists exactly its modules)."""
    listed = module_map(package)
    present = modules(package)
    problems = {
        "not listed": sorted(present - set(listed)),
        "listed but not there": sorted(set(listed) - present),
        "listed twice": sorted({name for name in listed if listed.count(name) > 1}),
    }
    return "; ".join(f"{what} {names}" for what, names in problems.items() if names)


@pytest.mark.parametrize("package", mapped(), ids=lambda path: path.relative_to(ROOT).as_posix())
def test_the_map_lists_exactly_the_modules(package):
    name = package.relative_to(ROOT).as_posix()
    problems = map_problems(package)
    if name in HELD:
        assert problems == HELD[name][0], f"{name}: the map changed ({problems or 'now exact'}): update HELD"
    else:
        assert not problems, f"{name}/__init__.py's module map: {problems}"


def test_what_is_held_back_is_only_the_harness():
    assert all(name.startswith("harness/") and why for name, (_, why) in HELD.items())
