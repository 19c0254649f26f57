"""Provenance: the project's commit and cleanliness, repro's version, and the system's description."""

from __future__ import annotations

import json
import os
import platform
import re
import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path

from repro.bundle.records import AuthorFile, AuthorSource, GpuInfo, HostLock, SourceState, SystemDescription
from repro.containers.client import DockerClient
from repro.core.config import PROJECT_ROOT
from repro.core.files import sha256_file
from repro.spec.matrix import LoadedMatrix


def source_state(root: Path = PROJECT_ROOT) -> SourceState:
    """The git commit and whether the work tree was clean (untracked, unignored files count)."""
    from repro.store.images import harness_source_digest

    digest, lock = harness_source_digest(root), host_lock()
    try:
        import git

        repo = git.Repo(root)
        commit = repo.head.commit.hexsha
        dirty = sorted(
            {str(item.a_path) for item in repo.index.diff(None)}
            | {str(item.a_path) for item in repo.index.diff("HEAD")}
            | set(repo.untracked_files)
        )
    except Exception as error:  # not a git checkout, or no commit yet
        return SourceState(
            commit=None,
            tree_clean=False,
            dirty_files=[f"(no git commit: {type(error).__name__})"],
            harness_digest=digest,
            host_lock=lock,
        )
    return SourceState(
        commit=commit, tree_clean=not dirty, dirty_files=dirty[:DIRTY_KEPT], harness_digest=digest, host_lock=lock
    )


LOCK_STAMP = "repro-lock.json"  # written into the venv by scripts/common.sh (write_lock_stamp)
NOT_LOCKED = {"pip", "repro"}  # installed beside every lock: the installer, and repro itself (--no-deps)


