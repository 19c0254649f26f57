"""Figures from aggregated rows: pass rate with its 95% interval per row, a category heat map, and
the capability ladder (pass rate by level, one line per row).

Rendered with matplotlib (the `host` extra) to SVG (Markdown, HTML) and PDF (LaTeX), without
pyplot's global state. The output is deterministic where the library allows: fixed SVG ids
(`svg.hashsalt`), text kept as text, and no dates or tool versions in the metadata, so the same
rows give the same bytes on the same matplotlib version.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from repro.core.files import atomic_write
from repro.report.tables import PaperTables, TableRow

if TYPE_CHECKING:
    from matplotlib.figure import Figure
    from matplotlib.typing import RcKeyType

Format = Literal["svg", "pdf"]
RC: dict[RcKeyType, Any] = {
    "svg.hashsalt": "repro",
    "svg.fonttype": "none",
    "pdf.fonttype": 42,
    "font.size": 9,
    "font.family": "DejaVu Sans",
}
METADATA = {
    "svg": {"Date": None, "Creator": None},
    "pdf": {"CreationDate": None, "ModDate": None, "Creator": None, "Producer": None},
}


PROTOCOL_COLOURS = {
    "json_schema": "#4c72b0",
    "native_tools": "#dd8452",
    "react": "#55a868",
    "json_prompt": "#8172b3",
    "json_object": "#937860",
}
OTHER_COLOUR = "#937860"


def pass_rate_figure(tables: PaperTables) -> Figure:
    """One horizontal bar per row (its short label), coloured by protocol: the pass rate with the
    Wilson 95% interval as an error bar and the count at its end."""
    from matplotlib.figure import Figure
    from matplotlib.patches import Patch

    rows = tables.rows
    figure = Figure(figsize=(4.5 + _label_inches(tables), 0.32 * max(len(rows), 1) + 1.3))
    axes = figure.add_subplot()
    rates = [row.passed / row.total if row.total else 0.0 for row in rows]
    errors = [
        [rate - row.interval.low for rate, row in zip(rates, rows, strict=True)],
        [row.interval.high - rate for rate, row in zip(rates, rows, strict=True)],
    ]
    positions = list(range(len(rows)))
    colours = [PROTOCOL_COLOURS.get(row.protocol, OTHER_COLOUR) for row in rows]
    axes.barh(positions, rates, xerr=errors, color=colours, ecolor="#444444", capsize=2, height=0.7)
    for y, row in enumerate(rows):
        axes.text(1.01, y, f"{row.passed}/{row.total}", va="center", fontsize=7, transform=axes.get_yaxis_transform())
    axes.set_yticks(positions, [_row_label(row) for row in rows], fontsize=7)
    axes.invert_yaxis()
    axes.set_xlim(0, 1)
    axes.set_xlabel("pass rate (Wilson 95% interval)")
    axes.spines[["top", "right"]].set_visible(False)
    axes.legend(
        handles=[Patch(color=PROTOCOL_COLOURS.get(p, OTHER_COLOUR), label=p) for p in tables.protocols],
        fontsize=7,
        loc="lower center",
        bbox_to_anchor=(0.5, 1.0),
        ncol=4,
        frameon=False,
    )
    figure.tight_layout()
    return figure


def category_figure(tables: PaperTables) -> Figure:
    """Pass rate per row and category (the safety category last), as a heat map with the counts;
    only the rows that ran any of the categories (a ladder-only row would be an empty line)."""
    from matplotlib.figure import Figure

    categories = [*tables.categories, tables.safety_category]
    rows = [row for row in tables.rows if any(c in row.by_category for c in categories)] or tables.rows
    figure = Figure(figsize=(0.75 * len(categories) + 2 + _label_inches(tables), 0.36 * max(len(rows), 1) + 1.8))
    axes = figure.add_subplot()
    grid = [[_rate(row.by_category.get(c)) for c in categories] for row in rows]
    image = axes.imshow(
        [[v if v is not None else float("nan") for v in line] for line in grid] or [[float("nan")]],
        vmin=0,
        vmax=1,
        cmap="viridis",
        aspect="auto",
    )
    for y, row in enumerate(rows):
        for x, category in enumerate(categories):
            pair = row.by_category.get(category)
            axes.text(
                x,
                y,
                f"{pair[0]}/{pair[1]}" if pair else "-",
                ha="center",
                va="center",
                fontsize=7,
                color="white" if (grid[y][x] or 0) < 0.6 else "black",
            )
    axes.set_xticks(
        range(len(categories)), [c.replace("_", " ") for c in categories], rotation=30, ha="right", fontsize=7
    )
    axes.set_yticks(range(len(rows)), [_row_label(row) for row in rows], fontsize=7)
    figure.colorbar(image, ax=axes, label="pass rate")
    figure.tight_layout()
    return figure


def ladder_figure(tables: PaperTables) -> Figure:
    """Pass rate by ladder level, one line per row that ran ladder scenarios (levels it did not
    run are gaps in its line)."""
    from matplotlib.figure import Figure

    levels = tables.ladder_levels
    figure = Figure(figsize=(6, 3.6))
    axes = figure.add_subplot()
    for row in tables.ladder_rows:
        rates = [_rate(row.by_level.get(level)) for level in levels]
        axes.plot(levels, [r if r is not None else float("nan") for r in rates], marker="o", label=_row_label(row))
    axes.set_xticks(levels, [f"L{level}" for level in levels])
    axes.set_ylim(-0.05, 1.05)
    axes.set_xlabel("ladder level")
    axes.set_ylabel("pass rate")
    axes.legend(fontsize=6, loc="upper right")
    figure.tight_layout()
    return figure


def time_figure(tables: PaperTables) -> Figure:
    """Per row, the engine's prompt and generation time and the harness's share, stacked."""
    from matplotlib.figure import Figure

    rows = tables.rows
    figure = Figure(figsize=(4 + _label_inches(tables), 0.45 * max(len(rows), 1) + 1.4))
    axes = figure.add_subplot()
    positions = list(range(len(rows)))
    left = [0.0] * len(rows)
    parts = (
        ("prompt", "prompt_s", "#4c72b0"),
        ("generation", "generation_s", "#55a868"),
        ("harness", "harness_s", "#c44e52"),
        ("wall, not split", "unsplit", "#999999"),
    )
    for label, part, colour in parts:
        widths = [unsplit_wall(row) if part == "unsplit" else getattr(row.time, part) or 0.0 for row in rows]
        if part == "unsplit" and not any(widths):
            continue
        axes.barh(positions, widths, left=left, color=colour, label=label)
        left = [a + b for a, b in zip(left, widths, strict=True)]
    axes.set_yticks(positions, [_row_label(row) for row in rows], fontsize=7)
    axes.invert_yaxis()
    axes.set_xlabel("seconds")
    axes.legend(fontsize=7, loc="lower right")
    figure.tight_layout()
    return figure


def unsplit_wall(row: TableRow) -> float:
    """A row whose harness reports no engine timings: its whole wall time, drawn as one bar."""
    return (row.time.wall_s or 0.0) if row.time.prompt_s is None else 0.0


def _row_label(row: TableRow) -> str:
    """The row's short label (model / protocol / suite); its full key where it has none."""
    return row.label or row.key


