"""`repro matrix validate | schema | plan`."""

from __future__ import annotations

import json
import re
import shlex
import sys
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.console import Console

from repro.commands.vocabulary import PROFILE, Typer, matrix_argument
from repro.core.config import require_checkout
from repro.core.errors import BadInput
from repro.core.terminal import printable, shown
from repro.core.yamlsource import require_folder
from repro.plan.planner import Plan, stored_plan
from repro.spec.cells import Cell, exclusion_label
from repro.spec.loading import load_matrix, load_matrix_and_profiles
from repro.spec.matrix import LoadedMatrix, matrix_json_schema
from repro.spec.profiles import PER_SCENARIO, Profile, PromptCache, is_profiles_file, load_profiles

if TYPE_CHECKING:
    from repro.run.context import RunOptions
    from repro.run.outcome import RunOutcome

app = Typer(help="Validate, plan and run matrix files; print the matrix format's JSON Schema.", no_args_is_help=True)
console = Console()
PRINT_BATCH = 500  # plan lines per print


@app.callback()
def _group(ctx: typer.Context) -> None:
    """Validate, plan and run matrix files; print the matrix format's JSON Schema."""
    if ctx.invoked_subcommand != "schema":  # the schema is the package's own; the rest reads the project tree
        require_checkout(f"repro matrix {ctx.invoked_subcommand}")


@app.command()
def validate(files: list[Path] = typer.Argument(..., help="Matrix files to validate.")) -> None:
    """Validate matrix files (or matrix/profiles.yaml): one `FILE:LINE field: reason` line per problem.

    Exit codes: 0 every file is valid; 1 an unexpected error; 2 bad input (a file has a problem)."""
    problems: list[str] = []
    for path in files:
        try:
            console.print(f"[green]OK[/] {shown(path)} ({shown(_validate_one(path))})", highlight=False)
        except BadInput as error:
            problems += error.lines
    if problems:
        raise BadInput(problems[0], lines=problems)


def _validate_one(path: Path) -> str:
    """Validate a matrix file, or the profiles file (matrix/profiles.yaml) that sits beside them."""
    if is_profiles_file(path):
        profiles = load_profiles(path)
        return f"profiles: {', '.join(profiles.profiles)}"
    loaded = load_matrix(path)
    return f"{len(loaded.matrix.models)} models, {len(loaded.matrix.engines)} engines, sha256 {loaded.sha256[:12]}"


@app.command()
def schema() -> None:
    """Print the JSON Schema of the matrix format (for editor completion).

    Exit codes: 0 printed; 1 an unexpected error; 2 bad input."""
    typer.echo(json.dumps(matrix_json_schema(), indent=2))


@app.command()
def plan(
    matrix: Path = matrix_argument(..., help="Matrix file."),
    profile: str = PROFILE,
    as_json: bool = typer.Option(False, "--json", help="Print the plan as JSON."),
) -> None:
    """List the cells a matrix runs on a profile, and the excluded ones with their reason; warn
    when the project tree is dirty.

    Exit codes: 0 planned; 1 an unexpected error; 2 bad input."""
    # read once: a matrix of thousands of models takes a second to load
    loaded, profiles = load_matrix_and_profiles(matrix)
    chosen = profiles.get(profile)
    the_plan = stored_plan(loaded, profile, chosen)[0]
    toolkit_line = toolkit_note(chosen, profile)
    if as_json:
        dirty = dirty_note(loaded)
        extra = ({"toolkit": toolkit_line} if toolkit_line else {}) | ({"dirty_tree": dirty} if dirty else {})
        typer.echo(json.dumps({**plan_summary(the_plan), **extra}, indent=2))
        return
    print_plan(the_plan)
    if toolkit_line:
        console.print(f"[yellow]note[/] {shown(toolkit_line)}", soft_wrap=True, highlight=False)
    dirty = dirty_note(loaded)
    if dirty:
        console.print(f"[yellow]warning[/] {shown(dirty)}", soft_wrap=True, highlight=False)


def dirty_note(loaded: LoadedMatrix) -> str | None:
    """One line when the project tree (or the author's files, for a matrix kept outside the
    project) is dirty, read as the bundle would record it: every cell of a run from it would be
    INVALID, and `matrix run` refuses it without --allow-dirty."""
    from repro.bundle.provenance import author_source, dirty_lines, source_state

    dirty = dirty_lines(source_state(), author_source(loaded))
    if not dirty:
        return None
    return (
        f"{'; '.join(dirty)}: repro matrix run refuses it (every cell would be INVALID); "
        "commit or remove them, or pass --allow-dirty"
    )


