"""Entry point of the `repro` command: one-line errors and exit codes, never tracebacks."""

from __future__ import annotations

import sys

HOST_MODULES = {"typer", "click", "rich", "docker", "git", "jinja2", "huggingface_hub"}


def main(argv: list[str] | None = None) -> int:
    try:
        from repro.cli import app
    except ModuleNotFoundError as error:
        if error.name not in HOST_MODULES:
            raise
        print(f"repro: {error}; install the host side with: pip install 'repro[host]'", file=sys.stderr)
        return 2
    from repro.errors import ReproError

    try:
        result = app(args=argv, standalone_mode=False, prog_name="repro")
    except ReproError as error:
        for line in error.lines:
            print(line, file=sys.stderr)
        return error.exit_code
    except KeyboardInterrupt:
        print("repro: interrupted", file=sys.stderr)
        return 130
    except SystemExit as exit_:
        return exit_.code if isinstance(exit_.code, int) else 1
    except Exception as error:  # click usage errors and the like
        return _click_error(error)
    return result if isinstance(result, int) else 0


def _click_error(error: Exception) -> int:
    import click

    if isinstance(error, click.exceptions.ClickException):
        error.show()
        return error.exit_code
    if isinstance(error, click.exceptions.Abort):
        print("repro: aborted", file=sys.stderr)
        return 130
    raise error


if __name__ == "__main__":
    sys.exit(main())
