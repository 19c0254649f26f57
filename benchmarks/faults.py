"""The fault table of docs/reliability.md: each fault injected into a real run, one line each.

    python benchmarks/faults.py [--keep] [--seed N] [--faults abcdef] [--head]

On a tiny selection (SmolLM2-135M on llama.cpp, JSON schema protocol, 3 scenarios, profile cpu)
run from a committed snapshot of the working tree (or of the last commit, --head), it runs an
undisturbed baseline, then:

  a  the engine container SIGKILLed 5 s into the cell's harness (the run heals it)
  b  SIGTERM to `repro matrix run` 5 s into the harness, then --resume
  c  SIGINT at a random point of the run (seeded; the seed is printed), then --resume
  d  the Docker daemon stopped 5 s into the harness and started again, then --resume
  e  the results folder (a tmpfs) filled up 5 s into the harness; space freed, then --resume
  f  a harness output that is a link to a host file, and one of 10 GiB (sparse): checked where
     the run reads harness output (repro.bundle.layout.loading.read_results / read_transcripts), no engine

and prints: fault | survived | containers leaked | half-written files | resume reproduced
transcripts | seconds. "Containers leaked": containers labelled with a run of this benchmark
after the faulted command ended (and after --resume). "Half-written files": `*.partial*` and
`*.tmp` entries under the results folder and cell folders without a complete, intact cell.json.

Takes /tmp/repro-engine.lock (the engine lock) for the whole benchmark; a daemon restart
happens only under it, and dockerd is up again (scripts/common.sh ensure_docker) before the lock
is released. Needs root (tmpfs mount, daemon restart), the built images and the cached model.
Everything it starts is removed in finally blocks; --keep keeps the snapshot, logs and bundles.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from repro.bundle.layout.loading import load_cell, read_results, read_transcripts  # noqa: E402
from repro.bundle.layout.reader import BundleReader  # noqa: E402
from repro.core.errors import BadInput  # noqa: E402
from tests.e2e.conftest import commit_snapshot, e2e_matrix, make_snapshot  # noqa: E402
from tests.e2e.test_engine_kill import TINY_SUITE  # noqa: E402
from tests.e2e.test_run import cells_of, outcome  # noqa: E402

LOCK = Path("/tmp/repro-engine.lock")
MATRIX = "matrix/faults.yaml"
RUN_SUFFIX = "-faults-cpu"  # run ids of this benchmark's matrix end so
ARGS = ["matrix", "run", MATRIX, "--profile", "cpu"]
SECONDS_IN = 5.0  # how long the cell's harness runs before a fault
RUN_TIMEOUT_S = 1500
STARTED = time.monotonic()


def say(text: str) -> None:
    print(f"[{time.monotonic() - STARTED:7.1f}s] {text}", flush=True)


@dataclass
class Row:
    fault: str
    survived: str = "no"
    leaked: str = "?"
    half: str = "?"
    reproduced: str = "?"
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)


@dataclass
class Bench:
    project: Path
    logs: Path
    rng: random.Random
    baseline: Path | None = None
    baseline_seconds: float = 0.0
    procs: list[subprocess.Popen] = field(default_factory=list)
    mounts: list[Path] = field(default_factory=list)


# ---------------------------------------------------------------- the engine lock and dockerd


@contextlib.contextmanager
def engine_lock() -> Iterator[None]:
    """flock(2) on the lock file, the same lock `flock /tmp/repro-engine.lock ...` takes."""
    with open(LOCK, "a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            say(f"waiting for {LOCK} (another engine run holds it)")
            fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            ensure_dockerd()  # never release the lock with the daemon down
            fcntl.flock(handle, fcntl.LOCK_UN)


def docker_answers() -> bool:
    return subprocess.run(["docker", "info"], capture_output=True, timeout=60).returncode == 0


def ensure_dockerd() -> None:
    """dockerd up, started as scripts/common.sh does (its own session: a Ctrl-C here spares it)."""
    if docker_answers():
        return
    say("starting dockerd again (scripts/common.sh ensure_docker)")
    script = f"source {ROOT / 'scripts' / 'common.sh'}; ensure_docker"
    subprocess.run(["bash", "-c", script], cwd=ROOT, start_new_session=True, timeout=180, stdout=subprocess.DEVNULL)
    if not docker_answers():
        raise SystemExit("dockerd did not come back; see /var/log/repro-dockerd.log")


def stop_dockerd() -> None:
    """SIGTERM to the daemon (its pid file), then wait until it has exited."""
    pid = int(Path("/var/run/docker.pid").read_text().strip())
    say(f"stopping dockerd (pid {pid})")
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 120
    while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
        time.sleep(0.5)


def docker_client():
    import docker

    return docker.from_env(timeout=30)


def our_containers() -> list:
    """Containers of any run of this benchmark's matrix (running or not)."""
    listed = docker_client().containers.list(all=True, filters={"label": "repro.run"}, ignore_removed=True)
    return [c for c in listed if c.labels.get("repro.run", "").endswith(RUN_SUFFIX)]


