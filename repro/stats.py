"""Statistics of pass counts: intervals, spreads and paired tests, each written once."""

from __future__ import annotations

import math

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