def toolkit_note(chosen: Profile, profile: str) -> str | None:
    """One line when the CUDA toolkit the build would use cannot build the profile's
    architecture (repro.store.cuda_toolkit), said at plan time instead of deep in a build."""
    from repro.store.cuda_toolkit import current_toolkit, unbuildable

    return unbuildable(chosen, profile, current_toolkit())


def unchecked_templates(the_plan: Plan) -> list[str]:
    """Models whose chat template the plan could not read (their GGUF is not in the store yet)."""
    from repro.store.models import is_stored

    models = {c.model.id: c.model for c in [*the_plan.cells, *the_plan.excluded] if c.engine.facts.template_from_gguf}
    return [model_id for model_id, model in models.items() if not is_stored(model)]


def plan_summary(the_plan: Plan) -> dict:
    def row(cell: Cell) -> dict:
        entry = {
            "id": cell.id,
            "model": cell.model.id,
            "engine": cell.engine.id,
            "protocol": cell.protocol,
            "suite": cell.suite.id,
            "repeat": cell.repeat,
        }
        if cell.excluded:
            entry["reason"] = cell.excluded
            entry["kind"] = cell.excluded_kind or "unknown"
        return entry

    return {
        "matrix": the_plan.matrix_path,
        "matrix_sha256": the_plan.matrix_sha256,
        "profile": the_plan.profile,
        "cells": [row(c) for c in the_plan.cells],
        "excluded": [row(c) for c in the_plan.excluded],
    }


def print_plan(the_plan: Plan) -> None:
    """The plan, a batch of lines at a time (thousands of cells print in well under a second)."""
    # Names, ids and reasons come from the matrix: escaped, and never run through the highlighter.
    say = partial(console.print, soft_wrap=True, highlight=False)
    say(
        f"[bold]{shown(the_plan.matrix_name)}[/] on profile [bold]{shown(the_plan.profile)}[/] "
        f"(matrix sha256 {shown(the_plan.matrix_sha256[:12])})"
    )
    lines = [f"[green]RUN [/] {shown(cell.id)}" for cell in the_plan.cells]
    lines += [
        f"[yellow]EXCL[/] {shown(cell.id)}: {exclusion_label(cell.excluded_kind)}: {shown(cell.excluded)}"
        for cell in the_plan.excluded
    ]
    for start in range(0, len(lines), PRINT_BATCH):
        say("\n".join(lines[start : start + PRINT_BATCH]))
    say(f"{len(the_plan.cells)} cells run, {len(the_plan.excluded)} excluded")
    unchecked = unchecked_templates(the_plan)
    if unchecked:
        say(
            f"[yellow]note[/] chat templates not checked yet for {shown(', '.join(unchecked))} "
            "(not in the model store): run repro models fetch, then plan again; "
            "the run checks them before any engine boots"
        )


@app.command()
def run(
    matrix: Path = matrix_argument(),
    profile: str = PROFILE,
    out: Path = typer.Option(Path("results"), "--out", help="Results folder; the run goes to OUT/<run-id>/."),
    resume: bool = typer.Option(False, "--resume", help="Finish the latest unfinished run of this matrix and profile."),
    only: list[str] = typer.Option([], "--only", help="Run only these cell ids (repeatable)."),
    shard: str = typer.Option(
        None, "--shard", help="Run shard i of n (e.g. 2/4): a deterministic split of the plan for n machines."
    ),
    replicas: str = typer.Option(
        "1",
        "--replicas",
        help="Engines per group at the profile's threads, one slot each (exact); 'auto': as many as the cores hold.",
    ),
    allow_dirty: bool = typer.Option(
        False,
        "--allow-dirty",
        help="Run on a tree with uncommitted or untracked files anyway: not a clean-room run, "
        "every cell INVALID in repro check.",
    ),
    prompt_cache: str = typer.Option(
        None,
        "--prompt-cache",
        help="off, scenario or on: the engine's prompt cache for this run, over the profile's (recorded in "
        "run.json; scenario starts each scenario from an empty cache, exact against the same mode; on reuses "
        "it across the run, not exact: docs/engines.md).",
    ),
) -> None:
    """Run a matrix: boot each engine sealed, gate it, run every cell's harness, record the bundle.

    A dirty project tree (uncommitted or untracked, unignored files) is refused before anything
    starts, naming the files; --allow-dirty runs it anyway, marked not clean-room. An interrupted
    cell keeps its finished scenarios: `--resume` reruns only the rest.

    Exit codes: 0 every planned cell completed without engine faults; 1 a cell ended in an engine
    fault (or another error) or was excluded by the latency gate; 2 bad input (a dirty tree too);
    130 interrupted (`--resume` continues, and reruns cells that ended in engine faults)."""
    from repro.bundle.layout.writer import DiskFull
    from repro.plan.planner import parse_shard
    from repro.run.context import RunOptions
    from repro.run.outcome import run_outcome
    from repro.run.progress import RunProgress, print_run_summary
    from repro.run.runner import first_disk_full, run_matrix

    require_folder(out, "results folder")
    shard_pair = parse_shard(ascii_shard(shard)) if shard is not None else None
    options = RunOptions(
        matrix=matrix,
        profile=profile,
        out=out,
        resume=resume,
        only=only,
        shard=shard_pair,
        replicas=parse_replicas(replicas),
        allow_dirty=allow_dirty,
        prompt_cache=parse_cache_mode(prompt_cache),
    )
    try:
        run_dir = run_matrix(options, RunProgress(console))
    except DiskFull as error:
        raise first_disk_full(error) from None
    print_run_summary(run_dir, console)
    outcome = run_outcome(run_dir)
    if outcome.status:
        print(incomplete_line(outcome, options), file=sys.stderr)
        raise typer.Exit(outcome.status)


