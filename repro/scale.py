"""`repro scale slurm | k8s`: job files that run a matrix's shards on a scheduler people already have.

Slurm: a job array (one task per shard, the profile's CPUs, memory and GPUs), a merge job that
waits for the whole array (`--dependency=afterok`) and runs `repro results merge`, `repro check`
and `repro paper render`, and a submit script chaining the two with `sbatch --parsable`.
Kubernetes: an Indexed Job (one completion per shard) whose pod reaches a container engine through
a Docker-in-Docker sidecar or the node's socket, a merge Job, and a submit script.

The files are rendered from jinja2 templates in repro/templates/scale/, found from the checkout
as the paper templates are. Nothing here talks to a scheduler.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Literal

import jinja2
from pydantic import BaseModel, ConfigDict, Field

from repro import __version__
from repro.config import PROJECT_ROOT
from repro.errors import BadInput
from repro.matrix import load_matrix
from repro.plan import make_plan
from repro.profiles import Profile, load_profiles
from repro.templating import template_environment

TEMPLATES = PROJECT_ROOT / "repro" / "templates" / "scale"
K8S_VERSION = "1.30"  # the Kubernetes version the generated manifests are written and validated for
K8S_WORK = "/var/lib/repro"  # the folder shared by the shard container and its engine, at the same path
EXECUTABLE = {"submit.sh"}


class Resources(BaseModel):
    """What one shard asks the scheduler for, from the profile."""

    cpus: int
    memory_gb: int
    gpus: int


class ScaleOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    matrix: Path
    profile: str
    shards: int = Field(ge=1)
    out: Path  # where the generated files go
    results: Path  # the shared results folder the shards write into
    workdir: Path  # the project checkout the jobs run from
    repro: str = "repro"  # how the jobs call repro
    prepare: bool = True  # bootstrap, build and fetch (no-ops when present) before each shard runs
    mem_gb: int | None = Field(default=None, ge=1)  # override the profile's memory


class SlurmOptions(ScaleOptions):
    partition: str | None = None
    time: str | None = None
    parallel: int | None = Field(default=None, ge=1)  # at most this many array tasks at once


class K8sOptions(ScaleOptions):
    image: str
    pvc: str = "repro-results"
    engine: Literal["dind", "socket"] = "dind"
    dind_image: str = "docker:27-dind"
    namespace: str | None = None
    parallel: int | None = Field(default=None, ge=1)


class ScaleJob(BaseModel):
    """What the templates are rendered from."""

    version: str
    name: str
    matrix: str
    matrix_name: str
    profile: str
    shards: int
    cells: int
    results: str
    workdir: str
    repro: str
    prepare: bool
    resources: Resources


# ---------------------------------------------------------------- shared


def describe(options: ScaleOptions) -> ScaleJob:
    """Validate the matrix, profile and shard count; the job description the templates use."""
    profiles = load_profiles()
    profile = profiles.get(options.profile)
    loaded = load_matrix(options.matrix, set(profiles.profiles))
    plan = make_plan(loaded, options.profile, profile)
    if not plan.cells:
        raise BadInput(f"{options.matrix}: no cell runs on profile {options.profile} (see: repro matrix plan {options.matrix} --profile {options.profile})")
    if options.shards > len(plan.cells):
        raise BadInput(f"--shards {options.shards}: the plan has {len(plan.cells)} runnable cells on {options.profile}; use at most {len(plan.cells)} shards")
    workdir = options.workdir.resolve() if not options.workdir.is_absolute() else options.workdir
    return ScaleJob(
        version=__version__,
        name=job_name(loaded.matrix.name, options.profile),
        matrix=job_matrix_path(options.matrix, workdir),
        matrix_name=loaded.matrix.name,
        profile=options.profile,
        shards=options.shards,
        cells=len(plan.cells),
        results=str(options.results),
        workdir=str(workdir),
        repro=options.repro,
        prepare=options.prepare,
        resources=resources(profile, options.mem_gb),
    )


def resources(profile: Profile, mem_gb: int | None = None) -> Resources:
    """CPUs are the engine's threads (at least 1); memory the profile's (whole GB, rounded up)."""
    memory = mem_gb if mem_gb is not None else -int(-profile.memory_gb // 1)
    return Resources(cpus=profile.threads or 1, memory_gb=memory, gpus=profile.gpu_count)


def job_name(matrix_name: str, profile: str) -> str:
    """A name both schedulers accept (a DNS-1123 label for Kubernetes), at most 52 characters."""
    slug = re.sub(r"[^a-z0-9-]+", "-", f"repro-{matrix_name}-{profile}".lower()).strip("-")
    return slug[:52].rstrip("-")


def job_matrix_path(matrix: Path, workdir: Path) -> str:
    """The matrix as the jobs name it: relative to the checkout when inside it, else absolute."""
    absolute = matrix.resolve()
    local_root = PROJECT_ROOT.resolve()
    for root in (local_root, workdir):
        if absolute.is_relative_to(root):
            return absolute.relative_to(root).as_posix()
    return str(absolute)


def environment() -> jinja2.Environment:
    env = template_environment(TEMPLATES)
    env.filters["q"] = lambda value: shlex.quote(str(value))
    return env


def write_files(out: Path, rendered: dict[str, str]) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in rendered.items():
        path = out / name
        path.write_text(text)
        if name in EXECUTABLE:
            path.chmod(0o755)
        written.append(path)
    return written


# ---------------------------------------------------------------- Slurm


def slurm(options: SlurmOptions) -> list[Path]:
    """Write shards.sbatch, merge.sbatch and submit.sh into options.out."""
    job = describe(options)
    context = {
        "job": job,
        "logs": f"{job.results}/logs",
        "partition": options.partition,
        "time": options.time,
        "parallel": options.parallel,
    }
    env = environment()
    rendered = {name: env.get_template(f"slurm/{name}.j2").render(context) for name in ("shards.sbatch", "merge.sbatch", "submit.sh")}
    return write_files(options.out, rendered)


# ---------------------------------------------------------------- Kubernetes


def k8s(options: K8sOptions) -> list[Path]:
    """Write job.yaml (the Indexed Job), merge-job.yaml and submit.sh into options.out."""
    job = describe(options)
    context = {
        "job": job,
        "image": options.image,
        "pvc": options.pvc,
        "engine": options.engine,
        "dind_image": options.dind_image,
        "namespace": options.namespace,
        "parallelism": min(options.parallel or options.shards, options.shards),
        "work": K8S_WORK,
        "k8s_version": K8S_VERSION,
    }
    env = environment()
    env.filters["json"] = json.dumps  # a YAML-safe scalar: JSON is YAML
    rendered = {name: env.get_template(f"k8s/{name}.j2").render(context) for name in ("job.yaml", "merge-job.yaml", "submit.sh")}
    return write_files(options.out, rendered)
