"""The Kubernetes manifests of `repro scale k8s`, built as data and written by a YAML serializer:
no option value is ever pasted into YAML text, so none can add a key or a document. Shell words
inside the shard and merge scripts are quoted with `shlex.quote`.

The Indexed Job runs one shard per completion index; its pod reaches a container engine through
a Docker-in-Docker sidecar (a native sidecar, Kubernetes 1.29+) or the node's Docker socket. The
merge Job joins the shard bundles on the results volume, checks them and renders the tables.
"""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING, Any

import yaml

if TYPE_CHECKING:
    from repro.scale.options import K8sOptions, Resources, ScaleJob

K8S_VERSION = "1.30"  # the Kubernetes version the generated manifests are written and validated for
K8S_WORK = "/var/lib/repro"  # the folder shared by the shard container and its engine, at the same path
DIND_SOCKET = "unix:///var/run/dind/docker.sock"
NODE_SOCKET = "unix:///var/run/docker.sock"

Manifest = dict[str, Any]


def to_yaml(header: str, manifest: Manifest) -> str:
    """The manifest as YAML, after a comment header (each header line prefixed with `# `)."""
    comment = "".join(f"# {line}".rstrip() + "\n" for line in header.splitlines())
    return comment + yaml.safe_dump(
        manifest, sort_keys=False, default_flow_style=False, width=1000, allow_unicode=False
    )


def metadata(job: ScaleJob, name: str, namespace: str | None) -> Manifest:
    meta: Manifest = {"name": name}
    if namespace:
        meta["namespace"] = namespace
    meta["labels"] = {"app.kubernetes.io/name": "repro", "repro.matrix": job.matrix_name, "repro.profile": job.profile}
    return meta


def pod_labels(role: str) -> Manifest:
    return {"app.kubernetes.io/name": "repro", "repro.role": role}


def resource_spec(res: Resources) -> Manifest:
    """A container's requests and limits: the profile's CPUs, memory and GPUs."""
    amounts: Manifest = {"cpu": str(res.cpus), "memory": f"{res.memory_gb}Gi"}
    limits = {**amounts, **({"nvidia.com/gpu": str(res.gpus)} if res.gpus else {})}
    return {"requests": dict(amounts), "limits": limits}


def shard_script(job: ScaleJob) -> str:
    """The shard container's bash script: a copy of the checkout in the work folder (the engine
    mounts its scenarios from there), the optional preparation, then this index's shard."""
    repro, matrix, profile = job.repro, shlex.quote(job.matrix), shlex.quote(job.profile)
    lines = [
        "set -euo pipefail",
        "i=$((JOB_COMPLETION_INDEX+1))",
        f'shard="${{i}}/{job.shards}"',
        "# A copy of the checkout in the shared work folder, so the engine can mount its scenarios.",
        f"project={K8S_WORK}/{job.name}-${{i}}",
        f'rm -rf "${{project}}" && mkdir -p "${{project}}" && cp -a {shlex.quote(job.workdir)}/. "${{project}}/"',
        'cd "${project}"',
        f'export PYTHONPATH="${{project}}" REPRO_CACHE={K8S_WORK}/cache',
    ]
    if job.prepare:
        lines += [
            f"{repro} images bootstrap",
            f"{repro} images build {matrix} --profile {profile} --no-log",
            f"{repro} models fetch {matrix}",
            f"{repro} suites fetch {matrix}",
        ]
    lines.append(
        f'{repro} matrix run {matrix} --profile {profile} --shard "${{shard}}" --out /results/shard-"${{i}}" --resume'
    )
    return "\n".join(lines) + "\n"


def dind_sidecar(options: K8sOptions, job: ScaleJob) -> Manifest:
    """The Docker-in-Docker engine: started first, restarted always, privileged (docs/scale-out.md)."""
    return {
        "name": "dind",
        "image": options.dind_image,
        "restartPolicy": "Always",
        "args": [f"--host={DIND_SOCKET}", "--bridge=none", "--iptables=false", "--ip-forward=false"],
        "env": [{"name": "DOCKER_TLS_CERTDIR", "value": ""}],
        "securityContext": {"privileged": True},
        "startupProbe": {
            "exec": {"command": ["docker", f"--host={DIND_SOCKET}", "info"]},
            "periodSeconds": 2,
            "failureThreshold": 60,
        },
        "resources": resource_spec(job.resources),
        "volumeMounts": [
            {"name": "dind-socket", "mountPath": "/var/run/dind"},
            {"name": "dind-storage", "mountPath": "/var/lib/docker"},
            {"name": "work", "mountPath": K8S_WORK},
        ],
    }


