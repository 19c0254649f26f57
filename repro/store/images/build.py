"""Building an image: its context assembled (inputs fetched and verified), `docker build` on the
host network with its log streamed and its tail kept, the tag checked after."""

from __future__ import annotations

import re
import tempfile
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import IO, TYPE_CHECKING

from repro.core.config import PROJECT_ROOT, cache_dir
from repro.core.errors import ReproError
from repro.core.files import link_or_copy, sha256_bytes
from repro.store.images.bases import find_local
from repro.store.images.keys import BUILD_TIMEOUT_S, LOG_TAIL_LINES, BuildPlan, ImageRef, Log, quiet, ref_for_plan
from repro.store.images.wheels import build_repro_wheel, harness_wheels

if TYPE_CHECKING:
    from repro.containers.client import DockerClient

__all__ = ["BuildLog", "build_image", "build_in_context", "build_log_path", "docker_build", "link_or_copy"]


def build_image(plan: BuildPlan, client: DockerClient, *, log: Log = quiet) -> ImageRef:
    """Assemble the build context (fetching and verifying inputs), build, check the tag exists."""
    fill = harness_context if plan.kind == "harness" else engine_context
    return build_in_context(plan, client, lambda context: fill(plan, context, log), log)


def build_in_context(plan: BuildPlan, client: DockerClient, fill: Callable[[Path], None], log: Log = quiet) -> ImageRef:
    """Build `plan` from a temporary context under the cache that `fill` assembles; the tag must exist after."""
    work_parent = cache_dir() / "contexts"
    work_parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f"{plan.name}-", dir=work_parent) as work:
        context = Path(work)
        fill(context)
        docker_build(plan, context, client, log)
    image = find_local(plan.tag, client)
    if image is None:
        raise ReproError(f"build of {plan.tag} reported success but the image is not there")
    return ref_for_plan(plan, image)


def docker_build(plan: BuildPlan, context: Path, client: DockerClient, log: Log) -> None:
    tail: deque[str] = deque(maxlen=LOG_TAIL_LINES)
    error: str | None = None
    try:
        stream = client.api.build(
            path=str(context),
            dockerfile="Dockerfile",
            tag=plan.tag,
            buildargs=plan.buildargs,
            labels=plan.labels,
            network_mode="host",
            rm=True,
            forcerm=True,
            pull=False,
            decode=True,
            timeout=BUILD_TIMEOUT_S,
            use_config_proxy=False,
        )
        pending = ""
        for chunk in stream:
            if "stream" in chunk:
                pending += _ANSI.sub("", str(chunk["stream"]))
                *complete, pending = pending.split("\n")
                for line in complete:
                    _emit(line, tail, log)
            elif "error" in chunk:
                error = str(chunk.get("errorDetail", {}).get("message") or chunk["error"]).strip()
            elif "status" in chunk:
                log(str(chunk["status"]))
        _emit(pending, tail, log)
    except Exception as exc:  # API errors (bad Dockerfile, daemon gone) land here
        from docker.errors import APIError, DockerException

        if not isinstance(exc, (APIError, DockerException)) and "Timeout" not in type(exc).__name__:
            raise
        error = getattr(exc, "explanation", None) or str(exc)
    if error is not None:
        first = error.splitlines()[0] if error else "unknown error"
        lines = [f"build of {plan.tag} failed: {first}"]
        if tail:
            lines.append(f"--- last {len(tail)} lines of the build log ---")
            lines += list(tail)
        raise ReproError(lines[0], lines=lines)


_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def _emit(line: str, tail: deque, log: Log) -> None:
    line = line.rstrip()
    if line.strip():
        tail.append(line)
        log(line)


def build_log_path(name: str) -> Path:
    """Where an image's build log is written: `<cache>/build-logs/<name>.log` (the latest build
    of that image; the cache is `REPRO_CACHE`, else `~/.cache/repro`)."""
    return cache_dir() / "build-logs" / f"{name}.log"


class BuildLog:
    """A build's log, written to `path` (opened at its first line) and to `stream` too when given
    (`--log`). Used as a context: a ReproError raised inside names the file and carries the log's
    last lines (unless it carries them already, as a failed `docker build` does)."""

    def __init__(self, path: Path, stream: Log | None = None) -> None:
        self.path = path
        self.stream = stream
        self.tail: deque[str] = deque(maxlen=LOG_TAIL_LINES)
        self.out: IO[str] | None = None

    def __call__(self, line: str) -> None:
        if self.out is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.out = self.path.open("w", encoding="utf-8")
        self.out.write(line + "\n")
        self.out.flush()
        self.tail.append(line)
        if self.stream is not None:
            self.stream(line)

    @property
    def written(self) -> bool:
        return self.out is not None

    def __enter__(self) -> BuildLog:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, traceback: object) -> None:
        if self.out is not None:
            self.out.close()
        if not isinstance(error, ReproError) or self.out is None:
            return
        tail = (
            []
            if len(error.lines) > 1 or not self.tail
            else [f"--- last {len(self.tail)} lines of the build log ---", *self.tail]
        )
        lines = [*error.lines, *tail, f"the whole build log: {self.path}"]
        raise type(error)(lines[0], lines=lines) from error


def engine_context(plan: BuildPlan, context: Path, log: Log) -> None:
    """The Dockerfile and the source: its verified archive, or a Go module's file proxy (goproxy/)."""
    from repro.store.gomodules import proxy_context
    from repro.store.sources import fetch_source

    assert plan.engine is not None and plan.engine.build is not None
    source = plan.engine.build.source
    (context / "Dockerfile").write_bytes(plan.dockerfile.read_bytes())
    if source.go is not None:
        proxy_context(source, context / "goproxy", log)
        return
    link_or_copy(fetch_source(source, log=log), context / "source.archive")


def harness_context(plan: BuildPlan, context: Path, log: Log, *, root: Path = PROJECT_ROOT) -> None:
    (context / "Dockerfile").write_bytes(plan.dockerfile.read_bytes())
    wheels = context / "wheels"
    wheels.mkdir()
    for wheel in sorted(harness_wheels(root=root, log=log).glob("*.whl")):
        link_or_copy(wheel, wheels / wheel.name)
    build_repro_wheel(wheels, root=root, log=log)
    sums = "".join(f"{sha256_bytes(w.read_bytes())}  {w.name}\n" for w in sorted(wheels.glob("*.whl")))
    (wheels / "SHA256SUMS").write_text(sums)
