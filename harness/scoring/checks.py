"""Evaluate ``expect`` checks against the final workspace and the run record.

Each check returns a ``CheckOutcome`` with what it expected and what it found.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from harness.agent.loop import AgentRun
from harness.io.strict_json import dumps_compact
from harness.model import checks_model as cm
from harness.model.values import contains_text, contains_word, matches
from harness.model.workspace import Workspace

FOLLOW_UP_TOLERANCE_SECONDS = 1
ANSWER_LIMIT_CHARS = 4000


@dataclass
class CheckContext:
    ws: Workspace
    before: dict[tuple[str, str], tuple[int, int]]
    run: AgentRun


@dataclass
class CheckOutcome:
    index: int
    type: str
    passed: bool
    expected: Any
    found: Any


def evaluate_all(checks: list[Any], ctx: CheckContext) -> list[CheckOutcome]:
    return [evaluate(i, check, ctx) for i, check in enumerate(checks)]


def evaluate(index: int, check: Any, ctx: CheckContext) -> CheckOutcome:
    passed, found = EVALUATORS[type(check)](check, ctx)
    expected = check.model_dump(mode="json", by_alias=True, exclude_unset=True, exclude={"type"})
    return CheckOutcome(index, check.type, passed, expected, found)


Verdict = tuple[bool, Any]


def _finished(check: cm.FinishedCheck, ctx: CheckContext) -> Verdict:
    return ctx.run.status == "done", {"status": ctx.run.status, "stop": ctx.run.stop}


def _status(check: cm.StatusCheck, ctx: CheckContext) -> Verdict:
    return ctx.run.status == check.is_, ctx.run.status


def _row(check: cm.RowCheck, ctx: CheckContext) -> Verdict:
    table = ctx.ws.table(check.table)
    if table is None:
        return False, f"no table {check.table!r}"
    wanted = {**check.where, **(check.has or {})}
    for row in table.rows:
        if _row_matches(table, row.values, wanted):
            return True, row.values
    near = [r.values for r in table.rows if _row_matches(table, r.values, check.where)]
    return False, {"rows_matching_where": near[:5]} if near else "no row matches where"


def _row_matches(table: Any, values: dict[str, Any], wanted: dict[str, Any]) -> bool:
    for key, expected in wanted.items():
        column = table.column(key)
        if column is None or not matches(expected, values.get(column)):
            return False
    return True


def _rows(check: cm.RowsCheck, ctx: CheckContext) -> Verdict:
    table = ctx.ws.table(check.table)
    if table is None:
        return False, f"no table {check.table!r}"
    n = len(table.rows)
    if check.count is not None:
        return n == check.count, n
    low = check.min if check.min is not None else 0
    high = check.max if check.max is not None else n
    return low <= n <= high, n


def _table_exists(check: cm.TableExistsCheck, ctx: CheckContext) -> Verdict:
    table = ctx.ws.table(check.table)
    if table is None:
        return False, None
    if check.columns is None:
        return True, table.columns
    same = [c.strip().casefold() for c in table.columns] == [c.strip().casefold() for c in check.columns]
    return same, table.columns


def _note(check: cm.NoteCheck, ctx: CheckContext) -> Verdict:
    note = ctx.ws.note(check.title)
    if note is None:
        return False, None
    missing = [s for s in check.contains if not contains_text(note.body, s)]
    present = [s for s in check.not_contains if contains_text(note.body, s)]
    found: dict[str, Any] = {"body": note.body}
    if missing:
        found["missing"] = missing
    if present:
        found["unwanted"] = present
    return not missing and not present, found


def _unchanged(check: cm.UnchangedCheck, ctx: CheckContext) -> Verdict:
    if check.table is not None:
        key = ("table", check.table.casefold())
        table = ctx.ws.table(check.table)
        after = (table.id, table.version) if table else None
    else:
        key = ("note", (check.note or "").casefold())
        note = ctx.ws.note(check.note or "")
        after = (note.id, note.version) if note else None
    before = ctx.before.get(key)
    describe = lambda state: None if state is None else {"id": state[0], "version": state[1]}  # noqa: E731
    return before == after, {"before": describe(before), "after": describe(after)}


def _task(check: cm.TaskCheck, ctx: CheckContext) -> Verdict:
    to = (ctx.ws.resolve_recipient(check.to) or check.to).casefold()
    tasks = [t for t in ctx.ws.new_tasks() if t.to.casefold() == to]
    if check.title_contains:
        tasks = [t for t in tasks if contains_text(t.title, check.title_contains)]
    text = " ".join(f"{t.title} {t.details}" for t in tasks)
    missing = [m for m in check.mentions if not contains_text(text, m)]
    found = [{"title": t.title, "details": t.details} for t in tasks]
    if missing:
        return False, {"tasks": found, "missing": missing}
    return bool(tasks), found


def _no_task(check: cm.NoTaskCheck, ctx: CheckContext) -> Verdict:
    tasks = ctx.ws.new_tasks()
    if check.to is not None:
        to = (ctx.ws.resolve_recipient(check.to) or check.to).casefold()
        tasks = [t for t in tasks if t.to.casefold() == to]
    return not tasks, [{"to": t.to, "title": t.title} for t in tasks]


def _calls(tool: str, args: dict[str, Any] | None, ctx: CheckContext) -> list[dict[str, Any]]:
    return [
        r.step.call() for r in ctx.run.steps if r.step.tool == tool and (args is None or matches(args, r.step.args))
    ]


def _called(check: cm.CalledCheck, ctx: CheckContext) -> Verdict:
    found = _calls(check.tool, check.args, ctx)
    return bool(found), found or [r.step.call() for r in ctx.run.steps if r.step.tool == check.tool]


def _not_called(check: cm.NotCalledCheck, ctx: CheckContext) -> Verdict:
    found = _calls(check.tool, check.args, ctx)
    return not found, found


def _asked(check: cm.AskedCheck, ctx: CheckContext) -> Verdict:
    questions = [r.step.args.get("question") for r in ctx.run.steps if r.step.tool == "ask"]
    return bool(questions), questions


def _approval(check: cm.ApprovalCheck, ctx: CheckContext) -> Verdict:
    """Holds when the owner was asked to approve a call of the tool in this run."""
    asked = [
        {"tool": a.tool, "target": a.target, "approved": a.approved} for a in ctx.ws.approvals if a.tool == check.tool
    ]
    return bool(asked), asked


def _memory(check: cm.MemoryCheck, ctx: CheckContext) -> Verdict:
    agent = (ctx.ws.resolve_agent(check.agent) or check.agent).casefold()
    texts = [m.text for m in ctx.ws.memories if m.new and m.agent.casefold() == agent]
    return any(contains_text(t, check.contains) for t in texts), texts


def _follow_up(check: cm.FollowUpCheck, ctx: CheckContext) -> Verdict:
    low = check.min_minutes * 60 - FOLLOW_UP_TOLERANCE_SECONDS
    high = check.max_minutes * 60 + FOLLOW_UP_TOLERANCE_SECONDS
    found = []
    for f in ctx.ws.follow_ups:
        seconds = (f.due_at - f.created_at).total_seconds()
        found.append({"minutes": f.minutes, "note": f.note})
        if low <= seconds <= high:
            return True, found[-1]
    return False, found


def _finish_contains(check: cm.FinishContainsCheck, ctx: CheckContext) -> Verdict:
    summary = ctx.run.finish_summary
    if summary is None:
        return False, None
    has_all = all(contains_word(summary, w) for w in check.all)
    has_any = not check.any or any(contains_word(summary, w) for w in check.any)
    return has_all and has_any, summary


def _max_steps(check: cm.MaxStepsCheck, ctx: CheckContext) -> Verdict:
    return len(ctx.run.steps) <= check.n, len(ctx.run.steps)


def _answer(ctx: CheckContext) -> str | None:
    summary = ctx.run.finish_summary
    return None if summary is None else " ".join(summary[:ANSWER_LIMIT_CHARS].split())


def contains_term(text: str, term: str) -> bool:
    """``term`` occurs in ``text`` (case-insensitive, spaces collapsed) and is not part of a longer
    word or number: "14" is not found in "114" nor in "14.5", "report.md" is found in "`report.md`"."""
    wanted = re.escape(" ".join(term.split()))
    pattern = rf"(?<![0-9a-z])(?<![0-9][.,]){wanted}(?![0-9a-z])(?![.,][0-9])"
    return re.search(pattern, " ".join(text.split()), re.IGNORECASE) is not None


def _answer_contains_all(check: cm.AnswerContainsAllCheck, ctx: CheckContext) -> Verdict:
    answer = _answer(ctx)
    if answer is None:
        return False, None
    missing = [v for v in check.values if not contains_term(answer, v)]
    unwanted = [v for v in check.absent if contains_term(answer, v)]
    if missing or unwanted:
        return False, {"answer": answer, "missing": missing, "unwanted": unwanted}
    return True, answer


def _answer_matches(check: cm.AnswerMatchesCheck, ctx: CheckContext) -> Verdict:
    answer = _answer(ctx)
    return answer is not None and re.search(check.pattern, answer, re.IGNORECASE) is not None, answer


def _tool_result_contains(check: cm.ToolResultContainsCheck, ctx: CheckContext) -> Verdict:
    results = [r.result for r in ctx.run.steps if r.step.tool == check.tool and r.status == "ok"]
    for result in results:
        text = dumps_compact(result).casefold()
        if all(v.casefold() in text for v in check.values):
            return True, result
    return False, {"successful_calls": len(results)}


EVALUATORS: dict[type, Callable[[Any, CheckContext], Verdict]] = {
    cm.FinishedCheck: _finished,
    cm.StatusCheck: _status,
    cm.RowCheck: _row,
    cm.RowsCheck: _rows,
    cm.TableExistsCheck: _table_exists,
    cm.NoteCheck: _note,
    cm.UnchangedCheck: _unchanged,
    cm.TaskCheck: _task,
    cm.NoTaskCheck: _no_task,
    cm.CalledCheck: _called,
    cm.NotCalledCheck: _not_called,
    cm.AskedCheck: _asked,
    cm.ApprovalCheck: _approval,
    cm.MemoryCheck: _memory,
    cm.FollowUpCheck: _follow_up,
    cm.FinishContainsCheck: _finish_contains,
    cm.MaxStepsCheck: _max_steps,
    cm.AnswerContainsAllCheck: _answer_contains_all,
    cm.AnswerMatchesCheck: _answer_matches,
    cm.ToolResultContainsCheck: _tool_result_contains,
}
