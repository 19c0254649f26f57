"""Whether published numbers were reproduced: the stage between a rerun and the tables.

It reads what repro.report computed (the rows of VALID cells) and says, per claim, what the rerun
found, never more than its evidence:

- ``exact``: when a claim and a rerun are the same exact setup, so identity is promised (the setup
  record and its one comparison are repro.bundle.setup's, below this stage, since merge uses them);
- ``claims``: each claim's verdict (REPRODUCED, CONSISTENT, ON ANOTHER SETUP, DIFFERENT, NOT RERUN,
  and the counts-only words) and the rule it was judged by;
- ``tolerance``: the statistical tests a verdict on another setup uses;
- ``rerun_rows``: a rerun as the facts a claim is compared on;
- ``own_claims``: our own rows stated as claims (``claims from-results``, ``verify --published``);
- ``published``: published numbers read, and differing transcripts named by their first differing
  step;
- ``compare``: two sets of results row by row, their setup differences by the same comparison.

The layering (tests/foundation/test_layers.py, layers.ini): repro.rerun and the commands import
this package; it imports repro.report and what lies below; nothing below imports it.

Import the modules themselves (``from repro.verify.claims import ...``): this package's top level
imports nothing.
"""

# The modules other packages may import (tests/foundation/test_public_names.py keeps it so).
__all__ = [
    "claims",
    "compare",
    "exact",
    "own_claims",
    "published",
    "rerun_rows",
    "tolerance",
]
