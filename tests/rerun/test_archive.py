"""Hostile and broken archives given to `repro rerun`: each is one line and exit 2, nothing is
written outside --out, and a refused archive leaves no half-unpacked folder (real tar and gzip
files, written here; the published smoke bundle for the good case)."""

from __future__ import annotations

import gzip
import io
import tarfile
from pathlib import Path

import pytest

from repro.__main__ import main
from repro.core.archives import ArchiveLimits
from repro.core.errors import BadInput
from repro.rerun import archive
from repro.rerun.archive import bundle_folder
from tests.rerun.conftest import SMOKE


def member(
    name: str, data: bytes = b"{}", kind: bytes = tarfile.REGTYPE, link: str = ""
) -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.type, info.linkname, info.size = kind, link, len(data) if kind == tarfile.REGTYPE else 0
    return info, data


def write_archive(path: Path, members: list[tuple[tarfile.TarInfo, bytes]]) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for info, data in members:
            tar.addfile(info, io.BytesIO(data) if info.isfile() else None)
    return path


BUNDLE = [member("run-1/run.json"), member("run-1/matrix.yaml", b"name: x\n")]
HOSTILE = {
    "symlink": [*BUNDLE, member("run-1/cells/evil", kind=tarfile.SYMTYPE, link="/etc/passwd")],
    "hard link": [*BUNDLE, member("run-1/cells/evil", kind=tarfile.LNKTYPE, link="run-1/run.json")],
    "device": [*BUNDLE, member("run-1/dev", kind=tarfile.CHRTYPE)],
    "fifo": [*BUNDLE, member("run-1/fifo", kind=tarfile.FIFOTYPE)],
    "absolute path": [*BUNDLE, member("/tmp/evil.json")],
    "dot-dot path": [*BUNDLE, member("run-1/../../evil.json")],
    "two run folders": [*BUNDLE, member("run-2/run.json")],
    "no run.json": [member("run-1/matrix.yaml")],
}


def refused(tmp_path: Path, given: Path, capsys: pytest.CaptureFixture[str]) -> str:
    """`repro rerun` on it: exit 2, one line, nothing outside OUT and nothing left inside it."""
    out = tmp_path / "out"
    before = sorted(p.name for p in tmp_path.iterdir())
    assert main(["rerun", str(given), "--out", str(out)]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1, lines
    assert sorted(p.name for p in tmp_path.iterdir() if p.name != "out") == [n for n in before if n != "out"]
    assert not (out / "bundle").exists() or not any((out / "bundle").iterdir())
    return lines[0]


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_a_hostile_archive_is_one_line_and_exit_2(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    line = refused(tmp_path, write_archive(tmp_path / "bundle.tar.gz", HOSTILE[case]), capsys)
    assert "bundle.tar.gz" in line
    assert not (tmp_path / "evil.json").exists() and not Path("/tmp/evil.json").exists()


def test_a_truncated_archive_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    whole = SMOKE.read_bytes()
    (tmp_path / "cut.tar.gz").write_bytes(whole[: len(whole) // 2])
    assert "cannot unpack" in refused(tmp_path, tmp_path / "cut.tar.gz", capsys)


def test_a_corrupt_archive_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    whole = bytearray(SMOKE.read_bytes())
    whole[len(whole) // 2 : len(whole) // 2 + 64] = bytes(64)
    (tmp_path / "bad.tar.gz").write_bytes(bytes(whole))
    assert "cannot unpack" in refused(tmp_path, tmp_path / "bad.tar.gz", capsys)


def test_not_an_archive_and_not_a_bundle(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "notes.txt").write_text("hello\n")
    assert "cannot unpack" in refused(tmp_path, tmp_path / "notes.txt", capsys)
    (tmp_path / "folder").mkdir()
    assert "not a bundle" in refused(tmp_path, tmp_path / "folder", capsys)
    assert "no such bundle" in refused(tmp_path, tmp_path / "missing.tar.gz", capsys)


def test_size_and_count_bounds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(archive, "BUNDLE_LIMITS", ArchiveLimits(files=3, total_bytes=100, member_bytes=50))
    many = write_archive(tmp_path / "many.tar.gz", [*BUNDLE, *(member(f"run-1/f{i}") for i in range(3))])
    with pytest.raises(BadInput, match="more than 3 entries"):
        bundle_folder(many, tmp_path / "out")
    big = write_archive(tmp_path / "big.tar.gz", [*BUNDLE, member("run-1/big", b"x" * 51)])
    with pytest.raises(BadInput, match="at most 50 per file"):
        bundle_folder(big, tmp_path / "out")
    total = write_archive(
        tmp_path / "total.tar.gz",
        [*BUNDLE, *(member(f"run-1/m{i}", b"x" * 40) for i in range(1))] + [member("run-1/n", b"y" * 50)],
    )
    monkeypatch.setattr(archive, "BUNDLE_LIMITS", ArchiveLimits(files=10, total_bytes=60, member_bytes=50))
    with pytest.raises(BadInput, match="MB unpacked"):
        bundle_folder(total, tmp_path / "out")
    assert not (tmp_path / "out" / "bundle").exists()


def test_a_gzip_bomb_stops_at_its_header(tmp_path: Path) -> None:
    """A member declaring more than the bound is refused from its header, before its bytes are read."""
    info = tarfile.TarInfo("run-1/huge")
    info.size = archive.BUNDLE_LIMITS.member_bytes + 1
    raw = info.tobuf(format=tarfile.GNU_FORMAT)
    (tmp_path / "bomb.tar.gz").write_bytes(gzip.compress(raw))  # the header alone: its data never comes
    with pytest.raises(BadInput, match="per file"):
        bundle_folder(tmp_path / "bomb.tar.gz", tmp_path / "out")


def test_the_published_bundle_unpacks_under_out(tmp_path: Path) -> None:
    run_dir = bundle_folder(SMOKE, tmp_path / "out")
    assert run_dir.parent == tmp_path / "out" / "bundle" and (run_dir / "run.json").is_file()
    assert [p.name for p in (tmp_path / "out" / "bundle").iterdir()] == [run_dir.name]  # no work folder left
    assert bundle_folder(SMOKE, tmp_path / "out") == run_dir  # again: unpacked afresh in the same place
