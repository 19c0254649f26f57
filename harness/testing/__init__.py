"""Test engines: ``scripted_engine``, an OpenAI-compatible loopback server that plays each
scenario's reference steps (with failure modes), served by ``python -m harness scripted-engine``.

Tests and the host's own checks may import the names below.
"""

from harness.testing.scripted_engine import FAULTS, Script, ScriptedEngine, serve_command

__all__ = ["FAULTS", "Script", "ScriptedEngine", "serve_command"]
