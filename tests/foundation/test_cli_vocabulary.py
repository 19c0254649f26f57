"""One vocabulary in the CLI (issue 34): walked from the real Typer app, every command is in the
README's command table, a matrix is always the positional MATRIX, `--profile/-p` is the only short
flag besides `-h` and reads the same everywhere, help shows no Python types, and every command
documents its exit codes."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from repro.cli import app

ROOT = Path(__file__).resolve().parents[2]
TYPES_SHOWN = ("<bool>", "<str>", "<path>", "<int>", "list[")


def commands() -> dict[str, object]:
    """Every leaf command of the real app by its path ("matrix run"), from the command Typer builds."""
    root = typer.main.get_command(app)
    found: dict[str, object] = {}

    def walk(command: object, path: list[str]) -> None:
        children = getattr(command, "commands", None)
        if children:
            for name, child in children.items():
                walk(child, [*path, name])
        else:
            found[" ".join(path)] = command

    walk(root, [])
    return found


COMMANDS = commands()


def readme_commands() -> set[str]:
    """The command paths of the README's command table: the first cell of each "| `repro ...` |" row."""
    paths = set()
    for line in (ROOT / "README.md").read_text().splitlines():
        match = re.match(r"\| `repro ([^`]*)`", line)
        if match:
            paths.add(" ".join(command_words(match.group(1).split())))
    return paths


def command_words(words: list[str]) -> list[str]:
    """The command path at the start of a usage line: its words up to the first argument or option."""
    path: list[str] = []
    for word in words:
        if not re.fullmatch(r"[a-z][a-z0-9-]*", word):
            break
        path.append(word)
    return path


def render_help(path: str) -> str:
    result = CliRunner().invoke(app, [*path.split(), "--help"], prog_name="repro", env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    return result.output


def params(command: object) -> list:
    return list(getattr(command, "params", []))


def test_the_walk_finds_the_commands():
    assert {"matrix run", "images build", "doctor", "check", "suites fetch", "scale k8s"} <= set(COMMANDS)


def test_every_command_is_in_the_readme_table():
    missing = sorted(set(COMMANDS) - readme_commands())
    assert not missing, f"commands missing from README.md's command table: {missing}"


def test_no_short_flag_but_profile_and_help():
    for path, command in COMMANDS.items():
        for param in params(command):
            short = [opt for opt in [*param.opts, *param.secondary_opts] if re.fullmatch(r"-[^-].*", opt)]
            assert short in ([], ["-p"]), f"repro {path} {param.opts}: short flag {short}"
            assert short != ["-p"] or param.name == "profile", f"repro {path}: -p is --profile's alone"


def test_a_matrix_is_always_the_positional_matrix():
    for path, command in COMMANDS.items():
        matrices = [param for param in params(command) if param.name == "matrix"]
        for param in matrices:
            assert param.param_type_name == "argument", f"repro {path}: the matrix is an option"
        if matrices:
            first = next(param for param in params(command) if param.param_type_name == "argument")
            assert first.name == "matrix", f"repro {path}: MATRIX is not the first positional argument"
        assert not any("--matrix" in param.opts or "--probe" in param.opts for param in params(command)), path


def test_profile_reads_the_same_everywhere():
    profiles = [
        (path, param) for path, command in COMMANDS.items() for param in params(command) if param.name == "profile"
    ]
    assert len(profiles) >= 8
    assert {param.help for _, param in profiles} == {profiles[0][1].help}
    # `repro rerun BUNDLE`: without --profile, the bundle's own profile (None here), never a fixed one
    assert {param.default for path, param in profiles if path != "rerun"} == {"cpu"}
    assert all(param.opts == ["--profile", "-p"] for _, param in profiles), [
        (path, param.opts) for path, param in profiles
    ]


@pytest.mark.parametrize("path", sorted(COMMANDS))
def test_help_shows_no_types_and_the_exit_codes(path):
    text = render_help(path)
    assert not [shown for shown in TYPES_SHOWN if shown in text], text
    assert "Exit codes: 0 " in " ".join(text.split()), f"repro {path}: no exit codes in its help"
    assert re.search(r"2\s+bad\s+input", text), f"repro {path}: exit code 2 is not bad input"


def test_help_wraps_the_docstring_to_the_terminal():
    """A paragraph after the first is one paragraph on a wide terminal, not the source's lines."""
    text = render_help("matrix run")
    paragraph = next(line for line in text.splitlines() if "A dirty project tree" in line)
    assert "--allow-dirty runs it anyway" in paragraph, text
    assert "Usage: repro matrix run [OPTIONS] [MATRIX]" in text


def test_group_help_offers_only_what_the_group_does():
    text = render_help("matrix")
    assert "describe" not in text and "Validate, plan and run" in text


def test_minus_h_is_help():
    result = CliRunner().invoke(app, ["images", "build", "-h"], prog_name="repro")
    assert result.exit_code == 0 and "Usage: repro images build [OPTIONS] [MATRIX]" in result.output
