"""The capability preflight end to end: SmolLM2's own chat template cannot carry tools, so a
real run excludes its native_tools cell (configuration) and never scores it, while the engine's
own `/props` agrees; its json_schema cell runs under the GGUF's template and checks VALID."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from repro.bundle.layout.loading import load_cell
from repro.store.chat_template import served_sha256
from tests.e2e.conftest import E2E_MATRIX, make_snapshot, run_repro, smoke_parts

pytestmark = [pytest.mark.docker, pytest.mark.engine]

ONE_SCENARIO = """\
  - id: one
    path: scenarios
    ids: [nothing_to_do-001]"""


@pytest.fixture(scope="module")
def preflight_run(tmp_path_factory, canary_home, harness_image_ref, llama_image_ref) -> tuple[Path, Path]:
    models, engines = smoke_parts()
    text = E2E_MATRIX.format(model=models, engine=engines, suites=ONE_SCENARIO).replace(
        "protocols: [json_schema]", "protocols: [json_schema, native_tools]"
    )
    project = make_snapshot(tmp_path_factory.mktemp("preflight") / "project", {"matrix/preflight.yaml": text})
    plan = run_repro(project, canary_home, "matrix", "plan", "matrix/preflight.yaml", "--profile", "cpu")
    assert plan.returncode == 0 and "does not render the tool list" in plan.stdout + plan.stderr, (
        plan.stdout + plan.stderr
    )
    proc = run_repro(
        project, canary_home, "matrix", "run", "matrix/preflight.yaml", "--profile", "cpu", "--out", "results"
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return project, project / "results" / (project / "results" / "LATEST").read_text().strip()


def test_a_template_without_tools_excludes_native_tools_before_anything_is_scored(preflight_run, canary_home) -> None:
    project, run_dir = preflight_run
    record = json.loads((run_dir / "run.json").read_text())
    facts = record["chat_templates"]["smollm2-135m-instruct-q4_1"]
    assert (facts["source"], facts["renders_tools"], facts["end_of_turn"]) == ("gguf", False, "<|im_end|>")
    assert "<|im_end|>" in facts["eog_tokens"]
    (native,) = [cell for cell in record["excluded_cells"] if "__native_tools__" in cell]
    assert record["excluded_cells"][native].startswith(
        "configuration: the chat template (gguf) does not render the tool list"
    )
    assert not (run_dir / "cells" / native).exists()  # never run, never scored
    (ran,) = record["planned_cells"]
    cell = load_cell(run_dir / "cells" / ran)
    reported = cell.engine_settings.reported
    assert reported["chat_template_sha256"] == served_sha256(facts["text"])  # the engine used the GGUF's own template
    assert reported["chat_template_caps"]["supports_tools"] is False  # and says itself that it renders no tools
    check = run_repro(project, canary_home, "check", str(run_dir))
    assert check.returncode == 0, check.stdout + check.stderr
    assert "EXCLUDED" in check.stdout and "does not render the tool list" in check.stdout