def remove_our_containers() -> int:
    left = our_containers()
    for container in left:
        with contextlib.suppress(Exception):
            container.remove(force=True, v=True)
    return len(left)


# ---------------------------------------------------------------- runs


def start_run(bench: Bench, name: str, *extra: str) -> subprocess.Popen:
    # a crash shows where
    env = {**os.environ, "PYTHONPATH": str(bench.project), "COLUMNS": "160", "REPRO_TRACEBACK": "1"}
    log = open(bench.logs / f"{name}.log", "a")  # noqa: SIM115 (closed when the process ends)
    command = [sys.executable, "-m", "repro", *ARGS, "--out", f"results/{name}", *extra]
    proc = subprocess.Popen(command, cwd=bench.project, env=env, stdout=log, stderr=subprocess.STDOUT)
    log.close()
    bench.procs.append(proc)
    return proc


def finish(proc: subprocess.Popen, timeout: float = RUN_TIMEOUT_S) -> int:
    try:
        return proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        stop_process(proc)
        return -1


def stop_process(proc: subprocess.Popen) -> None:
    """A run this benchmark started: SIGINT (its containers removed), then SIGKILL."""
    if proc.poll() is not None:
        return
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def run_to_end(bench: Bench, name: str, *extra: str) -> int:
    return finish(start_run(bench, name, *extra))


def output_of(bench: Bench, name: str) -> str:
    return (bench.logs / f"{name}.log").read_text(errors="replace")


def run_dir_of(bench: Bench, name: str) -> Path | None:
    latest = bench.project / "results" / name / "LATEST"
    return latest.parent / latest.read_text().strip() if latest.is_file() else None


def harness_running(run_id: str) -> bool:
    """The cell's harness itself (not its sandbox audit) is running."""
    for container in docker_client().containers.list(filters={"label": f"repro.run={run_id}"}, ignore_removed=True):
        command = container.attrs["Config"]["Cmd"] or []
        if container.labels.get("repro.role") == "harness" and "audit" not in command:
            return True
    return False


def wait_for_harness(bench: Bench, name: str, proc: subprocess.Popen) -> str:
    """Wait until the cell's harness has run SECONDS_IN seconds; the run id."""
    deadline = time.monotonic() + 900
    while time.monotonic() < deadline and proc.poll() is None:
        run_dir = run_dir_of(bench, name)
        if run_dir is not None and harness_running(run_dir.name):
            time.sleep(SECONDS_IN)
            return run_dir.name
        time.sleep(0.5)
    raise RuntimeError(f"the harness never ran (the run ended with {proc.poll()}; see {name}.log)")


# ---------------------------------------------------------------- what a fault left


def half_written(results: Path) -> list[str]:
    """`*.partial*` and `*.tmp` entries, and cell folders without a complete, intact cell.json."""
    found = []
    for path in results.rglob("*"):
        if ".partial" in path.name or path.name.endswith(".tmp"):
            found.append(str(path.relative_to(results)))
    for run_dir in results.glob("*/"):
        bundle = BundleReader(run_dir)
        for cell_id in bundle.cells_on_disk():
            if problems := bundle.cell_problems(cell_id):
                found.append(f"{bundle.cell_dir(cell_id).relative_to(results)} ({problems[0]})")
    return found


def run_json_status(run_dir: Path | None) -> str:
    """run.json's status, or why it could not be read (a truncated record among them)."""
    if run_dir is None:
        return "no run folder"
    try:
        return str(json.loads((run_dir / "run.json").read_text())["status"])
    except (OSError, ValueError, KeyError) as error:
        return f"unreadable ({type(error).__name__})"


def reproduced(bench: Bench, run_dir: Path | None) -> bool:
    """Every planned cell is there and its results and transcripts equal the baseline's."""
    if run_dir is None or bench.baseline is None:
        return False
    baseline, cells = cells_of(bench.baseline), cells_of(run_dir)
    return set(cells) == set(baseline) and all(outcome(cells[name]) == outcome(baseline[name]) for name in cells)


