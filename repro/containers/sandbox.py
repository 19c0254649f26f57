"""Hardened containers: what they are created with, what is really applied, and short-lived probes.

Every container repro starts is created (never `containers.run(tag)`, which silently pulls) from a
resolved image id with `SandboxSettings`: a non-root user, a read-only root, tmpfs scratch,
`cap_drop=ALL`, `no-new-privileges`, pids/memory/CPU limits, `TZ=UTC`, `PYTHONHASHSEED=0` and the
labels `repro.run`, `repro.cell`, `repro.role`. `read_back(container)` records what Docker really
applied, from `container.attrs`, not from intent.

The orchestrator never opens a TCP connection to a container: `run_probe` starts a short-lived
harness-image container joined to the engine's network namespace (`network_mode=container:<id>`),
which runs `python3 -m harness probe ...` and writes one JSON object into a mounted output folder;
the result is read from that file, never from stdout. If the engine container stops while a probe
runs, the probe is killed and `EngineDied` carries the engine's log tail.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from pathlib import Path
from typing import Any, Literal, TypeVar

from harness.contracts import EXIT_BAD_INPUT, EXIT_ENGINE_UNREACHABLE, EXIT_OK, ProbeResult
from repro.containers import lifecycle as containers
from repro.containers.client import Container, DockerClient
from repro.core.errors import BadInput, ReproError
from repro.core.files import GIB, read_regular, scratch_dir, short_error
from repro.spec.findings import SANDBOX_UID, MountInfo, SandboxSettings

LABEL_RUN = "repro.run"
LABEL_CELL = "repro.cell"
LABEL_ROLE = "repro.role"
OUT_DIR = "/out"
PROBE_RESULT = "result.json"
MAX_PROBE_RESULT_BYTES = 8 * 1024**2
MIB = 1024**2

Role = Literal["engine", "probe", "harness"]
R = TypeVar("R", bound=ProbeResult)


class EngineDied(ReproError):
    """An engine fault: the engine container exited, never became ready, or stopped answering."""

    def __init__(
        self, message: str, *, log_tail: str = "", exit_code: int | None = None, probe_result: ProbeResult | None = None
    ) -> None:
        lines = [message] + ([f"  {line}" for line in log_tail.splitlines()[-15:]] if log_tail else [])
        super().__init__(message, lines=lines)
        self.log_tail = log_tail
        self.container_exit_code = exit_code  # the engine container's, not the CLI's exit status
        self.probe_result = probe_result  # what the probe wrote before the engine died, if anything


class ProbeFailed(ReproError):
    """A probe container could not do its job (bad input, unreachable engine, crash, timeout)."""

    def __init__(
        self, message: str, *, exit_code: int | None = None, log_tail: str = "", result: ProbeResult | None = None
    ) -> None:
        lines = [message] + ([f"  {line}" for line in log_tail.splitlines()[-10:]] if log_tail else [])
        super().__init__(message, lines=lines)
        self.probe_exit_code = exit_code
        self.log_tail = log_tail
        self.result = result


class ProbeUnreachable(ProbeFailed):
    """The probe ran but could not reach the engine inside the namespace (probe exit status 3)."""


# ---------------------------------------------------------------- settings


def labels(run_id: str, cell_id: str | None, role: Role) -> dict[str, str]:
    out = {LABEL_RUN: run_id, LABEL_ROLE: role}
    if cell_id:
        out[LABEL_CELL] = cell_id
    return out


def base_env() -> dict[str, str]:
    return {"TZ": "UTC", "PYTHONHASHSEED": "0"}


def engine_settings(
    *,
    run_id: str,
    cell_id: str | None,
    mem_limit: int | None,
    nano_cpus: int | None,
    pids_limit: int = 1024,
    tmpfs_size: str = "256m",
    env: dict[str, str] | None = None,
) -> SandboxSettings:
    """An engine: sealed (network none), non-root, read-only root with a tmpfs; the GGUF is mounted read-only."""
    return SandboxSettings(
        pids_limit=pids_limit,
        mem_limit=mem_limit,
        nano_cpus=nano_cpus,
        tmpfs={"/tmp": f"rw,nosuid,nodev,size={tmpfs_size}"},
        network_mode="none",
        env={**base_env(), "HOME": "/tmp", **(env or {})},
        labels=labels(run_id, cell_id, "engine"),
    )


def probe_settings(*, run_id: str, cell_id: str | None, engine_id: str) -> SandboxSettings:
    """A probe: joins the engine's namespace, small limits, writes one JSON file to /out."""
    return SandboxSettings(
        pids_limit=64,
        mem_limit=512 * MIB,
        nano_cpus=1_000_000_000,
        tmpfs={"/tmp": "rw,nosuid,nodev,noexec,size=32m"},
        network_mode=f"container:{engine_id}",
        env={**base_env(), "HOME": "/tmp", "PYTHONDONTWRITEBYTECODE": "1", "HF_HUB_OFFLINE": "1"},
        labels=labels(run_id, cell_id, "probe"),
    )


