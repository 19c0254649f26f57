"""The one jinja2 setup for what repro renders (tables, the HTML report, scale-out scripts)."""

from __future__ import annotations

from pathlib import Path

import jinja2


def template_environment(
    folder: Path, *, autoescape: bool = False, keep_trailing_newline: bool = True
) -> jinja2.Environment:
    """Templates from `folder`; an undefined name is an error, never an empty string."""
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(folder),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=keep_trailing_newline,
        autoescape=autoescape,
    )
