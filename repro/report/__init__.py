"""From clean-room results to what a reader sees: the tables and their numbers, and the
comparisons between runs.

- ``tables``: the rows' schema (``TableRow``, ``PaperTables``: what results.json holds);
  ``aggregate``: the rows recomputed from the VALID cells' ``scenarios.jsonl``, never pooling
  different settings; ``stats``: the intervals and tests behind them.
- ``paper``: ``results.md``, ``results.tex``, ``results.json`` from ``PaperTables`` (rendering
  only); ``figures``: the figures; ``html``: the self-contained ``report.html``;
  ``templating``: the one jinja2 environment every rendered file uses.
- ``compare``: two sets of results row by row.
- ``claims_verify``: each claim's verdict; ``pins``: the one comparison of pinned inputs;
  ``rerun_rows``: a rerun as the facts a claim is compared on; ``own_claims``: our own rows
  stated as claims (``claims from-results``, ``verify --published``); ``tolerance``: the tests.
- ``export``: VALID cells read for other tools (``inspect_log``: inspect_ai eval logs; ``eee``:
  Every Eval Ever records and Hugging Face ``.eval_results`` entries).

Import the modules themselves (``from repro.report.aggregate import ...``): this package's top
level imports nothing.
"""

# The modules other packages may import (tests/foundation/test_public_names.py keeps it so).
__all__ = [
    "aggregate",
    "claims_verify",
    "compare",
    "coverage",
    "eee",
    "export",
    "figures",
    "html",
    "own_claims",
    "paper",
    "pins",
    "rerun_rows",
    "tables",
    "verify",
]
