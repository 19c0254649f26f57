"""The one container lifecycle (repro.containers) with a real Docker engine: exit codes, lines fed
as they come, a deadline that holds for a silent container, removal that never raises."""

from __future__ import annotations

import pytest

from repro.containers import cleanup as cleanup_module
from repro.containers import lifecycle as containers
from repro.containers.sandbox import container_name, create_kwargs, engine_settings, image_id

pytestmark = pytest.mark.docker


def kwargs_for(client, image_ref, run_id: str, code: str) -> dict:
    settings = engine_settings(run_id=run_id, cell_id="container-tests", mem_limit=256 * 1024**2, nano_cpus=500_000_000)
    return create_kwargs(
        settings,
        image_id(client, image_ref),
        ["-c", code],
        entrypoint=["python3"],
        name=container_name(run_id, "engine", "lifecycle"),
    )


def test_exit_code_and_lines(docker_client, harness_image_ref, TEST_RUN_ID):
    lines: list[str] = []
    code = "import sys; print('one', flush=True); print('two', flush=True); sys.exit(3)"
    with containers.started(
        docker_client, kwargs_for(docker_client, harness_image_ref, TEST_RUN_ID, code)
    ) as container:
        ended = containers.wait(container, 60, on_line=lines.append)
    assert ended.code == 3 and not ended.timed_out
    assert lines == ["one", "two"] and "two" in ended.log_tail
    assert cleanup_module.leaked_containers(TEST_RUN_ID, docker_client) == []


def test_a_silent_container_is_stopped_at_its_deadline_and_removed(docker_client, harness_image_ref, TEST_RUN_ID):
    """It prints nothing and sleeps far past the deadline: the wait still returns, reports the
    timeout, and the container is gone afterwards."""
    silent = "import time; time.sleep(600)"
    with containers.started(
        docker_client, kwargs_for(docker_client, harness_image_ref, TEST_RUN_ID, silent)
    ) as container:
        ended = containers.wait(container, 3, on_line=lambda line: None)
        assert ended.timed_out and ended.code is None
        assert 3 <= ended.seconds < 30
        assert containers.status(container) != "running"
    assert containers.status(container) == "removed"
    containers.remove(container)  # twice: never raises
    assert cleanup_module.leaked_containers(TEST_RUN_ID, docker_client) == []


def test_a_watch_that_raises_ends_the_wait_and_still_removes(docker_client, harness_image_ref, TEST_RUN_ID):
    class EngineGone(Exception):
        pass

    def engine_died() -> None:
        raise EngineGone

    with pytest.raises(EngineGone):
        with containers.started(
            docker_client, kwargs_for(docker_client, harness_image_ref, TEST_RUN_ID, "import time; time.sleep(600)")
        ) as container:
            containers.wait(container, 60, watch=engine_died)
    assert containers.status(container) == "removed"
