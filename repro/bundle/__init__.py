"""The result bundle: its schema, how it is written and read, and who vouches for it.

- `records`: `RunRecord`, `CellRecord` and their parts (the schema; spec and core only);
- `layout`: the bundle on disk, one job per module: its names, atomic redacted writes
  (`writer`: `Bundle`, `CellWriter`), bounded parsing (`loading`), integrity (`integrity`: the
  manifest, each cell's files), `reader.BundleReader` (every read of a bundle: bounded, no link
  followed, ids checked), finding runs (`discovery`), merging shards (`merge`);
- `setup`: the one setup record of a cell, derived from its records alone (`cell_setup`), and the
  one comparison of two (`compare`: per input same, differs, not stated, not recorded) that the
  rerun's preflight and verdict, verify, merge, the tables' rows and compare use;
- `evidence`: a bundle as the check rules read it (`RunEvidence`, `CellEvidence`, the recomputed plan);
- `redact`: host paths, user and host name out of every byte; the bundle lint;
- `provenance`: the project tree's state and the machine's description;
- `signing`, `attestation`, `signers`: the SSH signature, the in-toto attestation, who signed.
"""

# The modules other packages may import (tests/foundation/test_public_names.py keeps it so).
__all__ = [
    "attestation",
    "evidence",
    "layout",
    "provenance",
    "records",
    "redact",
    "setup",
    "signers",
    "signing",
]
