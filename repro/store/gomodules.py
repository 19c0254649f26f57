"""A Go module's build inputs as a file proxy: fetched once on the host by `go mod download` into a
module cache of their own (`<cache>/go/<module>@<version>/`), verified there, and laid into an image
build context, where `go install module@version` reads them with GOPROXY=file:// and no network.

What is verified on the host, before any build: the module's h1: hash against the pin (Go also
checks it against the checksum database), the sha256 of its zip against the pin, every module of
its build list against the module's own go.sum (Go refuses a mismatch), and the toolchain module's
h1: against the pin. The context carries a SHA256SUMS of every file, checked again in the build.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

from repro.core.config import cache_dir
from repro.core.errors import BadInput, ReproError
from repro.core.files import link_or_copy, sha256_file
from repro.spec.matrix import EngineSource, GoModule
from repro.store.images.keys import Log

GO_TIMEOUT_S = 900
TOOLCHAIN_MODULE = "golang.org/toolchain"


def module_cache(module: GoModule) -> Path:
    """The pin's own module cache: nothing another pin fetched can enter its proxy."""
    return cache_dir() / "go" / f"{module.module.replace('/', '_')}@{module.version}"


def go_environment(cache: Path) -> dict[str, str]:
    """The host's environment (its proxy, checksum database and CA settings), with this pin's own
    module cache and no toolchain switching or workspace."""
    return {**os.environ, "GOMODCACHE": str(cache), "GOFLAGS": "-mod=mod", "GOTOOLCHAIN": "local", "GOWORK": "off"}


def go_download(arguments: list[str], cache: Path, cwd: Path | None = None) -> list[dict]:
    """`go mod download -json ARGS`: one record per module, or BadInput naming the first error."""
    if shutil.which("go") is None:
        raise BadInput("building a Go module needs Go (1.21 or newer) on the host for `go mod download`: install it")
    try:
        done = subprocess.run(
            ["go", "mod", "download", "-json", *arguments],
            cwd=cwd,
            env=go_environment(cache),
            capture_output=True,
            text=True,
            timeout=GO_TIMEOUT_S,
        )
    except subprocess.TimeoutExpired:
        raise ReproError(f"go mod download {' '.join(arguments)} took over {GO_TIMEOUT_S} s") from None
    records = list(json_records(done.stdout))
    failed = [r for r in records if r.get("Error")] or ([{"Error": done.stderr.strip()}] if done.returncode else [])
    if failed:
        raise BadInput(f"go mod download {' '.join(arguments) or 'all'}: {str(failed[0]['Error']).splitlines()[0]}")
    return records


def json_records(text: str) -> Iterator[dict]:
    """The concatenated JSON objects `go mod download -json` prints."""
    decoder, at = json.JSONDecoder(), 0
    while True:
        while at < len(text) and text[at].isspace():
            at += 1
        if at >= len(text):
            return
        record, at = decoder.raw_decode(text, at)
        yield record


def fetch_module(source: EngineSource, log: Log) -> Path:
    """Fetch and verify the module, its build list and its toolchain; return the cache's proxy folder."""
    module = source.go
    assert module is not None
    cache = module_cache(module)
    log(f"go mod download {module.module}@{module.version} (and its build list, and Go {module.toolchain})")
    pinned = f"go module {module.module}@{module.version}"
    (main,) = go_download([f"{module.module}@{module.version}"], cache)
    if main.get("Sum") != module.sum:
        raise BadInput(f"{pinned}: its hash is {main.get('Sum')}, the pin {module.sum}")
    actual = sha256_file(Path(main["Zip"]))
    if actual != source.sha256:
        raise BadInput(f"{pinned}: its zip's sha256 is {actual}, the pin {source.sha256}")
    go_download([], cache, cwd=Path(main["Dir"]))  # every module of its build list, checked against its go.sum
    (tool,) = go_download([f"{TOOLCHAIN_MODULE}@{module.toolchain_version}"], cache)
    if tool.get("Sum") != module.toolchain_sum:
        found = tool.get("Sum")
        raise BadInput(f"Go {module.toolchain}: the toolchain module hashes to {found}, the pin {module.toolchain_sum}")
    return cache / "cache" / "download"


def proxy_context(source: EngineSource, target: Path, log: Log) -> None:
    """The module proxy as files under `target` (hard links where the cache allows), with SHA256SUMS."""
    proxy = fetch_module(source, log)
    sums = []
    for path in sorted(p for p in proxy.rglob("*") if p.is_file() and not p.is_symlink()):
        relative = path.relative_to(proxy)
        if path.suffix == ".lock" or relative.parts[0] == "sumdb":
            continue  # download locks and checksum-database tiles: not read by `go install m@v`
        copied = target / relative
        link_or_copy(path, copied)
        sums.append(f"{sha256_file(copied)}  {relative.as_posix()}\n")
    (target / "SHA256SUMS").write_text("".join(sums))
    log(f"module proxy: {len(sums)} files")
