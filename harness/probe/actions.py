"""``python -m harness probe <action> --base-url URL --out FILE [...]``: checks run inside the
engine's sealed network namespace, on behalf of the orchestrator (which never opens a TCP
connection to a container).

Actions:
  ready           poll a health path (llama.cpp ``/health``: 503 while loading) until 200
  props           ``GET /props`` (llama.cpp build_info, default_generation_settings, n_ctx)
  ollama-version  ``GET /api/version``
  ollama-load     upload a verified GGUF to ``/api/blobs/sha256:<hex>``, then ``/api/create``
                  with an explicit template and parameters (never ``/api/pull``)
  ollama-show     ``POST /api/show`` (what the created model really has)
  gate            latency gate: a warm-up, then k one-step tool round trips with the real
                  protocol; pass when at least r are valid steps within the thresholds
  audit           sandbox audit: try every escape from inside (harness.probe.audit), record each

Each action writes its result model (``harness.contracts``: ``ReadyResult``, ``PropsResult``, ...)
as one JSON object to ``--out`` atomically. Exit status (``harness.contracts``): ``EXIT_OK`` the
probe ran (the result says pass or fail), ``EXIT_BAD_INPUT``, ``EXIT_ENGINE_UNREACHABLE``. Stdlib,
httpx and pydantic only.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import httpx

from harness.contracts import (
    EXIT_BAD_INPUT,
    EXIT_ENGINE_UNREACHABLE,
    EXIT_OK,
    AuditResult,
    GateAttempt,
    GateProbeResult,
    GateThresholds,
    GateVerdict,
    OllamaLoadResult,
    OllamaShowResult,
    OllamaVersionResult,
    ProbeResult,
    PropsResult,
    ReadyResult,
)

if TYPE_CHECKING:
    from harness.clients.openai_compat import HttpClient

CHUNK = 1024 * 1024


class ProbeInputError(Exception):
    """The probe's arguments or inputs are wrong (exit 2)."""


class Unreachable(Exception):
    """No HTTP answer from the engine (exit 3)."""


# ---------------------------------------------------------------- output


def write_json(path: str | Path, result: ProbeResult) -> None:
    """Write one result atomically (temporary file in the same folder, then rename)."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(
        json.dumps(result.model_dump(mode="json", exclude_none=True), indent=2, sort_keys=True) + "\n", encoding="utf-8"
    )
    os.replace(tmp, path)


def _http(base_url: str, timeout: float) -> httpx.Client:
    return httpx.Client(
        base_url=base_url.rstrip("/"), timeout=httpx.Timeout(timeout, connect=min(timeout, 5.0)), trust_env=False
    )


def _request(http: httpx.Client, method: str, path: str, **kwargs: Any) -> httpx.Response:
    try:
        return http.request(method, path, **kwargs)
    except httpx.HTTPError as error:
        raise Unreachable(f"{method} {path}: {type(error).__name__}: {error}") from None


def _json_body(response: httpx.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        return None


# ---------------------------------------------------------------- actions


def action_ready(args: argparse.Namespace) -> tuple[ReadyResult, int]:
    """Poll until the health path answers 200; exit 3 when nothing ever answered."""
    started = time.monotonic()
    deadline = started + args.timeout
    polls = 0
    last_status: int | None = None
    last_error: str | None = None
    answered = False
    with _http(args.base_url, min(args.request_timeout, max(args.timeout, 1.0))) as http:
        while True:
            polls += 1
            try:
                response = http.get(args.path)
                answered = True
                last_status = response.status_code
                last_error = None
                if response.status_code == 200:
                    return ReadyResult(
                        ok=True, ready=True, status=200, seconds=round(time.monotonic() - started, 3), polls=polls
                    ), EXIT_OK
            except httpx.HTTPError as error:
                last_error = f"{type(error).__name__}: {error}"
            if time.monotonic() >= deadline:
                break
            time.sleep(min(args.interval, max(0.0, deadline - time.monotonic())))
    result = ReadyResult(
        ok=False,
        status=last_status,
        seconds=round(time.monotonic() - started, 3),
        polls=polls,
        error=last_error or f"{args.path} still answered HTTP {last_status} after {args.timeout:g}s",
    )
    return result, (EXIT_OK if answered else EXIT_ENGINE_UNREACHABLE)


def _get_object(args: argparse.Namespace, path: str) -> tuple[dict[str, Any] | None, int, str | None]:
    """GET a JSON object: (body, HTTP status, None) or (None, HTTP status, why not)."""
    with _http(args.base_url, args.request_timeout) as http:
        response = _request(http, "GET", path)
    body = _json_body(response)
    if response.status_code != 200 or not isinstance(body, dict):
        return None, response.status_code, f"GET {path} answered HTTP {response.status_code}: {response.text[:300]}"
    return body, 200, None


def action_props(args: argparse.Namespace) -> tuple[PropsResult, int]:
    body, status, error = _get_object(args, "/props")
    return PropsResult(ok=body is not None, status=status, props=body, error=error), EXIT_OK


def action_ollama_version(args: argparse.Namespace) -> tuple[OllamaVersionResult, int]:
    body, status, error = _get_object(args, "/api/version")
    if body is not None and not isinstance(body.get("version"), str):
        body, error = None, f"unreadable /api/version: {body!r}"[:300]
    version = body["version"] if body is not None else None
    return OllamaVersionResult(ok=body is not None, status=status, version=version, error=error), EXIT_OK


def sha256_of(path: Path) -> str:
    """The file's sha256: the harness's own copy of ``repro.core.files.sha256_file``, since the
    harness never imports repro."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(CHUNK):
            digest.update(block)
    return digest.hexdigest()


