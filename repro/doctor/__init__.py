"""`repro doctor`: is this machine able to run a matrix, and where does it break.

- `machine`: Docker, storage, disk, debootstrap, the NVIDIA runtime (one OK/WARN/FAIL line each);
- `probe`: with a matrix, layer by layer: images, models, each engine booted sealed, one round
  trip per protocol.
"""

# The modules other packages may import (tests/foundation/test_public_names.py keeps it so).
__all__ = [
    "machine",
    "probe",
]