def harness_settings(
    *,
    run_id: str,
    cell_id: str,
    engine_id: str,
    mem_limit: int = 2 * GIB,
    nano_cpus: int = 1_000_000_000,
    pids_limit: int = 256,
) -> SandboxSettings:
    """The harness container of one cell: like a probe, with room for scenario workspaces."""
    return SandboxSettings(
        pids_limit=pids_limit,
        mem_limit=mem_limit,
        nano_cpus=nano_cpus,
        tmpfs={"/tmp": "rw,nosuid,nodev,size=256m"},
        network_mode=f"container:{engine_id}",
        env={**base_env(), "HOME": "/tmp", "PYTHONDONTWRITEBYTECODE": "1", "HF_HUB_OFFLINE": "1"},
        labels=labels(run_id, cell_id, "harness"),
    )


def hardening_problems(settings: SandboxSettings, role: Role) -> list[str]:
    """What a (read-back) container lacks of the required hardening; empty when it is as required."""
    problems = []
    user = settings.user.split(":")[0]
    if user in ("", "0", "root"):
        problems.append(f"runs as root (user '{settings.user}')")
    if not settings.read_only:
        problems.append("root filesystem is writable")
    if "ALL" not in [c.upper() for c in settings.cap_drop]:
        problems.append("capabilities are not all dropped")
    if settings.cap_add:
        problems.append(f"capabilities added: {', '.join(settings.cap_add)}")
    if not any(opt.startswith("no-new-privileges") and not opt.endswith("false") for opt in settings.security_opt):
        problems.append("no-new-privileges is not set")
    if settings.privileged:
        problems.append("privileged")
    for name in ("pids_limit", "mem_limit", "nano_cpus"):
        value = getattr(settings, name)
        if not value or value <= 0:
            problems.append(f"no {name}")
    for key, value in base_env().items():
        if settings.env.get(key) != value:
            problems.append(f"{key} is not {value}")
    if LABEL_RUN not in settings.labels or settings.labels.get(LABEL_ROLE) != role:
        problems.append(f"labels {LABEL_RUN}/{LABEL_ROLE}={role} missing")
    if role == "engine":
        if settings.network_mode != "none":
            problems.append(f"engine network is '{settings.network_mode}', not none")
        if any(not m.read_only for m in settings.mounts):
            problems.append("engine has a writable mount")
    else:
        if not settings.network_mode.startswith("container:"):
            problems.append(f"{role} network is '{settings.network_mode}', not the engine's namespace")
        writable = [m.target for m in settings.mounts if not m.read_only]
        if len(writable) > 1:
            problems.append(
                f"{role} has {len(writable)} writable mounts ({', '.join(writable)}); one output mount is allowed"
            )
    return problems


def writable_by_sandbox(folder: Path) -> Path:
    """Let the sandbox user write `folder`: its owner when the host may chown, else world-writable."""
    try:
        os.chown(folder, SANDBOX_UID, SANDBOX_UID)
    except PermissionError:
        os.chmod(folder, 0o777)
    return folder


# ---------------------------------------------------------------- create kwargs


def image_id(client: DockerClient | None, image: Any) -> str:
    """A local image id from an ImageRef-like object (`.id`), an id, or a local reference (which
    needs a client). Never pulls."""
    ident = getattr(image, "id", None) or (image if isinstance(image, str) else None)
    if not ident:
        raise BadInput(f"not an image: {image!r}")
    if ident.startswith("sha256:"):
        return ident
    from docker.errors import ImageNotFound

    if client is None:
        raise BadInput(f"image {ident} is named by reference: resolving it needs the Docker engine")
    try:
        return client.images.get(ident).id
    except ImageNotFound:
        raise BadInput(
            f"image {ident} is not present locally (repro never pulls at run time); build or load it first"
        ) from None


def bind(source: str | os.PathLike, target: str, *, read_only: bool) -> Any:
    from docker.types import Mount

    return Mount(target=target, source=str(Path(source).resolve()), type="bind", read_only=read_only)


