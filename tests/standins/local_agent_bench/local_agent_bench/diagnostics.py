"""The stand-in's preflight (not LAB's code): the checks LAB's preflight makes, each a line
`PASS|FAIL [layer] name: detail` (the filesystem tools; for raw-ollama-react the ollama command, the
Ollama API and the model by its exact name, for a CLI runtime its command found and answering
`--version`; the weather API and tool when a task needs the network)."""

from __future__ import annotations

import shlex
import shutil
import subprocess
from collections.abc import Callable

from local_agent_bench import backends, tools
from local_agent_bench.ollama import Ollama

Check = tuple[str, bool, str, str]  # name, ok, layer, detail


def attempt(name: str, layer: str, probe: Callable[[], str]) -> Check:
    try:
        return name, True, layer, probe()
    except Exception as error:  # a check reports whatever went wrong; it never raises
        return name, False, layer, f"{type(error).__name__}: {error}"


def ollama_command() -> str:
    done = subprocess.run(["ollama", "--version"], capture_output=True, text=True, timeout=10, check=True)
    return done.stdout.strip()


def model_installed(ollama: Ollama, model: str) -> str:
    names = ollama.models()
    if model not in names:
        raise LookupError(f"{model} not in {names}")
    return model


def runtime_command(runtime: str) -> str:
    program = backends.command(runtime)
    if shutil.which(program[0]) is None:
        raise FileNotFoundError(f"{program[0]} not found on PATH")
    done = subprocess.run([*program, "--version"], capture_output=True, text=True, timeout=60, check=True)
    return done.stdout.strip() or shlex.join(program)


def run_diagnostics(base_url: str, model: str | None, requires_network: bool, runtime: str) -> list[Check]:
    ollama = Ollama(base_url)
    checks = [
        attempt("filesystem_tools", "tooling", lambda: str(len(tools.read_file("benchmarks/fixtures.md")["content"])))
    ]
    if runtime == backends.RAW:
        checks.append(attempt("ollama_cli", "configuration", ollama_command))
        checks.append(attempt("ollama_api", "configuration", lambda: f"{base_url}, models={len(ollama.models())}"))
        if model:
            checks.append(attempt("model_installed", "configuration", lambda: model_installed(ollama, model)))
    else:
        checks.append(
            attempt(f"{runtime.removesuffix('-react')}_cli", "configuration", lambda: runtime_command(runtime))
        )
    if requires_network:
        checks.append(attempt("weather_api", "network", lambda: str(tools.forecast(52.52, 13.405)["current"]["time"])))
        checks.append(attempt("weather_tool", "tooling", lambda: str(tools.get_weather("Berlin")["temperature_c"])))
    return checks
