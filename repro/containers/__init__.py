"""Containers: the typed seam to the Docker SDK and the lifecycle of every container a run starts.

- `client`: the Protocols of the Docker calls the orchestrator makes (`DockerClient`, ...);
- `lifecycle`: start, wait with a deadline, read back, always remove;
- `sandbox`: the hardened settings of harness and probe containers, read back from attrs, probes;
- `audit`: what a container with exact settings can do from inside (the sandbox audit);
- `cleanup`: leftover containers removed by label.
"""

# The modules other packages may import (tests/foundation/test_public_names.py keeps it so).
__all__ = [
    "audit",
    "cleanup",
    "client",
    "lifecycle",
    "sandbox",
]
