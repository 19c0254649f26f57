"""Pieces shared by the ladder tools (files, weather, web): failures and world access.

A ladder tool handler takes the run's ``ToolContext`` and its arguments, returns the result
as a dict, and raises ``ToolFailure`` for a real failure (a missing path, an unknown city, a
404); ``harness.tools`` turns both into a ``ToolOutcome``.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from harness.fixtures import FileTree, WeatherSet, WebSet, World

if TYPE_CHECKING:
    from harness.tools import ToolContext

ERROR, REFUSED = "error", "refused"
MAX_TEXT_ARG = 300


class ToolFailure(Exception):
    """A tool call that failed for a real reason; ``status`` is error or refused."""

    def __init__(self, message: str, status: str = ERROR) -> None:
        super().__init__(message)
        self.status = status


def world_of(ctx: ToolContext) -> World:
    return getattr(ctx.ws, "world", None) or World()


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


def words(text: str) -> list[str]:
    """Lower-cased words and numbers of ``text``."""
    return re.findall(r"[a-z0-9]+", text.casefold())


Result = dict[str, Any]
