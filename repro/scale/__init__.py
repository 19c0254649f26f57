"""Scale-out: the jobs that run a matrix's shards on the schedulers people already run.

- `options`: the options and job description, every value checked before anything is written;
- `jobs`: Slurm arrays and their submit scripts, rendered from templates/;
- `k8s`: Kubernetes Indexed Jobs, built as data.
"""

# The modules other packages may import (tests/foundation/test_public_names.py keeps it so).
__all__ = [
    "jobs",
    "k8s",
    "options",
]
