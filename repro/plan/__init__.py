"""The plan: which cells a matrix gives on a profile, and how a group's work is dealt.

- `planner`: `make_plan` (cells and exclusions with reasons, the capability preflight),
  `--only` and `--shard` selection;
- `replicas`: how many engine replicas fit a machine, and scenarios dealt among workers.
"""

# The modules other packages may import (tests/foundation/test_public_names.py keeps it so).
__all__ = [
    "planner",
    "replicas",
]
