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
    from harness.agent.policy import Policy, PolicyReply, ScriptedPolicy, Step, Turn
    from harness.clients.errors import EngineError
    from harness.contracts import ScenarioResult
    from harness.model.scenario import Scenario, ScenarioError, load_scenario, load_scenarios
    from harness.runner import replay_scenario, run_scenario

_EXPORTS = {
    "EngineError": "harness.clients.errors",
    "Policy": "harness.agent.policy",
    "PolicyReply": "harness.agent.policy",
    "ScenarioResult": "harness.contracts",
    "Scenario": "harness.model.scenario",
    "ScenarioError": "harness.model.scenario",
    "ScriptedPolicy": "harness.agent.policy",
    "Step": "harness.agent.policy",
    "Turn": "harness.agent.policy",
    "load_scenario": "harness.model.scenario",
    "load_scenarios": "harness.model.scenario",
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
