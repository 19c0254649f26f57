"""A reviewer with only a bundle installs repro as a tool (issue 27): the wheel, installed into a
fresh virtual environment and run outside the checkout, checks, verifies and renders a bundle.
The wheel carries the files beside the packages that those commands read (the profiles and the
paper templates in repro/_data/, the scale job templates in repro/templates/), and the commands
that need the project tree refuse in one line with a hint that works.

It builds the wheel and installs it as the README tells a reviewer: the host lock from the package
index (locks/host-py3.X.txt, every hash checked), then the wheel with --no-deps, and `pip check`
says the lock satisfies the wheel's requirements. About a minute, marked
`wheel` (`pytest -m wheel` runs it alone, `-m "not wheel"` leaves it out)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from repro.core.config import SHIPPED_FILES
from tests.fixtures.synthetic import write_bundle

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.wheel


def _source_copy(target: Path) -> Path:
    """The checkout's files (tracked and untracked, not ignored) copied to `target`: the build
    writes build/ and *.egg-info beside its sources, never into the checkout."""
    listed = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout
    for name in filter(None, listed.decode().split("\0")):
        source = ROOT / name
        if source.is_file() and not source.is_symlink():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source, target / name)
    return target


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """The bin folder of a fresh venv with the wheel and its host extra installed."""
    work = tmp_path_factory.mktemp("wheel")
    source = _source_copy(work / "src")
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(work / "dist"), str(source)],
        capture_output=True,
        text=True,
    )
    assert built.returncode == 0, built.stderr[-2000:]
    (wheel,) = (work / "dist").glob("repro-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    for shipped in SHIPPED_FILES:
        assert any(name.startswith(f"repro/_data/{shipped}") for name in names), shipped
    assert "repro/scale/templates/slurm/shards.sbatch.j2" in names
    subprocess.run([sys.executable, "-m", "venv", str(work / "venv")], check=True)
    bin_dir = work / "venv" / "bin"
    lock = ROOT / "locks" / f"host-py{sys.version_info[0]}.{sys.version_info[1]}.txt"  # the README's reviewer path
    for argv in (["--require-hashes", "-r", str(lock)], ["--no-deps", str(wheel)]):
        install = subprocess.run([str(bin_dir / "pip"), "install", "-q", *argv], capture_output=True, text=True)
        assert install.returncode == 0, install.stderr[-2000:]
    check = subprocess.run([str(bin_dir / "pip"), "check"], capture_output=True, text=True)
    assert check.returncode == 0, f"the host lock does not satisfy the wheel's requirements: {check.stdout[-2000:]}"
    return bin_dir


def tool(bin_dir: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if key not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env |= {"DOCKER_HOST": "unix:///nonexistent.sock", "REPRO_CACHE": str(cwd / "cache")}
    return subprocess.run(
        [str(bin_dir / "repro"), *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=300
    )


def test_an_installed_wheel_checks_verifies_and_renders_a_bundle(installed: Path, tmp_path: Path) -> None:
    run = write_bundle(tmp_path / "bundle" / "run1")
    elsewhere = tmp_path / "reviewer"
    elsewhere.mkdir()
    where = tool(installed, elsewhere, "--version")
    assert where.returncode == 0 and where.stdout.startswith("repro ")
    check = tool(installed, elsewhere, "check", str(run))
    assert check.returncode == 0 and "2 VALID" in check.stdout, check.stdout + check.stderr
    render = tool(installed, elsewhere, "paper", "render", str(run), "--out", str(elsewhere / "tables"))
    assert render.returncode == 0, render.stdout + render.stderr
    assert {"results.md", "results.tex", "results.json", "report.html"} <= {
        p.name for p in (elsewhere / "tables").iterdir()
    }
    verify = tool(installed, elsewhere, "verify", str(run), "--published", str(elsewhere / "tables" / "results.json"))
    assert verify.returncode == 0, verify.stdout + verify.stderr
    schema = tool(installed, elsewhere, "matrix", "schema")
    assert schema.returncode == 0 and '"$defs"' in schema.stdout


def test_an_installed_wheel_refuses_what_needs_the_checkout_in_one_line(installed: Path, tmp_path: Path) -> None:
    proc = tool(installed, tmp_path, "matrix", "plan", "x.yaml", "--profile", "cpu")
    lines = (proc.stdout + proc.stderr).strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1, lines
    assert "source checkout" in lines[0] and "pip install -e" in lines[0] and "Traceback" not in lines[0]


PUBLISHED_BUNDLES = sorted((ROOT / "paper" / "published").glob("*-bundle.tar.gz"))


@pytest.mark.parametrize(
    "archive", PUBLISHED_BUNDLES, ids=[p.name.removesuffix("-bundle.tar.gz") for p in PUBLISHED_BUNDLES]
)
def test_a_published_bundle_is_never_invalid_on_a_reviewers_install(
    installed: Path, tmp_path: Path, archive: Path
) -> None:
    """Issue 63: the README's reviewer install (the host lock and the wheel: no inspect extra), no
    Docker, a fresh cache: what this host lacks makes a cell UNCHECKED, naming the command that
    makes it checkable, never INVALID."""
    from repro.rerun.archive import bundle_folder

    bundle = bundle_folder(archive, tmp_path / "unpacked")
    check = tool(installed, tmp_path, "check", str(bundle))
    assert check.returncode in (0, 3), check.stdout[-3000:] + check.stderr[-2000:]
    lines = check.stdout.splitlines()
    assert not [line for line in lines if line.lstrip().startswith("INVALID")], check.stdout[-3000:]
    unchecked = [line for line in lines if "not checked:" in line]
    assert all("run: " in line or "pip install" in line for line in unchecked), unchecked
