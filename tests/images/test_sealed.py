"""The built images in the sealed setup: the engine on `network_mode=none`, probed from the
harness image joined to its network namespace; the harness as non-root on a read-only root."""

from __future__ import annotations

import json

import pytest

from tests.fixtures.docker import run_labels
from tests.fixtures.images import smoke_engine

pytestmark = [pytest.mark.docker]

PORT = 8080
HARDENED = {
    "read_only": True,
    "cap_drop": ["ALL"],
    "security_opt": ["no-new-privileges"],
    "user": "10001:10001",
    "pids_limit": 256,
    "environment": {"TZ": "UTC", "PYTHONHASHSEED": "0"},
}

PROBE = """
import json, time, urllib.request, urllib.error
base = "http://127.0.0.1:__PORT__"
out = {"health": None}
deadline = time.monotonic() + 180
while time.monotonic() < deadline:
    try:
        with urllib.request.urlopen(base + "/health", timeout=5) as r:
            out["health"] = [r.status, json.load(r)]
            break
    except urllib.error.HTTPError as e:
        out["health"] = [e.code, None]  # 503: still loading
    except OSError:
        pass
    time.sleep(0.5)
with urllib.request.urlopen(base + "/props", timeout=30) as r:
    props = json.load(r)
out["build_info"] = props.get("build_info")
schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"], \
"additionalProperties": False}
body = {"messages": [{"role": "user", "content": "Reply with ok true as JSON."}], "max_tokens": 24, \
"temperature": 0, "seed": 42,
        "response_format": {"type": "json_schema", "json_schema": {"name": "answer", "strict": True, "schema": schema}}}
req = urllib.request.Request(base + "/v1/chat/completions", data=json.dumps(body).encode(), \
headers={"Content-Type": "application/json"})
with urllib.request.urlopen(req, timeout=120) as r:
    reply = json.load(r)
out["content"] = reply["choices"][0]["message"]["content"]
out["system_fingerprint"] = reply.get("system_fingerprint")
try:
    urllib.request.urlopen("http://1.1.1.1/", timeout=3)
    out["outside"] = "reachable"
except OSError as e:
    out["outside"] = type(e).__name__
print("PROBE " + json.dumps(out))
""".replace("__PORT__", str(PORT))


def remove(container) -> None:
    if container is None:
        return
    try:
        container.remove(force=True)
    except Exception:
        pass


def test_the_harness_runs_as_non_root_on_a_read_only_root(docker_client, harness_image_ref):
    container = None
    try:
        container = docker_client.containers.create(
            harness_image_ref.id,
            ["--help"],
            network_mode="none",
            labels=run_labels(test="harness-help"),
            mem_limit="256m",
            **{k: v for k, v in HARDENED.items() if k != "user"},
        )
        container.start()
        status = container.wait(timeout=60)
        logs = container.logs().decode()
        assert status["StatusCode"] == 0, logs
        assert "usage:" in logs and "harness" in logs
        attrs = docker_client.containers.get(container.id).attrs
        assert attrs["Config"]["User"] == "10001:10001"  # the image's own user, not an override
        assert attrs["HostConfig"]["ReadonlyRootfs"] is True
        whoami = docker_client.containers.create(
            harness_image_ref.id,
            network_mode="none",
            entrypoint=["python3", "-c", "import os; print(os.getuid(), os.getgid())"],
            labels=run_labels(test="harness-uid"),
            **{k: v for k, v in HARDENED.items() if k != "user"},
        )
        try:
            whoami.start()
            whoami.wait(timeout=60)
            assert whoami.logs().decode().split() == ["10001", "10001"]
        finally:
            remove(whoami)
    finally:
        remove(container)


@pytest.mark.engine
def test_the_sealed_engine_reports_the_pinned_build(docker_client, llama_image_ref, harness_image_ref, smollm2_gguf):
    from docker.types import Mount

    expected = smoke_engine().stamped_build_info()
    engine = probe = None
    try:
        engine = docker_client.containers.create(
            llama_image_ref.id,
            [
                "--model",
                "/models/model.gguf",
                "--host",
                "127.0.0.1",
                "--port",
                str(PORT),
                "--ctx-size",
                "2048",
                "--threads",
                "2",
                "--parallel",
                "1",
                "--seed",
                "42",
                "--jinja",
            ],
            network_mode="none",
            mounts=[Mount("/models/model.gguf", str(smollm2_gguf), type="bind", read_only=True)],
            tmpfs={"/tmp": "size=64m"},
            mem_limit="1g",
            labels=run_labels(test="sealed-engine"),
            **HARDENED,
        )
        engine.start()
        probe = docker_client.containers.create(
            harness_image_ref.id,
            network_mode=f"container:{engine.id}",
            entrypoint=["python3", "-c", PROBE],
            mem_limit="256m",
            labels=run_labels(test="sealed-probe"),
            **HARDENED,
        )
        probe.start()
        status = probe.wait(timeout=300)
        logs = probe.logs().decode()
        assert status["StatusCode"] == 0, logs + "\n--- engine ---\n" + engine.logs().decode()[-3000:]
        result = json.loads(next(line for line in logs.splitlines() if line.startswith("PROBE "))[6:])
        assert result["health"] == [200, {"status": "ok"}]
        assert result["build_info"] == expected == "b11434-src-b0a2feb6"
        assert result["system_fingerprint"] == expected
        assert isinstance(json.loads(result["content"])["ok"], bool)
        assert result["outside"] != "reachable"
        attrs = docker_client.containers.get(engine.id).attrs
        host = attrs["HostConfig"]
        assert host["NetworkMode"] == "none" and host["ReadonlyRootfs"] is True
        assert host["CapDrop"] == ["ALL"] and "no-new-privileges" in host["SecurityOpt"]
        assert not host.get("PortBindings")
        assert attrs["Config"]["User"] == "10001:10001"
        assert all(m["RW"] is False for m in attrs["Mounts"] if m["Destination"] == "/models/model.gguf")
        assert set(attrs["NetworkSettings"]["Networks"]) == {"none"}
    finally:
        remove(probe)
        remove(engine)
