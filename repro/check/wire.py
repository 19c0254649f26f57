"""The check of a runtime cell's wire (repro.runtimes.wire): the transcript's replies are the
runtime's answers, each answer is what the engine said on the wire, and each turn ran the cell's
runtime under its pinned clock. So a runtime cell's outcome rests on the recorded wire: the
regrade (rule `regraded`) recomputes the outcome from the transcript, and this rule ties every
reply of that transcript to the bytes the engine sent."""

from __future__ import annotations

from harness.contracts import DeskCallRecord, RuntimeTurn, ScenarioResult, TranscriptLine
from harness.runtimes import wire
from repro.bundle.evidence import CellEvidence
from repro.bundle.layout.names import WIRE_FILE
from repro.core.errors import BadInput
from repro.runtimes.wire import read_wire, turns_by_scenario
from repro.spec.runtimes import RuntimeSpec

MAX_PROBLEMS = 20


def rule_runtime_wire(ev: CellEvidence) -> list[str]:
    """A runtime cell's wire holds every turn of every scenario, as the transcript read them."""
    runtime = ev.record.cell.runtime
    if runtime is None or ev.record.cell.driven_runtime is not None:
        # our own client has no wire; an external harness driving a runtime keeps its own record
        # (its result file, checked by its suite kind's recheck), not our client's wire
        held = ev.bundle.has_file(ev.cell_id, WIRE_FILE)
        return [f"a cell without our runtime client holds a {WIRE_FILE}"] if held else []
    if not ev.bundle.has_file(ev.cell_id, WIRE_FILE):
        return [f"a runtime cell ({runtime.id}) without its wire ({WIRE_FILE})"]
    try:
        turns = turns_by_scenario(read_wire(ev.cell_dir / WIRE_FILE))
        lines = ev.bundle.transcripts(ev.cell_id)
        results = {result.id: result for result in ev.bundle.results(ev.cell_id)}
    except BadInput as error:
        return [str(error)]
    problems = [p for line in lines for p in scenario_problems(line, turns.get(line.id, []), runtime)]
    problems += [p for sid, result in results.items() for p in requests_problems(result, turns.get(sid, []))]
    stray = sorted(set(turns) - {line.id for line in lines})
    if stray:
        problems.append(f"the wire holds turns of scenarios the cell did not run: {', '.join(stray[:5])}")
    return problems[:MAX_PROBLEMS]


def scenario_problems(line: TranscriptLine, turns: list[RuntimeTurn], runtime: RuntimeSpec) -> list[str]:
    """One scenario: its replies in order are its turns' answers (in native mode, the engine's
    replies holding the calls the runtime ran, then its answer), and each turn is sound."""
    replies = [reply.content for entry in line.transcript for reply in getattr(entry, "replies", None) or []]
    answers = [answer for turn in turns for answer in wire_answers(turn)]
    problems = []
    if replies != answers:
        problems.append(
            f"{line.id}: the transcript's {len(replies)} replies are not the {len(answers)} answers on the wire"
        )
    return problems + [p for turn in turns for p in turn_problems(line.id, turn, runtime)]


def wire_answers(turn: RuntimeTurn) -> list[str]:
    """What the protocol was given from a turn, as the wire holds it: the runtime's answer; in native
    mode first each reply that held a call the runtime ran, as the protocol records a reply."""
    said = wire.chat_replies([exchange.model_dump() for exchange in turn.exchanges])
    replies = [said[i] if 0 <= i < len(said) else wire.EngineReply(content="<no such reply>") for _c, i in given(turn)]
    return [wire.as_recorded(r) for r in replies] + ([turn.answer] if turn.answer is not None else [])


def turn_problems(scenario: str, turn: RuntimeTurn, runtime: RuntimeSpec) -> list[str]:
    where = f"{scenario} turn {turn.turn}"
    problems = []
    if turn.runtime != runtime.facts.adapter:
        problems.append(f"{where}: played by {turn.runtime}, the cell names {runtime.facts.adapter}")
    if turn.clock != runtime.clock:
        problems.append(f"{where}: the clock was {turn.clock}, the cell pins {runtime.clock}")
    problems += [f"{where}: {p}" for p in calls_problems(turn)]
    if turn.answer is None:
        return problems
    said = engine_said(turn)[turn_given(turn) :]
    if not said:
        problems.append(f"{where}: the runtime answered without a reply of the engine on the wire")
    elif not made_of(turn.answer, said):
        problems.append(f"{where}: the runtime's answer is not made of the engine's replies on the wire")
    return problems


def engine_said(turn: RuntimeTurn) -> list[str]:
    """What the engine answered the turn's chat requests, in order, as the wire holds it."""
    return [reply.content for reply in wire.chat_replies([exchange.model_dump() for exchange in turn.exchanges])]


def made_of(answer: str, said: list[str]) -> bool:
    """The answer is the engine's last replies of the turn, joined (one, or a reply cut at the token
    limit and its continuations, as Hermes joins them), whitespace aside."""
    squashed = "".join(answer.split())
    return any(squashed == "".join("".join(said[k:]).split()) for k in range(len(said)))


def given(turn: RuntimeTurn) -> list[tuple[DeskCallRecord, int]]:
    """Native mode: the calls the runtime ran whose reply the protocol was given, with that reply's
    index among the turn's replies on the wire."""
    return [(call, call.reply) for call in turn.calls if call.reply is not None]


def turn_given(turn: RuntimeTurn) -> int:
    """How many of the turn's replies the protocol was given before its answer (native mode)."""
    return max((reply + 1 for _call, reply in given(turn)), default=0)


def calls_problems(turn: RuntimeTurn) -> list[str]:
    """Native mode: each call the runtime ran is one its reply on the wire holds (by the engine's id
    where it gave one, else by name), and the replies were given in order."""
    said = wire.chat_replies([exchange.model_dump() for exchange in turn.exchanges])
    problems, last = [], -1
    for call, reply in given(turn):
        held = wire.calls_of(said[reply]) if 0 <= reply < len(said) else []
        keys = {c.id for c in held} if call.id else {c.name for c in held}
        if (call.id or call.name) not in keys:
            problems.append(f"the runtime ran {call.name} ({call.id or 'no id'}), which reply {reply} does not hold")
        if reply <= last:
            problems.append(f"reply {reply} given to the protocol twice or out of order")
        last = reply
    return problems


def requests_problems(result: ScenarioResult, turns: list[RuntimeTurn]) -> list[str]:
    """Each recorded attempt stands for as many engine requests (`timings.requests`, one when absent)
    as its turn made on the wire (the bounds allow that many times max_tokens)."""
    recorded = [int((timing.timings or {}).get("requests", 1)) for timing in result.engine_timings]
    on_wire = [count for turn in turns for count in turn_requests(turn)]
    if recorded != on_wire:
        return [f"{result.id}: its attempts stand for {recorded} engine requests, the wire holds {on_wire}"]
    return []


def turn_requests(turn: RuntimeTurn) -> list[int]:
    """The engine requests behind each reply the protocol was given from a turn (native mode: up to
    each reply holding a call, the runtime's own retries included; then the answer's)."""
    counts, start = [], 0
    for _call, reply in given(turn):
        counts.append(reply + 1 - start)
        start = reply + 1
    if turn.answer is not None:
        counts.append(len(engine_said(turn)[start:]) or 1)
    return counts
