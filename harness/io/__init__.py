"""What comes into the harness, read under bounds: the layer below everything else but the contracts.

- ``inputs``: bounded reads of regular files (no link followed, a limit, a clear error), the
  harness's input bounds (``MAX_SCENARIO_BYTES``, ``MAX_RECORDS_BYTES``), output paths.
- ``strict_json``: JSON that refuses duplicate keys, NaN and Infinity, over-long integers and deep
  nesting (``loads_strict``), and the compact dump (``dumps_compact``).
- ``schema_check``: the JSON Schema subset the harness checks tool arguments and steps against.

The host may import the names below (it parses the harness's output with the same strict JSON
and bounds a scenario file as the harness does); the modules themselves are the harness's own.
"""

from harness.io.inputs import MAX_SCENARIO_BYTES
from harness.io.strict_json import StrictJSONError, loads_strict

__all__ = ["MAX_SCENARIO_BYTES", "StrictJSONError", "loads_strict"]
