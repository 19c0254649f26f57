"""`repro: internal error` is for our own bugs (issue 50): every command that reads someone's file
(a bundle, a results.json, a claims file, a matrix) is fed the same hostile inputs, and each answer
is one of the documented exits with no internal error: a folder that is no bundle, garbage bytes,
NaN, a deep or huge JSON, a run.json that is a folder, a manifest that climbs out, a link.
No Docker: the commands that would boot or fetch stop at their input first."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from repro.__main__ import main
from tests.fixtures.synthetic import write_bundle


@pytest.fixture(scope="module")
def good_run(tmp_path_factory) -> Path:
    return write_bundle(tmp_path_factory.mktemp("good") / "run1")


def hostile_inputs(root: Path, good_run: Path) -> dict[str, Path]:
    """Name -> a path to hand a command where it expects a bundle or a file."""
    root.mkdir(parents=True, exist_ok=True)
    made: dict[str, Path] = {}
    made["an empty folder"] = root / "empty"
    made["an empty folder"].mkdir()
    made["garbage bytes"] = root / "garbage.json"
    made["garbage bytes"].write_bytes(b"\xff\xfe\x00garbage\x1b[2J")
    made["NaN"] = root / "nan.json"
    made["NaN"].write_text('{"rows": [NaN], "format": NaN}')
    made["deep JSON"] = root / "deep.json"
    made["deep JSON"].write_text("[" * 20000 + "]" * 20000)
    made["a huge integer"] = root / "int.json"
    made["a huge integer"].write_text('{"rows": [' + "9" * 5000 + "]}")
    folder_run = root / "run-json-folder"
    shutil.copytree(good_run, folder_run)
    (folder_run / "run.json").unlink()
    (folder_run / "run.json").mkdir()
    made["run.json a folder"] = folder_run
    climbing = root / "manifest-climbs"
    shutil.copytree(good_run, climbing)
    (climbing / "MANIFEST.sha256").write_text("0" * 64 + "  ../../etc/passwd\n")
    made["a manifest naming ../"] = climbing
    nan_cell = root / "cell-nan"
    shutil.copytree(good_run, nan_cell)
    cell = sorted((nan_cell / "cells").iterdir())[0] / "cell.json"
    cell.write_text(cell.read_text().replace('"harness_seconds": ', '"harness_seconds": NaN, "x": '))
    made["NaN in cell.json"] = nan_cell
    link = root / "link"
    link.symlink_to("/etc/passwd")
    made["a link"] = link
    return made


COMMANDS = [
    ["check", "{x}"],
    ["verify", "{good}", "--published", "{x}"],
    ["verify", "{x}", "--published", "{good}"],
    ["verify", "{good}", "--claims", "{x}"],
    ["claims", "validate", "{x}"],
    ["claims", "from-results", "{x}", "--citation", "c", "--path", "p", "--out", "{out}/claims.yaml"],
    ["paper", "render", "{x}", "--out", "{out}/paper"],
    ["results", "csv", "{x}", "--out", "{out}/r.csv"],
    ["results", "merge", "{x}", "--out", "{out}/merged"],
    ["results", "reference", "{x}", "--out", "{out}/referenced"],
    ["compare", "{good}", "{x}"],
    ["export", "inspect", "{x}", "--out", "{out}/logs"],
    ["external", "report", "{x}", "--out", "{out}/report"],
    ["suites", "fetch", "--from-bundle", "{x}"],
    ["matrix", "validate", "{x}"],
    ["models", "describe", "{x}"],
]


@pytest.mark.parametrize("command", COMMANDS, ids=[" ".join(c[:2]) + f" #{i}" for i, c in enumerate(COMMANDS)])
def test_no_command_answers_a_hostile_input_with_an_internal_error(
    command: list[str], good_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    inputs = hostile_inputs(tmp_path / "in", good_run)
    failures = []
    for name, path in inputs.items():
        out = tmp_path / "out" / name.replace(" ", "-")
        out.mkdir(parents=True)
        argv = [part.format(x=path, good=good_run, out=out) for part in command]
        code = main(argv)
        err = capsys.readouterr().err
        if "internal error" in err or "Traceback" in err or code not in (0, 1, 2, 3):
            failures.append(f"{name}: exit {code}: {err.strip()[-300:]}")
    assert not failures, json.dumps(failures, indent=1)