def crashed(text: str) -> bool:
    return "Traceback" in text or "internal error" in text


def last_line(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[-1][:160] if lines else ""


# ---------------------------------------------------------------- the faults


def baseline(bench: Bench) -> None:
    say("baseline: an undisturbed run")
    started = time.monotonic()
    rc = run_to_end(bench, "baseline")
    bench.baseline_seconds = time.monotonic() - started
    bench.baseline = run_dir_of(bench, "baseline")
    if rc != 0 or bench.baseline is None:
        raise SystemExit(f"the baseline run failed (exit {rc}):\n{output_of(bench, 'baseline')[-3000:]}")
    say(f"baseline: exit 0 in {bench.baseline_seconds:.0f}s, {len(cells_of(bench.baseline))} cell(s)")


def engine_kill(bench: Bench, row: Row) -> None:
    proc = start_run(bench, "kill")
    run_id = wait_for_harness(bench, "kill", proc)
    engines = [
        c
        for c in docker_client().containers.list(filters={"label": f"repro.run={run_id}"})
        if c.labels.get("repro.role") == "engine"
    ]
    say(f"  SIGKILL to the engine container {engines[0].name}")
    engines[0].kill()
    rc = finish(proc)
    run_dir = run_dir_of(bench, "kill")
    records = [load_cell(cell) for cell in cells_of(run_dir).values()] if run_dir else []
    healed = bool(records) and all(
        r.status == "done" and len(r.engine_incidents) == 1 and r.engine_incidents[0].healed for r in records
    )
    row.notes.append(
        f"exit {rc}, {'healed' if healed else 'not healed'}, incident exit code "
        f"{records[0].engine_incidents[0].fault.exit_code if healed else '-'}"
    )
    note_leftovers(bench, row, "kill")
    row.reproduced = "yes (healed cell)" if reproduced(bench, run_dir) else "no"
    row.survived = "yes" if rc == 0 and healed and row.reproduced.startswith("yes") and clean(row) else "no"


def signal_then_resume(
    bench: Bench, row: Row, name: str, sig: signal.Signals, when: Callable[[subprocess.Popen], None]
) -> None:
    proc = start_run(bench, name)
    when(proc)
    say(f"  {sig.name} to repro matrix run (pid {proc.pid})")
    proc.send_signal(sig)
    rc = finish(proc, 300)
    text = output_of(bench, name)
    row.notes.append(
        f"exit {rc}, run.json {run_json_status(run_dir_of(bench, name))}{', crashed' if crashed(text) else ''}"
    )
    note_leftovers(bench, row, name)
    expected = rc == 130 and not crashed(text)
    resume_and_compare(bench, row, name, expected)


def sigterm(bench: Bench, row: Row) -> None:
    signal_then_resume(bench, row, "sigterm", signal.SIGTERM, lambda proc: wait_for_harness(bench, "sigterm", proc))


def sigint(bench: Bench, row: Row) -> None:
    fraction = bench.rng.random()  # of the baseline's duration: the same point of a run for the same seed
    at = 1.0 + fraction * (0.9 * bench.baseline_seconds - 1.0)
    row.notes.append(f"sent {at:.1f}s after start ({fraction:.3f} of the way through the baseline)")

    def wait(proc: subprocess.Popen) -> None:
        time.sleep(at)

    signal_then_resume(bench, row, "sigint", signal.SIGINT, wait)


def daemon_restart(bench: Bench, row: Row) -> None:
    proc = start_run(bench, "daemon")
    wait_for_harness(bench, "daemon", proc)
    try:
        stop_dockerd()
    finally:
        ensure_dockerd()
    rc = finish(proc)
    text = output_of(bench, "daemon")
    row.notes.append(
        f"exit {rc}, run.json "
        f"{run_json_status(run_dir_of(bench, 'daemon'))}{', crashed: ' + last_line(text) if crashed(text) else ''}"
    )
    note_leftovers(bench, row, "daemon")
    resume_and_compare(bench, row, "daemon", rc in (0, 1, 130) and not crashed(text))


def full_disk(bench: Bench, row: Row) -> None:
    folder = bench.project / "results" / "disk"
    size = max(2 * 1024**2, 2 * folder_bytes(bench.baseline))
    mount_tmpfs(bench, folder, size)
    row.notes.append(f"tmpfs of {size // 1024} KiB")
    proc = start_run(bench, "disk")
    wait_for_harness(bench, "disk", proc)
    filler = fill(folder)
    rc = finish(proc)
    text = output_of(bench, "disk")
    message = last_line(text)
    row.notes.append(f"exit {rc}: {message!r}, run.json {run_json_status(run_dir_of(bench, 'disk'))}")
    note_leftovers(bench, row, "disk")
    filler.unlink()
    say("  space freed (filler removed)")
    resume_and_compare(bench, row, "disk", rc == 1 and "no space left on" in message and not crashed(text))


def hostile_output(bench: Bench, row: Row) -> None:
    """What the run does with harness output (collect_results): read_results/read_transcripts."""
    with tempfile.TemporaryDirectory(prefix="faults-out-") as scratch:
        out = Path(scratch)
        secret = out.parent / f"{out.name}-host-file"
        secret.write_text("host secret\n")
        try:
            link = refused(out, lambda: (out / "scenarios.jsonl").symlink_to(secret), read_results)
            (out / "scenarios.jsonl").unlink()
            huge = refused(out, lambda: os.truncate(make(out / "transcripts.jsonl"), 10 * 1024**3), read_transcripts)
        finally:
            secret.unlink()
    row.notes += [
        f"link: {link}",
        f"10 GiB: {huge}",
        "bundle-reader level, no engine (as tests/faults/test_hostile_output.py)",
    ]
    row.leaked, row.half, row.reproduced = "0 (none started)", "0", "n/a"
    row.survived = "yes" if "refused" in link and "refused" in huge else "no"


def make(path: Path) -> Path:
    path.touch()
    return path


def refused(out: Path, plant: Callable[[], object], read: Callable[[Path], list]) -> str:
    plant()
    try:
        rows = read(out)
    except BadInput as error:
        return f"refused ({str(error).split(': ', 1)[-1]})"
    return f"READ {len(rows)} rows"


# ---------------------------------------------------------------- shared steps


def clean(row: Row) -> bool:
    return row.leaked.split()[0] == "0" and row.half.split()[0] == "0"


def note_leftovers(bench: Bench, row: Row, name: str) -> None:
    """Containers and half-written files the faulted command left."""
    leaks = our_containers()
    half = half_written(bench.project / "results" / name)
    row.leaked, row.half = str(len(leaks)), str(len(half))
    row.notes += [f"left: {', '.join(c.name for c in leaks)}"] if leaks else []
    row.notes += [f"half-written: {', '.join(half[:3])}"] if half else []
    say(f"  after the fault: {len(leaks)} container(s), {len(half)} half-written file(s)")
    remove_our_containers()


def resume_and_compare(bench: Bench, row: Row, name: str, fault_ok: bool) -> None:
    say(f"  --resume ({name})")
    rc = run_to_end(bench, name, "--resume")
    leaks, half = our_containers(), half_written(bench.project / "results" / name)
    same = reproduced(bench, run_dir_of(bench, name))
    row.reproduced = f"{'yes' if same else 'no'} (resume exit {rc})"
    if leaks or half:
        row.leaked += f" ({len(leaks)} after resume)"
        row.half += f" ({len(half)} after resume)"
    remove_our_containers()
    row.survived = "yes" if fault_ok and rc == 0 and same and clean(row) and not (leaks or half) else "no"


def folder_bytes(folder: Path | None) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file()) if folder else 0


