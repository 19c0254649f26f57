"""Suites behind one interface: what runs a suite's tasks, what a bundle keeps of them, and how
their outputs become our records.

- `base`: `SuiteKind`, the interface (its lifecycle in its docstring), the shared mounts;
- `registry`: suite kind -> implementation, lazy (`kind_of(suite)`, `select(suite)`);
- `scenarios`: our own scenario suites, run by our harness;
- `sources`: scenario files from a pinned archive (`repro suites fetch`);
- `references`: other projects' inputs a bundle records by reference, resolved for a check;
- `fetching`: what a bundle references, fetched (`repro suites fetch --from-bundle`);
- `reseal`: a bundle rewritten so that the inputs it carries become references (`repro results reference`);
- `external/`: other projects' harnesses run sealed from their pinned releases (ToolCallBench).

Nothing outside this package asks which kind a suite is.
"""

# The modules other packages may import (tests/foundation/test_public_names.py keeps it so).
__all__ = [
    "base",
    "fetching",
    "references",
    "registry",
    "reseal",
    "sources",
]
