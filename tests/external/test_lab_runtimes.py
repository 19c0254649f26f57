"""LAB's CLI runtimes as a matrix names them, without Docker: a matrix runtime plays a LAB suite (LAB
drives it with its own code: `pi` -> `pi-react`), a harness that drives no runtime of its own is
excluded with why, a LAB cell through a runtime gives the driver LAB's runtime, the model as the
runtime's command line names it, and the engine, context, limit and clock its adapter configures,
and `repro check` holds the runtime LAB ran to the cell's.
The sealed run through a real runtime is tests/external/test_lab_runtime_engine.py."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from repro.core.config import PROJECT_ROOT
from repro.plan.planner import make_plan
from repro.run.context import suite_image_key
from repro.spec.loading import load_matrix_and_profiles
from repro.suites.external.lab import Lab
from repro.suites.external.lab_check import runtime_problems

STANDIN = PROJECT_ROOT / "tests" / "external" / "lab-standin.yaml"
RUNTIMES = yaml.safe_load((PROJECT_ROOT / "matrix" / "runtimes-smoke.yaml").read_text())["runtimes"]
CLIENT = ["--base-url", "http://127.0.0.1:11434", "--model", "repro-q:1d9614638d18", "--api", "ollama"]


def plan_with_runtimes(tmp_path: Path, suite_change: dict | None = None):
    data = yaml.safe_load(STANDIN.read_text())
    data["runtimes"] = RUNTIMES
    data["suites"][0].update(suite_change or {})
    path = tmp_path / "matrix.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    loaded, profiles = load_matrix_and_profiles(path)
    return make_plan(loaded, "cpu", profiles.get("cpu"))


def test_each_runtime_plays_lab_through_labs_own_cli_runtime(tmp_path: Path) -> None:
    plan = plan_with_runtimes(tmp_path)
    assert not plan.excluded and len(plan.cells) == 4  # raw-ollama-react, then openclaw, pi and hermes
    keys = {suite_image_key(c) for c in plan.cells}
    assert keys == {"lab-smoke"} | {f"lab-smoke via {r['id']}" for r in RUNTIMES if r["kind"] != "raw"}
    by_kind = {c.runtime.kind if c.runtime else "raw": c for c in plan.cells}
    assert by_kind["pi"].driven_runtime == by_kind["pi"].runtime and by_kind["raw"].driven_runtime is None


def test_the_driver_gets_labs_runtime_and_what_the_runtime_is_configured_with(tmp_path: Path) -> None:
    by_kind = {c.runtime.kind if c.runtime else "raw": c for c in plan_with_runtimes(tmp_path).cells}
    raw = dict(pairs(Lab().task_argv(by_kind["raw"], CLIENT, [], None)))  # type: ignore[arg-type]
    assert raw["--runtime"] == "raw-ollama-react" and raw["--model"] == "repro-q:1d9614638d18"
    assert "--runtime-kind" not in raw
    openclaw = dict(pairs(Lab().task_argv(by_kind["openclaw"], CLIENT, [], None)))  # type: ignore[arg-type]
    assert openclaw["--runtime"] == "openclaw-react"
    assert openclaw["--model"] == "repro/repro-q:1d9614638d18"  # OpenClaw's --model is <provider/model>
    assert openclaw["--engine-model"] == "repro-q:1d9614638d18" and openclaw["--runtime-kind"] == "openclaw"
    assert (openclaw["--context"], openclaw["--max-tokens"]) == ("8192", "384")
    assert openclaw["--clock"] == by_kind["openclaw"].runtime.clock
    pi = dict(pairs(Lab().task_argv(by_kind["pi"], CLIENT, [], None)))  # type: ignore[arg-type]
    assert (pi["--runtime"], pi["--model"]) == ("pi-react", "repro-q:1d9614638d18")


def test_a_harness_that_drives_no_runtime_excludes_the_cell(tmp_path: Path) -> None:
    data = yaml.safe_load((PROJECT_ROOT / "matrix" / "toolcallbench-ollama.yaml").read_text())
    data["runtimes"] = [r for r in RUNTIMES if r["kind"] in ("raw", "pi")]
    path = tmp_path / "matrix.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    loaded, profiles = load_matrix_and_profiles(path)
    plan = make_plan(loaded, "cpu", profiles.get("cpu"))
    [excluded] = [c for c in plan.excluded if c.runtime is not None]
    assert excluded.excluded_kind == "configuration"
    assert (
        excluded.excluded
        == "runtime pi-0.80.3 plays our harness's scenarios; toolcallbench drives no pi runtime of its own"
    )


def pairs(argv: list[str]) -> list[tuple[str, str]]:
    return [(argv[i], argv[i + 1]) for i in range(len(argv) - 1) if argv[i].startswith("--")]


def lab_files(runtime: str, configured: dict | None) -> dict[str, bytes]:
    task = {"task_id": "t", "category": "c", "runtime": runtime, "model": "m", "score": 0.0}
    task |= {"failure_reason": "NO_TOOL_ATTEMPT", "final_answer": ""}
    result = {"runtime": runtime, "model": "m", "benchmark": "benchmarks/smoke.json", "results": [task]}
    driver = {"benchmark": "benchmarks/smoke.json", "runtime": configured}
    return {"result.json": json.dumps(result).encode(), "driver.json": json.dumps(driver).encode()}


def test_the_runtime_lab_ran_is_held_to_the_cells() -> None:
    clock = "2026-01-01 12:00:00"
    pi = {"kind": "pi", "env": {"FAKETIME": f"@{clock}"}, "program": ["/node"]}
    assert runtime_problems(lab_files("pi-react", pi), "pi-react", "pi", clock) == []
    assert runtime_problems(lab_files("raw-ollama-react", None), "raw-ollama-react", None, None) == []
    [ran] = runtime_problems(lab_files("raw-ollama-react", pi), "pi-react", "pi", clock)
    assert ran == "LAB ran raw-ollama-react, the cell runs pi-react"
    [unnamed] = runtime_problems(lab_files("pi-react", None), "pi-react", "pi", clock)
    assert unnamed == f"the driver's record does not name the cell's runtime pi under its clock {clock}"
    assert runtime_problems(lab_files("pi-react", pi), "pi-react", "pi", "2026-06-01 00:00:00")  # another clock
    [configured] = runtime_problems(lab_files("raw-ollama-react", pi), "raw-ollama-react", None, None)
    assert configured == "the driver configured a runtime (driver.json) for LAB's own loop"
    assert runtime_problems({}, "pi-react", "pi", clock) == [
        "no readable driver.json or result file to say which runtime LAB ran"
    ]
