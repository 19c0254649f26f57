"""Paper tables (LaTeX booktabs and Markdown) rendered from aggregated rows (repro.report.aggregate).

This module only renders: which cells count and how their figures are computed is decided in
repro.check and repro.report.aggregate.
"""

from __future__ import annotations

import json
from pathlib import Path

import jinja2

from repro.core.config import project_file
from repro.core.files import atomic_write
from repro.core.templating import template_environment
from repro.report.figures import CAPTIONS
from repro.report.tables import PROTOCOL_SHORT, PaperTables

TEMPLATES = project_file("paper/templates")
TEX_REPLACEMENTS = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    "\n": " ",
    "\r": " ",
}


def tex_escape(value: object) -> str:
    """Escape one character at a time, so a replacement is never escaped again."""
    return "".join(TEX_REPLACEMENTS.get(char, char) for char in str(value))


def md_escape(value: object) -> str:
    text = str(value).replace("\\", "\\\\").replace("|", "\\|")
    return " ".join(text.split())  # newlines and runs of spaces would break a table row


def environment() -> jinja2.Environment:
    env = template_environment(TEMPLATES)
    env.filters["tex"] = tex_escape
    env.filters["md"] = md_escape
    env.globals["FIGURE_CAPTIONS"] = CAPTIONS
    env.globals["PROTOCOL_SHORT"] = PROTOCOL_SHORT
    return env


def render(tables: PaperTables, out_dir: Path, figures: list[str] | None = None) -> list[Path]:
    """results.md, results.tex and results.json in `out_dir`; `figures` names the figures written
    beside them (figures/NAME.svg and .pdf), which the tables then include."""
    if out_dir.exists() and not out_dir.is_dir():
        from repro.core.errors import BadInput

        raise BadInput(f"{out_dir}: a file, not a folder")
    env = environment()
    written = []
    for template, name in (("results.md.j2", "results.md"), ("results.tex.j2", "results.tex")):
        atomic_write(out_dir / name, env.get_template(template).render(t=tables, figures=figures or []).encode())
        written.append(out_dir / name)
    data = tables.model_dump(mode="json")  # the numbers themselves, for `repro verify`
    atomic_write(out_dir / "results.json", (json.dumps(data, indent=2, sort_keys=True) + "\n").encode())
    return written + [out_dir / "results.json"]
