"""Rerun a bundle: `repro rerun BUNDLE` (the reviewer's one command).

- `archive`: the bundle as given, or its `.tar.gz` unpacked safely under `--out`.
- `preflight`: the same-setup table, input by input, the bundle's beside this machine's.
- `prepare`: check the bundle, rebuild its matrix, profile and suites, plan its cells.
- `session`: the rerun step by step (`RerunSession`): prepare, fetch, build, run, check, verify.
- `verdict`: the rerun against the bundle, row by row (`verdict_of`), and its report.
"""

# The modules other packages may import (tests/foundation/test_public_names.py keeps it so).
__all__ = [
    "archive",
    "preflight",
    "prepare",
    "session",
    "verdict",
]
