"""The inspect suite kind without an engine: what the matrix must say of an inspect suite, and how
a score becomes a pass."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import yaml
from pydantic import ValidationError

from repro.core.config import PROJECT_ROOT
from repro.spec.matrix import ExternalSuite, Suite
from repro.suites.external import inspect_task
from repro.suites.external.inspect_task import parts, passes, roles_asked

MATRIX = PROJECT_ROOT / "tests" / "external" / "inspect.yaml"


def inspect_suite() -> dict:
    return yaml.safe_load(MATRIX.read_text())["suites"][0]


def test_the_test_matrix_suite_validates() -> None:
    suite = Suite.model_validate(inspect_suite())
    assert suite.external is not None and suite.external.task == "inspect_evals/agent_threat_bench_memory_poison"


def test_an_inspect_suite_names_its_task() -> None:
    data = inspect_suite()["external"]
    del data["task"]
    with pytest.raises(ValidationError, match="name the task to run"):
        ExternalSuite.model_validate(data)


def test_another_harness_takes_no_task() -> None:
    data = {**inspect_suite()["external"], "harness": "toolcallbench"}
    with pytest.raises(ValidationError, match="task is for inspect suites only"):
        ExternalSuite.model_validate(data)


def test_a_task_name_is_package_slash_name() -> None:
    data = {**inspect_suite()["external"], "task": "../evil"}
    with pytest.raises(ValidationError):
        ExternalSuite.model_validate(data)


def test_a_suite_without_task_fields_dumps_as_before() -> None:
    """A ToolCallBench or Tholos pin dumps without the inspect fields, so its cell ids stay what they were."""
    data = {**inspect_suite()["external"], "harness": "toolcallbench"}
    del data["task"]
    dumped = ExternalSuite.model_validate(data).model_dump(mode="json")
    assert not {"task", "task_args", "roles"} & set(dumped)


@pytest.mark.parametrize(
    ("value", "passed", "split"),
    [
        ("C", True, [True]),
        ("I", False, [False]),
        (1.0, True, [True]),
        (0.5, False, [False]),
        ({"utility": "C", "security": "C"}, True, [True, True]),
        ({"utility": "I", "security": "C"}, False, [False, True]),
        ({}, False, []),
    ],
)
def test_a_score_passes_when_every_part_is_correct(value, passed: bool, split: list[bool]) -> None:
    assert passes(value) is passed
    assert parts(value) == split


def test_the_roles_a_task_asks_for_are_read_from_its_code(tmp_path) -> None:
    """Our own lines in the form tau2's user simulator is asked for (the wheel's code is read the same way)."""
    (tmp_path / "common").mkdir()
    (tmp_path / "common" / "agents.py").write_text(
        'user = get_model(role="user", config=GenerateConfig(temperature=0.0))\n'
        "grader = get_model( role = 'grader')\n"
        "other = get_model('openai/x')\n"
    )
    assert roles_asked(tmp_path) == {"user", "grader"}


def zipped(members: dict[str, bytes]) -> bytes:
    import io
    import zipfile

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def test_a_log_too_large_once_unpacked_is_refused_before_it_is_read(monkeypatch) -> None:
    from repro.core.errors import BadInput

    monkeypatch.setattr(inspect_task, "MAX_LOG_UNPACKED", 1000)
    with pytest.raises(BadInput, match="once unpacked"):
        inspect_task.refuse_oversized("raw.log.eval", zipped({"header.json": b"0" * 5000}))
    monkeypatch.setattr(inspect_task, "MAX_LOG_MEMBERS", 2)
    with pytest.raises(BadInput, match="3 members"):
        inspect_task.refuse_oversized("raw.log.eval", zipped({f"samples/{i}.json": b"{}" for i in range(3)}))
    with pytest.raises(BadInput, match="not an inspect log"):
        inspect_task.refuse_oversized("raw.log.eval", b"not a zip")
    inspect_task.refuse_oversized("raw.log.eval", zipped({"header.json": b"{}"}))


@pytest.mark.parametrize(
    ("task", "valid"),
    [
        ("bakery.py@bakery", True),
        ("my-evals_2.py@run_it", True),
        ("../bakery.py@bakery", False),
        ("evals/bakery.py@bakery", False),
        ("/abs/bakery.py@bakery", False),
        ("bakery.py", False),
        ("bakery@bakery", False),
    ],
)
def test_an_author_task_is_a_file_of_the_suite_folder_and_a_task_in_it(task: str, valid: bool) -> None:
    data = {**inspect_suite()["external"], "task": task}
    if valid:
        external = ExternalSuite.model_validate(data)
        assert external.task_file == task.split("@")[0]
        assert inspect_task.task_name(external) == task.split("@")[1]
        assert inspect_task.task_spec(external) == f"/scenarios/{task}"
    else:
        with pytest.raises(ValidationError):
            ExternalSuite.model_validate(data)


def test_a_package_task_is_no_file() -> None:
    external = ExternalSuite.model_validate(inspect_suite()["external"])
    assert external.task_file is None
    assert inspect_task.task_spec(external) == "inspect_evals/agent_threat_bench_memory_poison"


def span(span_id: str, kind: str, parent: str | None) -> SimpleNamespace:
    return SimpleNamespace(event="span_begin", id=span_id, type=kind, parent_id=parent)


def log_of(*events: SimpleNamespace) -> SimpleNamespace:
    return SimpleNamespace(samples=[SimpleNamespace(events=list(events))])


def test_a_model_call_inside_the_scoring_span_is_model_graded() -> None:
    scoring = [span("s", "scorers", None), span("c", "scorer", "s")]
    solving = [span("g", "solvers", None), span("h", "solver", "g")]
    model = SimpleNamespace(event="model", span_id="c")
    assert inspect_task.graded_by_model(log_of(*scoring, *solving, model))  # type: ignore[arg-type]
    solved = SimpleNamespace(event="model", span_id="h")
    assert not inspect_task.graded_by_model(log_of(*scoring, *solving, solved))  # type: ignore[arg-type]


def test_a_span_loop_ends_the_walk() -> None:
    looped = {"a": ("solver", "b"), "b": ("solver", "a")}
    assert not inspect_task.in_scoring("a", looped)
