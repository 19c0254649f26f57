"""Every exclusion says whose it is: the matrix's (author), repro's (configuration, speed) or the
engine's (fault), in the plan, the check and the tables; a recorded kind the evidence does not bear
out is INVALID; a bundle written before kinds were recorded reads by its evidence."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

import pytest

from repro.__main__ import main
from repro.bundle.layout.writer import Bundle
from repro.bundle.records import CellRecord
from repro.bundle.redact import Redactor
from repro.check.verdict import check_run
from repro.spec.cells import exclusion_label, kind_from_text
from repro.spec.findings import GateResult

ROOT = Path(__file__).resolve().parents[2]
PUBLISHED = ROOT / "paper" / "published" / "smoke-cpu-bundle.tar.gz"
AUTHOR = "excluded by the matrix (author): smoke time budget: SmolLM2 runs under json_schema only here"
CONFIGURATION = (
    "excluded by repro (configuration): configuration: the chat template (gguf) does not render the tool list"
)


@pytest.fixture
def published(tmp_path: Path) -> Path:
    """The published smoke bundle as a bundle written before kinds were recorded: its run.json
    without them, the manifest rewritten to match."""
    with tarfile.open(PUBLISHED) as tar:
        tar.extractall(tmp_path / "bundle", filter="data")
    (run_dir,) = [p for p in (tmp_path / "bundle").iterdir() if p.is_dir()]
    record = json.loads((run_dir / "run.json").read_text())
    record.pop("excluded_kinds", None)
    (run_dir / "run.json").write_text(json.dumps(record, indent=2))
    Bundle(run_dir, Redactor()).write_manifest()
    return run_dir


def test_an_older_bundle_reads_its_kinds_from_the_recomputed_plan(
    published: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kinds = {c.cell_id: c.kind for c in check_run(published).cells if c.verdict == "EXCLUDED"}
    assert sorted(kinds.values()) == ["author"] * 4 + ["configuration"] * 2
    assert all(("__native_tools__" in cell) == (kind == "configuration") for cell, kind in kinds.items())
    assert main(["check", str(published)]) == 0
    checked = capsys.readouterr().out
    assert checked.count(f"- {AUTHOR}") == 4 and checked.count(f"- {CONFIGURATION}") == 2
    assert main(["paper", "render", str(published), "--out", str(tmp_path / "tables")]) == 0
    markdown = (tmp_path / "tables" / "results.md").read_text()
    assert markdown.count(f"(EXCLUDED): {AUTHOR}") == 4 and markdown.count(f"(EXCLUDED): {CONFIGURATION}") == 2
    assert "excluded by the matrix (author)" in (tmp_path / "tables" / "results.tex").read_text()
    assert (tmp_path / "tables" / "report.html").read_text().count(
        "(EXCLUDED): excluded by the matrix (author): smoke time budget"
    ) == 4


def test_a_relabelled_exclusion_is_invalid(published: Path) -> None:
    """The run says repro excluded a cell the matrix's author excluded: the recomputed plan says otherwise."""
    record = json.loads((published / "run.json").read_text())
    author = next(cell for cell in record["excluded_cells"] if "__react__" in cell)
    record["excluded_kinds"] = {author: "configuration"}
    (published / "run.json").write_text(json.dumps(record, indent=2))
    Bundle(published, Redactor()).write_manifest()
    verdicts = {c.cell_id: c for c in check_run(published).cells}
    assert verdicts[author].verdict == "INVALID" and [p.rule for p in verdicts[author].problems] == ["exclusion-kind"]
    assert verdicts[author].reasons == [
        "recorded as excluded by repro (configuration), but the recomputed plan says excluded by the matrix (author)"
    ]
    assert all(v.verdict in ("VALID", "EXCLUDED") for cell, v in verdicts.items() if cell != author)


def test_a_cells_kind_follows_its_record() -> None:
    """What the runner records and what the check expects of an excluded or failed cell."""

    def kind(status: str, gate: GateResult | None) -> str | None:
        return CellRecord.model_construct(status=status, gate=gate).evidenced_kind

    slow, fast = GateResult(passed=False, reason="too slow"), GateResult(passed=True, reason="ok")
    assert (
        kind("excluded", slow) == "speed"
        and kind("excluded", fast) == "configuration"
        and kind("error", fast) == "fault"
    )
    assert kind("done", fast) is None
    assert kind_from_text("latency gate: too slow") == "speed" and kind_from_text("engine: it died") == "fault"
    assert kind_from_text("smoke time budget: ...") is None and exclusion_label(None) == "excluded (kind not recorded)"
