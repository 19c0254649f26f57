"""`repro verify RESULTS... --published FILE|BUNDLE [--identical-transcripts]` or `--claims FILE`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.console import Console

from repro.bundle.signers import require_signed
from repro.commands.printing import print_claims
from repro.core.errors import BadInput
from repro.core.terminal import shown
from repro.verify.published import first_step_finder, host_environments, stated_setups

if TYPE_CHECKING:
    from repro.verify.claims import ClaimsReport, Options


def verify(
    results: list[Path] = typer.Argument(..., help="The rerun: run folders or results folders."),
    published: Path = typer.Option(
        None,
        "--published",
        help="results.json of the published numbers (written by repro paper render), or the published bundle itself.",
    ),
    claims: Path = typer.Option(
        None, "--claims", help="A claims file (YAML: repro claims schema): someone's published table, claim by claim."
    ),
    accept: list[str] = typer.Option(
        [],
        "--accept",
        help="Inputs that may differ from the claim's, by name, comma-separated "
        "(e.g. threads,hardware); see docs/methodology.md.",
    ),
    identical_transcripts: bool = typer.Option(
        False,
        "--identical-transcripts",
        help="A differing transcript makes its claim DIFFERENT even where the setup is not exact.",
    ),
    allow_partial: bool = typer.Option(
        False,
        "--allow-partial",
        help="A published row or claim that was not rerun (NOT RERUN) does not fail the verify.",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the verdicts as JSON alone on stdout."),
    require_signature: Path = typer.Option(
        None,
        "--require-signature",
        help="An ssh allowed_signers file: the published bundle must be signed by one of them (exit 1 otherwise).",
    ),
    allow_invalid_published: bool = typer.Option(
        False,
        "--allow-invalid-published",
        help="A published bundle with INVALID cells: verify against its VALID rows alone (said in the output), "
        "rather than fail.",
    ),
) -> None:
    """Compare a rerun with published numbers (--published: each published row as a claim) or
    with a claims file (--claims): REPRODUCED, CONSISTENT, DIFFERENT or NOT RERUN per claim, and
    ON ANOTHER SETUP where an input the claim pins differs and was not accepted (--accept).

    Exit codes: 0 every claim REPRODUCED or CONSISTENT on its setup (or on differences accepted by
    name; NOT RERUN too with --allow-partial); 1 any other verdict, or the published bundle is not
    signed as --require-signature asks, or the published bundle has INVALID cells (listed; without
    --allow-invalid-published); 2 bad input. A published bundle is checked first: its INVALID cells
    are named with their first reason, its UNCHECKED cells are NOT RERUN with theirs."""
    from repro.bundle.setup import parse_accept
    from repro.verify.claims import Options

    if (published is None) == (claims is None):
        raise BadInput("give exactly one of --published FILE and --claims FILE")
    if claims is not None and require_signature is not None:
        raise BadInput("--require-signature checks a published bundle: use it with --published")
    options = Options(accept=parse_accept(accept), require_identical=identical_transcripts)
    if claims is not None:
        report = report_for_claims(results, claims, options)
    else:
        report = report_for_published(results, published, options, require_signature)
        report = report.model_copy(update={"narrowed": allow_invalid_published})
    show_report(report, as_json, "claimed" if claims is not None else "published")
    if not report.passed(allow_partial):
        raise typer.Exit(1)


def report_for_claims(results: list[Path], claims_path: Path, options: Options) -> ClaimsReport:
    from repro.spec.claims import load_claims
    from repro.verify.claims import verify_claims
    from repro.verify.rerun_rows import load_rerun

    loaded = load_claims(claims_path)
    return verify_claims(loaded, load_rerun(results), options)


def report_for_published(
    results: list[Path], published: Path, options: Options, require_signature: Path | None
) -> ClaimsReport:
    """The published rows stated as claims (repro.verify.own_claims.claims_from_rerun) and
    verified as any claims are: one verdict, one comparison of inputs, whichever way is asked."""
    from repro.report.aggregate import collect_with_cells
    from repro.verify.claims import unchecked_published, verify_claims
    from repro.verify.own_claims import published_claims
    from repro.verify.rerun_rows import load_rerun

    if require_signature is not None:
        if not published.is_dir():
            raise BadInput(
                f"{published}: --require-signature needs the published bundle (a results.json carries no signature)"
            )
        for run_dir, signer in require_signed([published], require_signature):
            Console(stderr=True).print(
                f"published bundle signed: {shown(run_dir.name)} by {shown(signer)}", soft_wrap=True
            )
    published_side = collect_with_cells([published]) if published.is_dir() else None  # each bundle is checked once
    loaded, published_keys = published_claims(published, published_side)  # the published side's bad input first
    rerun_side = collect_with_cells(results)
    if published_side is None:
        return verify_claims(loaded, load_rerun(results, rerun_side), options)
    where = first_step_finder(published_side[1], rerun_side[1], published_keys)
    options = options.model_copy(update={"where": where, "stated": stated_setups(published_side[0], published_keys)})
    report = verify_claims(loaded, load_rerun(results, rerun_side), options)
    exclusions = published_side[0].exclusions
    unchecked = [(e.cell_id, e.reasons) for e in exclusions if e.verdict == "UNCHECKED"]
    invalid = [f"{e.cell_id}: {e.reasons[0] if e.reasons else 'INVALID'}" for e in exclusions if e.verdict == "INVALID"]
    return report.model_copy(
        update={
            "verdicts": report.verdicts + unchecked_published(unchecked),
            "published_invalid": invalid,
            "host_environment": host_environments(published_side[0], rerun_side[0]),
        }
    )


def show_report(report: ClaimsReport, as_json: bool, side: str) -> None:
    if as_json:  # stdout is the JSON alone
        typer.echo(json.dumps(report.model_dump(mode="json"), indent=2))
    else:
        print_claims(report, side)
