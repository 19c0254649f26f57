"""The sandbox audit: from inside a container with a cell's harness settings, try every escape
and record what happened (``python -m harness probe audit``).

Each check returns an `AuditItem`: attempted, blocked, and a detail in plain words. An escape is
blocked only when it failed for the reason the sandbox gives (no route, read-only, no permission,
a limit); a refused TCP connection means packets got out, so it is not blocked. The fork bomb
stops at the pids limit (or `max_forks`) and kills its children; the allocation past the memory
limit happens in a child process, so the audit survives it. Stdlib only (the contract aside).
"""

from __future__ import annotations

import errno
import os
import signal
import socket
import threading
import time
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from harness.contracts import AuditItem, SandboxAudit

MIB = 1024**2
PAGE = 4096
NO_ROUTE = {errno.ENETUNREACH, errno.EHOSTUNREACH, errno.EACCES, errno.EPERM, errno.EADDRNOTAVAIL}
DOCKER_SOCKETS = ("/var/run/docker.sock", "/run/docker.sock")
WRITE_TARGETS = ("/etc", "/usr", "/usr/local/lib", "/var", "/home", "/opt", "/root")
FALLBACK_GATEWAY = "172.17.0.1"  # Docker's default bridge gateway, tried when no gateway is known
MEMORY_LIMIT_FILES = ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes")


class AuditOptions(BaseModel):
    output_dir: str = "/out"
    outside: str = "1.1.1.1:443"
    dns_name: str = "example.com"
    gateways: list[str] = []
    gateway_port: int = 53
    read_only: list[str] = []
    max_forks: int = 4096
    max_alloc_mib: int = 16384
    memory: Literal["allocate", "read"] = (
        "allocate"  # read: an engine's limit, sized for its model, is read, not exceeded
    )
    timeout_s: float = 3.0


def run_audit(options: AuditOptions) -> SandboxAudit:
    """Every check, the process-based ones first (before any thread exists)."""
    started = time.monotonic()
    items = [
        check_pids(options.max_forks),
        check_memory(options.max_alloc_mib) if options.memory == "allocate" else check_memory_read(),
        check_capabilities(),
        check_no_new_privileges(),
        check_seccomp(),
        check_write_root(),
        check_write_outside(options.output_dir, options.read_only),
        check_docker_socket(),
        check_tcp("tcp_outside", [options.outside], options.timeout_s),
        check_tcp(
            "tcp_gateway", [f"{g}:{options.gateway_port}" for g in gateway_targets(options.gateways)], options.timeout_s
        ),
        check_dns(options.dns_name, options.timeout_s),
    ]
    return SandboxAudit(items=items, uid=os.getuid(), seconds=round(time.monotonic() - started, 3))


def item(name: str, blocked: bool, detail: str, attempted: bool = True) -> AuditItem:
    return AuditItem(name=name, attempted=attempted, blocked=blocked, detail=detail)


# ---------------------------------------------------------------- network


def check_dns(name: str, timeout_s: float) -> AuditItem:
    answer: dict[str, object] = {}

    def resolve() -> None:
        try:
            answer["addresses"] = sorted({info[4][0] for info in socket.getaddrinfo(name, 443)})
        except OSError as error:
            answer["error"] = f"{type(error).__name__}: {error}"

    thread = threading.Thread(target=resolve, daemon=True)
    thread.start()
    thread.join(timeout_s)
    if "addresses" in answer:
        return item("dns", False, f"{name} resolved to {', '.join(answer['addresses'])}")  # type: ignore[arg-type]
    return item("dns", True, f"{name} did not resolve: {answer.get('error', f'no answer within {timeout_s:g}s')}")


def check_tcp(name: str, targets: list[str], timeout_s: float) -> AuditItem:
    outcomes = [tcp_outcome(target, timeout_s) for target in targets]
    escaped = [text for reached, text in outcomes if reached]
    if escaped:
        return item(name, False, "; ".join(escaped))
    return item(name, True, "; ".join(text for _, text in outcomes) or "no target")


def tcp_outcome(target: str, timeout_s: float) -> tuple[bool, str]:
    """(reached, detail): reached when a connection opened or a host refused it (packets got out)."""
    host, _, port = target.rpartition(":")
    try:
        with socket.create_connection((host, int(port)), timeout=timeout_s):
            return True, f"{target}: connected"
    except TimeoutError:
        return False, f"{target}: no answer within {timeout_s:g}s"
    except OSError as error:
        if error.errno in NO_ROUTE:
            return False, f"{target}: {os.strerror(error.errno)}"
        return True, f"{target}: {error} (a host answered)"


def gateway_targets(given: list[str]) -> list[str]:
    """The host's gateway(s) given by the orchestrator, this namespace's default route, or a fallback."""
    found = list(given) + namespace_gateways()
    return list(dict.fromkeys(found)) or [FALLBACK_GATEWAY]


def namespace_gateways() -> list[str]:
    try:
        lines = Path("/proc/net/route").read_text().splitlines()[1:]
    except OSError:
        return []
    gateways = []
    for line in lines:
        fields = line.split()
        if len(fields) > 2 and fields[1] == "00000000":
            gateways.append(socket.inet_ntoa(int(fields[2], 16).to_bytes(4, "little")))
    return gateways


# ---------------------------------------------------------------- files and sockets


def try_write(folder: str) -> str | None:
    """None when a file could not be created in `folder`; else the path written (then removed)."""
    path = Path(folder) / f".repro-audit-{os.getpid()}"
    try:
        with open(path, "x") as handle:
            handle.write("escape")
    except OSError:
        return None
    path.unlink(missing_ok=True)
    return str(path)


