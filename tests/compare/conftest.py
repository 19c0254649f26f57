"""The bundles of these tests are stand-ins with chosen outcomes (tests/compare/bundles.py): their
results and transcripts are written to order, not played through the harness, so they would not
re-grade. Here, and only here, `repro check` runs without its `regraded` rule; every other rule
holds. The re-grade itself is tested on bundles whose results the harness really produced
(tests/fixtures/synthetic.py, tests/check) and on real runs (tests/e2e)."""

from __future__ import annotations

import pytest

from repro.check import verdict as check


@pytest.fixture(autouse=True)
def _stand_in_bundles_are_not_regraded(monkeypatch: pytest.MonkeyPatch) -> None:
    rules = check.RULES[check.FORMAT_VERSION]
    ran = {name: rule for name, rule in rules.ran_cell.items() if name != "regraded"}
    monkeypatch.setitem(check.RULES, check.FORMAT_VERSION, rules.model_copy(update={"ran_cell": ran}))
