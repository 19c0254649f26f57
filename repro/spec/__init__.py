"""What a run is asked to do, and the records the stages pass each other: data, no behaviour.

- `matrix`: the matrix file's models (`Matrix`, `Suite`, `ModelSpec`, `EngineSpec`, ...);
- `loading`: reading and validating a matrix file (`FILE:LINE field: reason`);
- `profiles`: the hardware profiles (matrix/profiles.yaml);
- `harnesses`: what validation knows of each external harness (known releases, protocols);
- `engines`: what the project knows of each engine kind (whether its prompt cache can be turned off);
- `runtimes`: what the project knows of each agent runtime kind (its registry package, the protocols
  it carries) and a matrix's runtime pin (`RuntimeSpec`);
- `published`: where other projects publish the inputs the matrices pin (facts, by sha256);
- `claims`: a claims file, someone's published table stated as data a rerun is verified against;
- `tolerance`: what a rerun may differ by and still be consistent with a claim (data only;
  repro.verify.tolerance holds the tests that apply it);
- `cells`: `Cell`, one model x engine x protocol x suite x repeat;
- `findings`: what a stage found and a record keeps (`GateResult`, `SandboxSettings`,
  `TemplateFacts`, `SuiteSelection`): defined here so the bundle's schema
  (repro.bundle.records) depends on spec and core alone.
"""

# The modules other packages may import (tests/foundation/test_public_names.py keeps it so).
__all__ = [
    "cells",
    "claims",
    "engines",
    "findings",
    "harnesses",
    "loading",
    "matrix",
    "profiles",
    "published",
    "runtimes",
    "tolerance",
]
