"""Shared pytest fixtures live in tests/fixtures/; this root conftest registers them and marks
every test by what it needs, so `pytest -m "not docker and not engine"` starts nothing."""

from __future__ import annotations

import signal

import pytest

pytest_plugins = [
    "tests.fixtures.canary",
    "tests.fixtures.docker",
    "tests.fixtures.images",
    "tests.fixtures.models",
    "tests.fixtures.rules",
]

# A test that uses one of these fixtures (directly or through another fixture) needs that marker.
NEEDS = {
    "docker_client": "docker",
    "llama_image_ref": "engine",
    "smollm2_gguf": "engine",
    "qwen_gguf": "engine",
}


def pytest_configure(config: pytest.Config) -> None:
    """Markers registered here, not in pyproject.toml: pyproject.toml is part of the harness tree
    digest (repro.store.images.keys.harness_source_digest), which a test marker must not change."""
    config.addinivalue_line(
        "markers", "ollama: builds Ollama from its pinned Go module (about 3 minutes the first time) and boots it"
    )
    config.addinivalue_line(
        "markers",
        "runtimes: builds agent runtime images (npm ci or pip download on the host, then docker build; "
        "a minute or more each) and runs them",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        for fixture, marker in NEEDS.items():
            if fixture in getattr(item, "fixturenames", ()):
                item.add_marker(getattr(pytest.mark, marker))
                if marker == "engine":
                    item.add_marker(pytest.mark.docker)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


# A SIGTERM (a CI timeout, `kill`) stops the session as Ctrl-C does, so fixtures' finalizers run
# and every container a test started is removed.
signal.signal(signal.SIGTERM, _interrupt)
