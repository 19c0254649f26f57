"""Claims files: the shipped ones validate, the schema describes them, and a claims file from
anyone is one `FILE:LINE field: reason` line per problem and exit 2, never a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
import yaml

from repro.__main__ import main
from repro.core.errors import BadInput
from repro.spec.claims import claims_json_schema, load_claims

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = sorted((ROOT / "paper" / "claims").glob("*.yaml"))
MINIMAL = """\
format: 1
source: {citation: a README, url: https://example.org/bench, date: 2026-12-02}
models:
  m: {name: Model M, quant: Q4_K_M, file_size_gb: 1.5}
setups:
  t4:
    engine: {kind: llama.cpp, build: fdf5818}
    hardware: {description: one T4, accelerator: Tesla T4}
    decoding: {temperature: 0, max_tokens: 512, context: 16384}
    harness: {name: tholos-bench}
suites:
  s: {id: s, scenarios: 160}
claims:
  - id: m.t4
    model: m
    setup: t4
    protocol: json_schema
    suite: s
    result: {passed: 137, total: 160, by_category: {injection: {passed: 10, total: 12}}}
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "claims.yaml"
    path.write_text(text)
    return path


def problems(tmp_path: Path, text: str) -> list[str]:
    with pytest.raises(BadInput) as caught:
        load_claims(write(tmp_path, text))
    return caught.value.lines


def test_the_shipped_claims_files_validate():
    assert {p.name for p in SHIPPED} >= {"tholos-bench.yaml", "smoke-cpu.yaml", "toolcallbench-smoke-cpu.yaml"}
    for path in SHIPPED:
        loaded = load_claims(path)
        assert loaded.claims.claims, path


def test_the_tholos_claims_transcribe_both_tables():
    claims = load_claims(ROOT / "paper" / "claims" / "tholos-bench.yaml").claims
    by_id = {c.id: c for c in claims.claims}
    t4 = {
        c.model: (c.result.passed, c.result.by_category["injection"].passed)
        for c in claims.claims
        if c.setup == "kaggle-t4"
    }
    assert t4 == {
        "qwen3.5-2b": (97, 4),
        "minicpm5-2b": (112, 8),
        "tholos-2b": (137, 10),
        "llama-3.2-3b-instruct": (37, 1),
        "granite-4.2-3b": (129, 7),
        "qwen3.5-4b": (141, 6),
    }
    paths = {(c.model, c.setup): c.result.passed for c in claims.claims if c.model in ("minicpm5-2b", "tholos-2b")}
    assert paths == {
        ("minicpm5-2b", "cpu-llamacpp"): 117,
        ("minicpm5-2b", "cpu-ollama"): 96,
        ("minicpm5-2b", "kaggle-t4"): 112,
        ("tholos-2b", "cpu-llamacpp"): 134,
        ("tholos-2b", "cpu-ollama"): 136,
        ("tholos-2b", "kaggle-t4"): 137,
    }
    assert by_id["tholos-2b.t4"].result.total == 160 and claims.setups["kaggle-t4"].engine.build == "fdf5818"
    assert (
        claims.source.url == "https://github.com/mertkayacs/tholos" and claims.source.date.isoformat() == "2026-12-02"
    )


def test_project_claims_never_cite_files_outside_the_project():
    for path in SHIPPED:
        text = path.read_text()
        assert "../" not in text and "/work/" not in text and "shared/" not in text, path


def test_the_schema_describes_every_shipped_file():
    schema = claims_json_schema()
    assert schema["title"] == "repro claims"
    for path in SHIPPED:
        data = json.loads(json.dumps(yaml.safe_load(path.read_text()), default=str))  # a YAML date is a string in JSON
        jsonschema.validate(data, schema)


def test_claims_schema_command_prints_json(capsys):
    assert main(["claims", "schema"]) == 0
    assert json.loads(capsys.readouterr().out)["title"] == "repro claims"


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (("passed: 137", 'passed: "137"'), ":19 claims[0].result.passed: input should be a valid integer"),
        (("temperature: 0", "temperature: .nan"), ":9 setups.t4.decoding.temperature: input should be a finite number"),
        (("file_size_gb: 1.5", "file_size_gb: .inf"), ":4 models.m.file_size_gb: input should be a finite number"),
        (("passed: 137", "passed: 170"), ":19 claims[0].result: passed 170 exceeds total 160"),
        (("setup: t4", "setup: t5"), ":16 claims[0].setup: unknown setup 't5' (known: t4)"),
        (("    suite: s\n", "    suite: s\n    colour: red\n"), ":19 claims[0].colour: unknown key"),
        (("url: https://example.org/bench", "url: ftp://example.org"), ":2 source.url: does not match"),
        (
            ("kind: llama.cpp", "kind: vllm"),
            ":7 setups.t4.engine.kind: input should be 'llama.cpp', 'ollama' or 'scripted'",
        ),
        (
            ("total: 160, by", "total: 150, by"),
            ":18 claims[0].suite: the claim's total 150 is not the suite's 160 scenarios x 1 repeat(s)",
        ),
        (("sha256: x", "sha256: x"), None),
    ],
)
def test_a_bad_field_is_one_line_with_its_line_number(tmp_path, change, expected):
    if expected is None:
        assert load_claims(write(tmp_path, MINIMAL)).claims.claims[0].id == "m.t4"
        return
    old, new = change
    assert old in MINIMAL
    lines = problems(tmp_path, MINIMAL.replace(old, new, 1))
    assert any(line.startswith(str(tmp_path / "claims.yaml")) and expected in line for line in lines), lines


