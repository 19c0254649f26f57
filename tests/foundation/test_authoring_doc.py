"""docs/authoring.md is the walk scripts/author-walk replays (issue 34): every `$ repro ...` line of
the doc is a real command with real options, the doc shows the walk's commands in the walk's
order, and the README and docs/matrix.md lead an author to it."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from tests.foundation.test_cli_vocabulary import COMMANDS, command_words

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "authoring.md"
WALK = ROOT / "scripts" / "author-walk"


def shape(words: list[str]) -> tuple[str, tuple[str, ...]]:
    """A repro command line as (its command path, its options in order): what must agree."""
    path = command_words(words[1:])
    return " ".join(path), tuple(word for word in words if word.startswith("--"))


def doc_commands() -> list[list[str]]:
    """The `$ repro ...` lines of the doc's code blocks, split as a shell would."""
    return [shlex.split(line[2:]) for line in DOC.read_text().splitlines() if line.startswith("$ repro ")]


def walk_commands() -> list[list[str]]:
    """The `step repro ...` lines of the walk (the commands whose output the doc shows)."""
    step = re.compile(r"\s*step(?:_rc \d+)? (?=repro )")
    lines = [step.sub("", line, count=1) for line in WALK.read_text().splitlines() if step.match(line)]
    return [shlex.split(re.sub(r"\$\{?\w+\}?|\$\([^)]*\)", "X", line)) for line in lines]


def test_every_command_of_the_doc_is_a_real_command_with_real_options():
    assert doc_commands(), "docs/authoring.md shows no `$ repro ...` line"
    for words in doc_commands():
        path, options = shape(words)
        assert path in COMMANDS, f"docs/authoring.md: `repro {path}` is no command"
        known = {opt for param in COMMANDS[path].params for opt in param.opts}  # type: ignore[attr-defined]
        unknown = [opt for opt in options if opt.split("=", 1)[0] not in known]
        assert not unknown, f"docs/authoring.md: `repro {path}` has no option {unknown[0]}"


def test_the_doc_shows_the_walk_commands_in_order():
    """The outputs in the doc come from scripts/author-walk: the two list the same commands."""
    assert [shape(words) for words in doc_commands()] == [shape(words) for words in walk_commands()]


def test_the_readme_and_the_matrix_reference_lead_to_the_guide():
    assert "docs/authoring.md" in (ROOT / "README.md").read_text()
    assert "authoring.md" in (ROOT / "docs" / "matrix.md").read_text()
