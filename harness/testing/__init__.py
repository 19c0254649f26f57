"""Test engines: the scripted engine, an OpenAI-compatible loopback server that plays each
scenario's reference steps (with failure modes), served by ``python -m harness scripted-engine``:
``scripts`` (which scenario and step a request is for), ``replies`` (the step in each protocol's
wire format, the faults) and ``scripted_engine`` (the server).

Tests and the host's own checks may import the names below.
"""

from harness.testing.replies import FAULTS
from harness.testing.scripted_engine import ScriptedEngine, serve_command
from harness.testing.scripts import Script

__all__ = ["FAULTS", "Script", "ScriptedEngine", "serve_command"]
