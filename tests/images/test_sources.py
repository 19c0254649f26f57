"""Engine sources: fetched once, verified against the pin, cached by sha256."""

from __future__ import annotations

import hashlib
import http.server
import io
import subprocess
import tarfile
import threading
from pathlib import Path

import pytest

from repro.core.errors import BadInput, ReproError
from repro.spec.matrix import EngineSource, GitSource
from repro.store.sources import cached_source, fetch_source, sources_dir


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch) -> Path:
    cache = tmp_path / "cache"
    monkeypatch.setenv("REPRO_CACHE", str(cache))
    return cache


def small_archive(folder: Path, name: str = "engine-1.0.tar.gz", text: str = "int main(void) { return 0; }\n") -> Path:
    path = folder / name
    data = text.encode()
    with tarfile.open(path, "w:gz") as archive:
        info = tarfile.TarInfo("engine-1.0/main.c")
        info.size = len(data)
        archive.addfile(info, io.BytesIO(data))
    return path


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_local_archive_is_verified_and_cached_by_sha256(tmp_path):
    archive = small_archive(tmp_path)
    source = EngineSource(archive=str(archive), sha256=sha(archive))
    cached = fetch_source(source)
    assert cached == sources_dir() / f"{sha(archive)}.tar.gz"
    assert cached.read_bytes() == archive.read_bytes()
    assert archive.exists()  # the user's file is copied, not moved
    archive.unlink()
    assert fetch_source(source) == cached  # served from the cache from now on


def test_a_wrong_sha256_names_both_hashes_and_the_source(tmp_path):
    archive = small_archive(tmp_path)
    wrong = "0" * 64
    with pytest.raises(ReproError) as caught:
        fetch_source(EngineSource(archive=str(archive), sha256=wrong))
    message = str(caught.value)
    assert wrong in message and sha(archive) in message and str(archive) in message
    assert "mismatch" in message and len(caught.value.lines) == 1
    assert cached_source(wrong) is None and cached_source(sha(archive)) is None  # nothing unverified is cached


def test_a_cached_file_that_no_longer_matches_is_fetched_again(tmp_path):
    archive = small_archive(tmp_path)
    source = EngineSource(archive=str(archive), sha256=sha(archive))
    cached = fetch_source(source)
    cached.write_bytes(b"tampered")
    assert fetch_source(source).read_bytes() == archive.read_bytes()


def test_only_tar_archives_are_accepted(tmp_path):
    other = tmp_path / "engine.zip"
    other.write_bytes(b"PK")
    with pytest.raises(BadInput, match="not a tar archive"):
        fetch_source(EngineSource(archive=str(other), sha256=sha(other)))
    with pytest.raises(BadInput, match="not found"):
        fetch_source(EngineSource(archive=str(tmp_path / "absent.tar.gz"), sha256="1" * 64))


def _git(cwd: Path, *args: str) -> str:
    base = ["git", "-c", "user.name=t", "-c", "user.email=t@t.invalid", "-c", "commit.gpgsign=false"]
    return subprocess.run([*base, *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def test_a_git_commit_becomes_the_tar_of_git_archive(tmp_path):
    repo = tmp_path / "upstream"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    (repo / "CMakeLists.txt").write_text('project("llama.cpp" C CXX)\n')
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "one")
    commit = _git(repo, "rev-parse", "HEAD")
    (repo / "later.txt").write_text("after the pin\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "two")
    expected = hashlib.sha256(
        subprocess.run(["git", "archive", "--format=tar", commit], cwd=repo, check=True, capture_output=True).stdout
    ).hexdigest()
    cached = fetch_source(EngineSource(git=GitSource(url=repo.as_uri(), commit=commit), sha256=expected))
    assert cached.name == f"{expected}.tar"
    with tarfile.open(cached) as archive:
        assert archive.getnames() == ["CMakeLists.txt"]  # the pinned commit, not the branch head
    cached.unlink()
    with pytest.raises(ReproError, match=f"expected {'2' * 64}, got {expected}"):
        fetch_source(EngineSource(git=GitSource(url=repo.as_uri(), commit=commit), sha256="2" * 64))


class _Index(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture()
def loopback_index(tmp_path, monkeypatch):
    """A PEP 503 (HTML) simple index on 127.0.0.1 serving one sdist."""
    root = tmp_path / "index"
    (root / "simple" / "tiny-engine").mkdir(parents=True)
    (root / "files").mkdir()
    archive = small_archive(root / "files", "tiny_engine-2.0.tar.gz")
    (root / "simple" / "tiny-engine" / "index.html").write_text(
        "<html><body>"
        '<a href="../../files/tiny_engine-1.0.tar.gz#sha256=00">tiny_engine-1.0.tar.gz</a>'
        f'<a href="../../files/tiny_engine-2.0.tar.gz#sha256={sha(archive)}">tiny_engine-2.0.tar.gz</a>'
        "</body></html>"
    )
    handler = lambda *a, **k: _Index(*a, directory=str(root), **k)  # noqa: E731
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    monkeypatch.setenv("REPRO_PYPI_INDEX", f"http://127.0.0.1:{server.server_address[1]}/simple")
    try:
        yield archive
    finally:
        server.shutdown()
        server.server_close()


def test_a_pypi_sdist_comes_from_the_simple_index(loopback_index):
    archive = loopback_index
    cached = fetch_source(EngineSource(pypi="tiny-engine==2.0", sha256=sha(archive)))
    assert cached.read_bytes() == archive.read_bytes()
    with pytest.raises(ReproError, match="no sdist for tiny-engine 3.0"):
        fetch_source(EngineSource(pypi="tiny-engine==3.0", sha256="3" * 64))
