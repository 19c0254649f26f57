"""Engines: the sealed servers a run talks to, and the latency gate that admits them.

- `base`: the `Engine` interface (boot sealed, wait ready, identify, stop), `EngineHandle`,
  `boot_engine` and `stop_engine`, what a run calls;
- `registry`: engine kind -> implementation, lazy (`engine_for`, `engine_class`);
- `llamacpp`, `ollama`: the two implementations;
- `gate`: the latency gate run against a booted engine (its verdict, `GateResult`, is a record in
  repro.spec.findings).
"""

# The modules other packages may import (tests/foundation/test_public_names.py keeps it so).
__all__ = [
    "base",
    "gate",
    "gpu",
    "registry",
]
