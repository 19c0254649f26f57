"""The in-container agent harness: scenarios, workspace, tools, protocols, engine clients,
run loop, checks, diagnosis and replay. It never imports docker.

Main entry points::

    from harness import load_scenarios, run_scenario, ScriptedPolicy
    for scenario in load_scenarios("scenarios/"):
        result = run_scenario(scenario, ScriptedPolicy(scenario.reference))

The package's top level is lazy: ``import harness.contracts`` (what the host reads) loads the
contracts alone, and a name below is imported on first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from harness.contracts import ScenarioResult
    from harness.errors import EngineError
    from harness.policy import Policy, PolicyReply, ScriptedPolicy, Step, Turn
    from harness.runner import replay_scenario, run_scenario
    from harness.scenario import Scenario, ScenarioError, load_scenario, load_scenarios

_EXPORTS = {
    "EngineError": "harness.errors",
    "Policy": "harness.policy",
    "PolicyReply": "harness.policy",
    "ScenarioResult": "harness.contracts",
    "Scenario": "harness.scenario",
    "ScenarioError": "harness.scenario",
    "ScriptedPolicy": "harness.policy",
    "Step": "harness.policy",
    "Turn": "harness.policy",
    "load_scenario": "harness.scenario",
    "load_scenarios": "harness.scenario",
    "replay_scenario": "harness.runner",
    "run_scenario": "harness.runner",
}
__all__ = [
    "EngineError",
    "Policy",
    "PolicyReply",
    "Scenario",
    "ScenarioError",
    "ScenarioResult",
    "ScriptedPolicy",
    "Step",
    "Turn",
    "load_scenario",
    "load_scenarios",
    "replay_scenario",
    "run_scenario",
]
assert sorted(__all__) == sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'harness' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
