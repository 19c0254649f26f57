"""One Docker client for the orchestrator: every call has a timeout; no daemon is a one-line error."""

from __future__ import annotations

import os
import time
from functools import lru_cache
from typing import Any

import docker
from docker.errors import DockerException

from repro.errors import DockerUnavailable
from repro.files import short_error

DEFAULT_TIMEOUT_S = 120
START_HINT = "start one with: dockerd --bridge=none --iptables=false --ip-forward=false (see README)"


def docker_host() -> str:
    return os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")


@lru_cache(maxsize=1)
def get_client(timeout: int = DEFAULT_TIMEOUT_S) -> docker.DockerClient:
    """A client that has answered a ping, or DockerUnavailable."""
    try:
        client = docker.DockerClient(base_url=docker_host(), timeout=timeout)
        client.ping()
    except DockerException as error:
        raise DockerUnavailable(f"Docker engine not reachable at {docker_host()}: {short_error(error, 200)}; {START_HINT}") from None
    except Exception as error:  # requests' connection errors surface here
        raise DockerUnavailable(f"Docker engine not reachable at {docker_host()}: {short_error(error, 200)}; {START_HINT}") from None
    return client


def daemon_unanswering(error: BaseException) -> bool:
    """The Docker daemon did not answer (restarting, stopped, its socket gone): a fault of the
    machine, not of a container; a missing container (NotFound) is not one."""
    import requests

    if isinstance(error, requests.exceptions.ConnectionError):
        return True
    return isinstance(error, docker.errors.APIError) and not isinstance(error, docker.errors.NotFound) and error.is_server_error()


def wait_for_daemon(client: Any, seconds: float = 60.0, interval: float = 1.0) -> bool:
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


# The Docker SDK ships no type information: these aliases name what a parameter holds.
DockerClient = Any
Container = Any
Image = Any
