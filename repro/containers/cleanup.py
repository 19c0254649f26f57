"""Leftover containers: find and remove them by the `repro.run` label.

Every container repro creates carries `repro.run=<run-id>` (and `repro.cell`, `repro.role`).
After a crash `repro cleanup` removes what is left; a run's leak audit calls
`leaked_containers(run_id)` at its end, and any name it returns makes the run not clean.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from repro.containers import lifecycle as containers
from repro.containers.client import Container, DockerClient
from repro.containers.sandbox import LABEL_CELL, LABEL_ROLE, LABEL_RUN


class Leftover(BaseModel):
    model_config = ConfigDict(frozen=True)

    id: str
    name: str
    run: str
    cell: str | None = None
    role: str | None = None
    status: str
    removed: bool = False


def repro_containers(client: DockerClient, run_id: str | None = None) -> list:
    """Containers labelled by one run, or by any run when run_id is None (running or not)."""
    label = f"{LABEL_RUN}={run_id}" if run_id else LABEL_RUN
    return client.containers.list(all=True, filters={"label": label}, ignore_removed=True)


def describe(container: Container) -> Leftover:
    labels = container.labels or {}
    return Leftover(
        id=container.id[:12],
        name=container.name,
        run=labels.get(LABEL_RUN, ""),
        cell=labels.get(LABEL_CELL),
        role=labels.get(LABEL_ROLE),
        status=container.status,
    )


def leaked_containers(run_id: str, client: DockerClient | None = None) -> list[str]:
    """Names of the containers a run left behind (empty when it tore everything down)."""
    client = client or _client()
    return sorted(c.name for c in repro_containers(client, run_id))


def cleanup(run_id: str | None = None, client: DockerClient | None = None) -> list[Leftover]:
    """Remove the containers of one run (or of every run); report each and whether it is gone."""
    client = client or _client()
    report = []
    for container in repro_containers(client, run_id):
        entry = describe(container)
        containers.remove(container)
        gone = not any(c.id == container.id for c in repro_containers(client, run_id))
        report.append(entry.model_copy(update={"removed": gone}))
    return report


def _client() -> DockerClient:
    from repro.containers.client import get_client

    return get_client()
