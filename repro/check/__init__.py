"""`repro check`: which cells of a bundle are clean-room, from the bundle alone.

- `verdict`: `check_run`, the verdicts (`CellVerdict`, `RunVerdict`, `Problem`);
- `formats`: the rules of each bundle format;
- `run_rules`, `cell_rules`: the rules of every bundle, run-level and per cell;
- `bounds`, `commit`, `cross`, `templates`, `external`, `gpu`, `resumed`: rules by area (recorded
  numbers, the project's files at the run's commit, the engine's log against its record, chat
  templates, an external harness's raw outputs, a GPU cell's evidence, a resumed cell's kept
  scenarios tied to the attempts that finished them).
"""

# The modules other packages may import (tests/foundation/test_public_names.py keeps it so).
__all__ = [
    "commit",
    "verdict",
]