def ascii_shard(text: str) -> str:
    """--shard as typed, refused in one line unless it is ASCII digits `i/n` (not empty, no superscripts)."""
    if not re.fullmatch(r"[0-9]{1,6}/[0-9]{1,6}", text):
        raise BadInput(f"--shard {printable(text)[:40]}: expected i/n with 1 <= i <= n in ASCII digits, e.g. 2/4")
    return text


CELL_CAUSES = {
    "fault": "ended in an engine fault or error",
    "excluded": "excluded by the engine's chat template (a rerun does not change that)",
    "missing": "not run yet",
}


def incomplete_line(outcome: RunOutcome, options: RunOptions) -> str:
    """One line: why the run is incomplete (cells by the cause their records name, a latency gate
    exclusion by what the gate measured) and the exact command that finishes it."""
    from repro.engines.gate import CAUSE_TEXT

    gate_texts: dict[str, str] = {str(cause): text for cause, text in CAUSE_TEXT.items()}

    def said(cause: str) -> str:
        gate = cause.removeprefix("gate:")
        if gate == cause:
            return CELL_CAUSES.get(cause, cause)
        return f"excluded by the latency gate ({gate_texts.get(gate, 'its cause not recorded')})"

    why = "; ".join(f"{count} cell(s) {said(cause)}" for cause, count in outcome.causes.items())
    if outcome.status == 130 or outcome.run_status == "interrupted":
        why = "interrupted" + (f"; {why}" if why else "")
    when = " when the machine is quiet" if "gate:busy" in outcome.causes or "gate:too_slow" in outcome.causes else ""
    return (
        f"run incomplete (exit {outcome.status}): {why or outcome.run_status}; to finish it{when}, run: "
        f"{resume_command(options)} (complete cells are kept, the others run and are gated again; "
        "an interrupted cell keeps its finished scenarios)"
    )


def resume_command(options: RunOptions) -> str:
    """The `repro matrix run ... --resume` command line that continues this run, shell-quoted."""
    words = [
        "repro",
        "matrix",
        "run",
        str(options.matrix),
        "--profile",
        options.profile,
        "--out",
        str(options.out),
        "--resume",
    ]
    if options.shard_text:
        words += ["--shard", options.shard_text]
    for cell_id in options.only:
        words += ["--only", cell_id]
    if options.replicas != 1:
        words += ["--replicas", str(options.replicas or "auto")]
    if options.allow_dirty:
        words += ["--allow-dirty"]
    if options.prompt_cache is not None:
        words += ["--prompt-cache", CACHE_WORDS[options.prompt_cache]]
    return printable(shlex.join(words))


# --prompt-cache's words and the modes they name (repro.spec.profiles.PromptCache)
CACHE_MODES: dict[str, PromptCache] = {"off": False, PER_SCENARIO: PER_SCENARIO, "on": True}
CACHE_WORDS = {mode: word for word, mode in CACHE_MODES.items()}


def parse_cache_mode(text: str | None) -> PromptCache | None:
    """--prompt-cache: off, scenario or on, or None when not given; anything else refused in one line."""
    if text is None:
        return None
    if text not in CACHE_MODES:
        raise BadInput(f"--prompt-cache {printable(text)[:40]}: expected off, scenario or on")
    return CACHE_MODES[text]


def parse_replicas(text: str) -> int | None:
    """--replicas: a count from 1, or `auto` (None: chosen from the cores and GPU memory)."""
    if text == "auto":
        return None
    if not re.fullmatch(r"[0-9]{1,4}", text) or int(text) < 1:
        raise BadInput(f"--replicas {printable(text)[:40]}: expected a count from 1, or auto")
    return int(text)
