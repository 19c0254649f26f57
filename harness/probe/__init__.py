"""Probes: ``python -m harness probe ACTION``, a short-lived container in the engine's sealed
namespace that asks the engine one thing and writes one typed result (harness.contracts).

- ``actions``: the engine actions (ready, props, the Ollama ones) and the result's writing.
- ``gate``: the latency gate's round trips and ``judge``, its rule, which the host applies again
  to the attempts.
- ``audit``: what a container with these settings can do from inside.
- ``cli``: the parser, the actions by name and ``main``.

The host may import the names below.
"""

from harness.probe.cli import main
from harness.probe.gate import judge

__all__ = ["judge", "main"]
