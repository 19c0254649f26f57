"""How far a rerun may differ from a claim and still agree with it: a stated tolerance, and the
exact tests that decide it.

Engines are not always exact: on a GPU, or on a CPU at another thread count, greedy decoding
can take another token and a transcript another turn. Whether such a rerun agrees with what was
published is a question about two samples of the same scenarios, so it is answered by a test
whose level is stated, never by eye:

- with per-scenario outcomes on both sides (the same scenarios, the same suite bytes), each
  scenario and repeat is a pair, and the exact McNemar test asks whether the flips lean one way
  (`repro.report.stats.mcnemar_p`: a two-sided binomial sum at p = 1/2 on the discordant pairs);
- with counts only (a paper's "137 of 160"), the two pass rates are independent samples, and
  Fisher's exact test asks whether they differ (`fisher_exact_p`: hypergeometric sums in
  integers, so the tie rule is exact, with no floating-point tolerance);
- a claim (or a profile) may instead state the tolerance it promises, MLPerf TEST01 style:
  "the pass count within 2 of 160" (`Tolerance.passed_within`), which then decides, with the
  test's figures shown beside it.

Everything here is written with `math.comb` and exact integers: no SciPy.
"""

from __future__ import annotations

import math
from typing import Literal, Protocol

from pydantic import BaseModel

from repro.report.stats import mcnemar_p
from repro.spec.tolerance import Tolerance


class Counted(Protocol):
    """A pass count of a total: a claim's result, a table row."""

    @property
    def passed(self) -> int: ...

    @property
    def total(self) -> int: ...


Test = Literal["identical", "exact", "mcnemar", "fisher", "stated"]


# ---------------------------------------------------------------- exact tests


def hypergeometric_weights(row_a: int, row_b: int, column: int) -> dict[int, int]:
    """For a 2x2 table with row sums `row_a`, `row_b` and first-column sum `column`, each possible
    top-left count x with its weight C(row_a, x) * C(row_b, column - x) (the probabilities, times
    C(row_a + row_b, column))."""
    low, high = max(0, column - row_b), min(row_a, column)
    return {x: math.comb(row_a, x) * math.comb(row_b, column - x) for x in range(low, high + 1)}


def fisher_exact_p(passed_a: int, total_a: int, passed_b: int, total_b: int) -> float:
    """Two-sided Fisher's exact test of two proportions: the probability, given the margins, of a
    table no more likely than the observed one. Weights are exact integers, so "no more likely"
    is an exact comparison (R's fisher.test uses a relative tolerance of 1e-7 for the same)."""
    _check_counts(passed_a, total_a)
    _check_counts(passed_b, total_b)
    weights = hypergeometric_weights(total_a, total_b, passed_a + passed_b)
    observed = weights[passed_a]
    extreme = sum(weight for weight in weights.values() if weight <= observed)
    return min(1.0, extreme / sum(weights.values()))


def _check_counts(passed: int, total: int) -> None:
    if not 0 <= passed <= total:
        raise ValueError(f"passed {passed} of {total}: not a count")


# ---------------------------------------------------------------- judging a rerun


class Judgement(BaseModel):
    """The figures behind one verdict: which test, its level, its p-value, and whether the rerun
    stayed within the tolerance."""

    test: Test
    within: bool
    level: float
    p_value: float | None = None
    passed_within: int | None = None
    claimed: tuple[int, int]  # passed, total
    rerun: tuple[int, int]
    only_claimed: int | None = None  # paired: passed in the claim, failed in the rerun
    only_rerun: int | None = None  # paired: failed in the claim, passed in the rerun
    pairs: int | None = None

    def describe(self) -> str:
        """One line: the counts, the flips each way, the test and its figures."""
        counts = f"passed {self.claimed[0]}/{self.claimed[1]} claimed, {self.rerun[0]}/{self.rerun[1]} rerun"
        flips = ""
        if self.pairs is not None:
            flips = f"; {self.pairs} paired runs, flips: {self.only_claimed} pass->fail, {self.only_rerun} fail->pass"
        test = {
            "identical": "identical outcomes",
            "exact": "the same exact setup: "
            + ("identical, as promised" if self.within else "not identical, and no tolerance applies"),
            "mcnemar": f"exact McNemar p = {_p(self.p_value)} (two-sided, level {self.level:g})",
            "fisher": f"Fisher's exact p = {_p(self.p_value)} (two-sided, level {self.level:g}; counts only)",
            "stated": f"stated tolerance: within {self.passed_within}, difference "
            f"{abs(self.claimed[0] - self.rerun[0])}"
            + (f" (exact test p = {_p(self.p_value)})" if self.p_value is not None else ""),
        }[self.test]
        return f"{counts}{flips}; {test}"


def _p(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"


def judge_paired(pairs: list[tuple[bool, bool]], tolerance: Tolerance) -> Judgement:
    """Paired outcomes (claimed, rerun) of the same scenario runs: McNemar on the flips, or the
    stated pass-count tolerance."""
    only_claimed = sum(a and not b for a, b in pairs)
    only_rerun = sum(b and not a for a, b in pairs)
    claimed = (sum(a for a, _ in pairs), len(pairs))
    rerun = (sum(b for _, b in pairs), len(pairs))
    p_value = mcnemar_p(only_claimed, only_rerun)
    base = Judgement(
        test="mcnemar",
        within=p_value >= tolerance.level,
        level=tolerance.level,
        p_value=p_value,
        claimed=claimed,
        rerun=rerun,
        only_claimed=only_claimed,
        only_rerun=only_rerun,
        pairs=len(pairs),
    )
    return _stated(base, tolerance)


def judge_counts(claimed: tuple[int, int], rerun: tuple[int, int], tolerance: Tolerance) -> Judgement:
    """Counts only: Fisher's exact test of the two proportions, or the stated tolerance."""
    p_value = fisher_exact_p(claimed[0], claimed[1], rerun[0], rerun[1])
    base = Judgement(
        test="fisher",
        within=p_value >= tolerance.level,
        level=tolerance.level,
        p_value=p_value,
        claimed=claimed,
        rerun=rerun,
    )
    return _stated(base, tolerance)


def _stated(judgement: Judgement, tolerance: Tolerance) -> Judgement:
    """A stated pass-count tolerance decides in place of the test (whose figures stay)."""
    if tolerance.passed_within is None:
        return judgement
    within = abs(judgement.claimed[0] - judgement.rerun[0]) <= tolerance.passed_within
    return judgement.model_copy(update={"test": "stated", "within": within, "passed_within": tolerance.passed_within})


def judge_exact(pairs: list[tuple[bool, bool]] | None, claimed: Counted, rerun: Counted, rest_same: bool) -> Judgement:
    """The same exact setup promises identity: within only when every paired outcome (or, counts
    only, the count) is the same and `rest_same` (transcripts, categories) holds."""
    only_claimed = sum(a and not b for a, b in pairs) if pairs is not None else None
    only_rerun = sum(b and not a for a, b in pairs) if pairs is not None else None
    same = (
        (only_claimed == 0 and only_rerun == 0)
        if pairs is not None
        else (claimed.passed, claimed.total) == (rerun.passed, rerun.total)
    )
    return Judgement(
        test="exact",
        within=same and rest_same,
        level=0.0,
        claimed=(claimed.passed, claimed.total),
        rerun=(rerun.passed, rerun.total),
        only_claimed=only_claimed,
        only_rerun=only_rerun,
        pairs=len(pairs) if pairs is not None else None,
    )
