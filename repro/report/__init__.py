"""From clean-room results to what a reader sees: the tables and their numbers, rendered.
Whether those numbers reproduce a claim is repro.verify's to say (the stage above this one).

- ``tables``: the rows' schema (``TableRow``, ``PaperTables``: what results.json holds);
  ``aggregate``: the rows recomputed from the VALID cells' ``scenarios.jsonl``, never pooling
  different settings; ``stats``: the intervals and tests behind them.
- ``paper``: ``results.md``, ``results.tex``, ``results.json`` from ``PaperTables`` (rendering
  only); ``figures``: the figures; ``html``: the self-contained ``report.html``;
  ``templating``: the one jinja2 environment every rendered file uses.
- ``export``: VALID cells read for other tools (``inspect_log``: inspect_ai eval logs; ``eee``:
  Every Eval Ever records and Hugging Face ``.eval_results`` entries).

Import the modules themselves (``from repro.report.aggregate import ...``): this package's top
level imports nothing.
"""

# The modules other packages may import (tests/foundation/test_public_names.py keeps it so).
__all__ = [
    "aggregate",
    "coverage",
    "eee",
    "export",
    "figures",
    "html",
    "paper",
    "stats",
    "tables",
]