def _file_chunks(path: Path) -> Iterator[bytes]:
    with open(path, "rb") as handle:
        while block := handle.read(CHUNK):
            yield block


def action_ollama_load(args: argparse.Namespace) -> tuple[OllamaLoadResult, int]:
    """Upload the GGUF as a blob (unless the server has it), then create the model from it."""
    gguf = Path(args.gguf)
    if not gguf.is_file():
        raise ProbeInputError(f"no GGUF at {args.gguf}")
    expected = args.sha256.lower()
    if len(expected) != 64 or any(c not in "0123456789abcdef" for c in expected):
        raise ProbeInputError("--sha256 must be 64 hex characters")
    try:
        parameters = json.loads(args.parameters) if args.parameters else {}
    except ValueError as error:
        raise ProbeInputError(f"--parameters is not JSON: {error}") from None
    if not isinstance(parameters, dict):
        raise ProbeInputError("--parameters must be a JSON object")
    template = Path(args.template_file).read_text(encoding="utf-8") if args.template_file else args.template
    if not template:
        raise ProbeInputError("an explicit --template (or --template-file) is required")
    actual = sha256_of(gguf)
    if actual != expected:
        raise ProbeInputError(f"{args.gguf} hashes to {actual}, not the pinned {expected}")
    digest = f"sha256:{expected}"
    started = time.monotonic()
    with _http(args.base_url, args.request_timeout) as http:
        head = _request(http, "HEAD", f"/api/blobs/{digest}")
        uploaded = False
        if head.status_code == 404:
            size = gguf.stat().st_size
            post = _request(
                http,
                "POST",
                f"/api/blobs/{digest}",
                content=_file_chunks(gguf),
                headers={"Content-Length": str(size), "Content-Type": "application/octet-stream"},
            )
            if post.status_code not in (200, 201):
                why = f"POST /api/blobs/{digest} answered HTTP {post.status_code}: {post.text[:300]}"
                return OllamaLoadResult(ok=False, stage="blob", status=post.status_code, error=why), EXIT_OK
            uploaded = True
        elif head.status_code != 200:
            why = f"HEAD /api/blobs/{digest} answered HTTP {head.status_code}"
            return OllamaLoadResult(ok=False, stage="blob", status=head.status_code, error=why), EXIT_OK
        request = {
            "model": args.name,
            "files": {"model.gguf": digest},
            "template": template,
            "parameters": parameters,
            "stream": False,
        }
        if args.system is not None:
            request["system"] = args.system
        create = _request(http, "POST", "/api/create", json=request)
        body = _json_body(create)
        if create.status_code != 200 or not isinstance(body, dict) or body.get("status") != "success":
            why = f"POST /api/create answered HTTP {create.status_code}: {create.text[:300]}"
            return OllamaLoadResult(
                ok=False, stage="create", status=create.status_code, uploaded=uploaded, error=why
            ), EXIT_OK
        show = _request(http, "POST", "/api/show", json={"model": args.name})
        shown = _json_body(show) if show.status_code == 200 else None
    return OllamaLoadResult(
        ok=True,
        blob=digest,
        uploaded=uploaded,
        model=args.name,
        create={"template": template, "parameters": parameters},
        show=_show_summary(shown),
        seconds=round(time.monotonic() - started, 3),
    ), EXIT_OK


