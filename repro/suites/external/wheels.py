"""An external suite's wheels, fetched and verified on the host, and its code unpacked.

`repro suites fetch MATRIX` downloads every wheel of the suite's lock (`pip download
--require-hashes --no-deps` for the image's target, as the harness image's wheels are) into
`<cache>/external/wheels/<sha256 of the lock and target>/`, then checks the harness's own wheel
against the matrix's sha256: a mismatch is refused before anything boots. The wheel is unpacked
once into `<cache>/external/unpacked/<sha256>/` (regular files only, no name out of the folder),
which is where its tasks are read from; a run never downloads. A harness pinned by a source
archive instead (`archive` or `git`, with its sha256: Tholos-Bench's runner) is fetched as engine
sources are (repro.store.sources: the cache, a mirror, then git) and unpacked once into the suite cache
(repro.suites.sources), where its image build and `repro check` read it (or, when neither holds it,
from the copy a bundle carries: repro.suites.external.carried); the lock then holds only the wheels
it installs.
"""

from __future__ import annotations

import importlib
import os
import shutil
import sys
import tempfile
import zipfile
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import Any

from repro.core.config import PROJECT_ROOT, cache_dir
from repro.core.errors import BadInput, ReproError
from repro.core.files import sha256_bytes, sha256_file
from repro.spec.matrix import ExternalSuite

COMPLETE = ".complete"
MAX_MEMBERS = 5_000
MAX_UNPACKED = 64 * 1024**2

Log = Callable[[str], None]


def external_dir() -> Path:
    return cache_dir() / "external"


def lock_file(external: ExternalSuite, root: Path = PROJECT_ROOT) -> Path:
    """The suite's lock file, checked against its pinned sha256."""
    path = root / external.requirements.path
    if not path.is_file():
        raise BadInput(f"{external.pin}: lock file {external.requirements.path} not found")
    found = sha256_file(path)
    if found != external.requirements.sha256:
        raise BadInput(f"{external.requirements.path}: sha256 {found}, the matrix pins {external.requirements.sha256}")
    return path


def wheel_file_name(external: ExternalSuite) -> str:
    """The wheel's file name prefix, e.g. toolcallbench-1.0.1- (a pure-python wheel's tags follow)."""
    name, version = (external.wheel or "==").split("==")
    return f"{name.replace('-', '_')}-{version}-"


def wheels_folder(external: ExternalSuite, root: Path = PROJECT_ROOT) -> Path:
    from repro.store.images import WHEEL_IMPLEMENTATION, WHEEL_PLATFORM, WHEEL_PYTHON

    target = f"{WHEEL_IMPLEMENTATION}{WHEEL_PYTHON}-{WHEEL_PLATFORM}"
    return external_dir() / "wheels" / sha256_bytes(lock_file(external, root).read_bytes() + b"\0" + target.encode())


def fetched_wheels(external: ExternalSuite, root: Path = PROJECT_ROOT) -> Path | None:
    folder = wheels_folder(external, root)
    return folder if (folder / COMPLETE).is_file() else None


def fetch_wheels(external: ExternalSuite, log: Log = lambda line: None, root: Path = PROJECT_ROOT) -> Path:
    """Every wheel of the lock, downloaded once with hashes required; the harness's wheel verified."""
    from repro.store.images import download_locked

    found = fetched_wheels(external, root)
    if found is None:
        folder = wheels_folder(external, root)
        folder.parent.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix=".download-", dir=folder.parent))
        try:
            log(f"downloading the wheels of {external.requirements.path}")
            download_locked(lock_file(external, root), work, "external wheels")
            (work / COMPLETE).write_text(external.pin + "\n")
            shutil.rmtree(folder, ignore_errors=True)
            os.replace(work, folder)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        found = folder
    if external.wheel is not None:
        harness_wheel(external, found)
    return found


def fetch_code(external: ExternalSuite, log: Log = lambda line: None) -> Path:
    """A source-pinned harness's archive, fetched (cache, mirror, git), verified and unpacked."""
    from repro.suites.sources import fetch_suite

    return fetch_suite(external.source, log=log)


