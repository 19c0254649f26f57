"""The runtime client: a chat client whose every turn an agent runtime produces (LAB's "react" mode).

The protocol asks for a reply to its messages, as it asks an engine client; this client renders
the messages as one prompt (``render_prompt``), runs the runtime once for it, and the runtime's
answer is the reply. Each turn runs in a fresh HOME and working folder at fixed paths, under the
pinned clock (libfaketime: every turn starts at the same instant, so a date the runtime injects is
the same on every day), with no environment but its own, and talks only to the recording relay
(harness.runtimes.relay). Each turn is one line of the wire file: the command line, the prompt,
how the process ended, its answer and what it printed beside it, the files it left in HOME (an
update check's stamp among them) and every exchange with the engine, byte for byte.

A runtime that cannot start, times out, exits non-zero or prints no answer fails the scenario
with a runtime failure (harness.runtimes.base), never the cell; the turn is recorded all the same.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import IO, Any, Self

from harness.clients.openai_compat import ChatReply
from harness.contracts import RuntimeTurn
from harness.runtimes.base import (
    LIBFAKETIME,
    Answer,
    Endpoint,
    RuntimeAdapter,
    RuntimeFailure,
    RuntimeRefused,
    RuntimeUnavailable,
)
from harness.runtimes.relay import Relay
from harness.runtimes.wire import EngineReply, chat_replies

SCRATCH = Path("/tmp/runtime")
MAX_OUTPUT = 1024 * 1024  # bytes of a turn's stdout or stderr kept
MAX_PROMPT = 120_000  # characters: one command-line argument must stay below Linux's 128 KiB
# A turn may take several requests (Hermes reads /v1/models and more before its chat) and a first
# request far longer than ours (Hermes' 13,000 tokens of system prompt and tools): a turn gets this
# many request timeouts
TURN_TIMEOUTS = 2
ROLES = {"system": "System", "user": "User", "assistant": "Assistant", "tool": "Tool"}


def render_prompt(messages: list[dict[str, Any]]) -> str:
    """The conversation as one prompt: each message as its role's name, a colon, a newline and its
    text, messages apart by a blank line."""
    return "\n\n".join(f"{ROLES.get(m.get('role', ''), 'User')}:\n{_text(m.get('content'))}" for m in messages)


def _text(content: Any) -> str:
    if isinstance(content, list):
        return "\n".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return "" if content is None else str(content)


def clock_env(clock: str | None) -> dict[str, str]:
    """libfaketime's settings for a turn starting at `clock` (UTC); none when no clock is pinned."""
    if clock is None:
        return {}
    if not Path(LIBFAKETIME).is_file():
        raise RuntimeUnavailable(f"the clock cannot be pinned: {LIBFAKETIME} is missing")
    return {"LD_PRELOAD": LIBFAKETIME, "FAKETIME": f"@{clock}"}


