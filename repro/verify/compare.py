"""`repro compare A B`: two sets of results, row by row, with a verdict on every change.

A and B are bundles, results folders, or the results.json of `repro paper render`. Rows are paired
by their key, then by what is left of it when one setting changed (the model, the engine); each
pair gets the settings that differ, the change in pass rate with a verdict (better, worse, no
clear difference at 5%), the scenarios that flipped and the change in failure types.

The verdict comes from an exact McNemar test when both rows ran the same scenarios (same ids,
same suite bytes, same number of repeats: every scenario-repeat is a pair), else from Newcombe's
interval for the difference of two independent proportions.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from repro.bundle.layout.names import RUN_FILE
from repro.bundle.setup import differences
from repro.core.errors import BadInput
from repro.report.aggregate import collect
from repro.report.stats import Interval, Verdict, mcnemar, newcombe
from repro.report.tables import PaperTables, TableRow
from repro.verify.published import load_published
from repro.verify.rerun_rows import row_pins

RESULTS_JSON = "results.json"
# What makes a row itself (its model bytes, protocol, decoding as recorded, scenarios); every other
# input is compared by the one comparison of setups that verify uses (repro.bundle.setup), so the same
# pair of rows is named alike by both.
SETTINGS: dict[str, Callable[[TableRow], str | None]] = {
    "model sha256": lambda r: r.model_sha256,
    "protocol": lambda r: r.protocol,
    "decoding": lambda r: r.decoding,
    "suite sha256": lambda r: r.suite_sha256,
}
PAIRING_KEYS: list[Callable[[TableRow], tuple]] = [
    lambda r: (r.key,),
    lambda r: (r.model, r.engine_id, r.protocol, r.suite),
    lambda r: (r.engine_id, r.protocol, r.suite),
    lambda r: (r.model, r.protocol, r.suite),
    lambda r: (r.protocol, r.suite),
    lambda r: (),
]


class SettingChange(BaseModel):
    name: str
    before: str | None
    after: str | None

    def describe(self) -> str:
        return f"{self.name}: {self.before or '-'} -> {self.after or '-'}"


class Flip(BaseModel):
    scenario: str
    before: list[bool]
    after: list[bool]
    direction: Literal["fixed", "broken", "changed"]


class RowChange(BaseModel):
    before_key: str
    after_key: str
    settings: list[SettingChange]
    before: tuple[int, int]
    after: tuple[int, int]
    test: Literal["paired", "unpaired"]
    p_value: float | None = None  # paired: exact McNemar
    interval: Interval | None = None  # unpaired: Newcombe interval for after - before
    verdict: Verdict
    flips: list[Flip]
    failure_types: dict[str, tuple[int, int]]  # only the types whose count changed

    @property
    def change(self) -> float:
        return _rate(self.after) - _rate(self.before)


class Comparison(BaseModel):
    rows: list[RowChange]
    only_before: list[str]
    only_after: list[str]

    @property
    def settings(self) -> list[SettingChange]:
        """The setting changes of all pairs, once each."""
        seen: dict[str, SettingChange] = {}
        for row in self.rows:
            for change in row.settings:
                seen.setdefault(change.describe(), change)
        return list(seen.values())


def load_tables(path: Path) -> PaperTables:
    """A results.json, a folder holding one, or a bundle / results folder (checked; VALID cells only)."""
    if not path.exists():
        raise BadInput(f"{path}: no such file or folder")
    if path.is_file():
        return load_published(path)
    if (path / RESULTS_JSON).is_file() and not (path / RUN_FILE).exists():
        return load_published(path / RESULTS_JSON)
    return collect([path])


def compare(before: PaperTables, after: PaperTables) -> Comparison:
    pairs, only_before, only_after = pair_rows(before.rows, after.rows)
    return Comparison(
        rows=[row_change(a, b) for a, b in pairs],
        only_before=[r.key for r in only_before],
        only_after=[r.key for r in only_after],
    )


def pair_rows(
    before: list[TableRow], after: list[TableRow]
) -> tuple[list[tuple[TableRow, TableRow]], list[TableRow], list[TableRow]]:
    """Pair rows by the most specific key that is unique on both sides among the rows left."""
    pairs: list[tuple[TableRow, TableRow]] = []
    left_before, left_after = list(before), list(after)
    for key in PAIRING_KEYS:
        unique_before, unique_after = _unique_by(left_before, key), _unique_by(left_after, key)
        for value in [v for v in unique_before if v in unique_after]:
            a, b = unique_before[value], unique_after[value]
            pairs.append((a, b))
            left_before.remove(a)
            left_after.remove(b)
    return pairs, left_before, left_after


def _unique_by(rows: list[TableRow], key: Callable[[TableRow], tuple]) -> dict[tuple, TableRow]:
    found: dict[tuple, list[TableRow]] = {}
    for row in rows:
        found.setdefault(key(row), []).append(row)
    return {value: group[0] for value, group in found.items() if len(group) == 1}


def row_change(before: TableRow, after: TableRow) -> RowChange:
    settings = [
        SettingChange(name=name, before=get(before), after=get(after))
        for name, get in SETTINGS.items()
        if get(before) != get(after)
    ] + setup_changes(before, after)
    common = dict(
        before_key=before.key,
        after_key=after.key,
        settings=settings,
        before=(before.passed, before.total),
        after=(after.passed, after.total),
        flips=flips(before, after),
        failure_types=failure_type_changes(before, after),
    )
    if same_scenarios(before, after):
        test = mcnemar(
            [pair for s in before.scenarios for pair in zip(before.scenarios[s], after.scenarios[s], strict=True)]
        )
        return RowChange(**common, test="paired", p_value=test.p_value, verdict=test.verdict)
    unpaired = newcombe(before.passed, before.total, after.passed, after.total)
    return RowChange(**common, test="unpaired", interval=unpaired.interval, verdict=unpaired.verdict)


def setup_changes(before: TableRow, after: TableRow) -> list[SettingChange]:
    """The inputs the two rows ran otherwise, by verify's comparison (`differences`), A's row taken
    as the statement and B's as the rerun; the engine build by each row's own identity."""
    stated = row_pins(before).model_copy(update={"engine_build": before.engine_identity})
    ran = row_pins(after).model_copy(update={"engine_names": [after.engine_identity]})
    return [SettingChange(name=d.what, before=d.claimed, after=d.rerun) for d in differences(stated, ran)]


def same_scenarios(before: TableRow, after: TableRow) -> bool:
    """Paired only on the very same scenarios: same ids, same repeats each, same suite bytes where recorded."""
    if not before.scenarios or before.scenarios.keys() != after.scenarios.keys():
        return False
    if before.suite_sha256 and after.suite_sha256 and before.suite_sha256 != after.suite_sha256:
        return False
    return all(len(before.scenarios[s]) == len(after.scenarios[s]) for s in before.scenarios)


def flips(before: TableRow, after: TableRow) -> list[Flip]:
    """Scenarios whose outcome changed: repeat by repeat when both sides ran as many repeats, else
    by pass rate (1 of 1 and 2 of 2 are the same outcome)."""
    changed = []
    for scenario in sorted(before.scenarios.keys() & after.scenarios.keys()):
        old, new = before.scenarios[scenario], after.scenarios[scenario]
        if old != new if len(old) == len(new) else sum(old) * len(new) != sum(new) * len(old):
            changed.append(Flip(scenario=scenario, before=old, after=new, direction=_direction(old, new)))
    return changed


def _direction(old: list[bool], new: list[bool]) -> Literal["fixed", "broken", "changed"]:
    old_rate, new_rate = sum(old) / len(old), sum(new) / len(new)
    return "fixed" if new_rate > old_rate else "broken" if new_rate < old_rate else "changed"


def failure_type_changes(before: TableRow, after: TableRow) -> dict[str, tuple[int, int]]:
    types = sorted(before.failure_types.keys() | after.failure_types.keys())
    counts = {t: (before.failure_types.get(t, 0), after.failure_types.get(t, 0)) for t in types}
    return {t: pair for t, pair in counts.items() if pair[0] != pair[1]}


def _rate(score: tuple[int, int]) -> float:
    return score[0] / score[1] if score[1] else 0.0
