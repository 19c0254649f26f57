"""End-to-end fixtures: a committed snapshot of the project, a canary identity, a real run.

The product runs from a snapshot of the working tree committed into a fresh git repository, so
the run sees a clean tree (as on a reviewer's clone) while testing exactly the code under test.
The run happens under a canary home folder, user name and host name (a new UTS namespace), so
the bundle can be searched for them.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fixtures.canary import CANARY_HOST, CANARY_USER

ROOT = Path(__file__).resolve().parents[2]
E2E_MATRIX = """\
name: e2e
description: SmolLM2 on llama.cpp b11434 (CPU), one scenario per category, in two suites.
models:
{model}
engines:
{engine}
protocols: [json_schema]
suites:
{suites}
decoding: {{temperature: 0, seed: 42, max_tokens: 256, context: 4096}}
repeats: 1
latency_gate: {{warmup: true, attempts: 3, required: 2}}
profiles: [cpu]
"""


TWO_SUITES = """\
  - id: part-a
    path: scenarios
    categories: [approval, ask, conflict, follow_up, handoff, injection, memory]
    per_category: 1
  - id: part-b
    path: scenarios
    categories: [notes, nothing_to_do, table_add, table_create, table_read_answer, table_update, web_research]
    per_category: 1"""


def e2e_matrix(suites: str = TWO_SUITES) -> str:
    models, engines = smoke_parts()
    return E2E_MATRIX.format(model=models, engine=engines, suites=suites)


def _section(text: str, start: str, end: str) -> str:
    return text[text.index(start) + len(start) : text.index(end)].rstrip("\n")


def smoke_parts() -> tuple[str, str]:
    smoke = (ROOT / "matrix" / "smoke.yaml").read_text()
    models = _section(smoke, "models:\n", "  - id: qwen2.5-coder-0.5b-instruct-q4_k_m")
    engines = _section(smoke, "engines:\n", "protocols:")
    return models, engines


def write_matrix(project: Path, name: str, text: str) -> Path:
    path = project / "matrix" / f"{name}.yaml"
    path.write_text(text)
    return path


def snapshot_files() -> list[str]:
    out = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout
    return [name for name in out.decode().split("\0") if name and (ROOT / name).is_file()]


def make_snapshot(target: Path, extra: dict[str, str] | None = None) -> Path:
    """Copy the working tree (tracked and unignored files) into `target` and commit it."""
    for name in snapshot_files():
        destination = target / name
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, destination)
    return commit_snapshot(target, extra or {})


def commit_snapshot(target: Path, extra: dict[str, str]) -> Path:
    """Write `extra` over the files copied into `target`, then commit them into a fresh repository."""
    for name, text in extra.items():
        (target / name).write_text(text)
    git = ["git", "-c", "user.name=repro-tests", "-c", "user.email=tests@repro.invalid"]
    subprocess.run(["git", "init", "-q", "-b", "main"], cwd=target, check=True)
    subprocess.run(["git", "add", "-A"], cwd=target, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "snapshot"], cwd=target, check=True)
    return target


@pytest.fixture(scope="session")
def snapshot(tmp_path_factory) -> Path:
    return make_snapshot(tmp_path_factory.mktemp("snapshot") / "project", {"matrix/e2e.yaml": e2e_matrix()})


def repro_env(project: Path, home: Path, cache: Path | None = None) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key not in ("REPRO_CACHE", "XDG_CACHE_HOME")}
    env.update(
        {"HOME": str(home), "USER": CANARY_USER, "LOGNAME": CANARY_USER, "PYTHONPATH": str(project), "COLUMNS": "160"}
    )
    if cache is not None:
        env["REPRO_CACHE"] = str(cache)
    return env


def repro_command(*args: str) -> list[str]:
    """`python -m repro ...` in a new UTS namespace whose host name is the canary."""
    inner = " ".join(["hostname", CANARY_HOST, "&&", "exec", sys.executable, "-m", "repro", *[_quote(a) for a in args]])
    return ["unshare", "--uts", "sh", "-c", inner]


def _quote(value: str) -> str:
    return "'" + value.replace("'", "'\\''") + "'"


def run_repro(project: Path, home: Path, *args: str, timeout: float = 1800) -> subprocess.CompletedProcess:
    return subprocess.run(
        repro_command(*args), cwd=project, env=repro_env(project, home), capture_output=True, text=True, timeout=timeout
    )


@pytest.fixture(scope="session")
def e2e_console(snapshot, canary_home, harness_image_ref, llama_image_ref) -> subprocess.CompletedProcess:
    """One uninterrupted run of matrix/e2e.yaml from the clean snapshot, under the canary identity,
    and what it printed (its stdout is a pipe: the console as a log shows it)."""
    proc = run_repro(snapshot, canary_home, "matrix", "run", "matrix/e2e.yaml", "--profile", "cpu", "--out", "results")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc


@pytest.fixture(scope="session")
def e2e_run(snapshot, e2e_console) -> Path:
    """The bundle of that run."""
    return snapshot / "results" / (snapshot / "results" / "LATEST").read_text().strip()