def _show_summary(shown: Any) -> dict[str, Any] | None:
    if not isinstance(shown, dict):
        return None
    keep = ("parameters", "template", "details", "modified_at", "capabilities")
    out = {key: shown[key] for key in keep if key in shown}
    info = shown.get("model_info")
    if isinstance(info, dict):
        out["model_info"] = {k: v for k, v in info.items() if not isinstance(v, (list, dict))}
    return out


def action_ollama_show(args: argparse.Namespace) -> tuple[OllamaShowResult, int]:
    with _http(args.base_url, args.request_timeout) as http:
        response = _request(http, "POST", "/api/show", json={"model": args.name})
    body = _json_body(response)
    if response.status_code != 200 or not isinstance(body, dict):
        error = f"POST /api/show answered HTTP {response.status_code}: {response.text[:300]}"
        return OllamaShowResult(ok=False, status=response.status_code, error=error), EXIT_OK
    return OllamaShowResult(ok=True, show=_show_summary(body)), EXIT_OK


# ---------------------------------------------------------------- gate


def tokens_per_second(timings: dict[str, Any] | None) -> float | None:
    """The engine's own generation speed: llama.cpp (and our Ollama client) ``predicted_per_second``."""
    if not timings:
        return None
    value = timings.get("predicted_per_second")
    if isinstance(value, (int, float)) and value > 0:
        return float(value)
    n, ms = timings.get("predicted_n"), timings.get("predicted_ms")
    if isinstance(n, (int, float)) and isinstance(ms, (int, float)) and ms > 0:
        return n * 1000.0 / ms
    return None


def judge(attempts: list[GateAttempt], *, required: int, max_seconds: float, min_tps: float) -> GateVerdict:
    """Mark each attempt ok or not (with its reason) and decide the gate. Pure: also used on the host."""
    for attempt in attempts:
        reasons = attempt_problems(attempt, max_seconds=max_seconds, min_tps=min_tps)
        attempt.ok = not reasons
        attempt.reason = "; ".join(reasons) if reasons else None
    good = sum(1 for a in attempts if a.ok)
    timed = [a.seconds for a in attempts if not a.error and a.seconds is not None]
    speeds = [a.tokens_per_second for a in attempts if a.tokens_per_second is not None]
    passed = good >= required
    if passed:
        reason = (
            f"{good} of {len(attempts)} attempts within {max_seconds:g}s per step "
            f"and at least {min_tps:g} tokens/s (needed {required})"
        )
    else:
        first = next((a.reason for a in attempts if not a.ok), None) or "no attempts"
        reason = f"only {good} of {len(attempts)} attempts passed (needed {required}); first failure: {first}"
    return GateVerdict(
        passed=passed,
        reason=reason,
        passed_attempts=good,
        median_seconds=statistics.median(timed) if timed else None,
        median_tokens_per_second=statistics.median(speeds) if speeds else None,
    )


def attempt_problems(attempt: GateAttempt, *, max_seconds: float, min_tps: float) -> list[str]:
    if attempt.error:
        return [attempt.error]
    reasons = []
    if not attempt.valid_step:
        reasons.append(f"invalid step: {attempt.problem}")
    if attempt.seconds is None:
        reasons.append("no time")
    elif not math.isfinite(attempt.seconds) or attempt.seconds > max_seconds:
        reasons.append(f"{attempt.seconds:.2f}s > {max_seconds:g}s per step")
    if attempt.tokens_per_second is None:
        reasons.append("the engine reported no generation speed")
    elif not math.isfinite(attempt.tokens_per_second) or attempt.tokens_per_second < min_tps:
        reasons.append(f"{attempt.tokens_per_second:.1f} tokens/s < {min_tps:g}")
    return reasons


