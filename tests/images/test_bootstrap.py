"""`repro images bootstrap`: refuses clearly without debootstrap or root; idempotent."""

from __future__ import annotations

import subprocess
import sys

import pytest

from repro.core.config import PROJECT_ROOT
from repro.core.errors import ReproError
from repro.store import bootstrap as bootstrap_module
from repro.store.bootstrap import base_reference, bootstrap, preflight


def no_debootstrap(monkeypatch):
    monkeypatch.setattr(bootstrap_module.shutil, "which", lambda name: None)
    monkeypatch.setattr(bootstrap_module.os, "access", lambda path, mode: False)


def test_refuses_without_debootstrap_in_one_line(monkeypatch):
    no_debootstrap(monkeypatch)
    with pytest.raises(ReproError) as caught:
        preflight()
    assert caught.value.lines == [str(caught.value)]
    assert "debootstrap not found" in str(caught.value) and "\n" not in str(caught.value)


def test_refuses_without_root_in_one_line(monkeypatch):
    monkeypatch.setattr(bootstrap_module, "find_debootstrap", lambda: "/usr/sbin/debootstrap")
    monkeypatch.setattr(bootstrap_module.os, "geteuid", lambda: 1000)
    with pytest.raises(ReproError, match="debootstrap needs root") as caught:
        preflight()
    assert len(caught.value.lines) == 1


class _NoImages:
    class images:  # noqa: N801 (mimics docker's client.images)
        @staticmethod
        def get(reference):
            from docker.errors import ImageNotFound

            raise ImageNotFound(reference)


def test_bootstrap_refuses_before_touching_anything(monkeypatch, tmp_path):
    monkeypatch.setenv("REPRO_CACHE", str(tmp_path))
    no_debootstrap(monkeypatch)
    with pytest.raises(ReproError, match="debootstrap not found"):
        bootstrap(_NoImages(), suite="bookworm")
    assert not (tmp_path / "tmp").exists()


def test_the_cli_prints_the_refusal_as_one_line(tmp_path):
    # A PATH without debootstrap and an os.access that finds nothing: the command exits 1 with one line.
    code = (
        "import os, sys; os.access = lambda *a, **k: False; import shutil; shutil.which = lambda *a, **k: None; "
        "from repro.store import bootstrap; bootstrap.existing_base = lambda *a, **k: None; "
        "from repro.__main__ import main; sys.exit(main(['images', 'bootstrap', '--suite', 'nosuchsuite']))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        env={"PATH": "/nonexistent", "REPRO_CACHE": str(tmp_path)},
        timeout=60,
    )
    if "Docker engine not reachable" in proc.stderr:
        pytest.skip("no Docker engine: the command stops at the client before the refusal")
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.strip().splitlines() == [proc.stderr.strip()]
    assert "debootstrap not found" in proc.stderr


@pytest.mark.docker
def test_bootstrap_is_idempotent(docker_client, base_image_id, monkeypatch):
    # With the base present nothing runs (not even the debootstrap check) and the id is unchanged.
    no_debootstrap(monkeypatch)
    image_id, created = bootstrap(docker_client)
    assert (image_id, created) == (base_image_id, False)
    labels = docker_client.images.get(base_reference()).labels
    assert labels["repro.kind"] == "base" and labels["repro.base.variant"] == "minbase"
    assert set(labels["repro.base.include"].split(",")) >= {"python3", "ca-certificates", "libgomp1"}
