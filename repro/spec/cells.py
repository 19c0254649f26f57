"""A cell: one model x engine x protocol x suite x repeat on one profile, as the plan makes it and
every later stage reads it (its id hashes what it is, so an id cannot be kept while its content changes)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from repro.spec.matrix import Decoding, EngineSpec, ModelSpec, Protocol, Suite


class Cell(BaseModel):
    model_config = ConfigDict(frozen=True)

    id: str
    model: ModelSpec
    engine: EngineSpec
    protocol: Protocol
    suite: Suite
    repeat: int
    profile: str
    decoding: Decoding
    excluded: str | None = None

    @property
    def seed(self) -> int:
        """The seed this repeat's requests carry: the matrix's seed for repeat 1, then seed+1, ...
        (repeats are then distinct samples; the row still names the matrix's seed)."""
        return self.decoding.seed + self.repeat - 1

    @property
    def group(self) -> tuple[str, str]:
        """Cells of one (engine, model) group share one engine boot."""
        return (self.engine.id, self.model.id)
