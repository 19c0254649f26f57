"""Reading the project's history with git, never checking anything out: one command's stdout, and
whether a commit is there."""

from __future__ import annotations

import subprocess
from functools import cache
from pathlib import Path

from repro.core.errors import BadInput
from repro.core.terminal import shown

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


def repository_top(folder: Path, option: str = "--source") -> Path:
    """The top of the git repository that holds `folder` (an author's repository given by
    `option`), else one line and exit 2."""
    top = git(folder, "rev-parse", "--show-toplevel") if folder.is_dir() else None
    if top is None:
        raise BadInput(
            f"{option} {shown(folder)}: not a folder in a git repository "
            "(give the author's repository the matrix was committed to)"
        )
    return Path(top.decode().strip())
