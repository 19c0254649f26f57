"""One Docker client for the orchestrator: every call has a timeout; no daemon is a one-line error."""

from __future__ import annotations

import os
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


# The Docker SDK ships no type information: these aliases name what a parameter holds.
DockerClient = Any
Container = Any
Image = Any
