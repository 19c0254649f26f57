"""A bundle's layout: the names of its files and folders, and the checks every path into it
passes (an id, a plain file name, a folder that is no link)."""

from __future__ import annotations

import re
from pathlib import Path

from repro.core.errors import BadInput

MANIFEST = "MANIFEST.sha256"


SIGNATURE = "MANIFEST.sha256.sig"


ATTESTATION = "MANIFEST.sha256.intoto.jsonl"  # the in-toto statement in a DSSE envelope (repro.bundle.attestation)


RUN_FILE = "run.json"


CELLS_DIR = "cells"


MERGE_RECORD = "MERGED.json"  # beside the runs of a merged results folder


SUITES_DIR = "suites"  # suites/<suite-id>/scenarios/<category>/<id>.json and .../fixtures/ (format 3)


INPUTS_DIR = "inputs"  # inputs/<sha256>.<ext>: an external input the bundle carries, named by the sha256 its pin gives


MATRIX_COPY = "matrix.yaml"  # the matrix file the run planned from, byte for byte (format 3)


# a matrix's own profiles file (run.json author.profiles_file), byte for byte
AUTHOR_PROFILES_COPY = "author-profiles.yaml"


CELL_FILE = "cell.json"
SCENARIOS_FILE = "scenarios.jsonl"  # a cell's results, one ScenarioResult a line
TRANSCRIPTS_FILE = "transcripts.jsonl"  # a cell's transcripts, one TranscriptLine a line
WIRE_FILE = "wire.jsonl"  # a runtime cell's turns, each with its exchanges with the engine (harness.runtimes)


PARTIAL_FILE = "partial.json"  # in cells/.<id>.partial/: what its kept scenarios belong to


KEPT_DIR = "kept"  # in cells/.<id>.partial/: one <scenario-id>.json per finished scenario


ATTEMPTS_FILE = "attempts.json"  # in cells/.<id>.partial/: the earlier attempts whose scenarios it keeps


# in cells/.<id>.partial/: the attempt's harness wall time, by the runner's clock, up to its latest kept scenario
CLOCK_FILE = "harness-clock.json"


HARNESS_LOG = "harness.log"  # a cell's harness output (each worker's tail, joined)
ENGINE_LOG = "engine.log"  # a cell's engine log; in cells/.<id>.partial/, the interrupted attempt's


LATEST = "LATEST"


SAFE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.@+-]{0,199}$")


def safe_id(value: str, what: str = "id") -> str:
    """An id read from a bundle or a plan, used as a path part: refused unless plainly safe."""
    if not SAFE_ID.match(value) or ".." in value:
        raise BadInput(
            f"unsafe {what} {value[:80]!r}: ids are letters, digits and _.@+- and start with a letter or digit"
        )
    return value


def is_partial(parts: list[str]) -> bool:
    return len(parts) >= 2 and parts[0] == CELLS_DIR and parts[1].startswith(".") and parts[1].endswith(".partial")


def suite_folder(run_dir: Path, suite_id: str) -> Path:
    """suites/<suite-id>/ of a bundle: the scenario files (or wheel and lock) a suite ran."""
    return run_dir / SUITES_DIR / safe_id(suite_id, "suite id")


def unlinked(folder: Path) -> Path:
    """A folder two levels into a bundle, refused when it or its parent is a symbolic link."""
    for path in (folder.parent, folder):
        if path.is_symlink():
            raise BadInput(f"{path}: a symbolic link, not a bundle folder")
    return folder


def is_plain_name(name: str) -> bool:
    """A file name within a cell, as cell.json lists them: no folder, no dot-entry."""
    return bool(name) and "/" not in name and not name.startswith(".")


def plain_name(name: str) -> str:
    if not is_plain_name(name):
        raise BadInput(f"{name[:80]!r}: not a plain file name of a cell")
    return name
