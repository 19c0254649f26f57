"""Ollama's prompt and generation speed against llama.cpp's, on the same GGUF, threads and prompts, in one run.

    python benchmarks/ollama_speed.py [--ollama-matrix matrix/ollama-smoke.yaml] [--llama-matrix matrix/smoke.yaml]
        [--model ID] [--threads 2] [--repeats 3] [--prompt-chars 1900] [--tokens 128]

It boots each engine's sealed image from its matrix, one after the other, as a run on the cpu
profile at `--threads` would start it (repro.engines: the same container settings, the same
CPU limit, llama.cpp with its prompt cache off), on the host's loopback instead of a sealed
namespace. Ollama gets the verified GGUF as a blob and `/api/create` with the matrix's explicit
template and parameters, as the engine's load does. Each engine then reads the same `--repeats`
raw prompts (no chat template: the same tokens reach both), each about `--prompt-chars`
characters of this project's own docs and each starting elsewhere, so no prompt shares a prefix
with another and Ollama, whose runner always reuses its longest cached prefix, reads every one
whole; then generates `--tokens` tokens at temperature 0.

It prints, per engine, the prompt and generation tokens/s of each request from the engine's own
counters (llama.cpp's `timings`, Ollama's `prompt_eval_*` and `eval_*`), their medians, and the
ratios Ollama / llama.cpp. Exit 0 when both ran, 2 for bad input. Needs both images built and the
model in the store. Starts one engine at a time: run it alone on the machine.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.prompt_cache import prose  # noqa: E402
from benchmarks.tholos_direct import free_port, wait_ready  # noqa: E402

RUN_ID = f"ollamaspeed-{os.getpid()}"
READY_TIMEOUT_S = 120
LOAD_TIMEOUT_S = 900


@dataclass(frozen=True)
class Speed:
    prompt_tokens: int
    prompt_per_s: float
    generated: int
    generated_per_s: float


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--ollama-matrix", default="matrix/ollama-smoke.yaml")
    parser.add_argument("--llama-matrix", default="matrix/smoke.yaml")
    parser.add_argument("--model", default="qwen2.5-coder-0.5b-instruct-q4_k_m")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--prompt-chars", type=int, default=1900)
    parser.add_argument("--tokens", type=int, default=128)
    return parser.parse_args(argv)


def prompts(args: argparse.Namespace) -> list[str]:
    """`--repeats` prompts of our own prose, each from another place: no two share a prefix."""
    return [prose(7919 * (index + 1), args.prompt_chars) for index in range(args.repeats)]


def engine_setup(matrix: str, kind: str, args: argparse.Namespace, port: int) -> tuple[object, dict, object, Path]:
    """The matrix's engine of `kind` and the model, as the cpu profile at --threads would start it
    (prompt cache off), on the host's loopback at `port`: the engine, its container kwargs, the
    model spec and the GGUF."""
    from repro.engines.registry import engine_for
    from repro.spec.loading import load_matrix_and_profiles
    from repro.store.images import engine_image
    from repro.store.models import model_path

    loaded, profiles = load_matrix_and_profiles(matrix)
    spec = next((e for e in loaded.matrix.engines if e.kind == kind), None)
    model = next((m for m in loaded.matrix.models if m.id == args.model), None)
    if spec is None or model is None:
        raise SystemExit(f"{matrix}: no {kind} engine or no model {args.model}")
    profile = profiles.get("cpu").model_copy(update={"threads": args.threads, "cache_prompt": False})
    image = engine_image(spec, "cpu").id
    engine = engine_for(None, spec, probe_image=image, run_id=RUN_ID, group_id="speed")
    gguf = model_path(model)
    kwargs = engine.container_kwargs(
        engine.boot_spec(image, model, gguf, profile, loaded.matrix.decoding, profile_name="cpu")
    )
    return engine, on_loopback(kwargs, kind, port), model, gguf


def on_loopback(kwargs: dict, kind: str, port: int) -> dict:
    """The container's settings with the host's network and the engine listening on `port`."""
    if kind == "ollama":
        env = dict(kwargs.get("environment") or {})
        env["OLLAMA_HOST"] = f"127.0.0.1:{port}"
        return kwargs | {"environment": env, "network_mode": "host"}
    command = list(kwargs["command"])
    command[command.index("--port") + 1] = str(port)
    return kwargs | {"command": command, "network_mode": "host"}


def llama_speeds(client, args: argparse.Namespace) -> list[Speed]:
    import httpx

    from repro.containers.lifecycle import started

    port = free_port()
    _, kwargs, _, _ = engine_setup(args.llama_matrix, "llama.cpp", args, port)
    speeds = []
    with started(client, kwargs), httpx.Client(trust_env=False, timeout=600) as http:
        wait_ready(port, READY_TIMEOUT_S)
        for prompt in prompts(args):
            body = {"prompt": prompt, "n_predict": args.tokens, "temperature": 0, "seed": 42, "cache_prompt": False}
            timings = http.post(f"http://127.0.0.1:{port}/completion", json=body).json()["timings"]
            speeds.append(
                Speed(
                    timings["prompt_n"],
                    timings["prompt_per_second"],
                    timings["predicted_n"],
                    timings["predicted_per_second"],
                )
            )
    return speeds


def ollama_speeds(client, args: argparse.Namespace) -> list[Speed]:
    import httpx

    from repro.containers.lifecycle import started
    from repro.engines.ollama import model_parameters, template_for

    port = free_port()
    engine, kwargs, model, gguf = engine_setup(args.ollama_matrix, "ollama", args, port)
    base = f"http://127.0.0.1:{port}"
    speeds = []
    with started(client, kwargs), httpx.Client(trust_env=False, timeout=LOAD_TIMEOUT_S) as http:
        wait_version(http, base)
        digest = f"sha256:{model.sha256}"
        with gguf.open("rb") as data:
            http.post(f"{base}/api/blobs/{digest}", content=data).raise_for_status()
        name = engine.model_name(model)
        template, _ = template_for(model)
        parameters = model_parameters(model, load_decoding(args.ollama_matrix), args.threads)
        create = {"model": name, "files": {"model.gguf": digest}, "template": template, "parameters": parameters}
        http.post(f"{base}/api/create", json=create | {"stream": False}).raise_for_status()
        for prompt in prompts(args):
            options = {"num_predict": args.tokens, "temperature": 0, "seed": 42, "num_thread": args.threads}
            body = {"model": name, "prompt": prompt, "raw": True, "stream": False, "options": options}
            answer = http.post(f"{base}/api/generate", json=body).json()
            speeds.append(
                Speed(
                    answer["prompt_eval_count"],
                    answer["prompt_eval_count"] / (answer["prompt_eval_duration"] / 1e9),
                    answer["eval_count"],
                    answer["eval_count"] / (answer["eval_duration"] / 1e9),
                )
            )
    return speeds


def load_decoding(matrix: str):
    from repro.spec.loading import load_matrix_and_profiles

    return load_matrix_and_profiles(matrix)[0].matrix.decoding


def wait_version(http, base: str) -> None:
    import time

    import httpx

    started = time.monotonic()
    while time.monotonic() - started < READY_TIMEOUT_S:
        try:
            if http.get(f"{base}/api/version", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise SystemExit(f"Ollama on {base} did not answer /api/version within {READY_TIMEOUT_S}s")


def show(name: str, speeds: list[Speed]) -> tuple[float, float]:
    for number, speed in enumerate(speeds, start=1):
        print(
            f"  {name:<9} prompt {number}: {speed.prompt_tokens} tokens at {speed.prompt_per_s:7.1f} tok/s; "
            f"generated {speed.generated} at {speed.generated_per_s:6.1f} tok/s"
        )
    return statistics.median(s.prompt_per_s for s in speeds), statistics.median(s.generated_per_s for s in speeds)


def main(argv: list[str] | None = None) -> int:
    from repro.store.images import client_or_default

    args = parse(argv)
    if args.repeats < 1 or args.tokens < 1 or args.threads < 1:
        print("--repeats, --tokens and --threads must be at least 1", file=sys.stderr)
        return 2
    client = client_or_default(None)
    print(f"same GGUF ({args.model}), {args.threads} threads, {args.repeats} raw prompts, {args.tokens} tokens each")
    llama = show("llama.cpp", llama_speeds(client, args))
    ollama = show("Ollama", ollama_speeds(client, args))
    print("| | llama.cpp | Ollama | Ollama / llama.cpp |")
    print("|---|---:|---:|---:|")
    print(f"| prompt, tok/s (median) | {llama[0]:.1f} | {ollama[0]:.1f} | {ollama[0] / llama[0]:.2f} |")
    print(f"| generation, tok/s (median) | {llama[1]:.1f} | {ollama[1]:.1f} | {ollama[1] / llama[1]:.2f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
