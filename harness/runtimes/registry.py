"""Runtime kind -> its adapter class, as a lazy ``"module:object"`` entry: one class per runtime (the
harness's half of a runtime kind; repro.spec.runtimes holds the other half, its row)."""

from __future__ import annotations

import importlib

from harness.runtimes.base import RuntimeAdapter

ADAPTERS = {
    "openclaw": "harness.runtimes.openclaw:OpenClaw",
    "pi": "harness.runtimes.pi:Pi",
    "hermes": "harness.runtimes.hermes:Hermes",
}


def adapter_named(kind: str) -> RuntimeAdapter:
    """The adapter of a runtime kind (imported on first use)."""
    module, _, name = ADAPTERS[kind].partition(":")
    adapter: RuntimeAdapter = getattr(importlib.import_module(module), name)()
    return adapter
