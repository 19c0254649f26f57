"""Engine death, noticed and healed.

While a cell's harness runs, `engine_watch(...)` (a `containers.wait` watch) reads the engine
container's state every poll; after the harness ends with engine faults or without finishing,
`require_answering(...)` asks the engine's health path from inside its namespace. Either raises
`EngineLost` with an `EngineFault`: Docker's state, exit code, OOM-killed flag and the last log
lines. A Docker daemon that stops answering mid-cell (a restart stops every container with it)
is such a fault too (`blame_engine`). `heal(...)` then waits for the daemon, boots a fresh engine
from the same image and model (identity check and latency gate again, at most `MAX_BOOTS` times)
and the run reruns the whole cell on it: one slot at temperature 0 is deterministic, so a healed
cell's transcripts equal an undisturbed run's.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Protocol, TypeVar

from repro.bundle.records import EngineFault, EngineIncident, HealAttempt, utc_now
from repro.containers import lifecycle as containers
from repro.containers.client import Container, DockerClient, daemon_unanswering
from repro.containers.sandbox import EngineDied, ProbeFailed
from repro.core.errors import ReproError
from repro.core.files import short_error
from repro.engines.base import EngineHandle
from repro.engines.errors import EngineRefused
from repro.spec.findings import GateResult

MAX_BOOTS = 2  # fresh engines tried per fault
MAX_CELL_RERUNS = 2  # a cell whose engine dies more often than this ends as an engine fault
ANSWER_TIMEOUT_S = 20.0
LOG_LINES = 20


class EngineLost(ReproError):
    """The engine of a group died or stopped answering while a cell used it (the group heals it
    and reruns the cell: repro.run.group.run_healing)."""

    def __init__(self, fault: EngineFault) -> None:
        super().__init__(describe(fault))
        self.fault = fault


class Booted(Protocol):
    handle: EngineHandle
    gate: GateResult


Group = TypeVar("Group", bound=Booted)
Note = Callable[[str], None]


def fault_of(container: Container | None, cause: str) -> EngineFault:
    """What Docker says about the engine container now (state, exit code, OOM, last log lines)."""
    state = containers.state(container) if container is not None else {}
    return EngineFault(
        noticed_at=utc_now(),
        cause=cause,
        status=str(state.get("Status") or "removed"),
        exit_code=state.get("ExitCode") if state.get("Status") != "running" else None,
        oom_killed=bool(state.get("OOMKilled")),
        error=state.get("Error") or None,
        log_tail=containers.log_tail(container, LOG_LINES) if container is not None else "",
    )


def describe(fault: EngineFault) -> str:
    """The fault in plain words, e.g. 'engine container exited with status 137 (OOM-killed)'."""
    if fault.status == "running":
        return f"the engine is running but {fault.cause}"
    how = f"{fault.status} with status {fault.exit_code}" if fault.exit_code is not None else fault.status
    extras = ", ".join(text for text in ("OOM-killed" if fault.oom_killed else "", fault.error or "") if text)
    return f"engine container {how}{f' ({extras})' if extras else ''}: {fault.cause}"


def engine_container(client: DockerClient, handle: EngineHandle) -> Container:
    """The engine's container, or EngineLost when it is gone altogether."""
    try:
        return client.containers.get(handle.container_id)
    except Exception:
        raise EngineLost(fault_of(None, "the engine container is gone")) from None


def engine_watch(container: Container) -> Callable[[], None]:
    """A `containers.wait` watch: EngineLost as soon as the engine container is not running."""

    def watch() -> None:
        if containers.status(container) != "running":
            raise EngineLost(fault_of(container, "the engine container stopped while a cell used it"))

    return watch


@contextlib.contextmanager
def blame_engine(watch: Callable[[], None]) -> Iterator[None]:
    """An error while the engine is gone (joining its dead namespace, say) is an engine fault, and
    so is the Docker daemon not answering (restarted mid-cell: it stopped the engine with it)."""
    try:
        yield
    except EngineLost:
        raise
    except Exception as error:
        watch()
        if daemon_unanswering(error):
            raise EngineLost(fault_of(None, f"the Docker daemon stopped answering ({short_error(error)})")) from None
        raise


def require_answering(container: Container, ready: Callable[[float], object]) -> None:
    """EngineLost unless the engine container runs and `ready(timeout)` (its health path) answers."""
    engine_watch(container)()
    try:
        ready(ANSWER_TIMEOUT_S)
    except (EngineDied, ProbeFailed) as error:
        cause = f"stopped answering its health path within {ANSWER_TIMEOUT_S:g}s ({str(error).splitlines()[0][:200]})"
        raise EngineLost(fault_of(container, cause)) from None


def heal(
    fault: EngineFault,
    boot: Callable[[], Group],
    stop: Callable[[Group], None],
    note: Note,
    daemon: Callable[[], bool] = lambda: True,
) -> tuple[Group | None, EngineIncident]:
    """Boot a fresh engine (identity check and gate included) at most MAX_BOOTS times, each once
    the Docker daemon answers (`daemon` waits for it: a restarted daemon takes a few seconds)."""
    attempts: list[HealAttempt] = []
    for number in range(1, MAX_BOOTS + 1):
        if not daemon():
            attempts.append(HealAttempt(attempt=number, healed=False, reason="the Docker daemon did not answer"))
            note(f"  attempt {number} failed: the Docker daemon did not answer")
            continue
        note(f"  booting the engine again from the same image and model (attempt {number} of {MAX_BOOTS})")
        group, attempt = boot_once(number, boot, stop)
        attempts.append(attempt)
        if group is not None:
            return group, EngineIncident(fault=fault, attempts=attempts, healed=True)
        note(f"  attempt {number} failed: {attempt.reason}")
    return None, EngineIncident(fault=fault, attempts=attempts, healed=False)


def boot_once(
    number: int, boot: Callable[[], Group], stop: Callable[[Group], None]
) -> tuple[Group | None, HealAttempt]:
    try:
        group = boot()
    except (EngineRefused, EngineDied) as error:
        return None, HealAttempt(attempt=number, healed=False, reason=f"boot failed: {str(error).splitlines()[0]}")
    except Exception as error:
        if not daemon_unanswering(error):
            raise
        return None, HealAttempt(
            attempt=number, healed=False, reason=f"boot failed: the Docker daemon did not answer ({short_error(error)})"
        )
    identity = group.handle.identity
    if not group.gate.passed:
        stop(group)
        return None, HealAttempt(
            attempt=number,
            healed=False,
            reason=f"latency gate: {group.gate.reason}",
            identity=identity,
            gate_passed=False,
        )
    return group, HealAttempt(
        attempt=number,
        healed=True,
        reason="identity matches the pin and the latency gate passed",
        identity=identity,
        gate_passed=True,
    )


def unhealed_reason(incidents: list[EngineIncident]) -> str:
    """Why a cell ended as an engine fault, in plain words."""
    last = incidents[-1]
    if last.healed:
        return (
            f"engine fault: the engine died {len(incidents)} times during this cell (last: "
            f"{describe(last.fault)}); rerun with --resume"
        )
    tried = "; ".join(a.reason for a in last.attempts) or "no attempt"
    return f"engine fault: {describe(last.fault)}; booting it again failed ({tried}); rerun with --resume"
