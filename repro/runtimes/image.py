"""The image an agent runtime runs in: the harness image plus the runtime, built offline from its lock.

Tag `repro/runtime-<kind>:<key16>`, where the key covers the Dockerfile (images/runtime/Dockerfile.npm
or Dockerfile.pypi), the runtime's kind and version, the lock's bytes (package-lock.json and its
package.json, or requirements.txt) and the id of the harness image it builds on. Everything is fetched
and verified on the host, once, into the cache, never inside the build (but Debian's faketime,
which the build installs with apt):

- npm (OpenClaw, Pi): `npm ci --ignore-scripts` for linux x64 glibc checks every tarball against the
  lock's integrity, in `<cache>/runtimes/npm-<key16>/` (run twice: the second time under the lock's
  own Node, so optional packages are picked by the Node the image runs); the context carries that
  tree as one deterministic tar (`runtime.tar`, with `SHA256SUMS`) that the build checks and unpacks
  into /opt/runtime, then runs the install scripts npm skipped, under the lock's Node, dependencies
  first (`lifecycle.txt`: OpenClaw will not start until its postinstall ran).
- pypi (Hermes): every wheel of the lock, `pip download --require-hashes` as the harness image's are
  (repro.store.images.download_locked), in `<cache>/runtimes/pypi-<key16>/`; the build installs them
  with `pip install --no-index --require-hashes` into the venv /opt/runtime.

A cache folder is made in a temporary sibling and renamed into place only when it is complete. The
image carries one label per locked package, `repro.runtime.package.<name>` = `<version> <hash>` (an
npm package nested under another is named by its path, `<parent>/node_modules/<name>`; one shipped
inside its parent's tarball, `inBundle`, has the hash `bundled`). Its layout, which the harness
relies on, is in the Dockerfiles' headers.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from repro.core.config import PROJECT_ROOT, cache_dir
from repro.core.errors import BadInput, ReproError
from repro.core.files import link_or_copy, sha256_bytes, sha256_file
from repro.spec.runtimes import NODE_PACKAGE, RuntimeSpec
from repro.store.images import (
    WHEEL_IMPLEMENTATION,
    WHEEL_PLATFORM,
    WHEEL_PYTHON,
    BuildPlan,
    ImageRef,
    Log,
    build_in_context,
    client_or_default,
    download_locked,
    harness_image,
    image_key,
    quiet,
    resolve_plan,
)

if TYPE_CHECKING:
    from repro.containers.client import DockerClient

__all__ = [
    "DOCKERFILES",
    "build_plan",
    "build_runtime",
    "build_runtime_images",
    "lifecycle_order",
    "lock_problems",
    "locked_packages",
    "npm_failure",
    "npm_install",
    "npm_packages",
    "pip_failure",
    "pypi_wheels",
    "requirement_lines",
    "runtime_image",
    "staged",
    "write_tar",
]

DOCKERFILES = {"npm": "images/runtime/Dockerfile.npm", "pypi": "images/runtime/Dockerfile.pypi"}
PACKAGE_JSON = "package.json"
# The image's platform, whatever the host's: npm picks optional packages (native builds) by it
NPM_CI = ("ci", "--ignore-scripts", "--no-audit", "--no-fund", "--os=linux", "--cpu=x64", "--libc=glibc")
NODE_BIN = f"node_modules/{NODE_PACKAGE}/bin/node"
WHEEL_TARGET_NAME = f"{WHEEL_IMPLEMENTATION}{WHEEL_PYTHON}-{WHEEL_PLATFORM}"
LABEL_PREFIX = "repro.runtime.package."
TAIL_LINES = 30
# What npm says when the registry lacks a package or a version (ETARGET, E404)
NPM_MISSING = (
    re.compile(r"No matching version found for (\S+?)\.?$", re.M),
    re.compile(r"'(\S+@\S+)' is not in this registry", re.M),
)
# What pip says when a wheel's hash is not the lock's, or when there is no wheel to download
PIP_MISMATCH = re.compile(r"^\s+(\S+==\S+) from \S+", re.M)
PIP_MISSING = re.compile(r"No matching distribution found for (\S+)")
REQUIREMENT = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?\s*==\s*([^\s;]+)")
HASH = re.compile(r"--hash=(sha256:[0-9a-f]{64})\b")


# ---------------------------------------------------------------- the lock


def lock_problems(runtime: RuntimeSpec, root: Path = PROJECT_ROOT) -> list[str]:
    """What is wrong with the runtime's lock, one line each, naming the package (no network)."""
    if runtime.lock is None:
        return []
    name = runtime.facts.package or runtime.kind
    path = root / runtime.lock.path
    if not path.is_file():
        return [f"{name}: lock file {runtime.lock.path} not found"]
    data = path.read_bytes()
    found = sha256_bytes(data)
    problems = []
    if found != runtime.lock.sha256:
        problems.append(f"{name}: {runtime.lock.path} has sha256 {found}, the matrix pins {runtime.lock.sha256}")
    check = _npm_problems if runtime.facts.registry == "npm" else _pypi_problems
    return problems + [f"{name}: {problem}" for problem in check(runtime, path, data)]


