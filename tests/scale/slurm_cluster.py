"""A throwaway single-node Slurm on this machine: munged, slurmctld and slurmd as root, all state
in one folder, on ports of their own, torn down by `stop()`.

Nothing is installed here: `available()` says why a test must skip when the Debian packages
(`apt-get install -y slurm-wlm munge`) are absent or the user is not root.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

from tests.fixtures.signals import default_signals

DAEMONS = ("munged", "slurmctld", "slurmd")
CLIENTS = ("sbatch", "squeue", "scontrol", "sacct")

SLURM_CONF = """\
ClusterName=reprotest
SlurmctldHost={host}(127.0.0.1)
SlurmctldPort={ctld_port}
SlurmdPort={slurmd_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={root}/munge.socket
StateSaveLocation={root}/state
SlurmdSpoolDir={root}/spool
SlurmctldPidFile={root}/slurmctld.pid
SlurmdPidFile={root}/slurmd.pid
SlurmctldLogFile={root}/slurmctld.log
SlurmdLogFile={root}/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
MinJobAge=3600
SlurmdTimeout=300
NodeName={host} NodeAddr=127.0.0.1 CPUs={cpus} RealMemory={memory_mb} State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
"""


def available() -> str | None:
    """None when a single-node Slurm can start here, else the reason it cannot."""
    missing = [
        name
        for name in (*DAEMONS, *CLIENTS, "mungekey")
        if shutil.which(name) is None and not Path(f"/usr/sbin/{name}").exists()
    ]
    if missing:
        return f"no {', '.join(missing)} on this machine (install with: apt-get install -y slurm-wlm munge)"
    if os.geteuid() != 0:
        return "a single-node Slurm is started as root; run the slurm tests as root"
    return None


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _memory_mb() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) // 1024 - 512
    return 4096


class SlurmCluster:
    """Start with `start()`, always `stop()` in a finally. `env` is what clients need (SLURM_CONF)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.host = socket.gethostname().split(".")[0]
        self.conf = root / "slurm.conf"
        self.env = {**os.environ, "SLURM_CONF": str(self.conf)}
        self.cpus = os.cpu_count() or 1
        self._pids: dict[str, Path] = {}

    # ------------------------------------------------------------ lifecycle

    def start(self) -> None:
        for folder in ("state", "spool"):
            (self.root / folder).mkdir(parents=True, exist_ok=True)
        self.root.chmod(0o700)
        self._start_munge()
        self.conf.write_text(
            SLURM_CONF.format(
                host=self.host,
                root=self.root,
                ctld_port=_free_port(),
                slurmd_port=_free_port(),
                cpus=self.cpus,
                memory_mb=_memory_mb(),
            )
        )
        self._daemon("slurmctld", ["slurmctld", "-f", str(self.conf), "-i"])
        self._daemon("slurmd", ["slurmd", "-f", str(self.conf)])
        self._wait_for_node()

    def stop(self) -> None:
        """Stop the daemons this cluster started (by their pid files), slurmd first."""
        for name in ("slurmd", "slurmctld", "munged"):
            pid_file = self._pids.get(name)
            if pid_file is None or not pid_file.is_file():
                continue
            try:
                pid = int(pid_file.read_text().strip())
                os.kill(pid, signal.SIGTERM)
                self._wait_gone(pid)
            except (ValueError, ProcessLookupError):
                pass

    def _start_munge(self) -> None:
        key = self.root / "munge.key"
        subprocess.run(["mungekey", "--create", f"--keyfile={key}"], check=True, capture_output=True)
        key.chmod(0o400)
        pid_file = self.root / "munged.pid"
        command = [
            "munged",
            "--force",
            f"--key-file={key}",
            f"--socket={self.root}/munge.socket",
            f"--pid-file={pid_file}",
            f"--log-file={self.root}/munged.log",
            f"--seed-file={self.root}/munged.seed",
        ]
        subprocess.run(command, check=True, capture_output=True, text=True)
        self._pids["munged"] = pid_file

    def _daemon(self, name: str, command: list[str]) -> None:
        # SIGTERM stops it in stop(), whatever dispositions this test run was started with
        proc = subprocess.run(default_signals(command), env=self.env, capture_output=True, text=True)
        if proc.returncode != 0:
            raise RuntimeError(f"{name} did not start ({proc.returncode}): {proc.stderr[-500:]} {self.log(name)}")
        self._pids[name] = self.root / f"{name}.pid"

    def _wait_for_node(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        state = ""
        while time.monotonic() < deadline:
            proc = subprocess.run(["sinfo", "-h", "-N", "-o", "%T"], env=self.env, capture_output=True, text=True)
            state = proc.stdout.strip()
            if state in ("idle", "mixed", "allocated"):
                return
            time.sleep(1)
        raise RuntimeError(
            f"the Slurm node did not become idle in {timeout:.0f} s (state '{state}'): "
            f"{self.log('slurmctld')} {self.log('slurmd')}"
        )

    @staticmethod
    def _wait_gone(pid: int, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.2)
        os.kill(pid, signal.SIGKILL)

    # ------------------------------------------------------------ use

    def log(self, name: str, tail: int = 1500) -> str:
        path = self.root / f"{name}.log"
        return path.read_text(errors="replace")[-tail:] if path.is_file() else f"(no {name}.log)"

    def run(
        self, *command: str, cwd: Path | None = None, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess:
        return subprocess.run(
            list(command), cwd=cwd, env={**self.env, **(env or {})}, capture_output=True, text=True, timeout=120
        )

    def job_states(self, job_ids: list[str]) -> dict[str, str]:
        """`JobId[_task] -> State` for these jobs and their array tasks, from slurmctld's memory."""
        proc = self.run("scontrol", "-o", "show", "job")
        states = {}
        for line in proc.stdout.splitlines():
            fields = dict(part.split("=", 1) for part in line.split() if "=" in part)
            if fields.get("JobId") in job_ids or fields.get("ArrayJobId") in job_ids:
                task = fields.get("ArrayTaskId")
                name = f"{fields.get('ArrayJobId')}_{task}" if task else fields.get("JobId", "?")
                states[name] = fields.get("JobState", "?")
        return states

    def wait(self, job_ids: list[str], timeout: float) -> dict[str, str]:
        """Wait until no job of these is pending or running; return their final states."""
        deadline = time.monotonic() + timeout
        states: dict[str, str] = {}
        while time.monotonic() < deadline:
            states = self.job_states(job_ids)
            if states and not any(
                state in ("PENDING", "RUNNING", "CONFIGURING", "COMPLETING") for state in states.values()
            ):
                return states
            time.sleep(3)
        raise TimeoutError(f"jobs {job_ids} still not finished after {timeout:.0f} s: {states}")
