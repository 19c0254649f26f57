"""The diagnosis: exactly one failure type per failed scenario, and the run's partial credit.

This module is the one place that decides. ``diagnose`` reads the run's transcript (as
``harness.runner.build_transcript`` writes it), the scenario (its reference steps, checks and
workspace) and the checks that failed, and returns a ``Diagnosis``: the type, the step where it
happened and the evidence (the reply, the call or the check, shortened to about 300 characters).
``partial_credit`` scores the same inputs on the Local Agent Bench scale. Nothing else is read,
so ``python -m harness regrade`` recomputes the same answer from a recorded transcript.

A scenario fails when a check fails, or when the run ended on a configuration or engine failure
or a timeout (those always fail). A failed scenario gets the first type, in ``FAILURE_TYPES``
order, whose rule applies; ``wrong_outcome`` is the last and always applies. The types, in that
order, by layer (docs/diagnosis.md states each rule in full):

configuration (never a model failure; ``engine_fault`` true)
    engine_unreachable, model_not_loaded, context_overflow: the run's stop, as the client
    classified the engine's answer (``harness.clients.openai_compat.engine_error_for``).
engine (never a model failure; ``engine_fault`` true)
    engine_error: any other engine failure (transport, HTTP error, a request timeout before the
    scenario's budget, an unreadable reply).
runtime (the runtime's, not the model's; what a runtime cell measures, so ``engine_fault`` stays false)
    runtime_unavailable, runtime_config, runtime_error: the run's stop, as the agent runtime's
    client classified it (harness.runtimes): it could not start, it refused its configuration, or
    it exited non-zero, timed out or printed no answer.
protocol (the run ended as ``invalid_reply``: its final turn gave no valid step)
    degenerate, empty_reply, invalid_syntax, text_tool_call, unknown_tool, invalid_arguments: the
    reject codes of the final turn's replies (harness.protocols.base), the first in this order; a
    reply cut at the token limit carries the flag ``truncated`` beside its code.
behaviour
    forbidden_tool: a ``not_called`` or ``unchanged`` check failed, or a deny rule refused a call.
    no_tool_attempt: the run finished without trying any tool but ``finish`` (not even in an
    invalid reply), while the reference calls one.
    wrong_tool: the run called tools, but none of the tools the reference calls.
    stuck, step_limit, timeout: how the run stopped.
    missing_required_tool: a check that needs a call (``called``, ``approval``, ``asked``) failed.
    ignored_tool_result: the run finished; a value a failed content check wants (and the task
    does not give) came back in a successful lookup's result, yet is in neither the answer nor
    the data written.
    hallucinated_result: the run finished; the answer or a write holds a value a check lists as
    invented (``absent``) that no tool returned, or a figure (a number of two or more digits)
    that appears in no tool result, the task, the prompt, the workspace, the scenario's
    fixtures, the checks or the run's own lookup arguments.
outcome
    wrong_outcome: any other failed check.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any

from harness.agent.loop import ENGINE_STOPS, INVALID_REPLY
from harness.contracts import (
    FAILURE_LAYER,
    FAILURE_TYPES,
    NOT_MODEL_LAYERS,
    EndEntry,
    FailedCheck,
    FailureLayer,
    FailureType,
    InvalidEntry,
    PromptEntry,
    RecordedReply,
    StepEntry,
    TranscriptEntry,
    TriggerEntry,
)
from harness.io.strict_json import dumps_compact
from harness.model import checks_model as cm
from harness.model.scenario import Scenario
from harness.model.values import as_text, matches
from harness.scoring.checks import contains_term
from harness.tools import DENIED, LOOKUP_TOOLS, OK, REFUSED, WRITE_TOOLS

FAILURE_PRECEDENCE: tuple[FailureType, ...] = FAILURE_TYPES
ALWAYS_FAIL = ENGINE_STOPS | {"timeout"}
REJECT_TYPES = frozenset(t for t in FAILURE_TYPES if FAILURE_LAYER[t] == "protocol")
EVIDENCE_CHARS = 300
FIGURE = re.compile(r"\d+(?:[.,:]\d+)*")
FIGURE_MIN_DIGITS = 2
THOUSANDS = re.compile(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?")
# The argument that says what a lookup call reads, for "acceptable arguments" in partial credit;
# lookups not listed (search, web_search, current_directory) accept any arguments.
LOOKUP_KEYS = {
    "table_read": "table",
    "note_read": "title",
    "web_fetch": "url",
    "open_url": "url",
    "follow_link": "link",
    "read_file": "path",
    "list_directory": "path",
    "find_files": "pattern",
    "get_weather": "city",
}
SCORES = (0.0, 0.25, 0.5, 0.75, 1.0)
# What a write writes (its data), for "the writes" in ignored_tool_result and hallucinated_result;
# the other arguments (a row number, minutes, a mode, a table name) say where or when.
WRITTEN_ARGS = {
    "table_add": ("rows",),
    "table_update": ("values",),
    "note_write": ("text",),
    "task_add": ("title", "details"),
    "remember": ("fact",),
    "follow_up": ("note",),
    "table_create": ("columns",),
}
# Checks that hold only when a call was made: their failure is missing_required_tool.
CALL_CHECKS = (cm.CalledCheck, cm.ApprovalCheck, cm.AskedCheck)
WANTED_MIN_CHARS = 2


@dataclass(frozen=True)
class Diagnosis:
    """One failed scenario's failure: its type, the step it happened at, and the evidence."""

    type: FailureType
    step: int | None
    evidence: str

    @property
    def layer(self) -> FailureLayer:
        return FAILURE_LAYER[self.type]

    @property
    def engine_fault(self) -> bool:
        """A configuration or engine failure: never counted as the model's."""
        return self.layer in NOT_MODEL_LAYERS


