"""CLI commands, one module per stage; each module's functions only parse flags and print.

Three modules define no command and serve them all: `vocabulary` (the words and options every
command shares), `printing` (how a check's and a verify's verdicts print) and `steps` (fetch and
build as `models fetch`, `suites fetch` and `images build` do them, printing as they go, which
`repro rerun` borrows). A command module imports no other command module, only these."""

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
    "printing",
    "rerun",
    "results",
    "scale",
    "sign",
    "steps",
    "suites",
    "verify",
    "vocabulary",
]
