"""docs/authoring.md shows the real output of scripts/author-walk: every `$ repro ...` block of
the doc is, line for line, the output the walk printed for that command in
docs/authoring-walk.txt (the walk's whole transcript, written by `scripts/author-walk >
docs/authoring-walk.txt`), up to what changes between any two runs (run ids, timestamps,
durations, commit and image hashes). A code change that changes an output fails here once the
walk is run again (`REPRO_TEST_MARKERS=reruns ./scripts/test tests/e2e/test_author_walk.py`
compares a fresh walk with the transcript)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "authoring.md"
TRANSCRIPT = ROOT / "docs" / "authoring-walk.txt"
VOLATILE = [
    (re.compile(r"\d{8}T\d{6}Z-[A-Za-z0-9._-]+"), "<run>"),
    (re.compile(r"\d{4}-\d{2}-\d{2}(T[\d:.]+Z?)?"), "<date>"),
    (re.compile(r"\b(\d+m)?\d+(\.\d+)?\s?s\b"), "<time>"),
    (re.compile(r"\b[0-9a-f]{7,64}\b"), "<hex>"),
    (re.compile(r"\b\d+(\.\d+)? tokens/s\b"), "<rate>"),
]


def normalised(line: str) -> str:
    for pattern, replacement in VOLATILE:
        line = pattern.sub(replacement, line)
    return line.rstrip()


def command_key(command: str) -> str:
    """A command line as both sides print it: the walk prints its arguments unquoted."""
    return normalised(command.replace('"', "").replace("'", ""))


def blocks(lines: list[str]) -> list[tuple[str, list[str]]]:
    """(`$ command`, its output lines) for every command line of a console text."""
    found: list[tuple[str, list[str]]] = []
    for line in lines:
        if line.startswith("$ "):
            found.append((line, []))
        elif found and not line.startswith("```"):
            found[-1][1].append(line)
    return [(command, trim(output)) for command, output in found]


def trim(output: list[str]) -> list[str]:
    while output and not output[-1].strip():
        output.pop()
    while output and not output[0].strip():
        output.pop(0)
    return output


def doc_blocks() -> list[tuple[str, list[str]]]:
    text = DOC.read_text()
    consoles = re.findall(r"```console\n(.*?)```", text, flags=re.S)
    return [block for console in consoles for block in blocks(console.splitlines()) if block[0].startswith("$ repro ")]


def walk_blocks() -> list[tuple[str, list[str]]]:
    return [block for block in blocks(TRANSCRIPT.read_text().splitlines()) if block[0].startswith("$ repro ")]


def test_every_output_of_the_doc_is_the_walks() -> None:
    walked = walk_blocks()
    assert walked, (
        "docs/authoring-walk.txt holds no `$ repro ...` block: run scripts/author-walk > docs/authoring-walk.txt"
    )
    remaining = list(walked)
    for command, output in doc_blocks():
        match = next((i for i, (c, _) in enumerate(remaining) if command_key(c) == command_key(command)), None)
        assert match is not None, f"docs/authoring.md: `{command}` is not in the walk's transcript (in this order)"
        expected = [normalised(line) for line in remaining[match][1]]
        assert [normalised(line) for line in output] == expected, (
            f"docs/authoring.md: the output of `{command}` is not the walk's"
        )
        remaining = remaining[match + 1 :]
