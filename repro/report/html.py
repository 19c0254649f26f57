"""A self-contained `report.html`: summary, tables, figures, failure types, consistency, and every
scenario with its transcript. No script, no link, no network: figures are inline SVG and the
style is inline, so the file opens the same anywhere (and a browser logs nothing)."""

from __future__ import annotations

import json
from pathlib import Path

import jinja2

from harness.contracts import transcript_data
from repro.core.files import atomic_write
from repro.core.templating import template_environment
from repro.report.aggregate import PaperTables, ValidCell
from repro.report.paper import TEMPLATES

REPORT = "report.html"
MAX_TRANSCRIPT_CHARS = 200_000


def environment() -> jinja2.Environment:
    return template_environment(TEMPLATES, autoescape=True, keep_trailing_newline=False)


def inline_svg(data: bytes) -> str:
    """An SVG file's <svg> element, for inlining (the XML prolog and doctype dropped)."""
    text = data.decode()
    return text[text.index("<svg") :]


def transcript_texts(cells: dict[str, list[ValidCell]]) -> dict[str, dict[str, list[str]]]:
    """Per row key and scenario, each repeat's transcript as indented JSON (cut at a size limit)."""
    texts: dict[str, dict[str, list[str]]] = {}
    for key, row_cells in cells.items():
        for cell in row_cells:
            for result in cell.results:
                transcript = cell.transcript(result.id)
                text = "(no transcript recorded)" if transcript is None else json.dumps(transcript_data(transcript), indent=2, ensure_ascii=False)
                cut = text[:MAX_TRANSCRIPT_CHARS] + ("\n... (cut)" if len(text) > MAX_TRANSCRIPT_CHARS else "")
                texts.setdefault(key, {}).setdefault(result.id, []).append(cut)
    return texts


def render_report(tables: PaperTables, out_dir: Path, cells: dict[str, list[ValidCell]] | None = None) -> Path:
    from repro.report.figures import render_figures

    figures = {name: inline_svg(formats["svg"]) for name, formats in render_figures(tables).items()}
    html = environment().get_template("report.html.j2").render(t=tables, figures=figures, transcripts=transcript_texts(cells or {}))
    path = out_dir / REPORT
    atomic_write(path, html.encode())
    return path
