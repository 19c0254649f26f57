"""Whether rendered results are the whole plan, and if not, how they are partial.

A bundle made with `--only` for some of the plan's cells, or one shard of a split shown alone,
checks VALID (rightly: what it holds is clean-room), but a table of it must not read as the whole
matrix's. `run_coverage` is the one place that decides it: the tables, results.json and
report.html say its `label`, and `repro check` and `repro verify` can say the same words.

A merge of a whole split (`repro results merge`) holds every shard's cells, so nothing of the
plan is absent and it is not partial; two shards of three rendered together are.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel, computed_field

from repro.bundle.layout.reader import BundleReader
from repro.check.verdict import AbsentCell, RunVerdict
from repro.core.errors import BadInput


class Coverage(BaseModel):
    """How much of the plan the rendered runs hold: `present` of `planned` runnable cells (the
    plan's own exclusions are neither), the `--only` selection and the shards (`i/n`) of the runs
    that left cells out, and the cells left out with the option that left each out."""

    present: int = 0
    planned: int = 0
    only: list[str] = []
    shards: list[str] = []
    absent: list[AbsentCell] = []

    @computed_field  # type: ignore[prop-decorator]
    @property
    def partial(self) -> bool:
        return bool(self.absent)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def label(self) -> str:
        """E.g. "partial: 15 of 16 planned cells (--only, 15 cells)" or "partial: 5 of 10 planned
        cells (shard 1 of 2)"; "" when the runs hold the whole plan."""
        if not self.partial:
            return ""
        how = []
        if self.only:
            how.append(f"--only, {len(self.only)} cell{'s' if len(self.only) != 1 else ''}")
        how += [f"shard {shard.replace('/', ' of ')}" for shard in self.shards]
        return f"partial: {self.present} of {self.planned} planned cells" + (f" ({'; '.join(how)})" if how else "")


def run_coverage(verdicts: Sequence[RunVerdict]) -> Coverage:
    """The coverage of the runs `repro check` judged (`repro.check.verdict.check_run`): the cells the runs
    selected (run.json's planned cells, read through BundleReader), the plan's cells none of them
    holds (the shards of a merge hold each other's), and how the runs that left cells out chose
    theirs (`--only`, `--shard`). A run whose record cannot be read counts the cells its verdict
    lists (it is INVALID anyway)."""
    present: dict[str, None] = {}
    records = []
    for verdict in verdicts:
        try:
            record = BundleReader(Path(verdict.run_dir)).run()
        except BadInput:
            present.update(dict.fromkeys(cell.cell_id for cell in verdict.cells if cell.verdict != "EXCLUDED"))
            continue
        present.update(dict.fromkeys(record.planned_cells))
        records.append((verdict, record))
    absent = {a.cell_id: a for verdict in verdicts for a in verdict.absent if a.cell_id not in present}
    leaving_out = [record for verdict, record in records if any(a.cell_id in absent for a in verdict.absent)]
    only = list(dict.fromkeys(cell for record in leaving_out for cell in record.only))
    shards = sorted({record.shard for record in leaving_out if record.shard}, key=_shard_order)
    return Coverage(
        present=len(present), planned=len(present) + len(absent), only=only, shards=shards, absent=list(absent.values())
    )


def _shard_order(shard: str) -> tuple[int, str]:
    index = shard.split("/", 1)[0]
    return (int(index) if index.isdigit() else 0, shard)
