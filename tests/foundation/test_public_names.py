"""Public surfaces, read from the code's own imports (the AST, so function-local imports count):

- every package of repro/ and harness/ names in `__all__` what others may import;
- a module of repro imports another package's module only if that package's `__all__` names it;
- no module imports a private name (a leading underscore) of another first-party module, neither
  `from X import _name` nor `X._name`;
- repro imports the harness through its public surface alone (docs/architecture.md, The harness),
  and only names those modules declare.
"""

from __future__ import annotations

import ast
import importlib
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FIRST_PARTY = ("repro", "harness")
HOST_SURFACE = {
    "harness.contracts",
    "harness.io",
    "harness.scoring",
    "harness.regrade",
    "harness.probe",
    "harness.lint",
    "harness.testing",
    "harness.runtimes",  # its wire reader: the check and the report read a runtime's replies as the client does
}


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def sources(package: str) -> list[Path]:
    return sorted((ROOT / package).rglob("*.py"))


def is_package(dotted: str) -> bool:
    return (ROOT / dotted.replace(".", "/") / "__init__.py").is_file()


def first_party(dotted: str) -> bool:
    return dotted.split(".")[0] in FIRST_PARTY


def imports(path: Path) -> Iterator[tuple[int, str, list[str]]]:
    """(line, module, names) of each import: names empty for `import X`."""
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.lineno, node.module, [a.name for a in node.names]
        elif isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name, []


def package_all(package: str) -> list[str] | None:
    """The `__all__` a package's __init__ assigns, read without importing it."""
    tree = ast.parse((ROOT / package.replace(".", "/") / "__init__.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets) and node.value is not None:
                return list(ast.literal_eval(node.value))
    return None


def all_packages() -> list[str]:
    return sorted(module_name(p) for root in FIRST_PARTY for p in sources(root) if p.name == "__init__.py")


@pytest.mark.parametrize("package", all_packages())
def test_every_package_names_what_others_may_import(package):
    names = package_all(package)
    assert names is not None, f"{package}/__init__.py has no __all__"
    loaded = importlib.import_module(package)
    for name in names:
        assert hasattr(loaded, name) or importlib.util.find_spec(f"{package}.{name}") is not None, (
            f"{package}.__all__ names {name!r}, which is not there"
        )


def owner(dotted: str) -> str:
    """The deepest package of repro that holds the module or package ``dotted``."""
    parts = dotted.split(".")
    for depth in range(len(parts) - 1, 0, -1):
        if is_package(".".join(parts[:depth])):
            return ".".join(parts[:depth])
    return parts[0]


def cross_package_modules(path: Path) -> Iterator[tuple[int, str]]:
    """Each module of another repro package that ``path`` imports, as that package's member."""
    here = module_name(path)
    for line, module, names in imports(path):
        if not module.startswith("repro."):
            continue
        targets = (
            [f"{module}.{n}" for n in names if is_package(module) and n != "*"]
            if names and is_package(module)
            else [module]
        )
        for target in targets:
            package = owner(target)
            if package != "repro" and not here.startswith(package + ".") and here != package:
                yield line, target


def test_repro_imports_only_the_modules_a_package_names():
    wrong = []
    for path in sources("repro"):
        for line, target in cross_package_modules(path):
            package = owner(target)
            member = target[len(package) + 1 :].split(".")[0]
            if member not in (package_all(package) or []):
                wrong.append(f"{path.relative_to(ROOT)}:{line}: {target} is not in {package}.__all__")
    assert wrong == []


def private_uses(text: str, here: str) -> Iterator[str]:
    """`from X import _name` and `X._name` in module ``here`` where X is another first-party module."""
    tree = ast.parse(text)
    bound: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0 and first_party(node.module):
            for alias in node.names:
                if alias.name.startswith("_") and not alias.name.startswith("__") and node.module != here:
                    yield f"{node.lineno}: from {node.module} import {alias.name}"
                bound[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if first_party(alias.name):
                    bound[alias.asname or alias.name.split(".")[0]] = (
                        alias.name if alias.asname else alias.name.split(".")[0]
                    )
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
            if isinstance(node.value, ast.Name) and node.value.id in bound and bound[node.value.id] != here:
                yield f"{node.lineno}: {node.value.id}.{node.attr}"


@pytest.mark.parametrize("package", FIRST_PARTY)
def test_no_private_name_crosses_a_module(package):
    found = [
        f"{path.relative_to(ROOT)}:{use}"
        for path in sources(package)
        for use in private_uses(path.read_text(), module_name(path))
    ]
    assert found == []


def test_the_private_name_rule_finds_both_forms():
    text = "from repro.run.runner import _cell\nfrom repro.run import runner\nimport os\nrunner._gate()\nos._exit(0)\n"
    assert list(private_uses(text, "repro.commands.x")) == ["1: from repro.run.runner import _cell", "4: runner._gate"]
    assert list(private_uses("from repro.run.runner import _cell\n", "repro.run.runner")) == []


def test_repro_imports_the_harness_through_its_surface_alone():
    wrong = []
    for path in sources("repro"):
        for line, module, names in imports(path):
            if module != "harness" and not module.startswith("harness."):
                continue
            where = f"{path.relative_to(ROOT)}:{line}"
            if module not in HOST_SURFACE:
                wrong.append(f"{where}: {module} is not the harness's public surface")
            elif (declared := getattr(importlib.import_module(module), "__all__", None)) is not None:
                wrong += [f"{where}: {module} does not name {n} in __all__" for n in names if n not in declared]
    assert wrong == []
