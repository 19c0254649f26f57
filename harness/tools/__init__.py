"""The agent's tools.

- ``context``: ``ToolContext``, ``ToolOutcome``, ``ToolFailure``, the status strings and the
  shared argument checks: the one convention every tool follows.
- ``specs``: each tool's signature and the generic JSON Schema of its arguments.
- ``workspace``: tables, notes, search, tasks, ask, remember, follow_up, finish.
- ``files``, ``weather``, ``web``: the file tools, ``get_weather``, and the web tools
  (``web_fetch``, ``web_search``, ``open_url``, ``follow_link``); ``pages`` reads their pages.
- ``dispatch``: ``execute`` (one call: argument checks, rules and approvals, the tool) and
  ``tool_target``.

This module re-exports the context and the specs, which depend on nothing above them, so that
harness.model.scenario can read the specs. ``execute`` acts on a Workspace, which is built from a
scenario: import it from ``harness.tools.dispatch``.
"""

from harness.model.tool_specs import (
    CELL_SCHEMA,
    FILE_TOOLS,
    LOOKUP_TOOLS,
    TOOL_SPECS,
    WEATHER_TOOLS,
    WEB_TOOLS,
    WRITE_TOOLS,
    ToolSpec,
)
from harness.tools.context import (
    CONFLICT,
    DENIED,
    ERROR,
    FINISHED,
    OK,
    REFUSED,
    WAITING,
    ToolContext,
    ToolFailure,
    ToolOutcome,
)

__all__ = [
    "CELL_SCHEMA",
    "CONFLICT",
    "DENIED",
    "ERROR",
    "FILE_TOOLS",
    "FINISHED",
    "LOOKUP_TOOLS",
    "OK",
    "REFUSED",
    "TOOL_SPECS",
    "WAITING",
    "WEATHER_TOOLS",
    "WEB_TOOLS",
    "WRITE_TOOLS",
    "ToolContext",
    "ToolFailure",
    "ToolOutcome",
    "ToolSpec",
]
