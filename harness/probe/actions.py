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

This module holds the engine actions (ready, props, the Ollama ones) and the result's writing;
``harness.probe.gate`` the gate, ``harness.probe.audit`` the audit, ``harness.probe.cli`` the
parser and ``main``. Each action writes its result model (``harness.contracts``: ``ReadyResult``, ``PropsResult``, ...)
as one JSON object to ``--out`` atomically. Exit status (``harness.contracts``): ``EXIT_OK`` the
probe ran (the result says pass or fail), ``EXIT_BAD_INPUT``, ``EXIT_ENGINE_UNREACHABLE``. Stdlib,
httpx and pydantic only.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx

from harness.contracts import (
    EXIT_ENGINE_UNREACHABLE,
    EXIT_OK,
    OllamaLoadResult,
    OllamaShowResult,
    OllamaVersionResult,
    ProbeResult,
    PropsResult,
    ReadyResult,
)

if TYPE_CHECKING:
    pass

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
