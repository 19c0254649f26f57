"""Engines: the sealed servers a run talks to, and the latency gate that admits them.

- `base`: the `Engine` interface alone (boot sealed, wait ready, identify, stop), `EngineHandle`
  and `stop_engine`, what a run calls;
- `devices`: what an engine gets of the machine (CPU quota, threads, GPUs per replica) and the
  checks of what it reports against the profile;
- `errors`: `EngineRefused`, the engine's own refusal (not what the matrix pins, or on the wrong
  hardware);
- `logs`: one log per replica or worker joined into a cell's file and split again;
- `boot`: `BootSpec`, everything one engine boot is launched with, the one object the interface's
  launch methods take;
- `registry`: engine kind -> implementation, the class its row names (repro.spec.engines
  `ENGINE_KINDS`), lazy (`engine_for`, `engine_class`), and `boot_engine`;
- `llamacpp`, `ollama`, `scripted`: the implementations, one class a kind (docs/engines.md,
  "Adding an engine");
- `gpu`: what a GPU cell ran on: nvidia-smi's rows and the GPU evidence of an engine's log, each
  kind's read by its row's reader;
- `gate`: the latency gate run against a booted engine (its verdict, `GateResult`, is a record in
  repro.spec.findings).
"""

# The modules other packages may import (tests/foundation/test_public_names.py keeps it so).
__all__ = [
    "base",
    "boot",
    "devices",
    "errors",
    "gate",
    "gpu",
    "logs",
    "registry",
]
