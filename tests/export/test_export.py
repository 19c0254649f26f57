"""`repro export inspect`: every VALID cell of the published bundles as an inspect_ai eval log,
read back by inspect_ai with the bundle's own outcomes; the bundle untouched; bad input refused
in one line."""

from __future__ import annotations

import hashlib
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from harness.contracts import FAILURE_LAYER
from repro.__main__ import main
from repro.bundle.layout.reader import BundleReader
from repro.check.verdict import check_run
from repro.report.export import log_path
from tests.export.conftest import TOOLCALLBENCH
from tests.paper.test_published_bundles import unpack

pytest.importorskip("inspect_ai")
from inspect_ai.log import read_eval_log  # noqa: E402


def valid_cells(run: Path) -> list[str]:
    return [cell.cell_id for cell in check_run(run).cells if cell.verdict == "VALID"]


def test_every_valid_cell_reads_back_with_the_bundles_outcomes(smoke_run: Path, smoke_export: Path) -> None:
    bundle = BundleReader(smoke_run)
    run = bundle.run()
    cells = valid_cells(smoke_run)
    assert len(cells) == 10
    for cell_id in cells:
        log = read_eval_log(str(log_path(smoke_export, run.run_id, cell_id)))
        results = {r.id: r for r in bundle.results(cell_id)}
        record = bundle.cell(cell_id)
        assert (
            log.status == "success"
            and log.eval.task == record.cell.suite.id
            and log.eval.task_version == record.suite_sha256
        )
        assert (
            log.eval.model == f"llama.cpp/{record.cell.model.id}"
            and log.eval.model_args["gguf_sha256"] == record.cell.model.sha256
        )
        assert log.eval.revision is not None and log.eval.revision.commit == run.source.commit
        assert log.eval.model_generate_config.temperature == record.cell.decoding.temperature
        assert log.eval.metadata["repro"]["verdict"] == "VALID" and log.eval.metadata["repro"]["manifest_sha256"]
        samples = log.samples or []
        assert [s.id for s in samples] == list(results)
        passed = sum(s.scores["pass"].value == "C" for s in samples if s.scores)
        assert record.summary is not None and passed == record.summary.passed == sum(r.passed for r in results.values())
        assert log.results is not None and log.results.scores[0].metrics["passed"].value == passed
        for sample in samples:
            result = results[str(sample.id)]
            assert sample.scores and (sample.scores["pass"].value == "C") == result.passed
            assert sample.metadata["failure_type"] == result.failure_type
            assert sample.metadata["failure_layer"] == (
                FAILURE_LAYER[result.failure_type] if result.failure_type else None
            )
            if result.partial_score is not None:
                assert sample.scores["partial_credit"].value == result.partial_score
            roles = [m.role for m in sample.messages]
            assert roles[:2] == ["system", "user"] and "assistant" in roles
            assert str(sample.input) in sample.messages[1].text


def test_the_failing_step_and_rejected_replies_are_marked(smoke_run: Path, smoke_export: Path) -> None:
    bundle = BundleReader(smoke_run)
    native = next(c for c in valid_cells(smoke_run) if "__native_tools__workspace" in c)
    log = read_eval_log(str(log_path(smoke_export, bundle.run().run_id, native)))
    sample = next(s for s in log.samples or [] if s.id == "ask-001")
    replies = [m for m in sample.messages if m.role == "assistant"]
    assert replies and all(
        m.metadata and m.metadata["reject"] == "text_tool_call" and m.metadata["failing"] for m in replies
    )


def test_export_leaves_the_bundle_unchanged(smoke_run: Path, smoke_export: Path) -> None:
    def digests() -> dict[str, str]:
        return {
            str(p.relative_to(smoke_run)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(smoke_run.rglob("*"))
            if p.is_file()
        }

    before = digests()
    assert main(["export", "inspect", str(smoke_run), "--out", str(smoke_export / "again")]) == 0
    assert digests() == before
    assert main(["check", str(smoke_run)]) == 0


def test_invalid_and_excluded_cells_only_when_asked_and_marked(smoke_run: Path, tmp_path: Path) -> None:
    assert main(["export", "inspect", str(smoke_run), "--out", str(tmp_path), "--excluded"]) == 0
    run = BundleReader(smoke_run).run()
    excluded = sorted((tmp_path / run.run_id).glob("*.EXCLUDED.eval"))
    assert len(excluded) == len(run.excluded_cells) == 6
    log = read_eval_log(str(excluded[0]))
    assert log.status == "error" and log.error is not None and log.error.message.startswith("EXCLUDED: ")
    assert "EXCLUDED" in log.eval.tags and not log.samples and log.eval.model.startswith("llama.cpp/")


def test_an_external_suite_exports_its_own_messages(tmp_path: Path) -> None:
    run = unpack(TOOLCALLBENCH, tmp_path / "bundle")
    assert main(["suites", "fetch", "--from-bundle", str(run)]) == 0  # the wheel it references, from PyPI
    assert main(["export", "inspect", str(run), "--out", str(tmp_path / "logs")]) == 0
    (cell,) = valid_cells(run)
    log = read_eval_log(str(log_path(tmp_path / "logs", BundleReader(run).run().run_id, cell)))
    assert (
        log.eval.solver == "toolcallbench" and log.eval.metadata["repro"]["suite"]["version"] == "toolcallbench==1.0.1"
    )
    results = {r.id: r for r in BundleReader(run).results(cell)}
    assert sum(s.scores["pass"].value == "C" for s in log.samples or [] if s.scores) == sum(
        r.passed for r in results.values()
    )
    sample = next(s for s in log.samples or [] if s.id == "read-01")
    assert [m.role for m in sample.messages] == ["system", "user", "assistant"]  # ToolCallBench's own log
    assert sample.output.completion == sample.messages[-1].text


def test_output_inside_the_bundle_or_not_a_folder_is_refused(
    smoke_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a_file = tmp_path / "file"
    a_file.write_text("x")
    for out in (smoke_run / "logs", smoke_run.parent, a_file):
        assert main(["export", "inspect", str(smoke_run), "--out", str(out)]) == 2
        error = capsys.readouterr().err
        assert error.count("\n") == 1, error
    assert not (smoke_run / "logs").exists()


def test_a_missing_extra_is_one_line(
    smoke_run: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "inspect_ai", None)  # import inspect_ai now fails as if not installed
    monkeypatch.delitem(sys.modules, "repro.report.inspect_log", raising=False)
    assert main(["export", "inspect", str(smoke_run), "--out", str(tmp_path)]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "pip install 'inspect-ai==" in error
    assert not list(tmp_path.iterdir())


def test_only_the_export_command_imports_inspect_ai() -> None:
    code = (
        "import sys, repro.cli, repro.report.export, repro.report.html; "
        "assert 'inspect_ai' not in sys.modules, 'imported'"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_a_log_path_that_is_not_a_regular_file_is_refused(
    smoke_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = BundleReader(smoke_run).run()
    target = log_path(tmp_path, run.run_id, valid_cells(smoke_run)[0])
    target.parent.mkdir(parents=True)
    os.mkfifo(target)
    assert main(["export", "inspect", str(smoke_run), "--out", str(tmp_path)]) == 2
    assert "not a regular file, not a log file" in capsys.readouterr().err
    assert stat.S_ISFIFO(target.lstat().st_mode)
