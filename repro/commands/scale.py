"""`repro scale slurm | k8s`: job files for a Slurm job array or a Kubernetes Indexed Job."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.console import Console

from repro.commands.vocabulary import PROFILE, Typer, matrix_argument
from repro.core.config import PROJECT_ROOT
from repro.core.errors import BadInput
from repro.scale.jobs import k8s, slurm
from repro.scale.k8s import K8S_VERSION
from repro.scale.options import K8sOptions, SlurmOptions, scale_options

app = Typer(help="Run a matrix's shards on Slurm or Kubernetes: write the job files.", no_args_is_help=True)
console = Console(highlight=False)

MATRIX = matrix_argument(..., help="Matrix file.")
SHARDS = typer.Option(..., "--shards", help="Number of shards (array tasks, completion indexes).")
MEM = typer.Option(None, "--mem-gb", help="Memory per shard in GB (default: the profile's memory_gb).")
PREPARE = typer.Option(
    True, "--prepare/--no-prepare", help="Bootstrap, build and fetch (no-ops when present) before each shard runs."
)


def _default_out(kind: str, matrix: Path, profile: str, shards: int) -> Path:
    return Path("results") / "scale" / f"{kind}-{matrix.stem}-{profile}-{shards}"


def _check_shards(shards: int) -> None:
    if shards < 1:
        raise BadInput(f"--shards {shards}: expected at least 1")


def _report(written: list[Path], next_step: str) -> None:
    for path in written:
        console.print(f"wrote {path}", soft_wrap=True)
    console.print(next_step, soft_wrap=True)


@app.command("slurm")
def slurm_command(
    matrix: Path = MATRIX,
    profile: str = PROFILE,
    shards: int = SHARDS,
    out: Path = typer.Option(
        None, "--out", help="Where the job files go (default: results/scale/slurm-MATRIX-PROFILE-N)."
    ),
    results: Path = typer.Option(
        None, "--results", help="Shared results folder every node can write (default: OUT/results, absolute)."
    ),
    workdir: Path = typer.Option(
        PROJECT_ROOT, "--workdir", help="The project checkout on the nodes (default: this checkout)."
    ),
    repro: str = typer.Option("repro", "--repro", help="How the jobs call repro on the nodes."),
    partition: str = typer.Option(None, "--partition", help="Slurm partition."),
    time: str = typer.Option(None, "--time", help="Slurm time limit per shard (e.g. 12:00:00)."),
    parallel: int = typer.Option(None, "--parallel", help="At most this many shards at once (--array=1-N%K)."),
    mem_gb: int = MEM,
    prepare: bool = PREPARE,
) -> None:
    """Write a Slurm job array (one task per shard), a dependent merge/check/render job and submit.sh.

    Exit codes: 0 written; 1 an unexpected error; 2 bad input."""
    _check_shards(shards)
    out = out or _default_out("slurm", matrix, profile, shards)
    options = scale_options(
        SlurmOptions,
        matrix=matrix,
        profile=profile,
        shards=shards,
        out=out,
        results=(results or out / "results").absolute(),
        workdir=workdir.absolute(),
        repro=repro,
        prepare=prepare,
        mem_gb=mem_gb,
        partition=partition,
        time=time,
        parallel=parallel,
    )
    _report(slurm(options), f"submit with: {out / 'submit.sh'}")


@app.command("k8s")
def k8s_command(
    matrix: Path = MATRIX,
    profile: str = PROFILE,
    shards: int = SHARDS,
    out: Path = typer.Option(
        None, "--out", help="Where the manifests go (default: results/scale/k8s-MATRIX-PROFILE-N)."
    ),
    image: str = typer.Option(
        "repro-runner:latest",
        "--image",
        help="Runner image: the project checkout at --workdir, repro installed (pin it by digest).",
    ),
    pvc: str = typer.Option(
        "repro-results", "--pvc", help="PersistentVolumeClaim (ReadWriteMany) for the shared results."
    ),
    engine: str = typer.Option(
        "dind",
        "--engine",
        help="How the pod reaches a container engine: dind (a privileged sidecar) or socket (the node's).",
    ),
    dind_image: str = typer.Option(
        "docker:27-dind", "--dind-image", help="The Docker-in-Docker sidecar image (pin it by digest)."
    ),
    namespace: str = typer.Option(None, "--namespace", help="Kubernetes namespace."),
    workdir: Path = typer.Option(Path("/opt/repro"), "--workdir", help="The project checkout inside the runner image."),
    repro: str = typer.Option(
        "python3 -m repro", "--repro", help="How the pod calls repro (from the copy of the checkout)."
    ),
    parallel: int = typer.Option(None, "--parallel", help="Pods at once (parallelism; default: all shards)."),
    mem_gb: int = MEM,
    prepare: bool = PREPARE,
) -> None:
    """Write a Kubernetes Indexed Job (one completion per shard), a merge Job and submit.sh.

    Exit codes: 0 written; 1 an unexpected error; 2 bad input."""
    _check_shards(shards)
    if engine not in ("dind", "socket"):
        raise BadInput(f"--engine {engine}: expected dind or socket")
    out = out or _default_out("k8s", matrix, profile, shards)
    options = scale_options(
        K8sOptions,
        matrix=matrix,
        profile=profile,
        shards=shards,
        out=out,
        results=Path("/results"),
        workdir=workdir,
        repro=repro,
        prepare=prepare,
        mem_gb=mem_gb,
        image=image,
        pvc=pvc,
        engine=engine,
        dind_image=dind_image,
        namespace=namespace,
        parallel=parallel,
    )
    _report(k8s(options), f"written for Kubernetes {K8S_VERSION}; apply with: {out / 'submit.sh'}")
