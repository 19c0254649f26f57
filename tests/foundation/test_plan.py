"""Plans: deterministic ids and order, exclusions with reasons, the exported JSON Schema."""

from __future__ import annotations

import json
import re
from pathlib import Path

import jsonschema
import pytest
import yaml

from repro.__main__ import main
from repro.plan.planner import make_plan
from repro.spec.loading import load_matrix
from repro.spec.matrix import matrix_json_schema
from repro.spec.profiles import load_profiles

ROOT = Path(__file__).resolve().parents[2]
SMOKE = ROOT / "matrix" / "smoke.yaml"


def plan_json(capsys, *args: str) -> dict:
    assert main(["matrix", "plan", *args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


# The smoke matrix under one protocol and its first suite: one cell per model (and repeat), for
# counting exclusions.
ONE_PROTOCOL = re.sub(
    r"  - id: ladder-smoke\n(    .*\n)+|exclude:\n(  .*\n)+",
    "",
    SMOKE.read_text().replace("protocols: [json_schema, native_tools, react, json_prompt]", "protocols: [json_schema]"),
)


@pytest.fixture(autouse=True)
def empty_model_store(tmp_path, monkeypatch):
    """No model in the store: the plan is the matrix's alone (the chat-template preflight of
    stored models is tested in tests/models/test_chat_template.py and tests/e2e/test_templates.py)."""
    monkeypatch.setenv("REPRO_CACHE", str(tmp_path / "empty-cache"))


def test_plan_is_deterministic(capsys):
    first = plan_json(capsys, str(SMOKE), "--profile", "cpu")
    second = plan_json(capsys, str(SMOKE), "--profile", "cpu")
    assert first == second
    assert [c["model"] for c in first["cells"]] == ["smollm2-135m-instruct-q4_1"] * 4 + [
        "qwen2.5-coder-0.5b-instruct-q4_k_m"
    ] * 8
    assert all(c["id"].startswith(f"{c['model']}__{c['engine']}__{c['protocol']}__") for c in first["cells"])


def test_cell_ids_depend_on_profile_and_settings(tmp_path, capsys):
    cpu = plan_json(capsys, str(SMOKE), "--profile", "cpu")["cells"]
    t4 = plan_json(capsys, str(SMOKE), "--profile", "gpu-t4")["cells"]
    assert {c["id"] for c in cpu}.isdisjoint({c["id"] for c in t4})
    changed = tmp_path / "m.yaml"
    changed.write_text(SMOKE.read_text().replace("seed: 42", "seed: 7"))
    other = plan_json(capsys, str(changed), "--profile", "cpu")["cells"]
    assert {c["id"] for c in cpu}.isdisjoint({c["id"] for c in other})


def test_excluded_cells_listed_with_reason(tmp_path, capsys):
    text = ONE_PROTOCOL
    text = text.replace("      cuda_dockerfile: images/llama-cpp/Dockerfile.cuda\n", "")
    text = text.replace("file_size: 491400064", "file_size: 3491400064")
    text = text.replace("repeats: 1", "repeats: 2")
    path = tmp_path / "m.yaml"
    path.write_text(text)
    cpu = plan_json(capsys, str(path), "--profile", "cpu")
    assert len(cpu["cells"]) == 2 and len(cpu["excluded"]) == 2
    assert {c["reason"] for c in cpu["excluded"]} == {
        "model qwen2.5-coder-0.5b-instruct-q4_k_m (3.25 GB) exceeds the 2 GB that profile cpu takes"
    }
    assert {c["kind"] for c in cpu["excluded"]} == {"configuration"}  # the profile's limit, decided by repro
    t4 = plan_json(capsys, str(path), "--profile", "gpu-t4")
    assert t4["cells"] == []
    assert {c["reason"] for c in t4["excluded"]} == {"engine llamacpp-b11434 has no cuda image for profile gpu-t4"}
    assert {c["kind"] for c in t4["excluded"]} == {"configuration"}


def test_profile_not_allowed_by_matrix_excludes_everything(tmp_path, capsys):
    path = tmp_path / "m.yaml"
    path.write_text(ONE_PROTOCOL.replace("profiles: [cpu, gpu-t4, gpu-l4, gpu-a100-80g, gpu-h100]", "profiles: [cpu]"))
    t4 = plan_json(capsys, str(path), "--profile", "gpu-t4")
    assert t4["cells"] == [] and len(t4["excluded"]) == 2
    assert t4["excluded"][0]["reason"] == "the matrix does not run on profile gpu-t4 (it allows: cpu)"


def test_explicit_exclusion(tmp_path, capsys):
    path = tmp_path / "m.yaml"
    path.write_text(ONE_PROTOCOL + "exclude:\n  - model: qwen2.5-coder-0.5b-instruct-q4_k_m\n    reason: not today\n")
    plan = plan_json(capsys, str(path), "--profile", "cpu")
    assert [c["model"] for c in plan["cells"]] == ["smollm2-135m-instruct-q4_1"]
    assert plan["excluded"][0]["reason"] == "not today"


def test_schema_export_validates_every_matrix(capsys):
    assert main(["matrix", "schema"]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert schema == json.loads(json.dumps(matrix_json_schema()))
    for path in (ROOT / "matrix").glob("*.yaml"):
        if path.name == "profiles.yaml":
            continue
        jsonschema.validate(yaml.safe_load(path.read_text()), schema)


def test_validate_all_shipped_files(capsys):
    files = sorted(str(p) for p in (ROOT / "matrix").glob("*.yaml"))
    assert main(["matrix", "validate", *files]) == 0


def test_groups_share_one_engine_boot():
    profiles = load_profiles()
    path = ROOT / "matrix" / "smoke.yaml"
    plan = make_plan(load_matrix(path), "cpu", profiles.get("cpu"))
    assert [key for key, _ in plan.groups()] == [
        ("llamacpp-b11434", "smollm2-135m-instruct-q4_1"),
        ("llamacpp-b11434", "qwen2.5-coder-0.5b-instruct-q4_k_m"),
    ]


def test_profiles_describe_the_hardware():
    profiles = load_profiles().profiles
    assert set(profiles) >= {"cpu", "gpu-t4", "gpu-l4", "gpu-a100-80g", "gpu-h100"}
    t4 = profiles["gpu-t4"]
    assert (t4.memory_gb, t4.compute_capability, t4.engine_variant) == (16, "7.5", "cuda")
    assert t4.accelerator_matches("Tesla T4") and not t4.accelerator_matches("NVIDIA L4")
    assert profiles["gpu-a100-80g"].accelerator_matches("NVIDIA A100-SXM4-80GB")
    assert profiles["cpu"].accelerator_matches(None)


def test_every_matrix_protocol_is_planned(capsys):
    plan = plan_json(capsys, str(SMOKE), "--profile", "cpu")
    # Qwen under all four protocols, SmolLM2 under json_schema and native_tools (its react and
    # json_prompt cells are excluded by the matrix; native_tools only by the template preflight of
    # a stored model, and the store is empty here); two suites each.
    expected = ["json_schema", "native_tools", "react", "json_prompt"] * 2 + ["json_schema", "native_tools"] * 2
    assert sorted(c["protocol"] for c in plan["cells"]) == sorted(expected)
    assert not any("not implemented" in c["reason"] for c in plan["excluded"])


def test_cell_ids_are_stable_across_versions(capsys):
    """A cell id is part of every published bundle: a field added to the matrix format later (a
    suite's `source`, a model's `chat_template`) must not change the ids of matrices that do not
    use it. The id below is the one in paper/published/smoke-cpu-bundle.tar.gz."""
    cells = plan_json(capsys, str(SMOKE), "--profile", "cpu")["cells"]
    assert cells[0]["id"] == "smollm2-135m-instruct-q4_1__llamacpp-b11434__json_schema__workspace-smoke__r1-5cb56a53"