def _npm_problems(runtime: RuntimeSpec, path: Path, data: bytes) -> list[str]:
    facts = runtime.facts
    try:
        packages = npm_packages(data)
    except ValueError as error:
        return [f"{path.name}: {error}"]
    problems = [] if (path.parent / PACKAGE_JSON).is_file() else [f"{PACKAGE_JSON} is missing beside {path.name}"]
    version = _npm_version(packages, facts.package or "")
    if version is None:
        problems.append(f"the lock does not install {facts.package}")
    elif version != runtime.version:
        problems.append(f"the lock pins {version}, the matrix {runtime.version}")
    problems += _sibling_problems(runtime, packages, version or runtime.version)
    problems += _node_problems(runtime, packages)
    return problems + [
        f"lock entry {_npm_name(where)} has no integrity"
        for where, entry in packages.items()
        if where and not entry.get("inBundle") and not entry.get("integrity")
    ]


def _sibling_problems(runtime: RuntimeSpec, packages: dict[str, dict], version: str | None) -> list[str]:
    found = {sibling: _npm_version(packages, sibling) for sibling in runtime.facts.siblings}
    return [
        f"sibling {sibling} is {at or 'missing'} in the lock, not {version}"
        for sibling, at in found.items()
        if at != version
    ]


def _node_problems(runtime: RuntimeSpec, packages: dict[str, dict]) -> list[str]:
    node, major = _npm_version(packages, NODE_PACKAGE), runtime.facts.node_major
    if node is None:
        return [f"the lock has no {NODE_PACKAGE} (Node itself)"]
    if major is not None and _major(node) < major:
        return [f"the lock's Node is {node} ({NODE_PACKAGE}), it needs Node {major} or newer"]
    return []


def _pypi_problems(runtime: RuntimeSpec, path: Path, data: bytes) -> list[str]:
    package = _canonical(runtime.facts.package or runtime.kind)
    problems, version = [], None
    for line in requirement_lines(data.decode(errors="replace")):
        pin = REQUIREMENT.match(line)
        if pin is None:
            problems.append(f"line '{line[:60]}' is not a requirement pinned by ==")
        elif not HASH.search(line):
            problems.append(f"line '{line[:60]}' has no --hash")
        if pin is not None and _canonical(pin.group(1)) == package:
            version = pin.group(2)
    if version is None:
        problems.append(f"the lock has no {runtime.facts.package}=={runtime.version} line")
    elif version != runtime.version:
        problems.append(f"the lock pins {version}, the matrix {runtime.version}")
    return problems


def npm_packages(data: bytes) -> dict[str, dict]:
    """A package-lock.json's `packages` (lockfileVersion 2 or 3): install path -> entry."""
    try:
        packages = json.loads(data).get("packages")
    except (ValueError, AttributeError):
        raise ValueError("not a JSON object") from None
    if not isinstance(packages, dict) or not all(isinstance(entry, dict) for entry in packages.values()):
        raise ValueError("no 'packages' (a lockfileVersion 2 or 3 lock is needed)")
    return packages


def requirement_lines(text: str) -> list[str]:
    """A requirements file's logical lines: continuations joined, comments and blank lines dropped."""
    joined = re.sub(r"\\\r?\n", " ", text)
    lines = (re.sub(r"(^|\s)#.*$", "", line).strip() for line in joined.splitlines())
    return [" ".join(line.split()) for line in lines if line]


def locked_packages(runtime: RuntimeSpec, root: Path = PROJECT_ROOT) -> dict[str, str]:
    """Every package the lock installs: name (a nested npm package: its path) -> `<version> <hash>`."""
    data = lock_path(runtime, root).read_bytes()
    if _registry(runtime) == "npm":
        return {
            _npm_name(where): f"{entry.get('version')} {entry.get('integrity') or 'bundled'}"
            for where, entry in sorted(npm_packages(data).items())
            if where
        }
    pins = ((REQUIREMENT.match(line), HASH.findall(line)) for line in requirement_lines(data.decode()))
    return {_canonical(pin.group(1)): " ".join([pin.group(2), *hashes]) for pin, hashes in pins if pin}


