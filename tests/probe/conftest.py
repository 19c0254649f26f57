"""Fixtures for the probe tests: Docker and the harness image (tests/fixtures/docker.py, images.py)."""

from tests.fixtures.docker import _no_container_left_by_the_session, docker_client, test_run_id_fixture  # noqa: F401
from tests.fixtures.images import base_image_id, harness_image_ref  # noqa: F401
