"""Probes: ``python -m harness probe ACTION``, a short-lived container in the engine's sealed
namespace that asks the engine one thing and writes one typed result (harness.contracts).

- ``actions``: the actions (ready, props, the Ollama ones, gate, audit), their parser and ``main``;
  ``judge``, the latency gate's rule, which the host applies again to the attempts.
- ``audit``: what a container with these settings can do from inside.

The host may import the names below.
"""

from harness.probe.actions import judge, main

__all__ = ["judge", "main"]
