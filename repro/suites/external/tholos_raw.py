"""What a `tholos bench` run leaves in its output folder, as the adapter (tholos) and the
re-executed scoring (tholos_check) both read it: the file names, the runner's fixed decoding and
errors, a request, a result line, a worker."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from harness.contracts import FailureType
from harness.io import loads_strict
from repro.core.errors import BadInput

RUNNER_TEMPERATURE = 0.0  # tholos.bench.runner.bench sets both itself; a matrix must agree


RUNNER_MAX_TOKENS = 512


# The response_format each of its `--json-mode`s sends (tholos.model: "none" sends none; repro runs
# the two a matrix protocol names, repro.spec.harnesses THOLOS_JSON_MODES).
RESPONSE_FORMATS = {"schema": "json_schema", "object": "json_object"}


CONSOLE = "console.txt"


# its run errors that are the model's
RUNNER_ERRORS: dict[str, FailureType] = {"step limit": "step_limit", "stuck": "stuck"}


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, populate_by_name=True)


class RunnerResult(Strict):
    """One line of the runner's results file, as `tholos.bench.runner.run_scenario` returns it."""

    id: str
    category: str
    passed: bool
    status: str
    error: str | None
    failed_assertions: list[dict[str, Any]]
    steps: int = Field(ge=0)
    seconds: float = Field(ge=0)
    tokens: Tokens
    invalid_json_count: int = Field(ge=0)
    messages: list[dict[str, Any]]


class Request(Strict):
    """One chat request the driver saw the runner send: its body's text, and the answer."""

    id: str
    n: int = Field(ge=1)
    body: str | None = None
    status: int | None = None
    answer: str | None = None
    error: str | None = None


class Worker(BaseModel):
    """What one worker's runner and driver wrote."""

    number: int
    results: list[RunnerResult]
    requests: list[Request]
    observed: list[Observation]
    databases: dict[str, bytes]  # scenario id -> its database as scored
    scenarios: dict[str, bytes]  # <category>/<id>.json -> the file it ran
    console: bytes


def expectations(worker: Worker, result: RunnerResult) -> list[dict[str, Any]]:
    expect = scenario_file(worker, result).get("expect")
    if not isinstance(expect, list) or not all(isinstance(item, dict) for item in expect):
        raise BadInput(f"{result.id}: its scenario file has no list of assertions")
    return expect


class Tokens(Strict):
    in_: int = Field(alias="in", ge=0)
    out: int = Field(ge=0)


class Observation(Strict):
    """What the runner scored a scenario against: its run's id and the snapshot taken before it."""

    id: str
    run_id: int
    initial: dict[str, Any]


def scenario_file(worker: Worker, result: RunnerResult) -> dict[str, Any]:
    """The scenario file a result came from (BadInput when the worker did not keep it)."""
    data = worker.scenarios.get(f"{result.category}/{result.id}.json")
    if data is None:
        raise BadInput(
            f"{result.id}: its scenario file {result.category}/{result.id}.json is not among the raw outputs"
        )
    try:
        scenario = loads_strict(data.decode("utf-8"), max_depth=64)
    except ValueError as error:
        raise BadInput(f"{result.id}: its scenario file is not JSON ({error})") from None
    if not isinstance(scenario, dict):
        raise BadInput(f"{result.id}: its scenario file is not an object")
    return scenario
