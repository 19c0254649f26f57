"""From clean-room results to what a reader sees: the tables and their numbers, rendered.
Whether those numbers reproduce a claim is repro.verify's to say (the stage above this one).

- ``tables``: the rows' schema (``TableRow``, ``PaperTables``: what results.json holds).
- ``aggregate``: the rows recomputed from the VALID cells' ``scenarios.jsonl``, never pooling
  different settings.
- ``stats``: the intervals and tests behind them.
- ``coverage``: whether the rendered results are the whole plan, and if not, how they are partial
  (``run_coverage``).
- ``setup``: how the numbers were made, said beside them (each table's header and caption).
- ``paper``: ``results.md``, ``results.tex``, ``results.json`` from ``PaperTables`` (rendering
  only, in repro.core.templating's one jinja2 environment).
- ``figures``: the figures.
- ``html``: the self-contained ``report.html``.
- ``turns``: a scenario's transcript as chat turns (report.html's conversation, the inspect
  export's messages).
- ``export``: VALID cells read for other tools (what each exported log is made of).
- ``inspect_log``: each cell as an inspect_ai eval log (the ``inspect`` extra).
- ``eee``: Every Eval Ever records and Hugging Face ``.eval_results`` entries.
- ``runtimes``: what each agent runtime of a run did, from its cells' wires (``repro results runtimes``).
- ``repeats``: a row's repeats in the fields Local Agent Bench's repeat runner summarises
  (``repro results repeats``).

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
    "repeats",
    "runtimes",
    "stats",
    "tables",
]
