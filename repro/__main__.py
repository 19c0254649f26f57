"""Entry point of the `repro` command: one-line errors and exit codes, never tracebacks.

Every failure leaves here as one line on stderr and an exit status: 2 for the user's input
(a usage error, a bad file, an unreadable path), 1 for anything else. Click runs with
`standalone_mode=False`, so its usage errors arrive here as exceptions; typer vendors its own
copy of click (`typer._click`), and both copies are mapped. A closed pipe on standard output
(`| head -1`) ends the command at once and quietly, with status 1. `REPRO_TRACEBACK=1` shows the
traceback of an unexpected error, for developers.
"""

from __future__ import annotations

import contextlib
import errno
import os
import sys
from typing import Any

HOST_MODULES = {"typer", "click", "rich", "docker", "git", "jinja2", "huggingface_hub"}
USAGE_EXIT = 2
OUTPUT_ERRNOS = {errno.EPIPE, errno.ENOSPC, errno.EBADF, errno.EIO, errno.EDQUOT}


def main(argv: list[str] | None = None) -> int:
    if sys.stdout is None:  # started with standard output closed (`>&-`): what it prints would be lost
        print("repro: standard output is closed; redirect it to a file or /dev/null instead", file=sys.stderr)
        return USAGE_EXIT
    try:
        from repro.cli import app
    except ImportError as error:
        if getattr(error, "name", None) not in HOST_MODULES:
            return report(error)
        print(f"repro: {error}; install the host side with: pip install 'repro[host]'", file=sys.stderr)
        return 2
    try:
        result = app(args=argv, standalone_mode=False, prog_name="repro")
    except SystemExit as exit_:
        return exit_.code if isinstance(exit_.code, int) else 1
    except KeyboardInterrupt:
        print("repro: interrupted", file=sys.stderr)
        return 130
    except Exception as error:
        return report(error)
    return result if isinstance(result, int) else 0


def report(error: Exception) -> int:
    """Print `error` as one line (or the lines a ReproError carries) and return the exit status."""
    from repro.core.errors import ReproError

    if isinstance(error, ReproError):
        for line in error.lines:
            print(line, file=sys.stderr)
        return error.exit_code
    handled = _click_error(error)
    if handled is not None:
        return handled
    if isinstance(error, BrokenPipeError):
        return pipe_closed()
    if isinstance(error, OSError) and error.filename is None and error.errno in OUTPUT_ERRNOS:
        return output_failed(error)
    if isinstance(error, OSError) and error.filename is not None:
        print(f"repro: {error.filename}: {error.strerror or error}", file=sys.stderr)
        return USAGE_EXIT
    if os.environ.get("REPRO_TRACEBACK"):
        raise error
    print(
        f"repro: internal error: {type(error).__name__}: {_one_line(str(error))} (REPRO_TRACEBACK=1 shows where)",
        file=sys.stderr,
    )
    return 1


def pipe_closed() -> int:
    """The reader of standard output went away (`repro matrix plan ... | head -1`): stop at once,
    quietly, with status 1, as rich's console does when its pipe closes; stdout is pointed at
    /dev/null so the interpreter's last flush does not fail again."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 1


def output_failed(error: OSError) -> int:
    """Standard output could not be written (a closed pipe, a full device): one line, exit 2, and
    stdout pointed at /dev/null so the interpreter's last flush does not fail again."""
    print(f"repro: standard output could not be written: {error.strerror or error}", file=sys.stderr)
    with contextlib.suppress(OSError, ValueError, AttributeError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return USAGE_EXIT


def _click_modules() -> list:
    """The exception modules of every click copy in use: typer's vendored one and click itself."""
    modules = []
    for name in ("typer._click.exceptions", "click.exceptions"):
        try:
            modules.append(__import__(name, fromlist=["UsageError"]))
        except ImportError:
            continue
    return modules


def _click_error(error: Exception) -> int | None:
    """Map a click exception (of either copy) to one line and its exit status; None if it is not one."""
    import typer

    if isinstance(error, typer.Abort):
        print("repro: aborted", file=sys.stderr)
        return 130
    for module in _click_modules():
        no_args_error: Any = getattr(module, "NoArgsIsHelpError", ())  # not every click copy has it
        if isinstance(error, no_args_error):
            print(error.format_message())  # `repro` or a group without a command: its help
            return USAGE_EXIT
        if isinstance(error, module.UsageError):
            print(_usage_line(error), file=sys.stderr)
            return USAGE_EXIT
        if isinstance(error, module.ClickException):
            print(f"repro: {_one_line(error.format_message())}", file=sys.stderr)
            return error.exit_code
        if isinstance(error, getattr(module, "Abort", ())):
            print("repro: aborted", file=sys.stderr)
            return 130
    return None


def _usage_line(error: Any) -> str:  # a UsageError of either click copy
    """`repro scale slurm: Missing option '--shards'. (see repro scale slurm --help)`."""
    context = getattr(error, "ctx", None)
    command = context.command_path if context is not None else "repro"
    return f"{command}: {_one_line(error.format_message())} (see {command} --help)"


def _one_line(text: str) -> str:
    return " ".join(text.split())


if __name__ == "__main__":
    sys.exit(main())