class RuntimeClient:
    def __init__(
        self,
        adapter: RuntimeAdapter,
        engine: Any,
        endpoint: Endpoint,
        *,
        fill: dict[str, Any],
        clock: str | None,
        wire: Path | None,
        timeout: float = 300.0,
        scratch: Path = SCRATCH,
        per_scenario: bool = False,
    ) -> None:
        self.adapter, self.engine, self.clock, self.timeout = adapter, engine, clock, timeout
        self.relay = Relay(engine.base_url, fill, timeout=timeout, per_scenario=per_scenario)
        self.endpoint = endpoint
        self.scratch = scratch
        self._wire_path = wire
        self._wire: IO[str] | None = None
        self.scenario, self.turn = "", 0

    def __enter__(self) -> Self:
        self.relay.__enter__()
        self.endpoint = Endpoint(self.relay.url, self.endpoint.model, self.endpoint.context, self.endpoint.max_tokens)
        if self._wire_path is not None:
            self._wire = self._wire_path.open("a", encoding="utf-8")
        return self

    def __exit__(self, *exc: object) -> None:
        self.relay.__exit__()
        if self._wire is not None:
            self._wire.close()
        self.engine.close()

    def ping(self) -> None:
        self.engine.ping()

    def begin_scenario(self, scenario_id: str = "") -> None:
        self.scenario, self.turn = scenario_id, 0
        self.relay.begin_scenario()

    def chat(self, messages: list[dict[str, Any]], **_sampling: Any) -> ChatReply:
        """One turn: the runtime's answer to the messages (sampling is the runtime's own, or the
        relay's filling: the profile's)."""
        self.turn += 1
        prompt = render_prompt(messages)
        started = time.monotonic()
        record: dict[str, Any] = {"scenario": self.scenario, "turn": self.turn, "runtime": self.adapter.kind}
        try:
            answer, replies = self._turn(prompt, record)
        finally:
            record["seconds"] = round(time.monotonic() - started, 3)
            self._write(record)
        return _reply(answer, replies, time.monotonic() - started)

    def _turn(self, prompt: str, record: dict[str, Any]) -> tuple[Answer, list[EngineReply]]:
        argv, home, work = self._begin(prompt, record)
        try:
            code, stdout, stderr = self._run(argv, home, work, record)
        finally:
            self._settle(home, record)
        return self._answer(code, stdout, stderr, record), chat_replies(record["exchanges"])

    def _begin(
        self, prompt: str, record: dict[str, Any], native: tuple[list[dict[str, Any]], str] | None = None
    ) -> tuple[list[str], Path, Path]:
        """A fresh HOME and working folder, the runtime configured in it, and the command line
        (`native`: the tools to offer and the desk's URL)."""
        home, work = self._fresh("home"), self._fresh("work")
        self.adapter.configure(home, self.endpoint)
        if native is None:
            argv = self.adapter.argv(prompt, self.endpoint)
        else:
            argv = self.adapter.native_argv(prompt, self.endpoint, home, *native)
        record.update(argv=[a if a != prompt else "<prompt>" for a in argv], prompt=prompt, clock=self.clock)
        record["exchanges"] = []
        return argv, home, work

    def _settle(self, home: Path, record: dict[str, Any]) -> None:
        """The end of a runtime's process: requests it left open to the engine closed (killed, or
        gone), the exchanges and the files it left in HOME recorded."""
        self.relay.abandon()
        record["exchanges"] += [e.to_json() for e in self.relay.take()]
        record["home"] = sorted(str(p.relative_to(home)) for p in home.rglob("*") if p.is_file())

    def _answer(self, code: int, stdout: str, stderr: str, record: dict[str, Any]) -> Answer:
        """The runtime's answer once its process exited; a runtime failure when it has none."""
        record.update(exit=code, stderr=stderr[-4000:])
        if code != 0:
            refused = self.adapter.refusal(stdout + "\n" + stderr)
            raise (RuntimeRefused if refused else RuntimeFailure)(
                f"{self.adapter.kind} exited with status {code}: {(refused or stderr or stdout).strip()[-300:]}"
            )
        answer = self.adapter.answer(stdout)
        record.update(answer=answer.text, other=answer.other)
        return answer

    def _run(self, argv: list[str], home: Path, work: Path, record: dict[str, Any]) -> tuple[int, str, str]:
        process = self._spawn(argv, home, work)
        try:
            code = process.wait(timeout=self.timeout * TURN_TIMEOUTS)
        except subprocess.TimeoutExpired:
            stop(process)
            record["exit"] = "timeout"
            raise RuntimeFailure(
                f"{self.adapter.kind} gave no answer within {self.timeout * TURN_TIMEOUTS:g}s"
            ) from None
        return code, *self._outputs()

    def _spawn(self, argv: list[str], home: Path, work: Path) -> subprocess.Popen[bytes]:
        """The runtime's process, started in its own session, its output into the scratch folder."""
        if len(argv[-1]) > MAX_PROMPT or any(len(a) > MAX_PROMPT for a in argv):
            raise RuntimeFailure(f"the prompt is longer than {MAX_PROMPT} characters, more than one argument holds")
        if not self.adapter.program().is_file():
            raise RuntimeUnavailable(f"{self.adapter.kind}: {self.adapter.program()} is missing")
        env = self._env(home)
        with (self.scratch / "stdout").open("wb") as out, (self.scratch / "stderr").open("wb") as err:
            return subprocess.Popen(argv, cwd=work, env=env, stdout=out, stderr=err, start_new_session=True)

    def _outputs(self) -> tuple[str, str]:
        return _read(self.scratch / "stdout"), _read(self.scratch / "stderr")

    def _env(self, home: Path) -> dict[str, str]:
        proxy = self.relay.url
        env = {
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "HOME": str(home),
            "TZ": "UTC",
            "LANG": "C.UTF-8",
            "NODE_USE_ENV_PROXY": "1",
            "NO_PROXY": "127.0.0.1,localhost",
            "no_proxy": "127.0.0.1,localhost",
        }
        env |= {name: proxy for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy")}
        return env | clock_env(self.clock) | self.adapter.env()

    def _fresh(self, name: str) -> Path:
        folder = self.scratch / name
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        return folder

    def _write(self, record: dict[str, Any]) -> None:
        if self._wire is not None:
            self._wire.write(RuntimeTurn.model_validate(record).model_dump_json() + "\n")
            self._wire.flush()


def stop(process: subprocess.Popen[bytes]) -> None:
    """Kill a runtime's process and everything it started (its session)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def _read(path: Path) -> str:
    with path.open("rb") as handle:
        return handle.read(MAX_OUTPUT).decode("utf-8", "replace")


def _reply(answer: Answer, replies: list[EngineReply], seconds: float) -> ChatReply:
    """The turn as the protocol reads a reply: the runtime's answer, with the engine's figures of the
    turn (``turn_figures``) and its last completion's end."""
    usage, timings = turn_figures(replies)
    last = replies[-1] if replies else EngineReply()
    return ChatReply(
        content=answer.text, usage=usage, timings=timings, seconds=seconds, finish_reason=last.finish_reason
    )


SUMMED = ("prompt_n", "prompt_ms", "predicted_n", "predicted_ms")


def turn_figures(replies: list[EngineReply]) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """The usage and engine timings of a turn: its one completion's as they are; of several (a
    runtime that continues a reply cut at the token limit, or calls its own tools), the tokens and
    milliseconds summed, the first request's ``cache_n`` (what the turn read from the cache before
    it began) and ``requests``, their number (the check's bounds allow that many times max_tokens)."""
    usage = {
        "prompt_tokens": sum(int(r.usage.get("prompt_tokens") or 0) for r in replies),
        "completion_tokens": sum(int(r.usage.get("completion_tokens") or 0) for r in replies),
    }
    timed = [r.timings for r in replies if r.timings]
    if len(replies) <= 1:
        return usage, replies[0].timings if replies else None
    if not timed:  # an engine that sends no timings (Ollama's /v1): the count alone
        return usage, {"requests": len(replies)}
    timings: dict[str, Any] = {"requests": len(replies), "cache_n": timed[0].get("cache_n", 0)}
    for key in SUMMED:
        timings[key] = sum(float(t.get(key) or 0) for t in timed)
    for kind in ("prompt", "predicted"):
        if timings[f"{kind}_ms"] > 0:
            timings[f"{kind}_per_second"] = timings[f"{kind}_n"] * 1000 / timings[f"{kind}_ms"]
    return usage, timings
