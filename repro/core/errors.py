"""Errors the CLI turns into one-line messages and exit codes (never tracebacks)."""

from __future__ import annotations


class ReproError(Exception):
    """A failure the user should read as one line. `exit_code` is what the CLI returns."""

    exit_code = 1

    def __init__(self, message: str, *, lines: list[str] | None = None) -> None:
        super().__init__(message)
        self.lines = lines or [message]


class BadInput(ReproError):
    """The user's input (a file, a flag, a reference) is wrong: exit status 2."""

    exit_code = 2


class DockerUnavailable(ReproError):
    """The Docker daemon does not answer."""

    exit_code = 1


class NotAtHand(BadInput):
    """Something a check needs is not on this machine (an external harness's code that neither the
    cache nor the bundle holds): nothing is known to be wrong, the check could not look. Its message
    names what is missing and the one command that makes it checkable; `repro check` calls such a
    cell UNCHECKED, never INVALID. Elsewhere it is bad input (exit 2), as before."""
