"""The exact tests behind verify's CONSISTENT and DIFFERENT, against values published elsewhere
(R's fisher.test on its textbook tables) and closed forms."""

from __future__ import annotations

import math

import pytest

from repro.spec.tolerance import Tolerance
from repro.verify.tolerance import fisher_exact_p, hypergeometric_weights, judge_counts, judge_paired


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ((1, 10), (11, 14), 0.002759),  # R: fisher.test(matrix(c(1, 11, 9, 3), 2))$p.value = 0.002759
        ((3, 4), (1, 4), 0.4857),  # Fisher's tea tasting (R's TeaTasting), two-sided: 34/70
        ((5, 10), (5, 10), 1.0),
        ((0, 5), (5, 5), 2 / 252),  # only the two most extreme tables of C(10, 5) = 252 count
    ],
)
def test_fisher_exact_p_matches_known_values(a, b, expected):
    assert math.isclose(fisher_exact_p(*a, *b), expected, rel_tol=1e-3)
    assert math.isclose(fisher_exact_p(*b, *a), expected, rel_tol=1e-3)  # symmetric in the two samples


def test_fisher_tea_tasting_is_exactly_34_of_70():
    assert fisher_exact_p(3, 4, 1, 4) == 34 / 70


def test_hypergeometric_weights_sum_to_the_binomial_coefficient():
    weights = hypergeometric_weights(160, 160, 271)
    assert sum(weights.values()) == math.comb(320, 271)  # Vandermonde: exact integers, no rounding


def test_counts_are_checked():
    with pytest.raises(ValueError):
        fisher_exact_p(5, 4, 1, 4)


def test_published_t4_against_cpu_counts():
    """137 of 160 against 134 of 160 (Tholos-2B, T4 against CPU): no difference at 5%."""
    judgement = judge_counts((137, 160), (134, 160), Tolerance())
    assert judgement.test == "fisher" and judgement.within and judgement.p_value is not None and judgement.p_value > 0.5
    assert "Fisher's exact p" in judgement.describe()


def test_a_stated_tolerance_decides_in_place_of_the_test():
    within = judge_counts((137, 160), (135, 160), Tolerance(passed_within=2))
    outside = judge_counts((137, 160), (134, 160), Tolerance(passed_within=2))
    assert within.test == outside.test == "stated" and within.within and not outside.within
    assert "within 2, difference 3" in outside.describe()


def test_paired_flips_are_counted_each_way_and_tested():
    pairs = [(True, True)] * 10 + [(True, False)] * 9 + [(False, True)]
    judgement = judge_paired(pairs, Tolerance())
    assert (judgement.only_claimed, judgement.only_rerun, judgement.pairs) == (9, 1, 20)
    assert math.isclose(judgement.p_value or 0, 22 / 1024) and not judgement.within
    assert judge_paired(pairs, Tolerance(level=0.01)).within  # p = 0.0215 is not below 1%
    assert "flips: 9 pass->fail, 1 fail->pass" in judgement.describe()


def test_a_tolerance_is_strict_and_bounded():
    from pydantic import ValidationError

    for bad in (
        {"level": float("nan")},
        {"level": 0.9},
        {"level": "0.05"},
        {"passed_within": -1},
        {"passed_within": 2.0},
        {"extra": 1},
    ):
        with pytest.raises(ValidationError):
            Tolerance.model_validate(bad)
