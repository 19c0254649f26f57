"""Reading the project's history with git, never checking anything out: one command's stdout, and
whether a commit is there."""

from __future__ import annotations

import subprocess
from functools import cache
from pathlib import Path

GIT_TIMEOUT_S = 60


def git(root: Path, *args: str) -> bytes | None:
    """git's stdout, or None when git is missing or the command fails (an unknown commit or path)."""
    try:
        done = subprocess.run(["git", "-C", str(root), *args], capture_output=True, timeout=GIT_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout if done.returncode == 0 else None


@cache
def has_commit(root: Path, commit: str) -> bool:
    return (
        len(commit) == 40
        and all(c in "0123456789abcdef" for c in commit)
        and git(root, "cat-file", "-e", f"{commit}^{{commit}}") is not None
    )
