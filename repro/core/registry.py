"""Lazy `"module:object"` entries, as lm-evaluation-harness keeps its registry: a table names each
implementation by where it lives and imports it only when it is asked for. So the module holding a
table (the engine kinds, the suite kinds) depends on none of its entries, and an entry's module may
import the interface it implements without an import circle."""

from __future__ import annotations

import importlib
from typing import Any


def load_object(entry: str) -> Any:
    """The object `entry` (`"package.module:name"`) names, imported on first use."""
    module, _, name = entry.partition(":")
    if not module or not name:
        raise ValueError(f"a registry entry is 'module:object', not {entry!r}")
    return getattr(importlib.import_module(module), name)