def shard_container(options: K8sOptions, job: ScaleJob) -> Manifest:
    dind = options.engine == "dind"
    mounts = [{"name": "results", "mountPath": "/results"}, {"name": "work", "mountPath": K8S_WORK}]
    mounts.append(
        {"name": "dind-socket", "mountPath": "/var/run/dind"}
        if dind
        else {"name": "docker-socket", "mountPath": "/var/run/docker.sock"}
    )
    return {
        "name": "shard",
        "image": options.image,
        "command": ["/bin/bash", "-c"],
        "args": [shard_script(job)],
        "env": [{"name": "DOCKER_HOST", "value": DIND_SOCKET if dind else NODE_SOCKET}],
        # With a sidecar the engine holds the profile's resources; with the node's socket the
        # engine's containers run outside the pod, so the pod asks for them.
        "resources": {"requests": {"cpu": "250m", "memory": "1Gi"}} if dind else resource_spec(job.resources),
        "volumeMounts": mounts,
    }


def shard_volumes(options: K8sOptions) -> list[Manifest]:
    results = {"name": "results", "persistentVolumeClaim": {"claimName": options.pvc}}
    if options.engine == "dind":
        return [
            results,
            {"name": "work", "emptyDir": {}},
            {"name": "dind-socket", "emptyDir": {}},
            {"name": "dind-storage", "emptyDir": {}},
        ]
    return [
        results,
        {"name": "work", "hostPath": {"path": K8S_WORK, "type": "DirectoryOrCreate"}},
        {"name": "docker-socket", "hostPath": {"path": "/var/run/docker.sock", "type": "Socket"}},
    ]


def shard_job(options: K8sOptions, job: ScaleJob) -> str:
    """job.yaml: the Indexed Job, one completion index per shard."""
    pod: Manifest = {"restartPolicy": "Never"}
    if options.engine == "dind":
        pod["initContainers"] = [dind_sidecar(options, job)]
    pod["containers"] = [shard_container(options, job)]
    pod["volumes"] = shard_volumes(options)
    manifest = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": metadata(job, job.name, options.namespace),
        "spec": {
            "completionMode": "Indexed",
            "completions": job.shards,
            "parallelism": min(options.parallel or job.shards, job.shards),
            "backoffLimit": job.shards,
            "template": {"metadata": {"labels": pod_labels("shard")}, "spec": pod},
        },
    }
    engine = "a Docker-in-Docker sidecar" if options.engine == "dind" else "the node's Docker socket"
    header = (
        f"Generated by `repro scale k8s` (repro {job.version}) for Kubernetes {K8S_VERSION}:\n"
        f"matrix {job.matrix} on profile {job.profile}, {job.cells} cells in {job.shards} shards, "
        "one completion index per shard.\n"
        f"The engine is reached through {engine} (see docs/scale-out.md for what that costs).\n"
        f"The shard container and the engine see the work folder {K8S_WORK} at the same path."
    )
    return to_yaml(header, manifest)


def merge_script(job: ScaleJob) -> str:
    repro = job.repro
    return "\n".join(
        [
            "set -euo pipefail",
            f"cd {shlex.quote(job.workdir)}",
            "runs=()",
            f"for i in $(seq 1 {job.shards}); do",
            '  runs+=("/results/shard-${i}/$(cat "/results/shard-${i}/LATEST")")',
            "done",
            f'{repro} results merge "${{runs[@]}}" --out /results/merged',
            "status=0",
            f"{repro} check /results/merged || status=$?",
            f"{repro} paper render /results/merged --out /results/tables",
            'exit "${status}"',
        ]
    )


def merge_job(options: K8sOptions, job: ScaleJob) -> str:
    """merge-job.yaml: join the shard bundles, check them, render the tables (no container engine)."""
    container = {
        "name": "merge",
        "image": options.image,
        "command": ["/bin/bash", "-c"],
        "args": [merge_script(job) + "\n"],
        "resources": {"requests": {"cpu": "1", "memory": "2Gi"}},
        "volumeMounts": [{"name": "results", "mountPath": "/results"}],
    }
    pod = {
        "restartPolicy": "Never",
        "containers": [container],
        "volumes": [{"name": "results", "persistentVolumeClaim": {"claimName": options.pvc}}],
    }
    manifest = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": metadata(job, f"{job.name}-merge", options.namespace),
        "spec": {
            "completions": 1,
            "backoffLimit": 0,
            "template": {"metadata": {"labels": pod_labels("merge")}, "spec": pod},
        },
    }
    header = (
        f"Generated by `repro scale k8s` (repro {job.version}) for Kubernetes {K8S_VERSION}: after the\n"
        f"Indexed Job {job.name} completed (submit.sh waits for it), join the {job.shards} shard\n"
        "bundles on the results volume, check them and render the tables. No container engine needed."
    )
    return to_yaml(header, manifest)