# ---------------------------------------------------------------------------- the run, as recorded


@dataclass
class RunView:
    """What the rules read from a transcript."""

    trigger: str = ""
    prompt: str = ""
    steps: list[StepEntry] = field(default_factory=list)
    invalid: list[RecordedReply] = field(default_factory=list)  # the replies of a failed final turn
    status: str | None = None
    stop: str | None = None
    detail: str | None = None

    @property
    def next_step(self) -> int:
        """The number of the turn after the last step (where a run that stopped early stopped)."""
        return len(self.steps) + 1

    @property
    def last(self) -> StepEntry | None:
        return self.steps[-1] if self.steps else None

    @property
    def answer(self) -> str | None:
        """The finish summary, when the run finished."""
        last = self.last
        if self.status != "done" or last is None or last.tool != "finish":
            return None
        return as_text(last.args.get("summary"))

    def replies(self) -> list[tuple[int, RecordedReply]]:
        """Every recorded reply with the step it belongs to (the final invalid turn: next_step)."""
        found = [(s.step, r) for s in self.steps for r in s.replies]
        return found + [(self.next_step, r) for r in self.invalid]


def read_run(transcript: Iterable[TranscriptEntry]) -> RunView:
    """The transcript as a ``RunView`` (an external suite's steps are not the harness's: skipped)."""
    run = RunView()
    for entry in transcript:
        if isinstance(entry, TriggerEntry):
            run.trigger = entry.text
        elif isinstance(entry, PromptEntry):
            run.prompt = _json(entry.messages)
        elif isinstance(entry, StepEntry):
            run.steps.append(entry)
        elif isinstance(entry, InvalidEntry):
            run.invalid = entry.replies
        elif isinstance(entry, EndEntry):
            run.status, run.stop, run.detail = entry.status, entry.stop, entry.detail
    return run


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


# ---------------------------------------------------------------------------- evidence


