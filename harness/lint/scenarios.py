"""Scenario lint: the rules the project's own scenarios must follow.

Each problem is one line ``FILE: reason``. Per-file rules are in ``lint_file``; rules across
files (unique ids, template reuse, approval balance) in ``lint_suite``.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from harness.contracts import ScenarioResult
from harness.io.inputs import MAX_SCENARIO_BYTES, InputError, read_text
from harness.lint.agents import FINISH_NOW, PLAUSIBLE_WRITERS, RANDOM_CALLERS
from harness.model.scenario import Scenario, ScenarioError, parse_scenario, scenario_files
from harness.runner import replay_scenario, run_scenario

NOTHING_TO_DO = "nothing_to_do"
LADDER = re.compile(r"ladder-([0-8])")
RANDOM_PROOF_LEVELS = (0, 1)
OUTCOME_CHECKS = {"answer_contains_all", "answer_matches", "tool_result_contains", "asked", "row", "note", "task"}
PLACEHOLDER = re.compile(r"\b(acme|foo|lorem|john\s+doe)\b", re.IGNORECASE)
EM_DASH = "\u2014"
FIXTURE_MAX_BYTES = 4096
TEMPLATE_MAX_USES = 3
SAFETY_CHECKS = {"not_called", "unchanged"}
CONTENT_CHECKS = {"row", "note", "task", "finish_contains", "memory"}


@dataclass
class Loaded:
    path: Path
    text: str
    scenario: Scenario | None
    error: str | None


def load_for_lint(path: Path) -> Loaded:
    """The file read once, within its bound (a FIFO, a device or a huge file is refused unread)."""
    try:
        text = read_text(path, MAX_SCENARIO_BYTES)
        return Loaded(path, text, parse_scenario(path, text), None)
    except (InputError, ScenarioError) as exc:
        return Loaded(path, "", None, str(exc))


def lint_path(path: str | Path) -> list[str]:
    """Every problem in a scenario file or folder."""
    loaded = [load_for_lint(p) for p in scenario_files(path)]
    problems = [p for item in loaded for p in _file_problems(item)]
    return problems + _suite_problems(loaded)


def unfit_to_score(path: str | Path) -> list[str]:
    """Why a scenario cannot score a model (what a run refuses before any engine boots): it does
    not load, its reference does not pass, or an agent that does nothing (or, for nothing_to_do,
    a plausible writer) passes it. Style rules are the full lint's, not the run's."""
    item = load_for_lint(Path(path))
    if item.scenario is None:
        return [item.error or f"{item.path}: cannot load"]
    return [f"{item.path}: {reason}" for reason in _replay_reasons(item.scenario) + _do_nothing_reasons(item.scenario)]


def lint_file(path: str | Path) -> list[str]:
    return _file_problems(load_for_lint(Path(path)))


def lint_suite(paths: list[Path]) -> list[str]:
    return _suite_problems([load_for_lint(Path(p)) for p in paths])


# ---------------------------------------------------------------------------- per file


def _file_problems(item: Loaded) -> list[str]:
    if item.scenario is None:
        return [item.error or f"{item.path}: cannot load"]
    reasons = _text_reasons(item.text) + _scenario_reasons(item.path, item.scenario)
    return [f"{item.path}: {reason}" for reason in reasons]


def _text_reasons(text: str) -> list[str]:
    reasons = []
    placeholder = PLACEHOLDER.search(text)
    if placeholder:
        reasons.append(f"placeholder name {placeholder.group(0)!r}")
    if EM_DASH in text or "\\u2014" in text.lower():
        reasons.append("contains an em dash (U+2014)")
    return reasons


def _scenario_reasons(path: Path, s: Scenario) -> list[str]:
    reasons = []
    if s.id != path.stem:
        reasons.append(f"id {s.id!r} differs from the file name {path.stem!r}")
    if s.category != path.parent.name:
        reasons.append(f"category {s.category!r} differs from the folder {path.parent.name!r}")
    if s.max_steps < len(s.reference):
        reasons.append(f"max_steps {s.max_steps} is below the reference length {len(s.reference)}")
    reasons += _fixture_reasons(s)
    reasons += _category_reasons(s)
    reasons += _ladder_reasons(s)
    reasons += _replay_reasons(s)
    reasons += _do_nothing_reasons(s)
    reasons += _one_write_reasons(s)
    reasons += _random_reasons(s)
    return reasons


def ladder_level(s: Scenario) -> int | None:
    """The ladder level a ``ladder-N`` category stands for, None outside the ladder."""
    found = LADDER.fullmatch(s.category)
    return int(found.group(1)) if found else None


def _ladder_reasons(s: Scenario) -> list[str]:
    level = ladder_level(s)
    if level is None:
        return []
    reasons = []
    if s.level != level:
        reasons.append(f"ladder scenario in {s.category} needs level {level}, has {s.level}")
    outcome = [c for c in s.expect if c.type in OUTCOME_CHECKS or (c.type == "called" and c.args)]
    if not outcome:
        reasons.append(
            "ladder scenario without an outcome check (answer, tool result, called with args, asked, row, note or task)"
        )
    return reasons


def _one_write_reasons(s: Scenario) -> list[str]:
    if ladder_level(s) is None:
        return []
    passing = [
        a.name for a in PLAUSIBLE_WRITERS if a.applies(s) and run_scenario(s, a.policy(s), transcript=False).passed
    ]
    return [f"ladder scenario passes with the {name} agent" for name in passing]


def _random_reasons(s: Scenario) -> list[str]:
    if ladder_level(s) not in RANDOM_PROOF_LEVELS:
        return []
    passing = [a.name for a in RANDOM_CALLERS if run_scenario(s, a.policy(s), transcript=False).passed]
    return [f"level {s.level} scenario passes with the {passing[0]} agent (random tool calls)"] if passing else []


def _fixture_reasons(s: Scenario) -> list[str]:
    reasons = []
    for url, html in (s.fixtures or {}).items():
        if not (urlsplit(url).hostname or "").lower().endswith(".test"):
            reasons.append(f"fixture {url} is not on a .test host")
        if len(html.encode("utf-8")) >= FIXTURE_MAX_BYTES:
            reasons.append(f"fixture {url} is {len(html.encode('utf-8'))} bytes (limit 4 KB)")
    return reasons


def _category_reasons(s: Scenario) -> list[str]:
    types = {c.type for c in s.expect}
    reasons = []
    if s.category == "approval" and (s.respond is None or s.respond.approve is None):
        reasons.append("approval scenario without respond.approve")
    if s.category == "ask":
        if s.respond is None or not s.respond.answer:
            reasons.append("ask scenario without respond.answer")
        if "asked" not in types:
            reasons.append("ask scenario without an asked check")
    if s.category == "injection":
        if not types & SAFETY_CHECKS:
            reasons.append("injection scenario without a not_called or unchanged check")
        if not types & CONTENT_CHECKS:
            reasons.append("injection scenario without a check on produced content")
    if s.category == "conflict" and s.interfere is None:
        reasons.append("conflict scenario without an interfere block")
    return reasons


def _replay_reasons(s: Scenario) -> list[str]:
    result = replay_scenario(s, transcript=False)
    if result.passed:
        return []
    return [f"reference does not pass: {_why(result)}"]


def _do_nothing_reasons(s: Scenario) -> list[str]:
    if s.category != NOTHING_TO_DO:
        result = run_scenario(s, FINISH_NOW.policy(s), transcript=False)
        return ["passes by finishing at once"] if result.passed else []
    reasons = []
    for agent in PLAUSIBLE_WRITERS:
        if agent.applies(s) and run_scenario(s, agent.policy(s), transcript=False).passed:
            reasons.append(f"nothing_to_do scenario passes with the {agent.name} agent")
    return reasons


def _why(result: ScenarioResult) -> str:
    if result.error:
        return f"{result.failure_type}: {result.error}"
    first = result.failed_checks[0]
    return f"{result.failure_type}: check {first.index} ({first.type}) expected {first.expected}, found {first.found}"


# ---------------------------------------------------------------------------- across files


def _suite_problems(loaded: list[Loaded]) -> list[str]:
    scenarios = [(item.path, item.scenario) for item in loaded if item.scenario is not None]
    problems = []
    ids = Counter(s.id for _, s in scenarios)
    templates = Counter(s.template for _, s in scenarios)
    for path, s in scenarios:
        if ids[s.id] > 1:
            problems.append(f"{path}: id {s.id!r} is used by {ids[s.id]} scenarios")
        if templates[s.template] > TEMPLATE_MAX_USES:
            problems.append(f"{path}: template {s.template!r} is used by {templates[s.template]} scenarios (max 3)")
    approvals = [s.respond.approve for _, s in scenarios if s.category == "approval" and s.respond]
    yes, no = approvals.count(True), approvals.count(False)
    if abs(yes - no) > 1:
        problems.append(f"approval: {yes} scenarios approve and {no} refuse; keep them within one of half")
    return problems
