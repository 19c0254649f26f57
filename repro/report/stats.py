"""Statistics of pass counts: intervals, spreads and paired tests, each written once."""

from __future__ import annotations

import math
from typing import Literal

from pydantic import BaseModel


class Interval(BaseModel):
    low: float
    high: float


def wilson(passed: int, total: int, z: float = 1.96) -> Interval:
    """Wilson score interval for a binomial proportion (95% by default)."""
    if total == 0:
        return Interval(low=0.0, high=0.0)
    p = passed / total
    denominator = 1 + z * z / total
    centre = (p + z * z / (2 * total)) / denominator
    half = z * math.sqrt(p * (1 - p) / total + z * z / (4 * total * total)) / denominator
    return Interval(low=max(0.0, centre - half), high=min(1.0, centre + half))


# ---------------------------------------------------------------- repeats

Verdict = Literal["better", "worse", "no clear difference"]
ALPHA = 0.05


class Spread(BaseModel):
    """Pass counts across repeats: their mean and sample standard deviation (None for one repeat)."""

    counts: list[int]
    mean: float
    sd: float | None


def spread(counts: list[int]) -> Spread:
    if not counts:
        return Spread(counts=[], mean=0.0, sd=None)
    mean = sum(counts) / len(counts)
    if len(counts) < 2:
        return Spread(counts=counts, mean=mean, sd=None)
    variance = sum((count - mean) ** 2 for count in counts) / (len(counts) - 1)
    return Spread(counts=counts, mean=mean, sd=math.sqrt(variance))


class Consistency(BaseModel):
    """Scenarios by their outcomes over the repeats; the flaky ones passed in some repeats only."""

    always: int
    sometimes: int
    never: int
    flaky: list[str]


def consistency(outcomes: dict[str, list[bool]]) -> Consistency:
    always = sorted(s for s, values in outcomes.items() if values and all(values))
    never = sorted(s for s, values in outcomes.items() if not any(values))
    flaky = sorted(set(outcomes) - set(always) - set(never))
    return Consistency(always=len(always), sometimes=len(flaky), never=len(never), flaky=flaky)


# ---------------------------------------------------------------- comparing two samples


class PairedTest(BaseModel):
    """Exact McNemar test: a two-sided binomial test (p = 1/2) on the discordant pairs."""

    pairs: int
    only_before: int  # passed before, failed after
    only_after: int  # failed before, passed after
    p_value: float
    verdict: Verdict


def mcnemar_p(only_before: int, only_after: int) -> float:
    """Two-sided exact p-value: twice the smaller binomial tail of the discordant pairs, at most 1."""
    discordant = only_before + only_after
    if discordant == 0:
        return 1.0
    smaller = min(only_before, only_after)
    tail = sum(math.comb(discordant, k) for k in range(smaller + 1)) / 2**discordant
    return min(1.0, 2 * tail)


def mcnemar(pairs: list[tuple[bool, bool]], alpha: float = ALPHA) -> PairedTest:
    """Pairs of (before, after) outcomes of the same trials; the verdict is about `after`."""
    only_before = sum(before and not after for before, after in pairs)
    only_after = sum(after and not before for before, after in pairs)
    p_value = mcnemar_p(only_before, only_after)
    return PairedTest(
        pairs=len(pairs),
        only_before=only_before,
        only_after=only_after,
        p_value=p_value,
        verdict=_direction(p_value < alpha, only_after - only_before),
    )


class UnpairedTest(BaseModel):
    """Newcombe's hybrid score interval (his method 10, from two Wilson intervals) for after - before."""

    difference: float
    interval: Interval
    verdict: Verdict


def newcombe(
    passed_before: int, total_before: int, passed_after: int, total_after: int, z: float = 1.96
) -> UnpairedTest:
    """The difference of two independent proportions; a verdict only when its interval excludes 0."""
    p1, p2 = _rate(passed_before, total_before), _rate(passed_after, total_after)
    w1, w2 = wilson(passed_before, total_before, z), wilson(passed_after, total_after, z)
    difference = p2 - p1
    low = difference - math.sqrt((p2 - w2.low) ** 2 + (w1.high - p1) ** 2)
    high = difference + math.sqrt((w2.high - p2) ** 2 + (p1 - w1.low) ** 2)
    clear = total_before > 0 and total_after > 0 and (low > 0 or high < 0)
    return UnpairedTest(
        difference=difference, interval=Interval(low=low, high=high), verdict=_direction(clear, difference)
    )


def _rate(passed: int, total: int) -> float:
    return passed / total if total else 0.0


def _direction(clear: bool, change: float) -> Verdict:
    if not clear or change == 0:
        return "no clear difference"
    return "better" if change > 0 else "worse"
