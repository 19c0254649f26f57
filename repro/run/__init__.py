"""A run: the plan carried out, group by group, into a bundle.

- `runner`: `run_matrix`, the run: prepare everything before an engine boots, open (or resume) the
  bundle, run each group, finish the run record;
- `context`: what every part shares (`RunOptions`, `Prepared`, `RunContext`, `GroupEngine`);
- `group`: one engine group: boot, gate, run its cells (healed), stop;
- `cell`: one cell's workers in their sealed containers, collected by the suite kind, audited;
- `resume`: which cells are left to run, and what an interrupted cell kept;
- `records`: the record of a cell that did not run to the end, and the line a finished cell shows;
- `outcome`: the run's exit status and last line, read back from its bundle (`run_outcome`);
- `healing`: an engine that dies or stops answering, rebooted and its cell rerun;
- `progress`: the console display fed by the harness's progress lines;
- `compose`: one cell by hand through docker-compose (the same create arguments; not clean-room).
"""

# The modules other packages may import (tests/foundation/test_public_names.py keeps it so).
__all__ = [
    "cell",
    "compose",
    "context",
    "outcome",
    "progress",
    "runner",
]