def create_kwargs(
    settings: SandboxSettings,
    image: str,
    command: list[str] | None,
    *,
    name: str | None = None,
    entrypoint: list[str] | None = None,
    mounts: list | None = None,
    working_dir: str | None = None,
    device_requests: list | None = None,
) -> dict[str, Any]:
    """Keyword arguments of `client.containers.create(...)` for these settings."""
    if not image.startswith("sha256:"):
        raise BadInput(f"containers are created from a resolved image id (sha256:...), not '{image}'")
    kwargs: dict[str, Any] = {
        "image": image,
        "command": command,
        "user": settings.user,
        "read_only": settings.read_only,
        "cap_drop": list(settings.cap_drop),
        "security_opt": list(settings.security_opt),
        "privileged": False,
        "pids_limit": settings.pids_limit,
        "mem_limit": settings.mem_limit,
        "nano_cpus": settings.nano_cpus,
        "tmpfs": dict(settings.tmpfs),
        "network_mode": settings.network_mode,
        "environment": dict(settings.env),
        "labels": dict(settings.labels),
        "mounts": list(mounts or []),
        "stdin_open": False,
        "tty": False,
        "init": True,
    }
    if settings.mem_limit:
        kwargs["memswap_limit"] = settings.mem_limit  # no swap beyond the memory limit
    if settings.cap_add:
        kwargs["cap_add"] = list(settings.cap_add)
    if name:
        kwargs["name"] = name
    if entrypoint is not None:
        kwargs["entrypoint"] = entrypoint
    if working_dir:
        kwargs["working_dir"] = working_dir
    if device_requests:
        kwargs["device_requests"] = list(device_requests)
    return kwargs


def probe_kwargs(
    image: str,
    engine_id: str,
    argv: list[str],
    out_dir: Path,
    *,
    run_id: str,
    cell_id: str | None,
    mounts: list | None = None,
    name: str | None = None,
) -> dict[str, Any]:
    settings = probe_settings(run_id=run_id, cell_id=cell_id, engine_id=engine_id)
    all_mounts = [bind(out_dir, OUT_DIR, read_only=False)] + list(mounts or [])
    command = [*argv, "--out", f"{OUT_DIR}/{PROBE_RESULT}"]
    return create_kwargs(
        settings,
        image,
        command,
        name=name,
        entrypoint=["python3", "-m", "harness", "probe"],
        mounts=all_mounts,
        working_dir="/tmp",
    )


def harness_kwargs(
    image: str,
    engine_id: str,
    command: list[str],
    out_dir: Path,
    *,
    run_id: str,
    cell_id: str,
    mounts: list | None = None,
    name: str | None = None,
    settings: SandboxSettings | None = None,
) -> dict[str, Any]:
    """The harness container of a cell: one writable output mount at /out, everything else read-only."""
    settings = settings or harness_settings(run_id=run_id, cell_id=cell_id, engine_id=engine_id)
    all_mounts = [bind(out_dir, OUT_DIR, read_only=False)] + list(mounts or [])
    return create_kwargs(
        settings,
        image,
        command,
        name=name,
        entrypoint=["python3", "-m", "harness"],
        mounts=all_mounts,
        working_dir="/tmp",
    )


def container_name(run_id: str, role: Role, suffix: str = "") -> str:
    """A readable, unique container name: repro-<run>-<role>[-suffix]-<random>."""
    tail = os.urandom(3).hex()
    safe = "".join(
        ch if ch.isalnum() or ch in "_.-" else "-" for ch in f"repro-{run_id}-{role}{'-' + suffix if suffix else ''}"
    )
    return f"{safe[:100]}-{tail}"


# ---------------------------------------------------------------- read back


