"""How the commands print a check's and a verify's verdicts: shared by `repro check`, `repro
verify` and `repro rerun` (a module of the commands that defines no command, as `vocabulary`)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console

from repro.core.terminal import printable, shown
from repro.report.coverage import run_coverage

if TYPE_CHECKING:
    from repro.check.verdict import RunVerdict
    from repro.verify.claims import ClaimsReport, ClaimVerdict

COLOURS = {"VALID": "green", "EXCLUDED": "yellow", "INVALID": "red", "UNCHECKED": "magenta"}
VERDICT_COLOURS = {
    "REPRODUCED": "green",
    "REPRODUCED ON ANOTHER SETUP": "yellow",
    "CONSISTENT": "cyan",
    "CONSISTENT ON ANOTHER SETUP": "yellow",
    "CONSISTENT (COUNTS ONLY)": "yellow",
    "DIFFERENT": "red",
    "NOT RERUN": "yellow",
}


def print_verdicts(verdicts: list[RunVerdict]) -> None:
    console = Console()
    for run in verdicts:
        if run.signer:
            console.print(f"signed: {shown(Path(run.run_dir).name)} by {shown(run.signer)}", soft_wrap=True)
        console.print(f"[bold]run {shown(run.run_id)}[/] (bundle format {shown(run.format_version)})", soft_wrap=True)
        for problem in run.run_problems if not run.cells else []:
            console.print(f"  [red]INVALID [/] {problem.rule}: {shown(problem.text)}", soft_wrap=True)
        for cell in run.cells:
            colour = COLOURS[cell.verdict]
            console.print(f"  [{colour}]{cell.verdict:<8}[/] {shown(cell.cell_id)}", soft_wrap=True)
            for index, reason in enumerate(cell.reasons if cell.verdict != "VALID" else []):
                kind = f"{cell.kind_label}: " if cell.kind_label and index == 0 else ""
                console.print(f"             - {kind}{shown(reason)}", soft_wrap=True)
            for note in cell.notes:
                console.print(f"             [dim]note[/]: {shown(note)}", soft_wrap=True)
        for note in run.notes:
            console.print(f"  [dim]note[/]: {shown(note)}", soft_wrap=True)
        for absent in run.absent:
            console.print(f"  [dim]ABSENT  [/] {shown(absent.cell_id)} - {shown(absent.reason)}", soft_wrap=True)
        partial = partial_label(run)
        console.print(
            "  " + ", ".join(f"{n} {name}" for name, n in run.counts.items()) + (f"; {partial}" if partial else ""),
            soft_wrap=True,
        )


def partial_label(run: RunVerdict) -> str | None:
    """What a run whose selection left planned cells out holds, as every table says it
    (repro.report.coverage): "partial: N of M planned cells (--only, K cells)" or "(shard i of n)";
    None for a whole run."""
    return run_coverage([run]).label or None


def print_claims(report: ClaimsReport, side: str | None = "claimed") -> None:
    """Each verdict with what it rests on, the counts, and (where `side` names the claim's side)
    the one line that says what the verify found."""
    console = Console()

    def say(text: str) -> None:
        console.print(text, soft_wrap=True, highlight=False)

    say(f"claims {shown(report.claims_file)} (sha256 {report.sha256[:12]}): {shown(report.source)}")
    if report.accepted:
        say(f"accepted as differing (--accept): {', '.join(report.accepted)}")
    for line in report.published_invalid:
        say(f"[red]INVALID (published)[/] {shown(line)}")
    for item in report.verdicts:
        scores = f"claimed {item.claimed}, rerun {item.rerun or '-'}; setup {item.setup}"
        say(
            f"[{VERDICT_COLOURS[item.verdict]}]{item.verdict:<10}[/] {shown(item.claim)} "
            f"({shown(scores)}): {shown(item.about)}"
        )
        for line in verdict_lines(item):
            console.print(f"           - {printable(line)}", soft_wrap=True, highlight=False, markup=False)
    for key in report.unclaimed_rows:
        say(f"[dim]UNCLAIMED [/] {shown(key)} (a rerun row no claim is about)")
    if report.host_environment:
        say(f"[dim]information:[/] {shown(report.host_environment)}")
    counts = report.counts()
    say(", ".join(f"{n} {name}" for name, n in counts.items()) + f" of {len(report.verdicts)} claims")
    if side is not None:
        console.print(f"==> {printable(report.conclusion(side))}", soft_wrap=True, highlight=False, markup=False)


def verdict_lines(item: ClaimVerdict) -> list[str]:
    """What a verdict rests on: the reasons, the setup's differences, the rule and its figures."""
    lines = list(item.reasons) + [difference.describe() for difference in item.differences]
    if item.rule:
        lines.append(f"rule: {item.rule}")
    if item.judgement is not None:
        lines.append(item.judgement.describe())
    if item.transcripts is not None:
        lines.append(item.transcripts.summary())
    if item.tolerance and item.verdict not in ("REPRODUCED", "NOT RERUN"):
        lines.append(f"tolerance: {item.tolerance}")
    return lines + item.notes + (item.transcripts.differing[:20] if item.transcripts else [])
