"""The CLI's one vocabulary: the `Typer` every command module builds its group from, and the
parameters several commands share, defined once.

- A matrix is the first positional argument MATRIX (`matrix_argument`).
- `--profile/-p` is the only short flag besides `-h`, the same help and default everywhere (`PROFILE`).
- Help shows no Python types (Typer 0.29 prints `<path>`, `<bool>`, `<list[Path]>` beside every
  parameter, an argument's even with a metavar): arguments and options with a value show their
  name in capitals, flags nothing.
- A command's docstring is reflowed: each paragraph one line, so the terminal wraps it (Typer
  joins the first paragraph's lines only). Every docstring ends with `Exit codes: ...`.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import typer
from typer.core import TyperArgument, TyperCommand, TyperGroup

from repro.core.config import DEFAULT_MATRIX

CONTEXT = {"help_option_names": ["--help", "-h"]}

PROFILE_HELP = "Hardware profile (see matrix/profiles.yaml)."
PROFILE = typer.Option("cpu", "--profile", "-p", help=PROFILE_HELP)


def matrix_argument(
    default: Any = DEFAULT_MATRIX, help: str = "Matrix file (default: the embedded matrix/smoke.yaml)."
) -> Any:
    """MATRIX, the first positional argument: optional with the smoke default, or as `default` says
    (`...`: required)."""
    return typer.Argument(default, metavar="MATRIX", help=help, show_default=False)


def reflow(text: str | None) -> str | None:
    """Each paragraph of a docstring on one line (paragraphs stay apart), so help wraps to the terminal."""
    if not text:
        return text
    return "\n\n".join(" ".join(paragraph.split()) for paragraph in inspect.cleandoc(text).split("\n\n"))


def untyped(ctx: Any) -> None:
    """An argument's type in help: never shown (its name is)."""
    return None


def without_types(params: list[Any]) -> list[Any]:
    """The parameters with their help showing no Python type: an argument its name in capitals,
    an option with a value its name in capitals (`--out OUT`), a flag nothing."""
    for param in params:
        if isinstance(param, TyperArgument):
            param.metavar = param.metavar or param.name.upper()
            setattr(param, "display_type_rich", untyped)  # noqa: B010 (the instance's own: Typer asks it for the type's label)
        elif param.metavar is None:
            param.metavar = "" if param.is_flag or param.count else param.name.upper()
    return params


class Command(TyperCommand):
    """A command whose help is reflowed and shows no types."""

    def __init__(self, *args: Any, help: str | None = None, **kwargs: Any) -> None:
        super().__init__(*args, help=reflow(help), **kwargs)

    def get_params(self, ctx: Any) -> list[Any]:
        return without_types(super().get_params(ctx))


class Group(TyperGroup):
    """A command group whose help is reflowed and shows no types."""

    def __init__(self, *args: Any, help: str | None = None, **kwargs: Any) -> None:
        super().__init__(*args, help=reflow(help), **kwargs)

    def get_params(self, ctx: Any) -> list[Any]:
        return without_types(super().get_params(ctx))


class Typer(typer.Typer):
    """typer.Typer with the vocabulary's command and group classes and `-h` for help."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(cls=Group, context_settings=CONTEXT, **kwargs)

    def command(self, name: str | None = None, **kwargs: Any) -> Callable[[Any], Any]:  # type: ignore[override]
        return super().command(name, cls=Command, context_settings=CONTEXT, **kwargs)