def lifecycle_order(packages: dict[str, dict]) -> list[str]:
    """The install paths of the packages whose install scripts `npm ci --ignore-scripts` skipped
    (`hasInstallScript`), dependencies first, as npm runs them: the build runs them, under the image's Node."""
    order: list[str] = []
    seen: set[str] = set()

    def visit(where: str) -> None:
        if where not in seen:
            seen.add(where)
            for dependency in _dependencies(packages, where):
                visit(dependency)
            order.append(where)

    for where in sorted(packages):
        visit(where)
    return [where for where in order if where and packages[where].get("hasInstallScript")]


def _dependencies(packages: dict[str, dict], where: str) -> list[str]:
    entry = packages[where]
    kinds = ("dependencies", "optionalDependencies", "peerDependencies")
    names = sorted({name for kind in kinds for name in entry.get(kind) or {}})
    return [found for name in names if (found := _resolve(packages, where, name)) is not None]


def _resolve(packages: dict[str, dict], where: str, name: str) -> str | None:
    """Where Node finds `name` from the package at `where`: its own node_modules, then each parent's."""
    while True:
        candidate = f"{where}/node_modules/{name}" if where else f"node_modules/{name}"
        if candidate in packages or not where:
            return candidate if candidate in packages else None
        where = where.rpartition("/node_modules/")[0]


def lock_path(runtime: RuntimeSpec, root: Path = PROJECT_ROOT) -> Path:
    _registry(runtime)
    assert runtime.lock is not None
    return root / runtime.lock.path


def _registry(runtime: RuntimeSpec) -> str:
    registry = runtime.facts.registry
    if registry is None or runtime.lock is None:
        raise BadInput(f"runtime {runtime.id} is {runtime.kind}, the harness's own client: it has no image of its own")
    return registry


def _npm_version(packages: dict[str, dict], name: str) -> str | None:
    return packages.get(f"node_modules/{name}", {}).get("version")


def _npm_name(where: str) -> str:
    return where.removeprefix("node_modules/")


def _major(version: str) -> int:
    head = version.split(".", 1)[0]
    return int(head) if head.isdigit() else 0


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


# ---------------------------------------------------------------- the plan and the image


def build_plan(runtime: RuntimeSpec, harness: ImageRef, *, root: Path = PROJECT_ROOT) -> BuildPlan:
    """How to build the runtime's image, and its content key (nothing is fetched)."""
    registry = _registry(runtime)
    problems = lock_problems(runtime, root)
    if problems:
        raise ReproError(problems[0], lines=problems)
    dockerfile = root / DOCKERFILES[registry]
    if not dockerfile.is_file():
        raise ReproError(f"{DOCKERFILES[registry]} is missing")
    buildargs = {"HARNESS_IMAGE": harness.reference}
    base_ids = {"HARNESS_IMAGE": harness.id}
    inputs = _inputs(runtime, root)
    dockerfile_sha = sha256_file(dockerfile)
    key = image_key("runtime", dockerfile_sha, buildargs, inputs, base_ids)
    source = f"{registry}:{runtime.pin}"
    labels = {
        "repro.key": key,
        "repro.kind": "runtime",
        "repro.source": source,
        "repro.runtime.kind": runtime.kind,
        "repro.runtime.package": runtime.facts.package,
        "repro.runtime.version": runtime.version,
        "repro.runtime.lock_sha256": inputs["lock_sha256"],
        "repro.dockerfile_sha256": dockerfile_sha,
        "repro.base_image": harness.reference,
        "repro.base_id": harness.id,
    } | {LABEL_PREFIX + name: pin for name, pin in locked_packages(runtime, root).items()}
    return BuildPlan(
        name=f"runtime-{runtime.kind}",
        kind="harness",
        dockerfile=dockerfile,
        buildargs=buildargs,
        inputs=inputs,
        base_ids=base_ids,
        key=key,
        labels=labels,
        source=source,
    )


def _inputs(runtime: RuntimeSpec, root: Path) -> dict[str, str | None]:
    lock = lock_path(runtime, root)
    inputs = {"kind": runtime.kind, "version": runtime.version, "lock_sha256": sha256_file(lock)}
    if _registry(runtime) == "npm":
        return inputs | {"package_json_sha256": sha256_file(lock.parent / PACKAGE_JSON)}
    return inputs | {"wheel_target": WHEEL_TARGET_NAME}


