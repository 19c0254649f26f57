"""What every tool works with: the run's ``ToolContext``, the ``ToolOutcome`` a tool returns,
the ``ToolFailure`` it raises, the status strings, and the checks its arguments share.

The one convention for a tool: a handler takes the context and its arguments and returns a
``ToolOutcome``; a real failure (a missing row, a path outside the files, an unknown city, a
404) raises ``ToolFailure`` from wherever it is found, and ``execute`` (harness/tools/dispatch.py)
turns it into the outcome ``{"error": message, **extra}`` with the failure's status.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from harness.model.fixtures import FileTree, WeatherSet, WebSet, World

if TYPE_CHECKING:
    from harness.model.scenario import Respond
    from harness.model.workspace import Workspace

OK, ERROR, CONFLICT, REFUSED, WAITING, FINISHED = "ok", "error", "conflict", "refused", "waiting", "finished"
DENIED = "refused: a rule denies"  # how a refusal by a deny rule starts (the diagnosis reads it)
MAX_TEXT_ARG = 300

Result = dict[str, Any]


@dataclass
class ToolOutcome:
    status: str
    result: Result


Handler = Callable[..., ToolOutcome]  # a tool: (ctx, **args) -> ToolOutcome


class ToolFailure(Exception):
    """A tool call that failed for a real reason; ``status`` is error or refused, ``extra``
    goes into the result after the message."""

    def __init__(self, message: str, status: str = ERROR, **extra: Any) -> None:
        super().__init__(message)
        self.status = status
        self.extra = extra

    def outcome(self) -> ToolOutcome:
        return ToolOutcome(self.status, {"error": str(self), **self.extra})


@dataclass
class Browser:
    """The run's browser: the page now open and its links."""

    url: str | None = None
    links: list[dict[str, str]] = field(default_factory=list)


@dataclass
class ToolContext:
    ws: Workspace
    agent: str
    fixtures: dict[str, str] = field(default_factory=dict)  # the scenario's pages for web_fetch
    respond: Respond | None = None
    browser: Browser = field(default_factory=Browser)


# ---------------------------------------------------------------------------- the world


def world_of(ctx: ToolContext) -> World:
    return ctx.ws.world or World()


def file_tree(ctx: ToolContext) -> FileTree:
    tree = world_of(ctx).files
    if tree is None:
        raise ToolFailure("no files are available in this run")
    return tree


def weather_set(ctx: ToolContext) -> WeatherSet:
    weather = world_of(ctx).weather
    if weather is None:
        raise ToolFailure("the weather service is not available in this run")
    return weather


def web_set(ctx: ToolContext) -> WebSet:
    web = world_of(ctx).web
    if web is None:
        raise ToolFailure("the web is not available in this run")
    return web


# ---------------------------------------------------------------------------- arguments


def bounded(value: str, what: str, limit: int = MAX_TEXT_ARG) -> str:
    """``value`` stripped; ToolFailure when it is empty, too long or holds control characters."""
    text = value.strip()
    if not text:
        raise ToolFailure(f"the {what} is empty")
    if len(text) > limit:
        raise ToolFailure(f"the {what} is longer than {limit} characters")
    if re.search(r"[\x00-\x1f\x7f]", text):
        raise ToolFailure(f"the {what} holds control characters")
    return text
