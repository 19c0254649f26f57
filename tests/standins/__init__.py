"""Stand-ins the repro project writes for its tests, where another project's code may not enter
the tree: each one is our own small program that offers the interface our code calls, and is named
a stand-in in every docstring.

- `tholos_runner/`: a stand-in for Tholos-Bench's runner (`tholos bench`); not that runner.
  `pack_tholos_runner` packs it as the archive a matrix pins by sha256
  (tests/external/tholos-standin.yaml).
- `local_agent_bench/`: a stand-in for Local Agent Bench (`python3 -m local_agent_bench`); not LAB.
  `pack_lab` packs it as the archive a matrix pins by sha256 (tests/external/lab-standin.yaml).
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

STANDINS = Path(__file__).resolve().parent
THOLOS_RUNNER = STANDINS / "tholos_runner"
ARCHIVE_PREFIX = "tholos-runner"  # the top folder of the archive, as the real runner's archive has
LAB = STANDINS / "local_agent_bench"
LAB_PREFIX = "local-agent-bench"


def packed_files(folder: Path) -> list[Path]:
    """The files of a stand-in that go into its archive: every regular file but Python's caches
    (which importing it from the tree would add)."""
    return sorted(
        p
        for p in folder.rglob("*")
        if p.is_file() and "__pycache__" not in p.relative_to(folder).parts and p.suffix != ".pyc"
    )


def pack_tholos_runner(out: Path) -> str:
    """The stand-in runner packed as `repro suites pack` packs a folder (repro.suites.sources.pack_folder:
    sorted names, mtime 0, owner 0, fixed modes, uncompressed, the same bytes on any host) under
    the top folder `tholos-runner/`; returns the archive's sha256."""
    return pack_standin(THOLOS_RUNNER, ARCHIVE_PREFIX, out)


def pack_lab(out: Path) -> str:
    """The LAB stand-in packed the same way under the top folder `local-agent-bench/` (the project
    folder's name LAB expects); returns the archive's sha256."""
    return pack_standin(LAB, LAB_PREFIX, out)


def pack_standin(folder: Path, prefix: str, out: Path) -> str:
    from repro.suites.sources import pack_folder

    with tempfile.TemporaryDirectory(prefix="repro-standin-") as work:
        top = Path(work) / prefix
        for path in packed_files(folder):
            target = top / path.relative_to(folder)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)
        return pack_folder(top, out)
