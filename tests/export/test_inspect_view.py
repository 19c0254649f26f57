"""The exported logs in `inspect view`, inspect_ai's own log viewer, opened in headless chromium:
a sample's messages are on the page. The viewer serves loopback only and is stopped at the end."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from repro.bundle.layout.reader import BundleReader
from repro.report.export import log_path
from tests.fixtures.browser import CHROMIUM, SKIP_REASON, page_text_when
from tests.fixtures.signals import popen

pytestmark = [pytest.mark.browser, pytest.mark.skipif(CHROMIUM is None, reason=SKIP_REASON)]
START_TIMEOUT_S = 60


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_until_serving(url: str, server: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        assert server.poll() is None, "inspect view exited before serving"
        try:
            with urllib.request.urlopen(url, timeout=2) as answer:
                if answer.status == 200:
                    return
        except OSError:
            time.sleep(0.3)
    raise TimeoutError(f"inspect view did not answer within {START_TIMEOUT_S} s")


def test_inspect_view_shows_a_samples_messages(smoke_run: Path, smoke_export: Path, tmp_path: Path) -> None:
    inspect = Path(sys.executable).with_name("inspect")
    port = free_port()
    command = [
        str(inspect),
        "view",
        "--log-dir",
        str(smoke_export),
        "--recursive",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--no-trust-content",
    ]
    server = popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # stopped by SIGTERM below
    try:
        base = f"http://127.0.0.1:{port}"
        wait_until_serving(f"{base}/api/logs", server)
        bundle = BundleReader(smoke_run)
        cell = next(c for c in bundle.cell_ids() if "qwen" in c and "__json_schema__workspace" in c)
        relative = log_path(smoke_export, bundle.run().run_id, cell).relative_to(smoke_export).as_posix()
        wanted = "You keep the veterinary clinic's vaccination list."  # ask-001's system message
        text = page_text_when(
            f"{base}/#/logs/{relative}/samples/sample/ask-001/1/messages", tmp_path / "profile", wanted, timeout=60
        )
        assert wanted in text, text[-2000:]
        assert "Mark the dog's rabies booster as done" in text  # the task, the user's message
    finally:
        server.terminate()
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(timeout=15)
