"""Statistics of repeats and comparisons, on constructed inputs with answers known in closed form."""

from __future__ import annotations

import math

import pytest

from repro.report.stats import consistency, mcnemar, mcnemar_p, newcombe, spread


def test_spread_is_mean_and_sample_standard_deviation():
    result = spread([5, 6, 7])
    assert result.mean == 6.0 and result.sd == 1.0
    assert spread([4, 4]).sd == 0.0
    assert spread([3]).sd is None and spread([3]).mean == 3.0
    assert math.isclose(spread([1, 2, 3, 4]).sd, math.sqrt(5 / 3))


def test_consistency_splits_always_sometimes_never():
    split = consistency({"a": [True, True], "b": [True, False], "c": [False, False], "d": [False, True]})
    assert (split.always, split.sometimes, split.never) == (1, 2, 1)
    assert split.flaky == ["b", "d"]
    single = consistency({"a": [True], "b": [False]})
    assert (single.always, single.sometimes, single.never, single.flaky) == (1, 0, 1, [])


@pytest.mark.parametrize(
    ("only_before", "only_after", "expected"),
    [
        (1, 9, 2 * (1 + 10) / 2**10),  # 22/1024
        (0, 5, 2 / 2**5),
        (0, 6, 2 / 2**6),
        (3, 3, 1.0),
        (0, 0, 1.0),
        (2, 8, 2 * (1 + 10 + 45) / 2**10),
    ],
)
def test_exact_mcnemar_p_values(only_before, only_after, expected):
    assert math.isclose(mcnemar_p(only_before, only_after), expected)
    assert math.isclose(mcnemar_p(only_after, only_before), expected)


def test_mcnemar_verdicts_at_five_percent():
    concordant = [(True, True)] * 20 + [(False, False)] * 10
    better = mcnemar(concordant + [(False, True)] * 6)
    assert better.only_after == 6 and better.only_before == 0 and better.verdict == "better"
    assert math.isclose(better.p_value, 1 / 32)
    worse = mcnemar(concordant + [(True, False)] * 9 + [(False, True)])
    assert worse.verdict == "worse" and math.isclose(worse.p_value, 22 / 1024)
    unclear = mcnemar(concordant + [(False, True)] * 5)  # p = 1/16 > 0.05
    assert unclear.verdict == "no clear difference"
    assert mcnemar(concordant).verdict == "no clear difference"


def test_newcombe_interval_matches_the_published_example():
    # Newcombe (1998), Statistics in Medicine 17:873, method 10: 56/70 - 48/80 = 0.2, 95% CI 0.0524 to 0.3339.
    result = newcombe(48, 80, 56, 70)
    assert math.isclose(result.difference, 0.2)
    assert round(result.interval.low, 4) == 0.0524 and round(result.interval.high, 4) == 0.3339
    assert result.verdict == "better"
    assert newcombe(56, 70, 48, 80).verdict == "worse"


def test_newcombe_without_clear_difference_and_empty_samples():
    assert newcombe(10, 20, 11, 20).verdict == "no clear difference"
    assert newcombe(0, 0, 5, 10).verdict == "no clear difference"
    same = newcombe(7, 10, 7, 10)
    assert same.difference == 0 and same.interval.low < 0 < same.interval.high