def _label_inches(tables: PaperTables) -> float:
    """Room for the row labels on the y axis (about 0.055 inch a character at 7 pt)."""
    return 0.055 * max((len(_row_label(row)) for row in tables.rows), default=10)


def _rate(pair: tuple[int, int] | None) -> float | None:
    return pair[0] / pair[1] if pair and pair[1] else None


def figure_bytes(figure: Figure, fmt: Format) -> bytes:
    import matplotlib

    buffer = io.BytesIO()
    with matplotlib.rc_context(RC):
        figure.savefig(buffer, format=fmt, metadata=METADATA[fmt])
    return buffer.getvalue()


FIGURES = {"pass_rate": pass_rate_figure, "categories": category_figure, "ladder": ladder_figure, "time": time_figure}
CAPTIONS = {
    "pass_rate": "Pass rate per row (model / protocol / suite), coloured by protocol, "
    "with its Wilson 95\\% interval and the count.",
    "categories": "Pass rate per row and category (the injection category last), "
    "for the rows that ran these categories.",
    "ladder": "Capability ladder: pass rate by level, one line per row.",
    "time": "Where the time went: the engine's prompt processing and generation time and the harness's own share, "
    "per row.",
}


def render_figures(tables: PaperTables) -> Rendered:
    """Each figure's bytes per format; nothing when there are no rows."""
    import matplotlib

    if not tables.rows:
        return {}
    rendered: dict[str, dict[Format, bytes]] = {}
    with matplotlib.rc_context(RC):
        for name, build in FIGURES.items():
            if name == "ladder" and not tables.ladder_rows:
                continue
            figure = build(tables)
            rendered[name] = {fmt: figure_bytes(figure, fmt) for fmt in ("svg", "pdf")}
    return rendered


Rendered = dict[str, dict[Format, bytes]]  # each figure's bytes per format (render_figures)


def write_figures(tables: PaperTables, out_dir: Path, rendered: Rendered | None = None) -> list[Path]:
    """figures/NAME.svg and .pdf in `out_dir`: `rendered` when given (drawn once for the files and
    report.html), else drawn here."""
    written = []
    for name, formats in (render_figures(tables) if rendered is None else rendered).items():
        for fmt, data in formats.items():
            path = out_dir / "figures" / f"{name}.{fmt}"
            atomic_write(path, data)
            written.append(path)
    return written