def test_duplicate_claim_ids_and_keys_are_named(tmp_path):
    doubled = MINIMAL + MINIMAL[MINIMAL.index("  - id: m.t4") :]
    assert any("claims[1].id: duplicate id 'm.t4' (first at claims[0])" in line for line in problems(tmp_path, doubled))
    assert any("duplicate key" in line for line in problems(tmp_path, MINIMAL + "format: 1\n"))


def test_scenario_outcomes_must_add_up_to_the_counts(tmp_path):
    text = MINIMAL.replace("suites:\n  s: {id: s, scenarios: 160}", "suites:\n  s: {id: s}").replace(
        "result: {passed: 137, total: 160, by_category: {injection: {passed: 10, total: 12}}}",
        "result: {passed: 2, total: 2, scenarios: {a-001: {passed: [true]}, b-001: {passed: [false], transcripts: ["
        + "a" * 64
        + "]}}}",
    )
    assert any("the scenarios give 1 of 2, not 2 of 2" in line for line in problems(tmp_path, text))
    bad_hash = text.replace("a" * 64, "xyz")
    assert any("transcripts[0]: must be 64 hex characters" in line for line in problems(tmp_path, bad_hash))


def test_a_source_names_where_it_is_and_stays_inside_the_project(tmp_path):
    nowhere = MINIMAL.replace("url: https://example.org/bench, ", "")
    assert any("a source names where it is" in line for line in problems(tmp_path, nowhere))
    outside = MINIMAL.replace("url: https://example.org/bench", "path: ../shared/README.md")
    assert any(
        "source.path: '../shared/README.md' must be a relative path inside the project" in line
        for line in problems(tmp_path, outside)
    )


def test_hostile_files_are_refused_in_one_line(tmp_path):
    for text in ("", "- a list\n", "a: &x [*x]\n", "format: 1\n" + "k: " + "9" * 100 + "\n", "x" * (2 * 1024 * 1024)):
        with pytest.raises(BadInput) as caught:
            load_claims(write(tmp_path, text))
        assert len(caught.value.lines) >= 1 and all("\n" not in line for line in caught.value.lines)


def test_claims_validate_command_exits_2_on_a_bad_file(tmp_path, capsys):
    good = write(tmp_path, MINIMAL)
    assert main(["claims", "validate", str(good)]) == 0
    assert "OK" in capsys.readouterr().out
    good.write_text(MINIMAL.replace("protocol: json_schema", "protocol: 7"))
    assert main(["claims", "validate", str(good)]) == 2
    assert "claims[0].protocol: input should be a valid string" in capsys.readouterr().err


