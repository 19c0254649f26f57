"""The engine's prompt cache against none, on the edge cases a run's matrices do not reach, in one run.

    python benchmarks/prompt_cache.py [--matrix matrix/smoke.yaml] [--model ID] [--threads 2,1] [--tokens 48]
        [--gguf FILE]

For each thread count it boots the sealed llama.cpp engine image of the matrix twice, with the
prompt cache off (`--no-cache-prompt --cache-ram 0`, requests `cache_prompt: false`) and on
(`--cache-prompt`, requests `cache_prompt: true`), exactly as a run's profile would
(repro.engines.llamacpp), on the host's loopback instead of a sealed namespace. Each boot starts
fresh and sends the same sequence of raw-prompt requests (`/completion`, temperature 0, the
matrix's seed, `--tokens` generated), one case after another:

  cached-whole     a prompt, then the same prompt again (read wholly from the cache)
  one-token        a prompt, then that prompt and one more token
  cross-batch      a prompt, then that prompt and a suffix longer than -ub 512 (two physical batches)
  shared-system    two prompts that share a long system part and differ after it
  after-other      a prompt after an unrelated one of about the same length (the slot's history)
  reply-extended   a prompt, then that prompt with its own reply and a new turn (an agent loop's step)

It prints, per case and step, the tokens the engine took from its cache (`cache_n`) in each mode and
whether the generated texts are identical, naming the character where differing texts part; then
how many steps were identical, and whether the cache-off mode (every shipped profile's) held its
promise: no request took a token from a cache, and a prompt sent twice gave the same text. Exit 0
when it held, 1 otherwise (identity with the cache on is a figure, not a condition), 2 for bad
input. Needs the built engine image and the model in the store.
Starts one engine at a time: run it alone on the machine.
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.tholos_direct import free_port, wait_ready  # noqa: E402

RUN_ID = f"cachebench-{os.getpid()}"
TEXT_FILES = ("docs/methodology.md", "docs/engines.md", "README.md")  # our own prose, as prompt material


@dataclass(frozen=True)
class Step:
    case: str
    prompt: str


@dataclass(frozen=True)
class Reply:
    text: str
    cache_n: int | None
    prompt_n: int | None


def prose(start: int, length: int) -> str:
    """`length` characters of the project's own docs from `start`: prompt material that is ours."""
    text = "\n".join((ROOT / name).read_text() for name in TEXT_FILES)
    return text[start : start + length]


def chat(system: str, user: str) -> str:
    return f"<|im_start|>system\n{system}<|im_end|>\n<|im_start|>user\n{user}<|im_end|>\n<|im_start|>assistant\n"


def first_steps() -> list[Step]:
    """The cases whose prompts are known before any reply (reply-extended adds its second later)."""
    base = chat("You are a careful assistant. Answer in one short paragraph.", "Summarize:\n" + prose(0, 2400))
    long_suffix = "\n" + prose(6000, 2600)
    system = "You are a reviewer of benchmark methods. Rules:\n" + prose(12000, 2000)
    return [
        Step("cached-whole", base),
        Step("cached-whole", base),
        Step("one-token", base),
        Step("one-token", base + " The"),
        Step("cross-batch", base),
        Step("cross-batch", base + long_suffix),
        Step("shared-system", chat(system, "What does a verdict of REPRODUCED require?")),
        Step("shared-system", chat(system, "When is a rerun ON ANOTHER SETUP?")),
        Step("after-other", chat("You answer briefly.", "Explain:\n" + prose(20000, 2400))),
        Step("after-other", base),
        Step("reply-extended", base),
    ]


def engine_kwargs(threads: int, cache: bool, port: int, args: argparse.Namespace) -> tuple[dict, dict]:
    """The matrix's llama.cpp engine container as a profile at `threads` and this cache mode would
    start it, on the host's loopback at `port`; and the decoding."""
    from repro.engines.registry import engine_for
    from repro.spec.loading import load_matrix_and_profiles
    from repro.store.images import engine_image
    from repro.store.models import model_path

    loaded, profiles = load_matrix_and_profiles(args.matrix)
    spec = next(e for e in loaded.matrix.engines if e.kind == "llama.cpp")
    model = next(m for m in loaded.matrix.models if m.id == args.model)
    profile = profiles.get("cpu").model_copy(update={"threads": threads, "cache_prompt": cache})
    image = engine_image(spec, "cpu").id
    engine = engine_for(None, spec, probe_image=image, run_id=RUN_ID, group_id="cache")
    gguf = args.gguf or model_path(model)
    kwargs = engine.container_kwargs(
        engine.boot_spec(image, model, gguf, profile, loaded.matrix.decoding, profile_name="cpu")
    )
    command = list(kwargs["command"])
    command[command.index("--port") + 1] = str(port)
    return kwargs | {"command": command, "network_mode": "host"}, {"seed": loaded.matrix.decoding.seed}


