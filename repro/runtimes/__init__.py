"""Agent runtimes (OpenClaw, Pi, Hermes: repro.spec.runtimes says what each is), on the host side.

- `image`: the images they run in, the harness image plus the runtime, built offline from their locks;
- `wire`: a runtime cell's recorded wire in the bundle (`wire.jsonl`), kept and read back.
"""

# The modules other packages may import (tests/foundation/test_public_names.py keeps it so).
__all__ = ["image", "wire"]
