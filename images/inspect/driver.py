"""repro's driver for an inspect_ai task inside its sealed container (stdlib and inspect_ai only).

It runs one inspect task with inspect_ai's own `eval()`, unchanged, against the cell's engine
through inspect's OpenAI-compatible provider (`openai-api/repro/<model>`, /v1/chat/completions):

- decoding is the matrix's (temperature, seed, max_tokens), one connection, one epoch, the
  matrix's samples (inspect runs them in its dataset's order; it refuses sample_shuffle with sample_id);
- every model role the matrix binds (`--role user`, tau2's user simulator) is the same engine and
  model with the same decoding; a role the task asks for that is not bound is found by `repro
  check` in the log (its model events name the role);
- inspect writes its own `.eval` log under /out/logs, kept byte for byte in the bundle;
- one JSON progress line per finished sample on stdout (repro's progress display), from an
  inspect hook that only reads the sample.

`rescore` re-runs the task's scorers on a log's samples, offline (no model is called: a dummy
address is given because model construction needs one), and prints each sample's score as JSON:
`repro check` compares them with the log's.

Usage: python driver.py run --out DIR --task NAME --samples ID,ID [--task-args JSON] --base-url URL
       --model NAME [--seed N] [--temperature T] [--max-tokens N] [--timeout S] [--role NAME]...
       python driver.py rescore LOG [--package NAME]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

PROVIDER = "openai-api/repro"  # inspect's OpenAI-compatible provider, service "repro"


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="driver")
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run")
    run.add_argument("--out", required=True)
    run.add_argument("--task", required=True)
    run.add_argument("--samples", required=True)
    run.add_argument("--task-args", default="{}")
    run.add_argument("--base-url", required=True)
    run.add_argument("--model", required=True)
    run.add_argument("--seed", type=int, default=42)
    run.add_argument("--temperature", type=float, default=0.0)
    run.add_argument("--max-tokens", type=int, default=None)
    run.add_argument("--timeout", type=int, default=300)
    run.add_argument("--role", action="append", default=[])
    rescore = commands.add_parser("rescore")
    rescore.add_argument("log")
    rescore.add_argument("--package", default=None)
    return parser.parse_args(argv)


def offline_environment(base_url: str) -> None:
    """inspect's provider reads its address and key from the environment; the engine needs no key."""
    os.environ["REPRO_BASE_URL"] = base_url
    os.environ["REPRO_API_KEY"] = "none"
    os.environ.setdefault("HOME", "/tmp")
    os.environ["INSPECT_DISPLAY"] = "none"


def install_progress(total: int) -> None:
    from inspect_ai.hooks import Hooks, SampleEnd, hooks

    started = time.monotonic()

    @hooks(name="repro_progress", description="one JSON line per finished sample (repro's progress display)")
    class Progress(Hooks):
        done = 0

        async def on_sample_end(self, data: SampleEnd) -> None:
            Progress.done += 1
            scores = data.sample.scores or {}
            event = {
                "event": "scenario",
                "index": Progress.done,
                "total": total,
                "id": str(data.sample.id),
                "passed": all(passes(score.value) for score in scores.values()) and bool(scores),
                "failure_type": None,
                "seconds": round(time.monotonic() - started, 3),
            }
            print(json.dumps(event), flush=True)


def passes(value: object) -> bool:
    """inspect's CORRECT, a true or a 1, or a dict whose every value passes."""
    if isinstance(value, dict):
        return bool(value) and all(passes(v) for v in value.values())
    return value in ("C", True, 1, 1.0)


def run(args: argparse.Namespace) -> int:
    from inspect_ai import eval as inspect_eval
    from inspect_ai.model import GenerateConfig, get_model

    offline_environment(args.base_url)
    samples = [s for s in args.samples.split(",") if s]
    install_progress(len(samples))
    config = GenerateConfig(
        temperature=args.temperature,
        seed=args.seed,
        max_tokens=args.max_tokens,
        max_connections=1,
        timeout=args.timeout,
        max_retries=0,
    )
    name = f"{PROVIDER}/{args.model}"
    roles = {role: get_model(name, base_url=args.base_url, config=config) for role in args.role}
    logs = inspect_eval(
        args.task,
        task_args=json.loads(args.task_args),
        model=get_model(name, base_url=args.base_url, config=config),
        model_roles=roles or None,
        sample_id=[int(s) if s.isdigit() else s for s in samples],
        epochs=1,
        max_samples=1,
        max_tasks=1,
        log_dir=os.path.join(args.out, "logs"),
        log_format="eval",
        display="none",
        fail_on_error=False,
        retry_on_error=0,
        score=True,
    )
    return 0 if logs and all(log.status == "success" for log in logs) else 1


def rescore(args: argparse.Namespace) -> int:
    """Each sample's score from the task's own scorers (as the log names them, qualified by the task's
    package), re-run on the log's recorded states."""
    from inspect_ai import score as inspect_score
    from inspect_ai._eval.score import resolve_scorers
    from inspect_ai.log import read_eval_log

    offline_environment("http://127.0.0.1:9/v1")
    log = read_eval_log(args.log)
    scorers = []
    for recorded in log.eval.scorers or []:
        # a package's scorer by its package; an author's is found in the task file the log names
        name = recorded.name if "/" in recorded.name or args.package is None else f"{args.package}/{recorded.name}"
        scorers += resolve_scorers(log, name, recorded.options or {})
    if not scorers:
        print(json.dumps({"error": "the log names no scorer"}))
        return 1
    scored = inspect_score(log, scorers=scorers, action="overwrite", display="none")
    out = {str(s.id): {k: v.value for k, v in (s.scores or {}).items()} for s in scored.samples or []}
    print(json.dumps(out, sort_keys=True))
    return 0


def main(argv: list[str]) -> int:
    args = parse(argv)
    return run(args) if args.command == "run" else rescore(args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
