"""The scripted engine's scripts: each scenario's reference steps and their replayed results
(``Script``), found for a request by its trigger text and agent, in our harness's prompt layout
or Tholos-Bench's runner's (``Library``); scenarios from a folder, a file or a tar archive
(bounded, links refused)."""

from __future__ import annotations

import io
import json
import re
import tarfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from harness.agent.loop import run_agent
from harness.agent.policy import ScriptedPolicy, Step
from harness.agent.prompts import render_trigger
from harness.io.inputs import MAX_SCENARIO_BYTES, read_regular
from harness.io.strict_json import dumps_compact
from harness.model.scenario import (
    FollowUpTrigger,
    MessageTrigger,
    Scenario,
    ScenarioError,
    ScheduleTrigger,
    TaskTrigger,
    load_scenarios,
    parse_scenario,
)
from harness.model.workspace import Workspace
from harness.protocols.base import PROBE_TASK

RESULTS_COMPARED = 4  # the latest results are sent in full by every protocol
NEXT_LINE = re.compile(r"\nNext: step \d+ of \d+\.$")
RUNNER_NOW = re.compile(r"^Now: [^\n]*\n")  # the Tholos runner's clock line before its trigger
RUNNER_TASK = re.compile(r"^Task #\d+ from ")  # its task trigger: the id is its database's
RUNNER_RESULT = re.compile(
    r"^<tool_response>\n(.*)\n</tool_response>$", re.DOTALL
)  # how the runner wraps a tool's result
MAX_ARCHIVE_MEMBERS = 10_000
MAX_ARCHIVE_BYTES = 64 * 1024**2  # a scenario archive (Tholos-Bench's 160 files: about 0.6 MB)


class ScriptError(ValueError):
    """A request the scripted engine cannot answer (HTTP 400); the message is one line."""


@dataclass
class Script:
    """One scenario: its agent, its reference steps and the result of each when replayed."""

    scenario: Scenario
    steps: list[Step]
    results: list[str]  # each step's result as compact JSON

    @classmethod
    def of(cls, scenario: Scenario) -> Script:
        policy = ScriptedPolicy(scenario.reference)
        run = run_agent(scenario, Workspace.from_spec(scenario.workspace), policy)
        steps = [Step(r.tool, dict(r.args), f"Reference step {i}.") for i, r in enumerate(scenario.reference, start=1)]
        return cls(scenario, steps, [dumps_compact(record.result) for record in run.steps])

    def refusals(self, count: int) -> list[bool]:
        """Whether each of the first ``count`` reference steps was refused when replayed."""
        return [i < len(self.results) and is_error(self.results[i]) for i in range(count)]

    def step(self, number: int) -> Step:
        if number < len(self.steps):
            return self.steps[number]
        return Step("finish", {"summary": "No scripted steps left."}, "Done.")


class Library:
    """The scripts of a scenario folder, found by trigger text and agent."""

    def __init__(self, scenarios: Iterable[Scenario]) -> None:
        self.by_trigger: dict[str, list[Script]] = {}
        for scenario in scenarios:
            script = Script.of(scenario)
            self.by_trigger.setdefault(render_trigger(scenario.trigger), []).append(script)
            self.by_trigger.setdefault(runner_trigger(scenario.trigger), []).append(script)

    def __len__(self) -> int:
        return sum(len(scripts) for key, scripts in self.by_trigger.items() if not key.startswith(RUNNER_KEY))

    def find(self, messages: list[dict[str, Any]], taken: int) -> Script:
        system = message_text(messages[0]) if messages and messages[0].get("role") == "system" else ""
        first_user = next((message_text(m) for m in messages if m.get("role") == "user"), "")
        trigger = NEXT_LINE.sub("", first_user)
        if RUNNER_NOW.match(first_user):
            trigger = RUNNER_KEY + RUNNER_TASK.sub("", RUNNER_NOW.sub("", first_user, count=1), count=1)
        scripts = [s for s in self.by_trigger.get(trigger, []) if names_agent(system, s.scenario.agent_spec().name)]
        if not scripts and trigger == PROBE_TASK:
            return PROBE_SCRIPT
        if not scripts:
            raise ScriptError(f"no scenario has the trigger {trigger[:80]!r}")
        if RUNNER_NOW.match(first_user) and len(scripts) > 1:
            refused = runner_errors(messages)
            return max(
                scripts, key=lambda s: sum(a == b for a, b in zip(s.refusals(len(refused)), refused, strict=True))
            )
        seen = "\n".join(message_text(m) for m in messages)
        recent = range(max(0, taken - RESULTS_COMPARED), taken)
        matching = [s for s in scripts if all(i < len(s.results) and s.results[i] in seen for i in recent)]
        return (matching or scripts)[0]


