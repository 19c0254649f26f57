"""One Docker client for the orchestrator: every call has a timeout; no daemon is a one-line error."""

from __future__ import annotations

import os
import time
from functools import lru_cache
from typing import Any, Protocol, runtime_checkable

import docker
from docker.errors import DockerException

from repro.core.errors import DockerUnavailable
from repro.core.files import short_error

DEFAULT_TIMEOUT_S = 120
START_HINT = "start one with: dockerd --bridge=none --iptables=false --ip-forward=false (see README)"


def docker_host() -> str:
    return os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")


@lru_cache(maxsize=1)
def get_client(timeout: int = DEFAULT_TIMEOUT_S) -> DockerClient:
    """A client that has answered a ping, or DockerUnavailable."""
    try:
        client = docker.DockerClient(base_url=docker_host(), timeout=timeout)
        client.ping()
    except DockerException as error:
        raise DockerUnavailable(
            f"Docker engine not reachable at {docker_host()}: {short_error(error, 200)}; {START_HINT}"
        ) from None
    except Exception as error:  # requests' connection errors surface here
        raise DockerUnavailable(
            f"Docker engine not reachable at {docker_host()}: {short_error(error, 200)}; {START_HINT}"
        ) from None
    return client


def daemon_unanswering(error: BaseException) -> bool:
    """The Docker daemon did not answer (restarting, stopped, its socket gone): a fault of the
    machine, not of a container; a missing container (NotFound) is not one."""
    import requests

    if isinstance(error, requests.exceptions.ConnectionError):
        return True
    return (
        isinstance(error, docker.errors.APIError)
        and not isinstance(error, docker.errors.NotFound)
        and error.is_server_error()
    )


def wait_for_daemon(client: DockerClient, seconds: float = 60.0, interval: float = 1.0) -> bool:
    """Poll the daemon until it answers a ping (True) or `seconds` pass (False)."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            client.ping()
            return True
        except Exception:
            if time.monotonic() >= deadline:
                return False
            time.sleep(interval)


# The typed seam to the Docker SDK, which ships no type information: the calls the orchestrator
# makes, as Protocols that `docker.DockerClient` (and a test's stand-in) satisfies. A call that is
# not listed here is a new dependency on the SDK: add it here first.


class DockerObject(Protocol):
    """What an image and a container both have."""

    @property
    def id(self) -> str: ...
    @property
    def attrs(self) -> dict[str, Any]: ...
    @property
    def labels(self) -> dict[str, str]: ...


class Image(DockerObject, Protocol):
    @property
    def tags(self) -> list[str]: ...


class Container(DockerObject, Protocol):
    @property
    def name(self) -> str: ...
    @property
    def status(self) -> str: ...
    def reload(self) -> None: ...
    def start(self) -> None: ...
    def stop(self, **kwargs: Any) -> None: ...
    def kill(self, signal: str | int = ...) -> None: ...
    def remove(self, **kwargs: Any) -> None: ...
    def wait(self, **kwargs: Any) -> dict[str, Any]: ...
    def logs(self, **kwargs: Any) -> Any: ...  # bytes, or an iterator of bytes when streamed
    def exec_run(self, cmd: Any, **kwargs: Any) -> Any: ...


class ContainerCollection(Protocol):
    def get(self, container_id: str) -> Container: ...
    def create(self, image: str, command: Any = None, **kwargs: Any) -> Container: ...
    def list(self, **kwargs: Any) -> list[Container]: ...


class ImageCollection(Protocol):
    def get(self, name: str) -> Image: ...
    def list(self, **kwargs: Any) -> list[Image]: ...


@runtime_checkable  # a pydantic field (repro.run.context.RunContext) checks it with isinstance
class DockerClient(Protocol):
    @property
    def containers(self) -> ContainerCollection: ...
    @property
    def images(self) -> ImageCollection: ...
    @property
    # the low-level client: image builds and imports only (repro.store.images, repro.store.bootstrap)
    def api(self) -> Any: ...
    def ping(self) -> bool: ...
    def info(self) -> dict[str, Any]: ...
    def version(self) -> dict[str, Any]: ...
    def close(self) -> None: ...
