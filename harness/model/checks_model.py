"""The check (``expect``) models. Evaluation lives in harness/scoring/checks.py."""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

MAX_PATTERN_CHARS = 300


class _Check(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class FinishedCheck(_Check):
    type: Literal["finished"]


class StatusCheck(_Check):
    type: Literal["status"]
    is_: Literal["done", "waiting", "failed"] = Field(alias="is")


class RowCheck(_Check):
    type: Literal["row"]
    table: str
    where: dict[str, Any]
    has: dict[str, Any] | None = None


class RowsCheck(_Check):
    type: Literal["rows"]
    table: str
    count: int | None = Field(default=None, ge=0)
    min: int | None = Field(default=None, ge=0)
    max: int | None = Field(default=None, ge=0)

    @model_validator(mode="after")
    def _count_or_range(self) -> RowsCheck:
        if self.count is None and self.min is None and self.max is None:
            raise ValueError("give count, or min and/or max")
        if self.count is not None and (self.min is not None or self.max is not None):
            raise ValueError("give count or a min/max range, not both")
        return self


class TableExistsCheck(_Check):
    type: Literal["table_exists"]
    table: str
    columns: list[str] | None = None


class NoteCheck(_Check):
    type: Literal["note"]
    title: str
    contains: list[str] = []
    not_contains: list[str] = []


class UnchangedCheck(_Check):
    type: Literal["unchanged"]
    table: str | None = None
    note: str | None = None

    @model_validator(mode="after")
    def _one_target(self) -> UnchangedCheck:
        if (self.table is None) == (self.note is None):
            raise ValueError("give exactly one of table or note")
        return self


class TaskCheck(_Check):
    type: Literal["task"]
    to: str = "you"
    title_contains: str | None = None
    mentions: list[str] = []


class NoTaskCheck(_Check):
    type: Literal["no_task"]
    to: str | None = None


class CalledCheck(_Check):
    type: Literal["called"]
    tool: str
    args: dict[str, Any] | None = None


class NotCalledCheck(_Check):
    type: Literal["not_called"]
    tool: str
    args: dict[str, Any] | None = None


class AskedCheck(_Check):
    type: Literal["asked"]


class ApprovalCheck(_Check):
    type: Literal["approval"]
    tool: str


class MemoryCheck(_Check):
    type: Literal["memory"]
    agent: str
    contains: str


class FollowUpCheck(_Check):
    type: Literal["follow_up"]
    min_minutes: int = Field(ge=0)
    max_minutes: int = Field(ge=0)

    @model_validator(mode="after")
    def _ordered(self) -> FollowUpCheck:
        if self.min_minutes > self.max_minutes:
            raise ValueError("min_minutes is above max_minutes")
        return self


class FinishContainsCheck(_Check):
    type: Literal["finish_contains"]
    all: list[str] = []
    any: list[str] = []

    @model_validator(mode="after")
    def _some_words(self) -> FinishContainsCheck:
        if not self.all and not self.any:
            raise ValueError("give all and/or any")
        return self


class MaxStepsCheck(_Check):
    type: Literal["max_steps"]
    n: int = Field(ge=1)


class AnswerContainsAllCheck(_Check):
    """The final answer (the finish summary) names every value and none of ``absent``."""

    type: Literal["answer_contains_all"]
    values: list[str] = Field(min_length=1)
    absent: list[str] = []


class AnswerMatchesCheck(_Check):
    """The final answer matches a regular expression (case-insensitive)."""

    type: Literal["answer_matches"]
    pattern: str = Field(min_length=1, max_length=MAX_PATTERN_CHARS)

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, pattern: str) -> str:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise ValueError(f"not a regular expression: {exc}") from None
        return pattern


class ToolResultContainsCheck(_Check):
    """Some successful call of ``tool`` returned a result holding every value."""

    type: Literal["tool_result_contains"]
    tool: str
    values: list[str] = Field(min_length=1)


AnyCheck = (
    FinishedCheck
    | StatusCheck
    | RowCheck
    | RowsCheck
    | TableExistsCheck
    | NoteCheck
    | UnchangedCheck
    | TaskCheck
    | NoTaskCheck
    | CalledCheck
    | NotCalledCheck
    | AskedCheck
    | ApprovalCheck
    | MemoryCheck
    | FollowUpCheck
    | FinishContainsCheck
    | MaxStepsCheck
    | AnswerContainsAllCheck
    | AnswerMatchesCheck
    | ToolResultContainsCheck
)
CHECK_MODELS: tuple[type[_Check], ...] = get_args(AnyCheck)
CHECK_TYPES = frozenset(get_args(m.model_fields["type"].annotation)[0] for m in CHECK_MODELS)

Check = Annotated[AnyCheck, Field(discriminator="type")]

# Checks whose failure means the agent did something it must not do (a forbidden_tool failure).
SAFETY_CHECK_TYPES = frozenset({"not_called", "unchanged"})
