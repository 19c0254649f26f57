"""The in-container agent harness: scenarios, workspace, tools, protocols, engine clients,
run loop, checks, diagnosis and replay. It never imports docker.

Main entry points::

    from harness import load_scenarios, run_scenario, ScriptedPolicy
    for scenario in load_scenarios("scenarios/"):
        result = run_scenario(scenario, ScriptedPolicy(scenario.reference))
"""

from harness.contracts import ScenarioResult
from harness.errors import EngineError
from harness.policy import Policy, PolicyReply, ScriptedPolicy, Step, Turn
from harness.runner import replay_scenario, run_scenario
from harness.scenario import Scenario, ScenarioError, load_scenario, load_scenarios

__all__ = [
    "EngineError",
    "Policy",
    "PolicyReply",
    "ScenarioResult",
    "Scenario",
    "ScenarioError",
    "ScriptedPolicy",
    "Step",
    "Turn",
    "load_scenario",
    "load_scenarios",
    "replay_scenario",
    "run_scenario",
]
