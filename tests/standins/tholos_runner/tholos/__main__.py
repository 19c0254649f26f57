"""`python -m tholos`: the stand-in's command line (a stand-in written by the repro project for
its tests; not Tholos-Bench's runner)."""

import sys

from tholos.cli import main

sys.exit(main(sys.argv[1:]))
