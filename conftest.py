"""Shared pytest fixtures live in tests/fixtures/; this root conftest registers them."""

pytest_plugins = [
    "tests.fixtures.docker",
    "tests.fixtures.images",
    "tests.fixtures.models",
]