def shorten(text: str, limit: int = EVIDENCE_CHARS) -> str:
    """``text`` on one line, cut to ``limit`` characters (``...`` marks a cut)."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def call_text(step: StepEntry) -> str:
    return f"{step.tool} {dumps_compact(step.args)}"


def check_text(check: FailedCheck) -> str:
    return f"check {check.index} ({check.type}): expected {_json(check.expected)}, found {_json(check.found)}"


def reply_text(reply: RecordedReply) -> str:
    content = json.dumps(shorten(reply.content, EVIDENCE_CHARS * 2 // 3), ensure_ascii=False)
    return f"reply {content}: {reply.problem or 'not a valid step'}"


# ---------------------------------------------------------------------------- the rules


@dataclass
class Context:
    scenario: Scenario
    run: RunView
    failed: list[tuple[FailedCheck, Any]]  # each failed check with its model (None if unknown)

    @property
    def reference_tools(self) -> set[str]:
        return {r.tool for r in self.scenario.reference} - {"finish"}

    def failed_of(self, kind: type) -> list[tuple[FailedCheck, Any]]:
        return [(f, c) for f, c in self.failed if isinstance(c, kind)]


Rule = Callable[[Context], tuple[int | None, str] | None]  # (the step, the evidence) when the rule applies


def _stop_rule(stop: str, at_next: bool) -> Rule:
    """The run stopped with ``stop``: at the turn after the last step, or at the last step."""

    def rule(ctx: Context) -> tuple[int | None, str] | None:
        run = ctx.run
        if run.stop != stop:
            return None
        if at_next or run.last is None:
            return run.next_step, as_text(run.detail)
        return run.last.step, call_text(run.last)

    return rule


def _reject_rule(code: str) -> Rule:
    """The run ended as invalid_reply and a reply of its final turn has this reject code (a reply
    without a known code counts as invalid_syntax)."""

    def rule(ctx: Context) -> tuple[int | None, str] | None:
        run = ctx.run
        if run.stop != INVALID_REPLY:
            return None
        if not run.invalid:
            return (run.next_step, as_text(run.detail)) if code == "invalid_syntax" else None
        for reply in run.invalid:
            if _reject_of(reply) == code:
                return run.next_step, reply_text(reply)
        return None

    return rule


def _reject_of(reply: RecordedReply) -> str:
    return reply.reject if reply.reject in REJECT_TYPES else "invalid_syntax"


def _forbidden_tool(ctx: Context) -> tuple[int | None, str] | None:
    found: list[tuple[int | None, str]] = []
    for failed, check in ctx.failed_of(cm.NotCalledCheck):
        step = next(
            (s for s in ctx.run.steps if s.tool == check.tool and (check.args is None or matches(check.args, s.args))),
            None,
        )
        found.append(
            (step.step, f"{call_text(step)} (check {failed.index}: not_called)") if step else (None, check_text(failed))
        )
    for failed, check in ctx.failed_of(cm.UnchangedCheck):
        step = next((s for s in ctx.run.steps if s.status == OK and _writes_to(s, check)), None)
        found.append(
            (step.step, f"{call_text(step)} changed what {check_text(failed)} keeps")
            if step
            else (None, check_text(failed))
        )
    for step in ctx.run.steps:
        error = as_text(step.result.get("error"))
        if step.status == REFUSED and error.startswith(DENIED):
            found.append((step.step, f"{call_text(step)}: {error}"))
    if not found:
        return None
    return min(found, key=lambda item: (item[0] is None, item[0] or 0))


def _writes_to(step: StepEntry, check: cm.UnchangedCheck) -> bool:
    if check.table is not None:
        return (
            step.tool in ("table_create", "table_add", "table_update")
            and as_text(step.args.get("table")).strip().casefold() == check.table.casefold()
        )
    return (
        step.tool == "note_write"
        and as_text(step.args.get("title")).strip().casefold() == (check.note or "").casefold()
    )


def attempts(run: RunView) -> list[tuple[int, str]]:
    """The calls the run tried, besides ``finish``: (step, tool) for each executed step and each
    rejected reply that names a tool; a call written as text or an unknown tool whose name could
    not be read counts as ``?``."""
    tried = [(s.step, s.tool) for s in run.steps if s.tool != "finish"]
    for number, reply in run.replies():
        if not reply.reject:
            continue
        if reply.tool and reply.tool != "finish":
            tried.append((number, reply.tool))
        elif not reply.tool and reply.reject in ("text_tool_call", "unknown_tool"):
            tried.append((number, "?"))
    return sorted(tried)


def _no_tool_attempt(ctx: Context) -> tuple[int | None, str] | None:
    run, wanted = ctx.run, ctx.reference_tools
    if run.status != "done" or not wanted or attempts(run) or run.last is None:
        return None
    return run.last.step, f"{call_text(run.last)} (no other call; the reference calls {', '.join(sorted(wanted))})"


def _wrong_tool(ctx: Context) -> tuple[int | None, str] | None:
    wanted = ctx.reference_tools
    called = [s for s in ctx.run.steps if s.tool != "finish"]
    if not wanted or not called or any(s.tool in wanted for s in called):
        return None
    return called[0].step, f"{call_text(called[0])} (the reference calls {', '.join(sorted(wanted))})"


def _missing_required_tool(ctx: Context) -> tuple[int | None, str] | None:
    missing = [(f, c) for f, c in ctx.failed if isinstance(c, CALL_CHECKS)]
    if not missing:
        return None
    return (ctx.run.last.step if ctx.run.last else None), check_text(missing[0][0])


# ----------------------------------------------------------------------------- data rules


def _wanted_values(check: Any, scenario: Scenario) -> list[str]:
    """The values a content check wants in the answer or the writes (for a row check, values its
    table held before the run are left out: those are the table's vocabulary, not gathered data)."""
    if isinstance(check, cm.AnswerContainsAllCheck):
        values = list(check.values)
    elif isinstance(check, cm.FinishContainsCheck):
        values = list(check.all) + list(check.any)
    elif isinstance(check, cm.NoteCheck):
        values = list(check.contains)
    elif isinstance(check, cm.RowCheck):
        held = _table_values(scenario, check.table)
        values = [
            as_text(v)
            for v in (check.has or check.where).values()
            if not isinstance(v, dict) and as_text(v).strip().casefold() not in held
        ]
    elif isinstance(check, cm.TaskCheck):
        values = list(check.mentions) + ([check.title_contains] if check.title_contains else [])
    elif isinstance(check, cm.MemoryCheck):
        values = [check.contains]
    else:
        values = []
    return [v for v in values if len(v.strip()) >= WANTED_MIN_CHARS]


def _table_values(scenario: Scenario, name: str) -> set[str]:
    """Every cell of the scenario's table ``name`` before the run, as trimmed casefolded text."""
    tables = [t for t in scenario.workspace.tables if t.name.casefold() == name.casefold()]
    return {as_text(value).strip().casefold() for t in tables for row in t.rows for value in row.values()}


def _writes(run: RunView) -> list[StepEntry]:
    return [s for s in run.steps if s.status == OK and s.tool in WRITE_TOOLS]


def _written(step: StepEntry) -> str:
    """The data a write wrote (``WRITTEN_ARGS``), as text."""
    return _json([step.args.get(name) for name in WRITTEN_ARGS.get(step.tool, ())])


def _output_text(run: RunView) -> str:
    return " ".join([run.answer or ""] + [_written(s) for s in _writes(run)])


def _lookups(run: RunView) -> list[StepEntry]:
    """Successful calls that returned data: every tool but the writes and finish."""
    return [s for s in run.steps if s.status == OK and s.tool not in WRITE_TOOLS and s.tool != "finish"]


def _ignored_tool_result(ctx: Context) -> tuple[int | None, str] | None:
    run = ctx.run
    if run.status != "done":
        return None
    output = _output_text(run)
    results = [(s, _json(s.result)) for s in _lookups(run)]
    for _failed, check in ctx.failed:
        for value in _wanted_values(check, ctx.scenario):
            if contains_term(output, value) or contains_term(run.trigger, value):
                continue
            holder = next((s for s, text in results if contains_term(text, value)), None)
            if holder is not None:
                return (
                    holder.step,
                    f"{value!r} came back from {call_text(holder)} but is in neither the answer nor the writes",
                )
    return None


def _hallucinated_result(ctx: Context) -> tuple[int | None, str] | None:
    run = ctx.run
    if run.status != "done" or run.last is None:
        return None
    results = " ".join(_json(s.result) for s in run.steps)
    outputs: list[tuple[int, str, str]] = [(run.last.step, "the answer", run.answer or "")]
    outputs += [(s.step, call_text(s), _written(s)) for s in _writes(run)]
    for _failed, check in ctx.failed_of(cm.AnswerContainsAllCheck):
        for value in check.absent:
            if contains_term(run.answer or "", value) and not contains_term(results, value):
                return run.last.step, f"the answer names {value!r}, which no tool returned: {run.answer}"
    known = {_figure_key(token) for token in FIGURE.findall(_sources(ctx, results))}
    for number, where, text in outputs:
        for token in FIGURE.findall(text):
            if sum(c.isdigit() for c in token) >= FIGURE_MIN_DIGITS and _figure_key(token) not in known:
                return number, f"{token!r} in {where} appears in no tool result, the task, the prompt or the workspace"
    return None


def _sources(ctx: Context, results: str) -> str:
    """Everything a figure may come from: tool results, the task, the prompt, the workspace and
    fixtures, what the checks expect (not the values they list as invented), read arguments."""
    scenario, run = ctx.scenario, ctx.run
    checks = [c.model_dump(mode="json", by_alias=True, exclude={"absent"}) for c in scenario.expect]
    reads = [_json(s.args) for s in run.steps if s.tool not in WRITE_TOOLS and s.tool != "finish"]
    parts = [
        results,
        run.trigger,
        run.prompt,
        scenario.workspace.model_dump_json(),
        _json(scenario.fixtures or {}),
        _json(checks),
    ]
    if scenario.respond is not None:
        parts.append(scenario.respond.model_dump_json())
    return " ".join(parts + reads)


def _figure_key(token: str) -> str:
    """A figure in a form that ignores thousands separators, a decimal comma, leading zeros and
    trailing decimal zeros: "1,200" = "1200", "14,50" = "14.5", "09:00" = "9:0"."""
    if THOUSANDS.fullmatch(token):
        token = token.replace(",", "")
    parts = []
    for part in token.replace(",", ".").split(":"):
        try:
            parts.append(format(Decimal(part).normalize(), "f") if re.fullmatch(r"\d+(\.\d+)?", part) else part)
        except InvalidOperation:
            parts.append(part)
    return ":".join(parts)


def _wrong_outcome(ctx: Context) -> tuple[int | None, str] | None:
    step = ctx.run.last.step if ctx.run.last else None
    if ctx.failed:
        return step, check_text(ctx.failed[0][0])
    return step, as_text(ctx.run.detail)


RULES: dict[str, Rule] = {
    "engine_unreachable": _stop_rule("engine_unreachable", at_next=True),
    "model_not_loaded": _stop_rule("model_not_loaded", at_next=True),
    "context_overflow": _stop_rule("context_overflow", at_next=True),
    "engine_error": _stop_rule("engine_error", at_next=True),
    "runtime_unavailable": _stop_rule("runtime_unavailable", at_next=True),
    "runtime_config": _stop_rule("runtime_config", at_next=True),
    "runtime_error": _stop_rule("runtime_error", at_next=True),
    **{code: _reject_rule(code) for code in REJECT_TYPES},
    "forbidden_tool": _forbidden_tool,
    "no_tool_attempt": _no_tool_attempt,
    "wrong_tool": _wrong_tool,
    "stuck": _stop_rule("stuck", at_next=False),
    "step_limit": _stop_rule("step_limit", at_next=False),
    "timeout": _stop_rule("timeout", at_next=True),
    "missing_required_tool": _missing_required_tool,
    "ignored_tool_result": _ignored_tool_result,
    "hallucinated_result": _hallucinated_result,
    "wrong_outcome": _wrong_outcome,
}
assert set(RULES) == set(FAILURE_TYPES), "every failure type has exactly one rule"


# ---------------------------------------------------------------------------- deciding


def diagnose(
    scenario: Scenario, transcript: Iterable[TranscriptEntry], failed: Iterable[FailedCheck]
) -> Diagnosis | None:
    """The failure of a run, or None when it passed (no check failed and the run did not end on
    a configuration or engine failure or a timeout). ``transcript``: the run's entries;
    ``failed``: the checks that did not hold."""
    run = read_run(transcript)
    failed = list(failed)
    if not failed and run.stop not in ALWAYS_FAIL:
        return None
    ctx = Context(scenario, run, [(f, _check_model(scenario, f)) for f in failed])
    for name in FAILURE_TYPES:
        found = RULES[name](ctx)
        if found is not None:
            step, evidence = found
            return Diagnosis(type=name, step=step, evidence=shorten(evidence))
    raise AssertionError("wrong_outcome always applies")  # pragma: no cover


def _check_model(scenario: Scenario, failed: FailedCheck) -> Any:
    if 0 <= failed.index < len(scenario.expect) and scenario.expect[failed.index].type == failed.type:
        return scenario.expect[failed.index]
    return None


# ---------------------------------------------------------------------------- partial credit


def partial_credit(
    scenario: Scenario, transcript: Iterable[TranscriptEntry], diagnosis: Diagnosis | None
) -> float | None:
    """The run's score on the Local Agent Bench scale (``SCORES``), the first that holds:

    - None: a configuration or engine failure (the model was not measured);
    - 1.0: the scenario passed;
    - 0.75: the run gathered the right data: every lookup step of the reference (``LOOKUP_TOOLS``)
      has a successful call of the same tool with acceptable arguments (the same key argument,
      ``LOOKUP_KEYS``; any arguments for the free-text lookups), and the reference has one;
    - 0.5: the run called, or tried in a rejected reply to call, a tool the reference calls
      (besides ``finish``);
    - 0.25: the run tried any call besides ``finish`` (an executed step, a rejected reply naming a
      tool, a call written as text);
    - 0: no useful attempt.
    """
    if diagnosis is None:
        return 1.0
    if diagnosis.engine_fault:
        return None
    run = read_run(transcript)
    done = [s for s in run.steps if s.status == OK]
    lookups = [r for r in scenario.reference if r.tool in LOOKUP_TOOLS]
    if lookups and all(any(_acceptable(s, r.tool, r.args) for s in done) for r in lookups):
        return 0.75
    tried = attempts(run)
    wanted = {r.tool for r in scenario.reference} - {"finish"}
    if any(tool in wanted for _, tool in tried):
        return 0.5
    return 0.25 if tried else 0.0


def _acceptable(step: StepEntry, tool: str, args: dict[str, Any]) -> bool:
    if step.tool != tool:
        return False
    key = LOOKUP_KEYS.get(tool)
    return key is None or _key_value(key, step.args.get(key)) == _key_value(key, args.get(key))


def _key_value(key: str, value: Any) -> str:
    text = as_text(value).strip().casefold().rstrip("/")
    if key == "path":
        return text.rsplit("/", 1)[-1]
    if key == "url":
        return re.sub(r"^[a-z]+://", "", text)
    return text
