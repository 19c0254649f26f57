"""Boot-to-ready of the sealed llama.cpp container versus the same llama-server binary on the host.

    python benchmarks/engine_boot.py [--runs 5] [--matrix matrix/smoke.yaml] [--model ID]

Prints figures (this is a benchmark, not a timed test):
  * sealed container: create -> ready as the orchestrator sees it (engine container created and
    started, a probe container joined to its namespace polls /health until 200), per run and
    median; also the probe's own view (probe start -> 200);
  * host: the llama-server binary copied out of the same image (get_archive), started directly
    on 127.0.0.1 with the same flags, polled on loopback until /health answers 200;
  * their ratio; and the latency gate's duration on the sealed engine.

Needs the built engine and harness images (`repro images build matrix/smoke.yaml`) and
the model in the store (`repro models fetch`).
"""

from __future__ import annotations

import argparse
import io
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from repro.core.config import DEFAULT_MATRIX  # noqa: E402
from repro.spec.loading import load_matrix  # noqa: E402
from repro.spec.profiles import load_profiles  # noqa: E402

RUN_ID = f"bench-{os.getpid()}"


def sealed_boots(client, engine, image, model, gguf, profile, decoding, runs: int) -> tuple[list[float], list[float]]:
    orchestrator, probe_view = [], []
    for _ in range(runs):
        started = time.monotonic()
        handle = engine.boot(engine.boot_spec(image, model, gguf, profile, decoding, profile_name="cpu"))
        try:
            probe_seconds = engine.wait_ready(handle, profile.ready_timeout_s)
            orchestrator.append(time.monotonic() - started)
            probe_view.append(probe_seconds)
        finally:
            engine.stop(handle)
    return orchestrator, probe_view


def copy_binary(client, image_id: str, folder: Path) -> Path:
    """The image's llama-server, copied out with get_archive from a created (never started) container."""
    container = client.containers.create(
        image_id, labels={"repro.run": RUN_ID, "repro.role": "copy"}, network_mode="none"
    )
    try:
        entrypoint = (container.attrs.get("Config") or {}).get("Entrypoint") or ["/usr/local/bin/llama-server"]
        stream, _ = container.get_archive(entrypoint[0])
        data = b"".join(stream)
    finally:
        container.remove(force=True)
    with tarfile.open(fileobj=io.BytesIO(data)) as archive:
        member = next(m for m in archive.getmembers() if m.isfile())
        target = folder / "llama-server"
        with archive.extractfile(member) as source, open(target, "wb") as out:
            shutil.copyfileobj(source, out)
    target.chmod(0o755)
    return target


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def host_boots(binary: Path, args: list[str], gguf: Path, runs: int, timeout: float) -> tuple[list[float], str | None]:
    import httpx

    times: list[float] = []
    for _ in range(runs):
        port = free_port()
        argv = [str(binary)] + [
            str(gguf) if a == "/models/model.gguf" else (str(port) if prev == "--port" else a)
            for prev, a in zip([None, *args[:-1]], args, strict=True)
        ]
        started = time.monotonic()
        process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=tempfile.gettempdir())
        try:
            with httpx.Client(trust_env=False, timeout=2.0) as http:
                while True:
                    if process.poll() is not None:
                        err = process.stderr.read().decode(errors="replace")[-800:] if process.stderr else ""
                        return times, f"llama-server exited with status {process.returncode} on the host: {err.strip()}"
                    try:
                        if http.get(f"http://127.0.0.1:{port}/health").status_code == 200:
                            times.append(time.monotonic() - started)
                            break
                    except httpx.HTTPError:
                        pass
                    if time.monotonic() - started > timeout:
                        return times, f"not ready within {timeout:g}s on the host"
                    time.sleep(0.05)
        finally:
            process.terminate()
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
    return times, None


def fmt(values: list[float]) -> str:
    return ", ".join(f"{v:.2f}" for v in values)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--matrix", default=str(DEFAULT_MATRIX))
    parser.add_argument("--model", default=None, help="model id (default: the matrix's first)")
    parser.add_argument(
        "--engine-image", default=None, help="a local engine image (default: the matrix's, from repro.store.images)"
    )
    parser.add_argument(
        "--harness-image", default=None, help="a local harness image (default: from repro.store.images)"
    )
    args = parser.parse_args()

    from repro.containers.cleanup import cleanup
    from repro.containers.client import get_client
    from repro.engines.gate import run_gate
    from repro.engines.llamacpp import server_args
    from repro.engines.registry import engine_for
    from repro.store.models import model_path

    matrix = load_matrix(args.matrix).matrix
    spec = next(e for e in matrix.engines if e.kind == "llama.cpp")
    model = matrix.model(args.model) if args.model else matrix.models[0]
    profile = load_profiles().get("cpu")
    client = get_client()
    gguf = model_path(model)
    if args.engine_image and args.harness_image:
        image, probe_image = client.images.get(args.engine_image), client.images.get(args.harness_image)
    else:
        from repro.store.images import engine_image, harness_image

        image = client.images.get(args.engine_image) if args.engine_image else engine_image(spec, "cpu", client)
        probe_image = client.images.get(args.harness_image) if args.harness_image else harness_image(client)
    engine = engine_for(client, spec, probe_image=probe_image, run_id=RUN_ID, group_id="bench")
    print(
        f"engine {spec.id} image {image.id[:19]}, model {model.id} "
        f"({model.file_size / 1e6:.0f} MB), profile cpu, {args.runs} runs"
    )
    try:
        sealed, probe_view = sealed_boots(client, engine, image, model, gguf, profile, matrix.decoding, args.runs)
        print(
            f"sealed container, create -> ready (orchestrator): {fmt(sealed)} s; median "
            f"{statistics.median(sealed):.2f} s"
        )
        print(
            f"sealed container, probe start -> ready (probe's view): {fmt(probe_view)} s; "
            f"median {statistics.median(probe_view):.2f} s"
        )

        with tempfile.TemporaryDirectory(prefix="repro-bench-") as folder:
            binary = copy_binary(client, image.id, Path(folder))
            host, problem = host_boots(
                binary, server_args(model, profile, matrix.decoding), gguf, args.runs, profile.ready_timeout_s
            )
        if problem and not host:
            print(f"host: could not run the image's llama-server directly: {problem}")
            print("host: measured the sealed container only")
        else:
            print(f"host process, spawn -> ready: {fmt(host)} s; median {statistics.median(host):.2f} s")
            ratio = statistics.median(sealed) / statistics.median(host)
            print(
                f"ratio sealed/host (medians): {ratio:.2f}x "
                f"(+{statistics.median(sealed) - statistics.median(host):.2f} s)"
            )

        handle = engine.start(engine.boot_spec(image, model, gguf, profile, matrix.decoding, profile_name="cpu"))
        try:
            started = time.monotonic()
            gate = run_gate(client, handle, profile=profile, settings=matrix.latency_gate, decoding=matrix.decoding)
            wall = time.monotonic() - started
        finally:
            engine.stop(handle)
        print(
            f"latency gate: {'PASS' if gate.passed else 'FAIL'} in {wall:.2f} s wall "
            f"({gate.total_seconds:.2f} s inside the probe; warm-up + {len(gate.attempts)} attempts), "
            f"median {gate.median_seconds:.2f} s per step, median {gate.median_tokens_per_second:.1f} tokens/s"
        )
    finally:
        leftovers = cleanup(RUN_ID, client)
        if leftovers:
            print(f"removed {len(leftovers)} leftover container(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