def check_write_root() -> AuditItem:
    written = try_write("/")
    return item(
        "write_root", written is None, f"wrote {written}" if written else "the root filesystem refused a new file"
    )


def check_write_outside(output_dir: str, read_only: list[str]) -> AuditItem:
    targets = [
        t for t in (*WRITE_TARGETS, *read_only) if not t.startswith(output_dir.rstrip("/") + "/") and t != output_dir
    ]
    written = [path for path in (try_write(t) for t in targets) if path]
    if written:
        return item("write_outside_output", False, f"wrote {', '.join(written)}")
    return item("write_outside_output", True, f"no file could be created in {', '.join(targets)}")


def check_docker_socket() -> AuditItem:
    present = [path for path in DOCKER_SOCKETS if os.path.exists(path)]
    for path in present:
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as client:
                client.settimeout(2)
                client.connect(path)
            return item("docker_socket", False, f"connected to {path}")
        except OSError:
            continue
    if present:
        return item("docker_socket", True, f"{', '.join(present)} present but refused a connection")
    return item("docker_socket", True, f"no Docker socket ({', '.join(DOCKER_SOCKETS)} absent)")


# ---------------------------------------------------------------- process status


def status_fields() -> dict[str, str]:
    fields = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        key, _, value = line.partition(":")
        fields[key] = value.strip()
    return fields


def check_capabilities() -> AuditItem:
    effective = status_fields().get("CapEff", "")
    blocked = bool(effective) and int(effective, 16) == 0
    return item("capabilities", blocked, f"CapEff {effective or 'unreadable'}")


def check_no_new_privileges() -> AuditItem:
    value = status_fields().get("NoNewPrivs", "")
    return item("no_new_privileges", value == "1", f"NoNewPrivs {value or 'unreadable'}")


def check_seccomp() -> AuditItem:
    value = status_fields().get("Seccomp", "")
    return item("seccomp", value == "2", f"Seccomp {value or 'unreadable'} (2 is a filter)")


# ---------------------------------------------------------------- limits


def check_pids(max_forks: int) -> AuditItem:
    """Fork sleeping children until fork fails or `max_forks`; kill and reap them all."""
    children: list[int] = []
    failure = None
    try:
        while len(children) < max_forks:
            try:
                pid = os.fork()
            except OSError as error:
                failure = error
                break
            if pid == 0:
                sleep_then_exit()
            children.append(pid)
    finally:
        reap(children)
    if failure is None:
        return item("pids_limit", False, f"forked {len(children)} processes without hitting a limit")
    return item("pids_limit", True, f"fork failed after {len(children)} children: {os.strerror(failure.errno or 0)}")


def sleep_then_exit() -> None:
    """A fork-bomb child: sleep until killed, exit without Python's cleanup."""
    try:
        signal.alarm(60)
        time.sleep(60)
    finally:
        os._exit(0)


def reap(children: list[int]) -> None:
    for pid in children:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            continue
    for pid in children:
        try:
            os.waitpid(pid, 0)
        except OSError:
            continue


def memory_limit() -> int | None:
    for name in MEMORY_LIMIT_FILES:
        try:
            text = Path(name).read_text().strip()
        except OSError:
            continue
        if text.isdigit() and int(text) < 1 << 60:
            return int(text)
    return None


def check_memory(max_alloc_mib: int) -> AuditItem:
    """Allocate (and touch) the memory limit plus 256 MiB in a child; blocked when the child dies."""
    limit = memory_limit()
    if limit is None or limit > max_alloc_mib * MIB:
        return item(
            "memory_limit",
            False,
            f"no memory limit at or below {max_alloc_mib} MiB visible in the cgroup; not attempted",
            attempted=False,
        )
    target = limit + 256 * MIB
    pid = os.fork()
    if pid == 0:
        allocate_then_exit(target)
    status = wait_child(pid, 120)
    mib = f"{target // MIB} MiB (limit {limit // MIB} MiB)"
    if status is None:
        return item("memory_limit", False, f"allocating {mib} did not end within 120s")
    if os.WIFSIGNALED(status):
        return item("memory_limit", True, f"the child allocating {mib} was killed by signal {os.WTERMSIG(status)}")
    if os.WEXITSTATUS(status) == 3:
        return item("memory_limit", True, f"allocating {mib} raised MemoryError")
    return item("memory_limit", False, f"allocated {mib} (child exit status {os.WEXITSTATUS(status)})")


def check_memory_read() -> AuditItem:
    """The engine's variant: a cgroup memory limit is in force (read from inside, not exceeded:
    an engine's limit is sized for its model, tens of GB on a GPU profile, and filling it could
    exhaust the host before the cgroup stops the child)."""
    limit = memory_limit()
    if limit is None:
        return item("memory_limit", False, "no memory limit visible in the cgroup")
    return item("memory_limit", True, f"a cgroup memory limit of {limit // MIB} MiB is in force (read, not exceeded)")


def allocate_then_exit(total: int) -> None:
    code = 0
    try:
        with open("/proc/self/oom_score_adj", "w") as handle:
            handle.write("1000")  # this child, not the audit, is the one to kill
    except OSError:
        pass
    try:
        chunks: list[bytearray] = []
        chunk = 64 * MIB
        while len(chunks) * chunk < total:
            block = bytearray(chunk)
            block[::PAGE] = b"\x01" * len(range(0, chunk, PAGE))
            chunks.append(block)
    except MemoryError:
        code = 3
    finally:
        os._exit(code)


def wait_child(pid: int, timeout_s: float) -> int | None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return status
        time.sleep(0.1)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    return None