def mount_tmpfs(bench: Bench, folder: Path, size: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)], check=True)
    bench.mounts.append(folder)


def fill(folder: Path) -> Path:
    """Write a filler file until the folder's disk is full."""
    filler = folder / "filler"
    block = b"\0" * 65536
    with open(filler, "wb", buffering=0) as out:
        for size in (len(block), 4096, 512):
            with contextlib.suppress(OSError):
                while True:
                    out.write(block[:size])
    say(f"  results disk filled ({filler.stat().st_size // 1024} KiB of filler)")
    return filler


def build_images(bench: Bench) -> None:
    env = {**os.environ, "PYTHONPATH": str(bench.project)}
    command = [sys.executable, "-m", "repro", "images", "build", MATRIX, "--profile", "cpu", "--no-log"]
    proc = subprocess.run(command, cwd=bench.project, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"images: {proc.stdout[-2000:]}{proc.stderr[-2000:]}")


FAULTS: dict[str, tuple[str, Callable[[Bench, Row], None]]] = {
    "a": ("engine container SIGKILLed mid-cell", engine_kill),
    "b": ("SIGTERM to repro matrix run mid-cell, --resume", sigterm),
    "c": ("SIGINT at a random point, --resume", sigint),
    "d": ("Docker daemon restarted mid-cell, --resume", daemon_restart),
    "e": ("results disk full mid-cell (tmpfs), --resume", full_disk),
    "f": ("harness output: link to a host file; 10 GiB file", hostile_output),
}