def ask(http, port: int, prompt: str, cache: bool, seed: int, tokens: int) -> Reply:
    body = {"prompt": prompt, "n_predict": tokens, "temperature": 0, "seed": seed, "cache_prompt": cache}
    answer = http.post(f"http://127.0.0.1:{port}/completion", json=body).json()
    timings = answer.get("timings") or {}
    return Reply(answer.get("content", ""), timings.get("cache_n"), timings.get("prompt_n"))


def run_mode(client, threads: int, cache: bool, args: argparse.Namespace) -> list[tuple[Step, Reply]]:
    """One fresh engine in this mode, every step in order."""
    import httpx

    from repro.containers.lifecycle import started

    port = free_port()
    kwargs, decoding = engine_kwargs(threads, cache, port, args)
    replies: list[tuple[Step, Reply]] = []
    with started(client, kwargs), httpx.Client(trust_env=False, timeout=600) as http:
        wait_ready(port, 120)
        for step in first_steps():
            replies.append((step, ask(http, port, step.prompt, cache, decoding["seed"], args.tokens)))
        last = replies[-1]
        extended = Step("reply-extended", last[0].prompt + last[1].text + "<|im_end|>\n" + chat_turn())
        replies.append((extended, ask(http, port, extended.prompt, cache, decoding["seed"], args.tokens)))
    return replies


def chat_turn() -> str:
    return "<|im_start|>user\nShorter, please: one sentence.<|im_end|>\n<|im_start|>assistant\n"


def parted(a: str, b: str) -> int:
    return next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))


def compare(off: list[tuple[Step, Reply]], on: list[tuple[Step, Reply]], threads: int) -> tuple[int, int]:
    same = 0
    print(f"\n{threads} thread(s): step, case, cache_n off/on, prompt_n off/on, texts")
    for number, ((step, a), (step_on, b)) in enumerate(zip(off, on, strict=True), start=1):
        identical = a.text == b.text and step.prompt == step_on.prompt
        same += identical
        where = "identical" if identical else f"DIFFERENT (the texts part at character {parted(a.text, b.text)})"
        print(f"  {number:2d} {step.case:15s} {a.cache_n}/{b.cache_n:<5} {a.prompt_n}/{b.prompt_n:<5} {where}")
    return same, len(off)


def off_held(off: list[tuple[Step, Reply]]) -> bool:
    """The cache-off engine took no token from a cache, and its two reads of the same prompt agree."""
    whole = [reply.text for step, reply in off if step.case == "cached-whole"]
    return all(not reply.cache_n for _, reply in off) and len(set(whole)) == 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--matrix", type=Path, default=Path("matrix/smoke.yaml"))
    parser.add_argument("--model", default="qwen2.5-coder-0.5b-instruct-q4_k_m")
    parser.add_argument("--threads", default="2,1", help="thread counts, comma-separated")
    parser.add_argument("--tokens", type=int, default=48, help="tokens generated per request")
    parser.add_argument("--gguf", type=Path, default=None, help="the model's verified file (default: from the store)")
    args = parser.parse_args()
    try:
        counts = [int(part) for part in args.threads.split(",")]
    except ValueError:
        print(f"--threads {args.threads!r}: expected counts such as 2,1", file=sys.stderr)
        return 2

    from repro.containers.cleanup import cleanup
    from repro.containers.client import get_client

    client = get_client()
    total = identical = 0
    sound = True
    try:
        for threads in counts:
            off = run_mode(client, threads, False, args)
            on = run_mode(client, threads, True, args)
            same, steps = compare(off, on, threads)
            identical, total = identical + same, total + steps
            sound = sound and off_held(off)
    finally:
        cleanup(RUN_ID, client)
    print(f"\n{identical} of {total} steps identical with the prompt cache on and off")
    held = "held" if sound else "BROKEN"
    print(f"cache off: {held} (no cached token in any request; a prompt sent twice, the same text)")
    return 0 if sound else 1


if __name__ == "__main__":
    sys.exit(main())
