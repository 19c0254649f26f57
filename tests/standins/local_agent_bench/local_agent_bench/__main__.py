"""`python3 -m local_agent_bench`: the stand-in's command line (not Local Agent Bench's code)."""

import sys

from local_agent_bench.cli import main

sys.exit(main())
