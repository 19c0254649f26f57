"""A run: the plan carried out, group by group, into a bundle.

- `runner`: `run_matrix` (prepare, boot, gate, each cell's workers, record; resume);
- `healing`: an engine that dies or stops answering, rebooted and its cell rerun;
- `progress`: the console display fed by the harness's progress lines;
- `compose`: one cell by hand through docker-compose (the same create arguments; not clean-room).
"""

# The modules other packages may import (tests/foundation/test_public_names.py keeps it so).
__all__ = [
    "compose",
    "progress",
    "runner",
]
