"""`repro export eee`, `hf` and `inspect` say what they leave out (issue 63): every cell not
written is named on stderr, one line with its verdict and first reason; the VALID ones are still
written; the command exits as `repro check` would (3 UNCHECKED and none INVALID, 1 INVALID)."""

from __future__ import annotations

from pathlib import Path

import pytest

from repro.__main__ import main
from repro.check.verdict import check_run
from tests.fixtures.rules import MISSING
from tests.fixtures.synthetic import write_bundle

EXPORTS = {
    "eee": (["eee"], "*/data/*/*/*/*.json"),
    "hf": (["hf", "--dataset-id", "example/synthetic", "--bundle-url", "https://example.org/b.tar.gz"], "*/*.yaml"),
}


def export(kind: str, run: Path, out: Path) -> tuple[int, list[Path]]:
    args, written = EXPORTS[kind]
    code = main(["export", args[0], str(run), "--out", str(out), *args[1:]])
    return code, sorted(out.glob(written))


def left_out(capsys: pytest.CaptureFixture[str]) -> list[str]:
    return [line for line in capsys.readouterr().err.splitlines() if line]


@pytest.mark.usefixtures("cannot_look")
@pytest.mark.parametrize("kind", sorted(EXPORTS))
def test_an_all_unchecked_bundle_names_each_cell_and_exits_3(
    kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = write_bundle(tmp_path / "run1")
    capsys.readouterr()
    code, written = export(kind, run, tmp_path / "out")
    assert (code, written) == (3, [])
    assert sorted(left_out(capsys)) == sorted(
        f"left out: UNCHECKED {run.name}/{cell.name}: not checked: {MISSING}" for cell in (run / "cells").iterdir()
    )


@pytest.mark.parametrize("kind", sorted(EXPORTS))
def test_an_invalid_cell_is_named_the_valid_one_written_and_it_exits_1(
    kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = write_bundle(tmp_path / "run1")
    first = sorted((run / "cells").iterdir())[0]
    data = bytearray((first / "scenarios.jsonl").read_bytes())
    data[5] ^= 1
    (first / "scenarios.jsonl").write_bytes(bytes(data))
    reason = next(c for c in check_run(run).cells if c.cell_id == first.name).reasons[0]
    capsys.readouterr()
    code, written = export(kind, run, tmp_path / "out")
    assert code == 1 and len(written) == 1
    assert left_out(capsys) == [f"left out: INVALID {run.name}/{first.name}: {reason}"]


@pytest.mark.parametrize("kind", sorted(EXPORTS))
def test_a_valid_bundle_leaves_nothing_out_and_exits_0(
    kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = write_bundle(tmp_path / "run1")
    capsys.readouterr()
    code, written = export(kind, run, tmp_path / "out")
    assert code == 0 and len(written) == len(list((run / "cells").iterdir()))
    assert left_out(capsys) == []


@pytest.mark.usefixtures("cannot_look")
def test_inspect_names_what_it_leaves_out_too(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("inspect_ai")
    run = write_bundle(tmp_path / "run1")
    capsys.readouterr()
    assert main(["export", "inspect", str(run), "--out", str(tmp_path / "logs")]) == 3
    assert len(left_out(capsys)) == len(list((run / "cells").iterdir()))
    assert not list((tmp_path / "logs").rglob("*.eval"))