def fetched_code(external: ExternalSuite) -> Path | None:
    """The unpacked, verified archive of a source-pinned harness, from the cache or a mirror (never
    downloaded here); None when neither holds it (a bundle may carry it: repro.suites.external.carried)."""
    from repro.store.sources import from_mirror
    from repro.suites.sources import unpacked

    found = unpacked(external.source)
    if found is None and from_mirror(external.sha256) is not None:
        found = fetch_code(external)
    return found


def harness_wheel(external: ExternalSuite, folder: Path) -> Path:
    """The harness's own wheel among the fetched ones, verified against the matrix's sha256."""
    candidates = sorted(
        p for p in folder.glob(f"{wheel_file_name(external)}*.whl") if p.is_file() and not p.is_symlink()
    )
    if len(candidates) != 1:
        raise ReproError(f"{external.wheel}: {len(candidates)} wheels of it in {folder.name}, expected one")
    found = sha256_file(candidates[0])
    if found != external.sha256:
        raise ReproError(f"{candidates[0].name}: sha256 {found}, the matrix pins {external.sha256}; refusing it")
    return candidates[0]


def verified_wheel(external: ExternalSuite, root: Path = PROJECT_ROOT) -> Path:
    """The fetched, verified wheel (BadInput naming the command when it is not fetched yet)."""
    if external.wheel is None:
        raise BadInput(f"{external.pin} is a source archive, not a wheel")
    folder = fetched_wheels(external, root)
    if folder is None:
        raise BadInput(f"{external.wheel} is not fetched; run: repro suites fetch MATRIX")
    return harness_wheel(external, folder)


def unpacked_wheel(wheel: Path, sha256: str) -> Path:
    """The wheel unpacked once under the cache (keyed by its verified sha256)."""
    target = external_dir() / "unpacked" / sha256
    if (target / COMPLETE).is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".unpack-", dir=target.parent))
    try:
        unzip(wheel, work)
        (work / COMPLETE).write_text(sha256 + "\n")
        shutil.rmtree(target, ignore_errors=True)
        os.replace(work, target)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return target


def unzip(wheel: Path, target: Path) -> None:
    """A wheel's regular files into `target`; a name out of it, a link or too much is refused."""
    try:
        with zipfile.ZipFile(wheel) as archive:
            members = archive.infolist()
            if len(members) > MAX_MEMBERS or sum(m.file_size for m in members) > MAX_UNPACKED:
                raise ReproError(f"{wheel.name}: too large to unpack")
            for member in members:
                name = PurePosixPath(member.filename)
                if (
                    name.is_absolute()
                    or ".." in name.parts
                    or "\\" in member.filename
                    or (member.external_attr >> 16) & 0o170000 == 0o120000
                ):
                    raise ReproError(f"{wheel.name}: {member.filename} leaves the wheel or is a link")
                if not member.is_dir():
                    destination = target / name
                    destination.parent.mkdir(parents=True, exist_ok=True)
                    destination.write_bytes(archive.read(member))
    except (zipfile.BadZipFile, OSError) as error:
        raise ReproError(f"{wheel.name}: cannot unpack ({error})") from None


def import_harness(root: Path, package: str, modules: tuple[str, ...], cannot: str) -> dict[str, Any]:
    """A harness's own modules, imported from its verified copy at `root` (never another copy of
    them: a copy loaded from elsewhere is dropped first). `cannot` says, after the import error,
    what the host lacks (BadInput)."""
    root = root.resolve()
    loaded = sys.modules.get(package)
    if loaded is None or not Path(str(loaded.__file__)).resolve().is_relative_to(root):
        for name in [n for n in sys.modules if n == package or n.startswith(f"{package}.")]:
            del sys.modules[name]
        sys.path.insert(0, str(root))
        try:
            for name in modules:
                importlib.import_module(f"{package}.{name}")
        except ImportError as error:
            raise BadInput(cannot.format(error=error)) from None
        finally:
            sys.path.remove(str(root))
    return {name: sys.modules[f"{package}.{name}"] for name in modules}