def runtime_image(
    runtime: RuntimeSpec,
    client: DockerClient | None = None,
    *,
    harness: ImageRef | None = None,
    build: bool = False,
    log: Log = quiet,
) -> ImageRef:
    """The runtime's image for the current tree; built when asked (else a missing image is an error).
    The raw runtime is our harness's own client: its image is the harness image."""
    client = client_or_default(client)
    harness = harness or harness_image(client, build=build, log=log)
    if runtime.raw:
        return harness
    plan = build_plan(runtime, harness)
    found = resolve_plan(plan, client)
    if found is not None:
        return found
    if not build:
        raise ReproError(f"image {plan.tag} is missing; run: repro images build MATRIX")
    return build_runtime(plan, runtime, client, log)


def build_runtime_images(runtimes: list[RuntimeSpec], client: DockerClient, log: Log) -> list[ImageRef]:
    """The images of the runtimes that have one (the raw runtime has none), built where missing."""
    packaged = [runtime for runtime in runtimes if not runtime.raw]
    if not packaged:
        return []
    harness = harness_image(client, build=True, log=log)
    return [runtime_image(runtime, client, harness=harness, build=True, log=log) for runtime in packaged]


def build_runtime(
    plan: BuildPlan, runtime: RuntimeSpec, client: DockerClient, log: Log, root: Path = PROJECT_ROOT
) -> ImageRef:
    """Stage the runtime on the host (fetched and verified, cached), then build from a context holding it."""
    if _registry(runtime) == "npm":
        tree = npm_install(runtime, root, log)
        return build_in_context(plan, client, lambda context: _npm_context(plan, tree, context, log), log)
    wheels = pypi_wheels(runtime, root, log)
    lock = lock_path(runtime, root)
    return build_in_context(plan, client, lambda context: _pypi_context(plan, wheels, lock, context), log)


# ---------------------------------------------------------------- staging on the host


def runtimes_cache() -> Path:
    return cache_dir() / "runtimes"


def staged(folder: Path, make: Callable[[Path], None]) -> Path:
    """`folder`, made once by `make` in a temporary sibling and renamed into place when it succeeded
    (nothing half-done is ever reused)."""
    if folder.is_dir():
        return folder
    folder.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{folder.name}-", dir=folder.parent))
    try:
        make(work)
        try:
            os.replace(work, folder)
        except OSError:
            if not folder.is_dir():  # else another process made it meanwhile
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return folder


def npm_install(runtime: RuntimeSpec, root: Path = PROJECT_ROOT, log: Log = quiet) -> Path:
    """The runtime's node_modules as `npm ci --ignore-scripts` installs its lock for the image's
    platform (every tarball checked against the lock's integrity), with package.json and
    package-lock.json, cached by their sha256 and npm's arguments. npm skips an optional package
    whose `engines` the running Node does not meet (OpenClaw's native fs-safe under the host's Node
    20), so a first pass under the host's Node gets the lock's Node and a second runs under it."""
    lock = lock_path(runtime, root)
    package_json = lock.parent / PACKAGE_JSON
    key = sha256_bytes(b"\0".join([lock.read_bytes(), package_json.read_bytes(), " ".join(NPM_CI).encode()]))

    def install(work: Path) -> None:
        shutil.copyfile(package_json, work / PACKAGE_JSON)
        shutil.copyfile(lock, work / "package-lock.json")
        log(f"npm ci: {runtime.pin}, under the host's Node (for the lock's Node)")
        _npm_ci(runtime, work)
        with tempfile.TemporaryDirectory(prefix=".node-", dir=work.parent) as node_dir:
            shutil.copy2(work / NODE_BIN, Path(node_dir) / "node")
            log(f"npm ci: {runtime.pin}, under the lock's Node")
            _npm_ci(runtime, work, node_dir)

    return staged(runtimes_cache() / f"npm-{key[:16]}", install)


def _npm_ci(runtime: RuntimeSpec, work: Path, node_dir: str | None = None) -> None:
    """`npm ci` in `work`; `node_dir` (holding `node`) first on PATH runs npm under that Node."""
    npm = shutil.which("npm")
    if npm is None:
        raise ReproError(f"{runtime.pin}: npm is not on this host's PATH (it installs the runtime's lock)")
    path = os.pathsep.join(filter(None, [node_dir, os.environ.get("PATH", "")]))
    env = {**os.environ, "PATH": path, "npm_config_update_notifier": "false"}
    result = subprocess.run(
        [npm, *NPM_CI], cwd=work, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env
    )
    if result.returncode != 0:
        first = npm_failure(runtime, result.stdout, result.returncode)
        raise ReproError(first, lines=[first, *result.stdout.strip().splitlines()[-TAIL_LINES:]])


