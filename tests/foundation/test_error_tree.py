"""One error tree: every exception class repro defines derives from repro.core.errors.ReproError
(so the CLI prints it as one line with its exit status, never a traceback), and each is defined
once, in the module that raises it: no module offers another module's exception as its own (in
its `__all__`), so every importer names where it is defined. docs/architecture.md, "Errors and
exit statuses", lists the tree.

The harness (harness/) is a separate program that never imports repro: its exceptions are its own
and are not held to this tree."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from types import ModuleType

import pytest

import repro
from repro.core.errors import BadInput, ReproError


def repro_modules() -> list[ModuleType]:
    """Every module of repro, imported (the package's modules and its subpackages')."""
    names = ["repro"] + [info.name for info in pkgutil.walk_packages(repro.__path__, "repro.")]
    return [importlib.import_module(name) for name in sorted(names)]


def classes_defined_in(module: ModuleType) -> list[type]:
    """The classes a module defines, those nested in its classes included."""
    found: list[type] = []
    pending = [obj for obj in vars(module).values() if inspect.isclass(obj)]
    while pending:
        cls = pending.pop()
        if cls.__module__ != module.__name__ or cls in found:
            continue
        found.append(cls)
        pending.extend(obj for obj in vars(cls).values() if inspect.isclass(obj))
    return found


def exceptions() -> list[type[BaseException]]:
    return sorted(
        {cls for module in repro_modules() for cls in classes_defined_in(module) if issubclass(cls, BaseException)},
        key=lambda cls: f"{cls.__module__}.{cls.__qualname__}",
    )


def test_the_walk_finds_the_project_exceptions():
    names = {f"{cls.__module__}.{cls.__qualname__}" for cls in exceptions()}
    assert {
        "repro.core.errors.ReproError",
        "repro.core.errors.BadInput",
        "repro.engines.gpu.GpuError",
        "repro.run.healing.EngineLost",
        "repro.store.models.SourceFailed",
        "repro.containers.sandbox.EngineDied",
    } <= names


@pytest.mark.parametrize("error", exceptions(), ids=lambda cls: f"{cls.__module__}.{cls.__qualname__}")
def test_every_exception_derives_from_repro_error(error):
    assert issubclass(error, ReproError), (
        f"{error.__module__}.{error.__qualname__} derives from {[b.__name__ for b in error.__mro__[1:]]}, "
        "not from repro.core.errors.ReproError (or a subclass with the right exit_code, such as BadInput)"
    )


def test_every_exception_has_a_cli_exit_status():
    for error in exceptions():
        code = getattr(error, "exit_code", None)
        assert code in (1, 2), f"{error.__qualname__}: exit_code {code}"
    assert BadInput.exit_code == 2 and ReproError.exit_code == 1


def test_no_module_offers_another_modules_exception():
    """An exception is imported from the module that defines it, never through a re-export."""
    offered = []
    for module in repro_modules():
        for name in getattr(module, "__all__", ()):
            obj = getattr(module, name, None)
            if inspect.isclass(obj) and issubclass(obj, BaseException) and obj.__module__ != module.__name__:
                offered.append(f"{module.__name__}.__all__ names {name}, defined in {obj.__module__}")
    assert not offered, "\n".join(offered)


def test_each_exception_name_is_defined_once():
    seen: dict[str, str] = {}
    twice = []
    for error in exceptions():
        where = f"{error.__module__}.{error.__qualname__}"
        if error.__qualname__ in seen:
            twice.append(f"{error.__qualname__}: {seen[error.__qualname__]} and {where}")
        seen[error.__qualname__] = where
    assert not twice, "\n".join(twice)
