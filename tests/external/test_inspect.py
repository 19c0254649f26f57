"""The inspect suite kind without an engine: what the matrix must say of an inspect suite, and how
a score becomes a pass."""

from __future__ import annotations

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
