"""Fixtures for the engine tests: Docker and images (tests/fixtures/docker.py, images.py), models.

The session ends with no container labelled by it: `_no_container_left_by_the_session` (from
tests/fixtures/docker.py) removes any left and fails the session.
"""

from tests.fixtures.docker import _no_container_left_by_the_session, docker_client, test_run_id_fixture  # noqa: F401
from tests.fixtures.images import base_image_id, harness_image_ref, llama_image_ref  # noqa: F401
from tests.fixtures.models import model_cache, smollm2_gguf, smollm2_spec  # noqa: F401
