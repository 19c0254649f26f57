"""The stand-in's command line (a stand-in written by the repro project for its tests; not
Tholos-Bench's runner): one command, `bench`, with the options `tholos bench` documents.

    python -m tholos bench --base-url URL --model NAME [--json-mode schema|object|none]
        [--scenarios DIR] [--only CATEGORY] [--limit N] --out results.jsonl

It prints only what `bench` prints (the per-scenario lines and the summary), so that the console
output can be rendered again from the results alone.
"""

from __future__ import annotations

import argparse

from tholos.bench import runner as bench_runner


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(prog="tholos", description="A stand-in for tholos bench (repro's tests).")
    commands = top.add_subparsers(dest="command", required=True)
    bench = commands.add_parser("bench", help="run scenario files against an OpenAI-compatible server")
    bench.add_argument("--base-url", required=True, help="the server's base URL, with /v1")
    bench.add_argument("--model", required=True)
    bench.add_argument("--json-mode", default="schema", choices=["schema", "object", "none"])
    bench.add_argument("--scenarios", default="scenarios", help="a folder of <category>/<id>.json files")
    bench.add_argument("--only", default=None, help="one category")
    bench.add_argument("--limit", type=int, default=None, help="at most this many scenarios")
    bench.add_argument("--out", required=True, help="the results file (one JSON line per scenario)")
    return top


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    bench_runner.bench(
        args.base_url,
        args.model,
        json_mode=args.json_mode,
        scenarios=args.scenarios,
        only=args.only,
        limit=args.limit,
        out=args.out,
    )
    return 0
