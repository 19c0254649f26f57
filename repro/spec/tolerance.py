"""What a rerun may differ by and still be consistent with a claim: stated by a claim or a profile
(data only; repro.verify.tolerance holds the exact tests that apply it)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

DEFAULT_LEVEL = 0.05


class Tolerance(BaseModel):
    """What a claim or a profile promises a rerun may differ by. `level` is the significance
    level of the exact test (a p-value below it is a difference); `passed_within`, when given,
    replaces the test: the rerun's pass count must be within that many of the claim's."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)

    level: float = Field(
        default=DEFAULT_LEVEL, gt=0, le=0.5, description="significance level of the exact two-sided test (0.05: 5%)"
    )
    passed_within: int | None = Field(
        default=None,
        ge=0,
        le=1_000_000,
        description="the pass count may differ by at most this many (e.g. 2 for 'within 2 of 160'); replaces the test",
    )
    reason: str | None = Field(
        default=None,
        max_length=500,
        description="why this tolerance: the source's own words, or the engine's known nondeterminism",
    )

    def describe(self) -> str:
        if self.passed_within is not None:
            return f"pass count within {self.passed_within}"
        return f"exact two-sided test at level {self.level:g}"
