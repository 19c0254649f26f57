"""`repro check`: which cells of a bundle are clean-room, from the bundle alone.

- `verdict`: `check_run`, the verdicts (`CellVerdict`, `RunVerdict`, `Problem`);
- `formats`: the rules of each bundle format;
- `run_rules`, `cell_rules`: the rules of every bundle, run-level and per cell;
- `bounds`, `commit`, `cross`, `templates`, `gpu`, `resumed`, `served`: rules by area (recorded
  numbers, the project's files at the run's commit, the engine's log against its record, chat
  templates, a GPU cell's evidence, a resumed cell's kept scenarios tied to the attempts that
  finished them, the requests an engine's log shows it served against those a cell's transcripts
  record);
- `wire`: a runtime cell's recorded wire against its transcripts (docs/runtimes.md).

An external harness's raw outputs are checked by its suite kind's own rules
(repro.suites.external.check_rules), in place of those that read our scenario files.
"""

# The modules other packages may import (tests/foundation/test_public_names.py keeps it so).
__all__ = [
    "commit",
    "verdict",
]
