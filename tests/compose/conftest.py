"""Fixtures for the compose tests: Docker, the images and the SmolLM2 model (tests/fixtures/)."""

from tests.fixtures.docker import _no_container_left_by_the_session, docker_client, test_run_id_fixture  # noqa: F401
from tests.fixtures.images import base_image_id, harness_image_ref, llama_image_ref  # noqa: F401
from tests.fixtures.models import model_cache, smollm2_gguf, smollm2_spec  # noqa: F401