def _gate_client(args: argparse.Namespace) -> HttpClient:
    if args.api == "ollama":
        from harness.clients.ollama import OllamaClient

        return OllamaClient(args.base_url, args.model, timeout=args.request_timeout, num_ctx=args.num_ctx)
    from harness.clients.openai_compat import OpenAIClient

    return OpenAIClient(args.base_url, args.model, timeout=args.request_timeout)


def _one_round_trip(client: Any, args: argparse.Namespace) -> GateAttempt:
    """One step with the cell's protocol (no retry); engine failures become an error entry."""
    from harness.agent.policy import Step
    from harness.clients.errors import EngineError, EngineTimeout
    from harness.protocols import round_trip

    try:
        reply, parsed = round_trip(args.protocol, client, max_tokens=args.max_tokens, seed=args.seed)
    except EngineTimeout as error:  # the engine answers too slowly: a slow step, not a fault
        return GateAttempt(error=f"no reply: {error}", timed_out=True)
    except EngineError as error:
        return GateAttempt(error=f"engine fault: {error}", engine_fault=True)
    valid = isinstance(parsed, Step)
    usage = reply.usage or {}
    return GateAttempt(
        seconds=round(reply.seconds, 4),
        tokens_per_second=tokens_per_second(reply.timings),
        completion_tokens=usage.get("completion_tokens"),
        prompt_tokens=usage.get("prompt_tokens"),
        valid_step=valid,
        problem=None if valid else str(parsed),
        tool=parsed.tool if isinstance(parsed, Step) else None,
        finish_reason=reply.finish_reason,
    )


def action_gate(args: argparse.Namespace) -> tuple[GateProbeResult, int]:
    from harness.protocols import PROTOCOLS

    if args.protocol not in PROTOCOLS:
        raise ProbeInputError(f"unknown protocol {args.protocol!r} (protocols: {', '.join(PROTOCOLS)})")
    if args.required > args.attempts:
        raise ProbeInputError(f"--required {args.required} exceeds --attempts {args.attempts}")
    started = time.monotonic()
    client = _gate_client(args)
    try:
        warmup = _one_round_trip(client, args) if args.warmup else None
        attempts = [_one_round_trip(client, args) for _ in range(args.attempts)]
    finally:
        client.close()
    verdict = judge(attempts, required=args.required, max_seconds=args.max_seconds, min_tps=args.min_tps)
    every = ([warmup] if warmup else []) + attempts
    unreachable = bool(every) and all(a.engine_fault for a in every)
    result = GateProbeResult(
        ok=not unreachable,
        error=every[-1].error if unreachable else None,
        api=args.api,
        model=args.model,
        protocol=args.protocol,
        thresholds=GateThresholds(
            max_seconds_per_step=args.max_seconds,
            min_tokens_per_second=args.min_tps,
            attempts=args.attempts,
            required=args.required,
        ),
        warmup=warmup,
        attempts=attempts,
        total_seconds=round(time.monotonic() - started, 3),
        **verdict.model_dump(),
    )
    return result, (EXIT_ENGINE_UNREACHABLE if unreachable else EXIT_OK)


