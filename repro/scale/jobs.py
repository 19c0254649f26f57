"""`repro scale slurm | k8s`: job files that run a matrix's shards on a scheduler people already have.

Slurm: a job array (one task per shard, the profile's CPUs, memory and GPUs), a merge job that
waits for the whole array (`--dependency=afterok`) and runs `repro results merge`, `repro check`
and `repro paper render`, and a submit script chaining the two with `sbatch --parsable`.
Kubernetes: an Indexed Job (one completion per shard) whose pod reaches a container engine through
a Docker-in-Docker sidecar or the node's socket, a merge Job, and a submit script.

The Slurm scripts and the submit scripts are rendered from jinja2 templates in
repro/scale/templates/ (every value checked against a strict pattern first, shell words quoted);
the Kubernetes manifests are built as data and written by a YAML serializer (repro.scale.k8s). Nothing
here talks to a scheduler.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import jinja2

from repro import __version__
from repro.core.config import PROJECT_ROOT
from repro.core.errors import BadInput
from repro.core.templating import template_environment
from repro.plan.planner import stored_plan
from repro.scale import k8s as k8s_manifests
from repro.scale.options import K8sOptions, Resources, ScaleJob, ScaleOptions, SlurmOptions
from repro.spec.loading import load_matrix
from repro.spec.profiles import Profile, load_profiles

TEMPLATES = Path(__file__).resolve().parent / "templates"
EXECUTABLE = {"submit.sh"}


# ---------------------------------------------------------------- shared


def describe(options: ScaleOptions) -> ScaleJob:
    """Validate the matrix, profile and shard count; the job description the templates use."""
    profiles = load_profiles()
    profile = profiles.get(options.profile)
    loaded = load_matrix(options.matrix, set(profiles.profiles))
    plan, _ = stored_plan(loaded, options.profile, profile)
    if not plan.cells:
        raise BadInput(
            f"{options.matrix}: no cell runs on profile {options.profile} (see: "
            f"repro matrix plan {options.matrix} --profile {options.profile})"
        )
    if options.shards > len(plan.cells):
        raise BadInput(
            f"--shards {options.shards}: the plan has {len(plan.cells)} runnable cells on {options.profile}; "
            f"use at most {len(plan.cells)} shards"
        )
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
    rendered = {
        name: env.get_template(f"slurm/{name}.j2").render(context)
        for name in ("shards.sbatch", "merge.sbatch", "submit.sh")
    }
    return write_files(options.out, rendered)


# ---------------------------------------------------------------- Kubernetes


def k8s(options: K8sOptions) -> list[Path]:
    """Write job.yaml (the Indexed Job), merge-job.yaml (both built as data, repro.scale.k8s) and
    submit.sh into options.out."""
    job = describe(options)
    submit = environment().get_template("k8s/submit.sh.j2").render({"job": job, "namespace": options.namespace})
    return write_files(
        options.out,
        {
            "job.yaml": k8s_manifests.shard_job(options, job),
            "merge-job.yaml": k8s_manifests.merge_job(options, job),
            "submit.sh": submit,
        },
    )
