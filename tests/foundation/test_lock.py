"""The host environment's hash locks (locks/, made by scripts/lock) agree with pyproject.toml.

- every requirement of the install set (the base dependencies, its extras, the build requirements)
  is locked, at a version its specifier allows;
- every lock entry is in that set's closure: uv's `# via` lines lead from it to pyproject.toml;
- every entry carries a sha256, and the host lock's pins are the dev lock's;
- the environment these tests run in, when a lock of ours installed it, is exactly the lock's set.
"""

from __future__ import annotations

import hashlib
import re
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from repro.bundle.provenance import host_lock

ROOT = Path(__file__).resolve().parents[2]
SETS = {"dev": ("host", "test", "inspect"), "host": ("host",)}
PYTHONS = ("3.11", "3.12")
ROOTS = ("repro (pyproject.toml)", "pyproject.toml [build-system]")


class Entry:
    def __init__(self, version: str, hashes: list[str], via: list[str]) -> None:
        self.version, self.hashes, self.via = version, hashes, via


def parse_lock(text: str) -> dict[str, Entry]:
    """name -> its pin, hashes and `# via` lines, from uv's requirements format."""
    entries: dict[str, Entry] = {}
    current: Entry | None = None
    in_via = False
    for line in text.splitlines():
        pin = re.match(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+)", line)
        if pin:
            current = entries.setdefault(canonicalize_name(pin[1]), Entry(pin[2], [], []))
            in_via = False
        elif current is not None and (found := re.search(r"--hash=sha256:([0-9a-f]{64})", line)):
            current.hashes.append(found[1])
        elif current is not None and (via := re.match(r"^\s+# via ?(.*)$", line)):
            in_via = True
            current.via += [via[1].strip()] if via[1].strip() else []
        elif current is not None and in_via and (more := re.match(r"^\s+#\s{3}(.+)$", line)):
            current.via.append(more[1].strip())
    return entries


def requirements(extras: tuple[str, ...], python: str) -> list[Requirement]:
    """pyproject.toml's requirements of one install set, with markers true on Linux x86_64 at `python`."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    texts = project["build-system"]["requires"] + project["project"]["dependencies"]
    texts += [text for extra in extras for text in project["project"]["optional-dependencies"][extra]]
    env = {"python_version": python, "python_full_version": f"{python}.0", "sys_platform": "linux"}
    env |= {"platform_machine": "x86_64", "platform_system": "Linux", "os_name": "posix", "extra": ""}
    found = [Requirement(text) for text in texts]
    return [r for r in found if r.marker is None or r.marker.evaluate(env)]


def lock_of(name: str, python: str) -> dict[str, Entry]:
    path = ROOT / "locks" / f"{name}-py{python}.txt"
    assert path.is_file(), f"{path.name} is missing: run scripts/lock"
    return parse_lock(path.read_text())


CASES = [(name, python) for name in SETS for python in PYTHONS]


@pytest.mark.parametrize(("name", "python"), CASES)
def test_every_requirement_is_locked_within_its_specifier(name: str, python: str) -> None:
    lock = lock_of(name, python)
    for requirement in requirements(SETS[name], python):
        entry = lock.get(canonicalize_name(requirement.name))
        assert entry is not None, f"{requirement} is in pyproject.toml and not in {name}-py{python}.txt"
        assert requirement.specifier.contains(entry.version, prereleases=True), (
            f"{name}-py{python}.txt pins {requirement.name}=={entry.version}, outside {requirement}"
        )


@pytest.mark.parametrize(("name", "python"), CASES)
def test_every_lock_entry_is_in_the_closure_and_hashed(name: str, python: str) -> None:
    lock = lock_of(name, python)
    for package, entry in lock.items():
        assert entry.hashes, f"{package} has no sha256 in {name}-py{python}.txt"
    reached = {p for p, e in lock.items() if any(v.startswith(ROOTS) for v in e.via)}
    while True:
        more = {p for p, e in lock.items() if p not in reached and reached & {canonicalize_name(v) for v in e.via}}
        if not more:
            break
        reached |= more
    assert set(lock) == reached, f"outside pyproject.toml's closure: {sorted(set(lock) - reached)}"


@pytest.mark.parametrize("python", PYTHONS)
def test_the_host_lock_pins_what_the_dev_lock_pins(python: str) -> None:
    host, dev = lock_of("host", python), lock_of("dev", python)
    assert {p: e.version for p, e in host.items() if dev.get(p) is None or dev[p].version != e.version} == {}


def test_a_lock_missing_a_requirement_or_holding_a_stray_entry_is_caught() -> None:
    """The parse and closure the tests above use, on a lock with one requirement dropped and one orphan."""
    text = (ROOT / "locks" / "host-py3.11.txt").read_text()
    dropped = re.sub(r"(?ms)^typer==.*?(?=^\S)", "", text)
    assert "typer" not in parse_lock(dropped)
    orphan = parse_lock(text + "stray-package==1.0 \\\n    --hash=sha256:" + "0" * 64 + "\n    # via nobody\n")
    assert orphan["stray-package"].via == ["nobody"]
    assert not any(v.startswith(ROOTS) or canonicalize_name(v) in orphan for v in orphan["stray-package"].via)


def test_this_environment_is_its_lock_when_a_lock_installed_it() -> None:
    """`pip freeze` of a venv that scripts/common.sh made is the lock's set: nothing drifted."""
    found = host_lock()
    if found is None:
        pytest.skip(f"{sys.prefix} was not installed from a lock of ours (no repro-lock.json)")
    lock = ROOT / "locks" / found.name
    assert lock.is_file()
    assert found.sha256 == hashlib.sha256(lock.read_bytes()).hexdigest(), f"{lock.name} changed: rerun ./scripts/test"
    assert found.drift == [], f"{sys.prefix} departs from {found.name}: {found.drift[:5]}"