def npm_failure(runtime: RuntimeSpec, output: str, returncode: int) -> str:
    """One line for a failed `npm ci`: the package and version the registry lacks, else npm's last error."""
    code = re.search(r"^npm error code (\S+)", output, re.M)
    for pattern in NPM_MISSING:
        missing = pattern.search(output)
        if missing:
            why = f" ({code.group(1)})" if code else ""
            return f"{runtime.kind}: the npm registry has no {missing.group(1)}{why}; npm ci failed"
    errors = [
        line.removeprefix("npm error").strip()
        for line in output.splitlines()
        if line.startswith("npm error") and line.removeprefix("npm error").strip() and "complete log" not in line
    ]
    return f"{runtime.pin}: npm ci failed: {errors[-1] if errors else f'exit {returncode}'}"


def pypi_wheels(runtime: RuntimeSpec, root: Path = PROJECT_ROOT, log: Log = quiet) -> Path:
    """Every wheel of the runtime's lock for the harness image's platform, downloaded with every hash
    required, cached by the lock's and the target's sha256."""
    lock = lock_path(runtime, root)
    key = sha256_bytes(lock.read_bytes() + b"\0" + WHEEL_TARGET_NAME.encode())

    def download(work: Path) -> None:
        log(f"downloading the wheels of {runtime.pin} ({WHEEL_TARGET_NAME})")
        try:
            download_locked(lock, work, f"{runtime.pin} wheels")
        except ReproError as error:
            first = pip_failure(runtime, error.lines)
            raise ReproError(first, lines=[first, *error.lines]) from None

    return staged(runtimes_cache() / f"pypi-{key[:16]}", download)


def pip_failure(runtime: RuntimeSpec, lines: list[str]) -> str:
    """One line for a failed `pip download`: the requirement pip could not get, else pip's first line."""
    text = "\n".join(lines)
    mismatch = PIP_MISMATCH.search(text)
    if mismatch:
        return f"{runtime.kind}: no wheel of {mismatch.group(1)} for the image's platform has the lock's hash"
    missing = PIP_MISSING.search(text)
    if missing:
        return f"{runtime.kind}: the package index has no wheel of {missing.group(1)} for the image's platform"
    return lines[0]


def write_tar(folder: Path, target: Path) -> None:
    """`folder`'s tree as a tar that depends on its contents only: sorted, mtime 0, owner root,
    modes 0755 (directories, executables) or 0644; links kept as links."""
    with tarfile.open(target, "w", format=tarfile.PAX_FORMAT) as tar:
        for path in _tree(folder):
            info = tar.gettarinfo(str(path), arcname=path.relative_to(folder).as_posix())
            info.mtime, info.uid, info.gid, info.uname, info.gname = 0, 0, 0, "", ""
            info.mode = 0o777 if info.issym() else 0o755 if info.isdir() or info.mode & 0o111 else 0o644
            if info.isreg():
                with path.open("rb") as handle:
                    tar.addfile(info, handle)
            else:
                tar.addfile(info)


def _tree(folder: Path) -> list[Path]:
    found: list[Path] = []
    for top, directories, files in os.walk(folder):  # links to folders are listed, never followed
        found += [Path(top) / name for name in (*directories, *files)]
    return sorted(found, key=lambda path: path.relative_to(folder).parts)


def sha256sums(paths: list[Path]) -> str:
    return "".join(f"{sha256_file(path)}  {path.name}\n" for path in sorted(paths))


def _npm_context(plan: BuildPlan, tree: Path, context: Path, log: Log) -> None:
    (context / "Dockerfile").write_bytes(plan.dockerfile.read_bytes())
    log(f"packing {tree.name} into runtime.tar")
    write_tar(tree, context / "runtime.tar")
    scripted = lifecycle_order(npm_packages((tree / "package-lock.json").read_bytes()))
    (context / "lifecycle.txt").write_text("".join(f"{where}\n" for where in scripted))
    (context / "SHA256SUMS").write_text(sha256sums([context / "runtime.tar", context / "lifecycle.txt"]))


def _pypi_context(plan: BuildPlan, wheels_dir: Path, lock: Path, context: Path) -> None:
    (context / "Dockerfile").write_bytes(plan.dockerfile.read_bytes())
    (context / "requirements.txt").write_bytes(lock.read_bytes())
    wheels = context / "wheels"
    wheels.mkdir()
    for wheel in sorted(wheels_dir.glob("*.whl")):
        link_or_copy(wheel, wheels / wheel.name)
    (wheels / "SHA256SUMS").write_text(sha256sums(list(wheels.glob("*.whl"))))