def host_lock(prefix: Path = Path(sys.prefix)) -> HostLock | None:
    """The lock this environment was installed from, with where the installed set departs from its
    pins; None where no lock of ours installed it (a stamp that cannot be read counts as none)."""
    try:
        stamp = json.loads((prefix / LOCK_STAMP).read_text()[:1_000_000])
        name, sha256, pins = str(stamp["name"]), str(stamp["sha256"]), dict(stamp["pins"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return HostLock(name=name, sha256=sha256, drift=lock_drift({_canonical(k): str(v) for k, v in pins.items()}))


def lock_drift(pins: dict[str, str]) -> list[str]:
    """Each difference between the installed distributions and the pins, sorted."""
    installed = {_canonical(d.metadata["Name"] or ""): d.version for d in metadata.distributions()}
    installed = {name: version for name, version in installed.items() if name and name not in NOT_LOCKED}
    drift = [
        f"{name} {installed[name]}, not {version}" if name in installed else f"missing: {name} {version}"
        for name, version in pins.items()
        if installed.get(name) != version
    ]
    return sorted(drift + [f"extra: {name} {installed[name]}" for name in installed.keys() - pins.keys()])


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


DIRTY_SHOWN = 5  # files named in the one line that says a tree is dirty
DIRTY_KEPT = 50  # files a SourceState records


def dirty_line(state: SourceState | AuthorSource, shown: int = DIRTY_SHOWN) -> str:
    """One line naming the files that make the tree dirty (up to `shown`, and how many more):
    the same SourceState (or the author's AuthorSource) the bundle records and `repro check`
    judges, so plan, run, doctor and check never disagree."""
    files = state.dirty_files
    plus = "+" if len(files) >= DIRTY_KEPT else ""  # a record keeps the first DIRTY_KEPT
    rest = f" and {len(files) - shown}{plus} more" if len(files) > shown else ""
    where = "the author's files are" if isinstance(state, AuthorSource) else "the project tree is"
    return f"{where} dirty ({len(files)}{plus} file(s): {', '.join(files[:shown])}{rest})"


def dirty_lines(source: SourceState, author: AuthorSource | None) -> list[str]:
    """What makes a run from here not clean-room: the project tree, and the author's files when
    they are in a git repository (outside one, the embedded copies are the only evidence)."""
    states: list[SourceState | AuthorSource] = [
        source,
        *([author] if author is not None and author.commit is not None else []),
    ]
    return [dirty_line(state) for state in states if not state.tree_clean]


def author_source(loaded: LoadedMatrix) -> AuthorSource | None:
    """A matrix kept outside the project (`paths_from: matrix`): its file and its profiles file
    with their sha256, and the commit and clean state of the files under its folder when that
    folder is in a git repository (untracked, unignored files count, as in the project). None for
    a matrix whose paths are the project's."""
    if not loaded.outside:
        return None
    named = loaded.matrix.profiles_file
    files = {"matrix": AuthorFile(path=loaded.path.name, sha256=loaded.sha256)}
    if named is not None:
        files["profiles_file"] = AuthorFile(path=os.path.normpath(named), sha256=sha256_file(loaded.root / named))
    try:
        import git

        repo = git.Repo(loaded.root, search_parent_directories=True)
        top = Path(str(repo.working_tree_dir)).resolve()
        folder = loaded.root.relative_to(top).as_posix().removeprefix(".")
        commit = repo.head.commit.hexsha
        changed = (
            {str(item.a_path) for item in repo.index.diff(None)}
            | {str(item.a_path) for item in repo.index.diff("HEAD")}
            | set(repo.untracked_files)
        )
    except Exception:  # not in a git repository, or no commit yet: the embedded copies are the evidence
        return AuthorSource(folder="", **files)
    dirty = sorted(name for name in changed if not folder or name == folder or name.startswith(f"{folder}/"))
    return AuthorSource(folder=folder, commit=commit, tree_clean=not dirty, dirty_files=dirty[:50], **files)


def author_at_end(started: AuthorSource | None, loaded: LoadedMatrix) -> AuthorSource | None:
    """The author's files must stay as they were for the whole run, as the project's must."""
    now = author_source(loaded)
    if started is None or now is None or (now.commit, now.tree_clean) == (started.commit, started.tree_clean):
        return started
    change = (
        f"the author's repository moved from commit {started.commit} to {now.commit}"
        if now.commit != started.commit
        else "the author's files became dirty"
    )
    return started.model_copy(
        update={
            "tree_clean": False,
            "dirty_files": [f"changed during the run: {change}", *now.dirty_files, *started.dirty_files][:50],
        }
    )


def system_description(docker_client: DockerClient | None = None) -> SystemDescription:
    info, version = {}, {}
    if docker_client is not None:
        info, version = docker_client.info(), docker_client.version()
    return SystemDescription(
        cpu_model=_cpu_model(),
        cpu_flags=_cpu_flags(),
        cpu_cores=os.cpu_count() or 0,
        memory_gb=round(_memory_bytes() / 1024**3, 1),
        os=_os_name(),
        kernel=platform.release(),
        machine=platform.machine(),
        docker_engine=version.get("Version"),
        docker_api=version.get("ApiVersion"),
        storage_driver=info.get("Driver"),
        gpus=host_gpus(),
    )


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _cpu_flags() -> list[str]:
    """The first processor's flags in /proc/cpuinfo ("flags" on x86, "Features" on ARM), sorted."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith(("flags", "Features")):
                return sorted(set(line.split(":", 1)[1].split()))
    except OSError:
        pass
    return []


def _memory_bytes() -> int:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _os_name() -> str:
    try:
        for line in Path("/etc/os-release").read_text().splitlines():
            if line.startswith("PRETTY_NAME="):
                return line.split("=", 1)[1].strip().strip('"')
    except OSError:
        pass
    return platform.system()


def host_gpus() -> list[GpuInfo]:
    """GPUs as nvidia-smi on the host sees them (empty where there is none)."""
    if not shutil.which("nvidia-smi"):
        return []
    query = ["nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader,nounits"]
    try:
        out = subprocess.run(query, capture_output=True, text=True, timeout=20, check=True).stdout
        cuda = _cuda_version()
    except (OSError, subprocess.SubprocessError):
        return []
    gpus = []
    for line in out.strip().splitlines():
        name, driver, memory = [part.strip() for part in line.split(",")]
        gpus.append(GpuInfo(name=name, driver=driver, memory_mib=int(float(memory)), cuda=cuda))
    return gpus


def _cuda_version() -> str | None:
    out = subprocess.run(["nvidia-smi"], capture_output=True, text=True, timeout=20).stdout
    marker = "CUDA Version:"
    if marker in out:
        return out.split(marker, 1)[1].split()[0]
    return None


def source_change(before: SourceState, now: SourceState) -> str | None:
    """What changed in the project between two readings, or None."""
    if before.commit != now.commit:
        return f"the project moved from commit {before.commit} to {now.commit}"
    if before.tree_clean != now.tree_clean:
        state = "dirty" if not now.tree_clean else "clean"
        return f"the project tree became {state} ({', '.join(now.dirty_files[:3])})"
    if before.harness_digest != now.harness_digest:
        return "the harness source changed"
    return None


def source_at_end(started: SourceState) -> SourceState:
    """The tree must stay as it was for the whole run: a change during the run makes it dirty."""
    change = source_change(started, source_state())
    if not change:
        return started
    return started.model_copy(
        update={"tree_clean": False, "dirty_files": [f"changed during the run: {change}", *started.dirty_files]}
    )
