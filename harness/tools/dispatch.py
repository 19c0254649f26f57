"""``execute``: one tool call, checked and run. It checks the arguments against the tool's
spec, refuses a ``web_fetch`` outside the sandbox, applies the rules (deny > ask > allow; an
``ask`` waits for the owner's scripted ``respond.approve``), then runs the tool. A
``ToolFailure`` raised on the way becomes the call's outcome.
"""

from __future__ import annotations

from typing import Any

from harness.io.schema_check import first_error
from harness.model.tool_specs import TOOL_SPECS
from harness.model.values import as_text
from harness.model.workspace import Approval
from harness.tools import files, weather, web, workspace
from harness.tools.context import DENIED, REFUSED, WAITING, Handler, ToolContext, ToolFailure, ToolOutcome
from harness.tools.pages import FetchRefused, host_of

HANDLERS: dict[str, Handler] = {**workspace.HANDLERS, **files.HANDLERS, **weather.HANDLERS, **web.HANDLERS}


def tool_target(tool: str, args: dict[str, Any]) -> str:
    """What a rule's ``match`` is tested against for this call."""
    spec = TOOL_SPECS[tool]
    if spec.target_arg is None:
        return "*"
    value = as_text(args.get(spec.target_arg)).strip()
    if tool in ("web_fetch", "open_url"):
        try:
            return host_of(value)
        except FetchRefused:
            return value.lower()
    return value


def execute(ctx: ToolContext, tool: str, args: dict[str, Any]) -> ToolOutcome:
    """Run one tool call for ``ctx.agent``."""
    try:
        _check_call(ctx, tool, args)
        return _gate(ctx, tool, args) or HANDLERS[tool](ctx, **args)
    except ToolFailure as failure:
        return failure.outcome()


def _check_call(ctx: ToolContext, tool: str, args: dict[str, Any]) -> None:
    spec = TOOL_SPECS.get(tool)
    agent_tools = ctx.ws.agent(ctx.agent).tools
    if spec is None or tool not in agent_tools:
        raise ToolFailure(f"unknown tool {tool!r}; your tools: {', '.join(agent_tools)}")
    problem = first_error(args, spec.args_schema(), "args")
    if problem:
        raise ToolFailure(problem)
    if tool == "web_fetch":
        web.check_sandbox(args["url"])


def _gate(ctx: ToolContext, tool: str, args: dict[str, Any]) -> ToolOutcome | None:
    """Apply the rules: None lets the call through, a refusal raises, an approval not yet
    given is the waiting outcome."""
    target = tool_target(tool, args)
    decision = ctx.ws.decide(ctx.agent, tool, target)
    if decision == "deny":
        raise ToolFailure(f"{DENIED} {tool} on {target!r}", REFUSED)
    if decision == "allow":
        return None
    approve = ctx.respond.approve if ctx.respond else None
    ctx.ws.approvals.append(Approval(ctx.agent, tool, target, approve))
    if approve is None:
        return ToolOutcome(WAITING, {"waiting": f"approval of {tool} on {target!r} requested from the owner"})
    if not approve:
        raise ToolFailure(f"the owner declined {tool} on {target!r}; it was not done", REFUSED)
    return None