def measure(bench: Bench, key: str) -> Row:
    title, inject = FAULTS[key]
    row = Row(fault=f"({key}) {title}")
    say(f"fault {row.fault}")
    started = time.monotonic()
    try:
        inject(bench, row)
    except Exception as error:
        row.notes.append(f"benchmark error: {type(error).__name__}: {str(error)[:200]}")
        row.survived = "no"
    finally:
        for proc in bench.procs:
            stop_process(proc)
        ensure_dockerd()
        remove_our_containers()
    row.seconds = time.monotonic() - started
    say(f"  {row.survived}: {'; '.join(row.notes)}")
    return row


def table(rows: list[Row]) -> str:
    head = "| fault | survived | containers leaked | half-written files | resume reproduced transcripts | seconds |"
    lines = [head, "|---|---|---|---|---|---|"]
    lines += [f"| {r.fault} | {r.survived} | {r.leaked} | {r.half} | {r.reproduced} | {r.seconds:.0f} |" for r in rows]
    lines += ["", *(f"({r.fault[1]}) {'; '.join(r.notes)}" for r in rows)]
    return "\n".join(lines)


def head_snapshot(target: Path, extra: dict[str, str]) -> Path:
    """The last commit's files (git archive), plus `extra`, committed into a fresh repository."""
    target.mkdir(parents=True)
    archive = subprocess.run(["git", "archive", "HEAD"], cwd=ROOT, capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(target)], input=archive, check=True)
    return commit_snapshot(target, extra)


def describe_code(head: bool) -> str:
    commit = subprocess.run(
        ["git", "rev-parse", "--short=12", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    dirty = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    return f"commit {commit}" if head or not dirty else f"working tree at {commit} with uncommitted changes"


def cleanup(bench: Bench, keep: bool, scratch: Path) -> None:
    for proc in bench.procs:
        stop_process(proc)
    remove_our_containers()
    for folder in bench.mounts:
        if keep:
            shutil.copytree(folder, folder.with_name(folder.name + "-kept"), dirs_exist_ok=True)
        subprocess.run(["umount", str(folder)], check=False)
    if keep:
        say(f"kept: {scratch} (snapshot in project/, logs in logs/)")
    else:
        shutil.rmtree(scratch, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", action="store_true", help="keep the snapshot, logs and bundles")
    parser.add_argument(
        "--seed", type=int, default=None, help="seed of the random SIGINT point (default: from the clock)"
    )
    parser.add_argument("--faults", default="abcdef", help="which faults, e.g. 'ae' (default: all)")
    parser.add_argument(
        "--head", action="store_true", help="test the last commit (default: the working tree, as the e2e tests do)"
    )
    args = parser.parse_args()
    # runs started here get SIGINT's default, even when this runs in the background
    signal.signal(signal.SIGINT, signal.default_int_handler)
    seed = args.seed if args.seed is not None else int(time.time())
    say(f"seed {seed} (rerun the same SIGINT point with --seed {seed})")
    scratch = Path(tempfile.mkdtemp(prefix="repro-faults-"))
    (scratch / "logs").mkdir()
    matrix = e2e_matrix(TINY_SUITE).replace("name: e2e\n", "name: faults\n", 1)
    project = (
        head_snapshot(scratch / "project", {MATRIX: matrix})
        if args.head
        else make_snapshot(scratch / "project", {MATRIX: matrix})
    )
    say(f"code under test: {describe_code(args.head)}")
    bench = Bench(project=project, logs=scratch / "logs", rng=random.Random(seed))
    rows: list[Row] = []
    try:
        with engine_lock():
            say(f"engine lock taken; {remove_our_containers()} leftover container(s) of earlier runs removed")
            build_images(bench)
            baseline(bench)
            rows = [measure(bench, key) for key in args.faults]
    finally:
        cleanup(bench, args.keep, scratch)
    print(table(rows), flush=True)
    return 0 if all(r.survived == "yes" for r in rows) else 1


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        sys.exit(main())
    sys.exit(130)
