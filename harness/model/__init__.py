"""What a scenario is and the world it runs in: data and the rules over it, no engine, no agent.

- ``scenario``: ``Scenario`` and its loading (``load_scenarios``, ``ScenarioError``).
- ``checks_model``: the check models a scenario states (what to check); ``harness.scoring.checks``
  evaluates them.
- ``tool_specs``: each tool's signature and the generic JSON Schema of its arguments.
- ``fixtures``: the shared fixture sets (files, weather, web pages), read under bounds.
- ``workspace``: ``Workspace``, the state the tools act on (tables, notes, tasks, memory).
- ``values``, ``query``: cell values and the table query language; ``clock``: the scenario's clock.
"""

__all__ = ["checks_model", "clock", "fixtures", "query", "scenario", "tool_specs", "values", "workspace"]
