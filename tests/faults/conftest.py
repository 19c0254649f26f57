"""Fault tests: the e2e fixtures (a canary home sharing the session's model store) reused."""

from tests.e2e.conftest import canary_home  # noqa: F401 (a fixture)