def read_back(container: Container) -> SandboxSettings:
    """What Docker really applied to a container (from `container.attrs`)."""
    with contextlib.suppress(Exception):
        container.reload()
    attrs = container.attrs
    host = attrs.get("HostConfig") or {}
    config = attrs.get("Config") or {}
    env = {}
    for item in config.get("Env") or []:
        key, _, value = item.partition("=")
        env[key] = value
    mounts = [
        MountInfo(target=m.get("Destination", ""), type=m.get("Type", ""), read_only=not m.get("RW", True))
        for m in attrs.get("Mounts") or []
    ]
    requests = [
        {
            "count": r.get("Count"),
            "device_ids": r.get("DeviceIDs") or [],
            "capabilities": r.get("Capabilities") or [],
            "driver": r.get("Driver") or "",
        }
        for r in host.get("DeviceRequests") or []
    ]
    return SandboxSettings(
        user=config.get("User") or "",
        read_only=bool(host.get("ReadonlyRootfs")),
        cap_drop=list(host.get("CapDrop") or []),
        cap_add=list(host.get("CapAdd") or []),
        security_opt=list(host.get("SecurityOpt") or []),
        privileged=bool(host.get("Privileged")),
        pids_limit=host.get("PidsLimit") or None,
        mem_limit=host.get("Memory") or None,
        nano_cpus=host.get("NanoCpus") or None,
        tmpfs=dict(host.get("Tmpfs") or {}),
        network_mode=host.get("NetworkMode") or "",
        env=env,
        labels=dict(config.get("Labels") or {}),
        mounts=sorted(mounts, key=lambda m: m.target),
        device_requests=requests,
    )


# ---------------------------------------------------------------- probes


def run_probe(
    client: DockerClient,
    image_id: str,
    engine_container: Container,
    argv: list[str],
    result_type: type[R],
    *,
    run_id: str,
    cell_id: str | None = None,
    timeout: float,
    mounts: list | None = None,
) -> R:
    """Run `python3 -m harness probe <argv>` in the engine's namespace; return the result it wrote,
    validated as `result_type` (the model of the action `argv[0]`).

    Raises EngineDied when the engine container stops meanwhile (with its log tail),
    ProbeUnreachable when the probe could not reach the engine, ProbeFailed otherwise (a result
    that is not the action's model included).
    """
    what = argv[0] if argv else ""
    out_dir = writable_by_sandbox(scratch_dir("probe-"))
    kwargs = probe_kwargs(
        image_id,
        engine_container.id,
        argv,
        out_dir,
        run_id=run_id,
        cell_id=cell_id,
        mounts=mounts,
        name=container_name(run_id, "probe", what),
    )
    try:
        try:
            with containers.started(client, kwargs) as probe:
                ended = containers.wait(
                    probe, timeout, watch=lambda: require_running(engine_container, f"while probe '{what}' ran")
                )
        except (EngineDied, ProbeFailed):
            raise
        except Exception as error:  # docker.errors.APIError: e.g. joining a namespace that is gone
            require_running(engine_container, f"; probe '{what}' cannot join it")
            raise ProbeFailed(f"probe '{what}' could not start: {short_error(error)}") from None
        if ended.timed_out:
            raise ProbeFailed(f"probe '{what}' did not finish within {timeout:g}s", log_tail=ended.log_tail)
        result, unreadable = read_result(out_dir / PROBE_RESULT, result_type, MAX_PROBE_RESULT_BYTES)
        # whatever the probe saw, the engine died under it
        require_running(engine_container, f"while probe '{what}' ran", probe_result=result)
        if ended.code == EXIT_OK and result is not None:
            return result
        reason = (result.error if result else None) or unreadable
        kind, message = ProbeFailed, f"probe '{what}' failed (exit status {ended.code}): {reason}"
        if ended.code == EXIT_ENGINE_UNREACHABLE:
            kind, message = ProbeUnreachable, f"probe '{what}': engine unreachable inside its namespace: {reason}"
        elif ended.code == EXIT_BAD_INPUT:
            message = f"probe '{what}' refused its input: {reason}"
        raise kind(message, exit_code=ended.code, log_tail=ended.log_tail, result=result)
    finally:
        shutil.rmtree(out_dir, ignore_errors=True)


def require_running(engine_container: Container, when: str, probe_result: ProbeResult | None = None) -> None:
    """EngineDied (with its exit code and log tail) unless the engine container is running."""
    if containers.status(engine_container) == "running":
        return
    code = containers.state(engine_container).get("ExitCode")
    raise EngineDied(
        f"engine container {engine_container.name} stopped (exit status {code}) {when}",
        log_tail=containers.log_tail(engine_container),
        exit_code=code,
        probe_result=probe_result,
    )


def read_result(path: Path, result_type: type[R], limit: int) -> tuple[R | None, str]:
    """A result a probe container wrote, as its action's model, or None and why not (untrusted
    input: a regular file within `limit`, no link followed, validated)."""
    if not os.path.lexists(path):
        return None, "no result file"
    try:
        return result_type.model_validate_json(read_regular(path, limit)), ""
    except BadInput as error:
        return None, f"the result file is refused: {short_error(error, 200)}"
    except ValueError as error:  # pydantic's ValidationError included
        return None, f"unreadable result: {short_error(error, 200)}"