def test_a_results_json_becomes_the_shipped_claims_file(tmp_path, capsys):
    """paper/claims/smoke-repeats-cpu.yaml is what from-results makes of its results.json (whose
    bundle was not kept): the shipped claims say what the published table says."""
    shipped = ROOT / "paper" / "claims" / "smoke-repeats-cpu.yaml"
    out = tmp_path / shipped.name
    args = [
        "claims",
        "from-results",
        str(ROOT / "paper" / "published" / "smoke-repeats-cpu.json"),
        "--out",
        str(out),
        "--date",
        "2026-12-01",
    ]
    args += [
        "--citation",
        "repro's published smoke-repeats-cpu rows (run 20261201T043043Z-smoke-repeats-cpu; its bundle was not kept)",
    ]
    args += [
        "--path",
        "paper/published/smoke-repeats-cpu.json",
        "--harness-commit",
        "e1358df72a9b93d7e3b31eab42cc3186e2dd864a",
    ]
    assert main(args) == 0
    assert out.read_text() == shipped.read_text()
    result = load_claims(shipped).claims.claims[0].result
    assert (result.passed, result.total) == (2, 28) and result.scenarios is not None and len(result.scenarios) == 14


def test_from_results_refuses_a_bad_source_in_one_line(tmp_path, capsys):
    published = ROOT / "paper" / "published" / "smoke-repeats-cpu.json"
    assert (
        main(
            [
                "claims",
                "from-results",
                str(published),
                "--citation",
                "x",
                "--url",
                "ftp://x",
                "--out",
                str(tmp_path / "c.yaml"),
            ]
        )
        == 2
    )
    assert "--url: String should match pattern" in capsys.readouterr().err
    assert not (tmp_path / "c.yaml").exists()


def test_from_results_without_a_url_or_path_is_one_line(tmp_path, capsys):
    """A rule across options (a source names a url or a path) has no option of its own to name."""
    published = ROOT / "paper" / "published" / "smoke-repeats-cpu.json"
    assert main(["claims", "from-results", str(published), "--citation", "x", "--out", str(tmp_path / "c.yaml")]) == 2
    err = capsys.readouterr().err
    assert err.strip().splitlines() == [err.strip()] and "url, or path" in err and "internal error" not in err


def a_claim_of(scenarios: int, repeats: int = 1) -> str:
    """MINIMAL with one claim of `scenarios` scenarios, each with its outcomes and transcript
    sha256s per repeat, written as `repro claims from-results` writes them (block style)."""
    lines = [f"        s{number:05d}-with-a-longer-id-as-suites-spell-them:" for number in range(scenarios)]
    outcome = (
        "\n          passed:\n"
        + "          - true\n" * repeats
        + "          transcripts:\n"
        + f"          - {'a' * 64}\n" * repeats
    )
    total = scenarios * repeats
    result = f"result:\n      passed: {total}\n      total: {total}\n      scenarios:\n" + "".join(
        line + outcome for line in lines
    )
    text = MINIMAL.replace("s: {id: s, scenarios: 160}", f"s: {{id: s, scenarios: {scenarios}}}")
    return text.replace("result: {passed: 137, total: 160, by_category: {injection: {passed: 10, total: 12}}}", result)


def test_a_claim_of_the_most_scenarios_a_claim_may_state_reads_back(tmp_path):
    """A claim of MAX_SCENARIOS scenarios with three repeats is over the YAML defaults (1 MiB,
    100,000 values): a claims file has bounds of its own, sized for it (the bookkeeping benchmark's
    10,000-scenario claims file was refused before)."""
    from repro.spec.claims import MAX_CLAIMS_FILE_BYTES, MAX_SCENARIOS

    text = a_claim_of(MAX_SCENARIOS, repeats=3)
    assert 1024 * 1024 < len(text) < MAX_CLAIMS_FILE_BYTES
    loaded = load_claims(write(tmp_path, text))
    assert len(loaded.claims.claims[0].result.scenarios or {}) == MAX_SCENARIOS
    with pytest.raises(BadInput, match="over the limit of"):
        load_claims(write(tmp_path, text + "#" * MAX_CLAIMS_FILE_BYTES))
    with pytest.raises(BadInput, match="more than 300000 values"):
        load_claims(write(tmp_path, "format: 1\nmany: [" + "1, " * 300_001 + "1]\n"))
