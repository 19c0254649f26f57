"""Fixtures for the engine tests. Docker, the images and the models are the session's own
(tests/fixtures/, registered by the root conftest.py); the session ends with no container labelled
by it (`_no_container_left_by_the_session`, tests/fixtures/docker.py).

`ollama_image` is the real Ollama built from its pinned Go module (matrix/ollama-smoke.yaml): about
4 minutes on 2 cores the first time, cached by its content key after that.
"""

from __future__ import annotations

import pytest

from repro.spec.loading import load_matrix
from tests.fixtures.images import _progress

OLLAMA_MATRIX = load_matrix("matrix/ollama-smoke.yaml").matrix
OLLAMA_SPEC = OLLAMA_MATRIX.engines[0]


@pytest.fixture(scope="session")
def ollama_image(docker_client, base_image_id):
    from repro.store.images import engine_image

    return engine_image(OLLAMA_SPEC, "cpu", docker_client, build=True, log=_progress("ollama"))