# ---------------------------------------------------------------- CLI


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # argparse exits 2 on bad input: keep that, one line
        self.print_usage(sys.stderr)
        print(f"probe: {message}", file=sys.stderr)
        raise SystemExit(EXIT_BAD_INPUT)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m harness probe", description="Engine probes run inside the sealed namespace.")
    actions = parser.add_subparsers(dest="action", required=True, parser_class=_Parser)

    def add(name: str, help_: str) -> argparse.ArgumentParser:
        sub = actions.add_parser(name, help=help_)
        sub.add_argument(
            "--base-url", required=True, help="the engine as seen inside the namespace, e.g. http://127.0.0.1:8080"
        )
        sub.add_argument("--out", required=True, help="file to write the JSON result to")
        sub.add_argument("--request-timeout", type=float, default=30.0, help="seconds per HTTP request")
        return sub

    ready = add("ready", "poll a health path until 200")
    ready.add_argument("--timeout", type=float, required=True, help="give up after this many seconds")
    ready.add_argument("--path", default="/health", help="health path (llama.cpp /health, Ollama /api/version)")
    ready.add_argument("--interval", type=float, default=0.25, help="seconds between polls")
    add("props", "GET /props (llama.cpp)")
    add("ollama-version", "GET /api/version (Ollama)")
    load = add("ollama-load", "upload the GGUF blob and create the model (Ollama)")
    load.add_argument("--gguf", required=True)
    load.add_argument("--sha256", required=True)
    load.add_argument("--name", required=True)
    load.add_argument("--template", default=None)
    load.add_argument("--template-file", default=None)
    load.add_argument("--parameters", default="{}", help="JSON object of Ollama model parameters")
    load.add_argument("--system", default=None)
    show = add("ollama-show", "POST /api/show (Ollama)")
    show.add_argument("--name", required=True)
    gate = add("gate", "latency gate: warm-up plus k one-step tool round trips")
    gate.add_argument("--model", required=True, help="model name the engine serves")
    gate.add_argument("--api", choices=["openai", "ollama"], default="openai")
    gate.add_argument("--protocol", default="json_schema")
    gate.add_argument("--attempts", type=int, default=3)
    gate.add_argument("--required", type=int, default=2)
    gate.add_argument("--warmup", action="store_true")
    gate.add_argument("--max-seconds", type=float, required=True)
    gate.add_argument("--min-tps", type=float, required=True)
    gate.add_argument("--max-tokens", type=int, default=64)
    gate.add_argument("--seed", type=int, default=42)
    gate.add_argument("--num-ctx", type=int, default=None, help="Ollama num_ctx")
    add_audit_parser(actions)
    return parser


def add_audit_parser(actions: argparse._SubParsersAction[_Parser]) -> None:
    audit = actions.add_parser("audit", help="sandbox audit: try every escape from inside, record what was blocked")
    audit.add_argument("--out", required=True, help="file to write the JSON result to")
    audit.add_argument("--output-dir", default="/out", help="the one folder this container may write (besides /tmp)")
    audit.add_argument("--outside", default="1.1.1.1:443", help="an outside HOST:PORT to try a TCP connection to")
    audit.add_argument("--dns-name", default="example.com", help="a name to try to resolve")
    audit.add_argument("--gateway", action="append", default=[], help="the host's default gateway address (repeatable)")
    audit.add_argument(
        "--read-only", action="append", default=[], help="a read-only mount to try writing into (repeatable)"
    )
    audit.add_argument("--max-forks", type=int, default=4096, help="stop the fork bomb here if no limit stops it first")
    audit.add_argument(
        "--memory",
        choices=["allocate", "read"],
        default="allocate",
        help="allocate past the memory limit, or (engines) read that it is set",
    )


def action_audit(args: argparse.Namespace) -> tuple[AuditResult, int]:
    from harness.probe.audit import AuditOptions, run_audit

    options = AuditOptions(
        output_dir=args.output_dir,
        outside=args.outside,
        dns_name=args.dns_name,
        gateways=args.gateway,
        read_only=args.read_only,
        max_forks=args.max_forks,
        memory=args.memory,
    )
    return AuditResult(ok=True, audit=run_audit(options)), EXIT_OK


ACTIONS: dict[str, Callable[[argparse.Namespace], tuple[ProbeResult, int]]] = {
    "ready": action_ready,
    "props": action_props,
    "ollama-version": action_ollama_version,
    "ollama-load": action_ollama_load,
    "ollama-show": action_ollama_show,
    "gate": action_gate,
    "audit": action_audit,
}


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    result: ProbeResult
    try:
        result, code = ACTIONS[args.action](args)
    except ProbeInputError as error:
        result, code = ProbeResult(action=args.action, ok=False, error=str(error)), EXIT_BAD_INPUT
    except Unreachable as error:
        result, code = (
            ProbeResult(action=args.action, ok=False, error=f"engine unreachable: {error}"),
            EXIT_ENGINE_UNREACHABLE,
        )
    try:
        write_json(args.out, result)
    except OSError as error:
        print(f"probe: cannot write {args.out}: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    if code != EXIT_OK:
        print(f"probe {args.action}: {result.error}", file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
