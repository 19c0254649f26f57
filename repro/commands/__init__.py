"""CLI commands, one module per stage; each module's functions only parse flags and print."""

# The modules other packages may import (tests/foundation/test_public_names.py keeps it so).
__all__ = [
    "check",
    "claims",
    "cleanup",
    "compare",
    "compose",
    "doctor",
    "export",
    "external",
    "images",
    "matrix",
    "models",
    "paper",
    "rerun",
    "results",
    "scale",
    "sign",
    "suites",
    "verify",
    "vocabulary",
]
