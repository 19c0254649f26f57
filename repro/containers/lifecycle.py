"""One container lifecycle: create, start, wait with a deadline, read back, remove.

Engine, probe and harness containers all pass through here. `started(...)` is a context manager
that removes the container on the way out, whatever happened; `wait(...)` polls, so its deadline
holds even when the container prints nothing (the Docker SDK disables the socket timeout for log
streams, so following a silent container's logs would block forever).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

if TYPE_CHECKING:
    from repro.containers.client import Container, DockerClient

POLL_S = 1.0
GONE_EXIT = 255  # the exit code given to a container that vanished before it was seen to exit
LineSink = Callable[[str], None]
Watch = Callable[[], None]


class Exit(BaseModel):
    """How a wait ended: the exit code, or `timed_out` when the deadline passed first."""

    code: int | None
    timed_out: bool = False
    seconds: float
    log_tail: str = ""


def start(client: DockerClient, kwargs: dict[str, Any]) -> Container:
    """Create and start a container; when the start fails, the container is removed before raising."""
    container = client.containers.create(**kwargs)
    try:
        container.start()
    except BaseException:
        remove(container)
        raise
    return container


@contextlib.contextmanager
def started(client: DockerClient, kwargs: dict[str, Any]) -> Iterator[Container]:
    """A started container, removed on exit (normal, error or interrupt)."""
    container = start(client, kwargs)  # removes what it created when the start fails
    try:
        yield container
    finally:
        remove(container)


def wait(
    container: Container, deadline_s: float, *, on_line: LineSink | None = None, watch: Watch | None = None
) -> Exit:
    """Wait until the container exits or `deadline_s` passes (then stop it), feeding new log lines
    to `on_line`. `watch` runs every poll and may raise (e.g. when the engine died meanwhile)."""
    started_at = time.monotonic()
    reader = LogReader(container)
    while True:
        code = exit_code_within(container, POLL_S)
        if on_line:
            reader.feed(on_line)
        if code is not None:
            if on_line:
                reader.feed(on_line, final=True)
            return Exit(code=code, seconds=time.monotonic() - started_at, log_tail=log_tail(container))
        if watch:
            watch()
        if time.monotonic() - started_at > deadline_s:
            return stopped_at_deadline(container, started_at)


def wait_all(
    items: list[Any], deadline_s: float, *, on_line: LineSink | None = None, watch: Watch | None = None
) -> list[Exit]:
    """`wait` for several containers at once (a cell's harness workers), in one thread: each one's
    Exit, in order. At the deadline every container still running is stopped."""
    if len(items) == 1:
        return [wait(items[0], deadline_s, on_line=on_line, watch=watch)]
    started_at = time.monotonic()
    readers = [LogReader(container) for container in items]
    exits: list[Exit | None] = [None] * len(items)
    while True:
        for index, container in enumerate(items):
            if exits[index] is None:
                exits[index] = exit_if_done(container, readers[index], on_line, started_at)
        if all(exits):
            return [e for e in exits if e is not None]
        if watch:
            watch()
        if time.monotonic() - started_at > deadline_s:
            return [e or stopped_at_deadline(c, started_at) for c, e in zip(items, exits, strict=True)]
        time.sleep(POLL_S)


def exit_if_done(container: Container, reader: LogReader, on_line: LineSink | None, started_at: float) -> Exit | None:
    """The container's Exit when it has exited (feeding its new lines either way), else None."""
    if on_line:
        reader.feed(on_line)
    found = state(container)
    if found and found.get("Status") not in ("exited", "dead"):
        return None
    if on_line:
        reader.feed(on_line, final=True)
    code = int(found["ExitCode"]) if "ExitCode" in found else GONE_EXIT
    return Exit(code=code, seconds=time.monotonic() - started_at, log_tail=log_tail(container))


def stopped_at_deadline(container: Container, started_at: float) -> Exit:
    tail = log_tail(container)
    with contextlib.suppress(Exception):
        container.stop(timeout=3)
    return Exit(code=None, timed_out=True, seconds=time.monotonic() - started_at, log_tail=tail)


class LogReader:
    """New complete lines of a container's output since the last read (never blocks)."""

    def __init__(self, container: Container) -> None:
        self.container = container
        self.consumed = 0
        self.pending = ""

    def feed(self, sink: LineSink, final: bool = False) -> None:
        try:
            data = self.container.logs(stdout=True, stderr=True)
        except Exception:
            return
        fresh = data[self.consumed :].decode("utf-8", errors="replace")
        self.consumed = len(data)
        lines = (self.pending + fresh).split("\n")
        self.pending = "" if final else lines.pop()
        for line in lines:
            if line:
                sink(line)


def exit_code_within(container: Container, seconds: float) -> int | None:
    """The exit code if the container exits within `seconds`, else None."""
    import requests

    try:
        return int(container.wait(timeout=max(1, int(seconds)))["StatusCode"])
    except (requests.exceptions.ReadTimeout, requests.exceptions.ConnectionError):
        return None


def status(container: Container) -> str:
    try:
        container.reload()
    except Exception:
        return "removed"
    return str(container.status)


def state(container: Container) -> dict[str, Any]:
    """Docker's State block (exit code, OOM-killed, error) after a reload; empty when gone."""
    with contextlib.suppress(Exception):
        container.reload()
        return dict(container.attrs.get("State") or {})
    return {}


def log_tail(container: Container, lines: int = 40) -> str:
    try:
        return str(container.logs(tail=lines).decode("utf-8", errors="replace").rstrip())
    except Exception as error:  # the container may be gone already
        return f"(no logs: {type(error).__name__})"


def remove(container: Container | None) -> None:
    """Stop, then kill, then remove a container; never raises (it may already be gone)."""
    if container is None:
        return
    with contextlib.suppress(Exception):
        container.stop(timeout=3)
    with contextlib.suppress(Exception):
        container.kill()
    with contextlib.suppress(Exception):
        container.remove(force=True, v=True)