RUNNER_KEY = "tholos-runner\0"  # marks the runner's trigger forms among the keys


def runner_trigger(trigger: object) -> str:
    """The trigger as Tholos-Bench's runner words it, after its clock line and its task number."""
    if isinstance(trigger, TaskTrigger):
        return f"{RUNNER_KEY}{trigger.from_}: {trigger.title}\n{trigger.details}"
    if isinstance(trigger, ScheduleTrigger):
        return f"{RUNNER_KEY}Scheduled: {trigger.prompt}"
    if isinstance(trigger, FollowUpTrigger):
        return f"{RUNNER_KEY}Follow-up: {trigger.note}"
    if isinstance(trigger, MessageTrigger):
        return f"{RUNNER_KEY}Message from the owner: {trigger.text}"
    raise TypeError(f"unknown trigger {trigger!r}")


def runner_errors(messages: list[dict[str, Any]]) -> list[bool]:
    """For each step the Tholos runner's request shows, whether its tool result was an error:
    the first ``<tool_response>`` user message after each assistant message (a step that waits
    for the owner has none until it is decided; the last step may have none yet)."""
    refused: list[bool] = []
    for before, message in zip(messages, [*messages[1:], {}], strict=True):
        if before.get("role") == "assistant":
            found = RUNNER_RESULT.match(message_text(message)) if message.get("role") == "user" else None
            refused.append(found is not None and is_error(found.group(1)))
    return refused


def is_error(result: str) -> bool:
    try:
        value = json.loads(result)
    except ValueError:
        return False
    return isinstance(value, dict) and "error" in value


def names_agent(system: str, name: str) -> bool:
    """Our system message starts `You are <agent>.`, the Tholos runner's `You are <agent>, an agent`."""
    return system.startswith((f"You are {name}.", f"You are {name}, an agent"))


# The latency gate's one-step probe (harness.protocols.base.probe_turn) is answered too.
PROBE_SCRIPT = Script(scenario=None, steps=[Step("finish", {"summary": "ready"}, "Ready.")], results=[])  # type: ignore[arg-type]


def message_text(message: dict[str, Any]) -> str:
    content = message.get("content")
    return content if isinstance(content, str) else ""


def scenarios_at(path: Path) -> list[Scenario]:
    """The scenarios of a ``.json`` file or a folder, or of a tar archive's ``*.json`` members
    (any other file: read within MAX_ARCHIVE_BYTES, a regular file only, and refused unless it is
    a tar archive that holds at least one scenario)."""
    if path.is_dir() or path.suffix == ".json":
        return load_scenarios(path)
    scenarios = scenarios_in_archive(path, read_regular(path, MAX_ARCHIVE_BYTES))
    if not scenarios:
        raise ScenarioError(f"{path}: no scenario (a .json file, a folder, or a tar archive of *.json members)")
    return scenarios


def scenarios_in_archive(path: Path, data: bytes) -> list[Scenario]:
    """Each regular ``*.json`` member of a tar archive as a scenario, bounded; links refused."""
    scenarios: list[Scenario] = []
    try:
        archive = tarfile.open(fileobj=io.BytesIO(data))
    except tarfile.TarError:
        raise ScenarioError(f"{path}: not a tar archive of scenarios") from None
    with archive:
        for number, member in enumerate(archive):
            if number >= MAX_ARCHIVE_MEMBERS:
                raise ScenarioError(f"{path.name}: more than {MAX_ARCHIVE_MEMBERS} members")
            if not (member.isfile() or member.isdir()):
                raise ScenarioError(f"{path.name}: member {member.name!r} is not a regular file or folder; refused")
            if not member.isfile() or not member.name.endswith(".json"):
                continue
            if member.size > MAX_SCENARIO_BYTES:
                raise ScenarioError(f"{path.name}: member {member.name!r} is over {MAX_SCENARIO_BYTES} bytes")
            handle = archive.extractfile(member)
            text = handle.read(MAX_SCENARIO_BYTES + 1).decode("utf-8") if handle else ""
            scenarios.append(parse_scenario(Path(member.name), text))
    return sorted(scenarios, key=lambda s: (s.category, s.id))
