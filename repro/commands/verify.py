"""`repro verify RESULTS... --published FILE|BUNDLE [--identical-transcripts]` or `--claims FILE`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.console import Console

from repro.bundle.signers import require_signed
from repro.core.errors import BadInput
from repro.core.terminal import printable, shown
from repro.report.aggregate import collect_with_cells
from repro.report.verify import RowComparison, compare, load_side

if TYPE_CHECKING:
    from repro.report.claims_verify import ClaimsReport

COLOURS = {"reproduced": "green", "differs": "red", "missing": "red", "extra": "yellow"}
SHOWN_STATUS = {"missing": "NOT RERUN"}  # a published row absent from the rerun (a partial run, or never run)
VERDICT_COLOURS = {"REPRODUCED": "green", "CONSISTENT": "cyan", "DIFFERENT": "red", "NOT RERUN": "yellow"}


def verify(
    results: list[Path] = typer.Argument(..., help="The rerun: run folders or results folders."),
    published: Path = typer.Option(
        None, "--published", help="results.json of the published numbers (written by repro paper render), or the published bundle itself."
    ),
    claims: Path = typer.Option(None, "--claims", help="A claims file (YAML: repro claims schema): someone's published table, claim by claim."),
    identical_transcripts: bool = typer.Option(False, "--identical-transcripts", help="A differing transcript makes its row differ (for CPU, temperature 0)."),
    allow_partial: bool = typer.Option(False, "--allow-partial", help="A published row or claim that was not rerun (NOT RERUN) does not fail the verify."),
    as_json: bool = typer.Option(False, "--json", help="With --claims: print the verdicts as JSON alone on stdout."),
    require_signature: Path = typer.Option(
        None, "--require-signature", help="An ssh allowed_signers file: the published bundle must be signed by one of them (exit 1 otherwise)."
    ),
) -> None:
    """Compare a rerun with published numbers (--published) or with a claims file (--claims:
    REPRODUCED, CONSISTENT, DIFFERENT or NOT RERUN per claim).

    Exit codes: 0 every row or claim agrees (NOT RERUN agrees only with --allow-partial); 1 a row or
    claim does not, or the published bundle is not signed as --require-signature asks; 2 bad input."""
    if (published is None) == (claims is None):
        raise BadInput("give exactly one of --published FILE and --claims FILE")
    if claims is not None:
        if require_signature is not None:
            raise BadInput("--require-signature checks a published bundle: use it with --published")
        verify_against_claims(results, claims, allow_partial=allow_partial, as_json=as_json)
        return
    if as_json:
        raise BadInput("--json is for --claims")
    verify_published(results, published, identical_transcripts, allow_partial, require_signature)


def verify_published(results: list[Path], published: Path, identical_transcripts: bool, allow_partial: bool, require_signature: Path | None) -> None:
    if require_signature is not None:
        if not published.is_dir():
            raise BadInput(f"{published}: --require-signature needs the published bundle (a results.json carries no signature)")
        for run_dir, signer in require_signed([published], require_signature):
            Console().print(f"published bundle signed: {shown(run_dir.name)} by {shown(signer)}", soft_wrap=True)
    published_tables, published_cells = load_side(published)
    rerun_tables, rerun_cells = collect_with_cells(results)
    comparisons = compare(published_tables, rerun_tables, published_cells, rerun_cells, require_identical=identical_transcripts)
    console = Console()
    for item in comparisons:
        print_row(console, item)
    reproduced = sum(item.status == "reproduced" for item in comparisons)
    not_rerun = sum(item.status == "missing" for item in comparisons)
    console.print(f"{reproduced} of {len(comparisons)} rows reproduced" + (f", {not_rerun} NOT RERUN" if not_rerun else ""))
    if reproduced + (not_rerun if allow_partial else 0) != len(comparisons):
        raise typer.Exit(1)


def print_row(console: Console, item: RowComparison) -> None:
    scores = f"published {item.published or '-'}, rerun {item.rerun or '-'}"
    identity = f"; {item.transcripts.summary()}" if item.transcripts else ""
    status = SHOWN_STATUS.get(item.status, item.status.upper())
    console.print(f"[{COLOURS[item.status]}]{status:<10}[/] {shown(item.key)} ({shown(scores + identity)})", soft_wrap=True, highlight=False)
    listed = item.differences if item.status != "reproduced" else []
    for line in listed + [d for d in (item.transcripts.differing if item.transcripts else []) if d not in listed]:
        console.print(f"           - {printable(line)}", soft_wrap=True, highlight=False, markup=False)


# ---------------------------------------------------------------- --claims


def verify_against_claims(results: list[Path], claims_path: Path, *, allow_partial: bool, as_json: bool) -> None:
    from repro.report.claims_verify import load_rerun, verify_claims
    from repro.spec.claims import load_claims

    loaded = load_claims(claims_path)
    report = verify_claims(loaded, load_rerun(results))
    if as_json:  # stdout is the JSON alone
        typer.echo(json.dumps(report.model_dump(mode="json"), indent=2))
    else:
        print_claims(report)
    if not report.passed(allow_partial):
        raise typer.Exit(1)


def print_claims(report: ClaimsReport) -> None:
    console = Console()

    def say(text: str) -> None:
        console.print(text, soft_wrap=True, highlight=False)

    say(f"claims {shown(report.claims_file)} (sha256 {report.sha256[:12]}): {shown(report.source)}")
    for item in report.verdicts:
        scores = f"claimed {item.claimed}, rerun {item.rerun or '-'}"
        say(f"[{VERDICT_COLOURS[item.verdict]}]{item.verdict:<10}[/] {shown(item.claim)} ({shown(scores)}): {shown(item.about)}")
        lines = list(item.reasons)
        if item.judgement is not None:
            lines.append(item.judgement.describe())
        if item.transcripts is not None:
            lines.append(item.transcripts.summary())
        if item.tolerance and item.verdict != "REPRODUCED":
            lines.append(f"tolerance: {item.tolerance}")
        lines += [difference.describe() for difference in item.differences]
        lines += item.notes + (item.transcripts.differing[:20] if item.transcripts else [])
        for line in lines:
            console.print(f"           - {printable(line)}", soft_wrap=True, highlight=False, markup=False)
    for key in report.unclaimed_rows:
        say(f"[dim]UNCLAIMED [/] {shown(key)} (a rerun row no claim is about)")
    counts = report.counts()
    say(", ".join(f"{n} {name}" for name, n in counts.items()) + f" of {len(report.verdicts)} claims")
