"""``python -m harness probe ACTION``: the parser (bad input exits 2 in one line), the actions
by name, and ``main``, which writes each action's result as one JSON object (harness.probe.actions
describes the actions)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import NoReturn

from harness.contracts import EXIT_BAD_INPUT, EXIT_ENGINE_UNREACHABLE, EXIT_OK, AuditResult, ProbeResult
from harness.probe.actions import (
    ProbeInputError,
    Unreachable,
    action_ollama_load,
    action_ollama_show,
    action_ollama_version,
    action_props,
    action_ready,
    write_json,
)
from harness.probe.gate import action_gate


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
