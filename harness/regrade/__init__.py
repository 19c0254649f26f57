"""Re-grading: does a recorded scenario result follow from its own transcript?

The transcript's tool calls are executed again, in order, against a fresh workspace of the
scenario (the same fixtures, ``respond``, ``interfere`` and pinned clock) through the run loop
itself: ``TranscriptPolicy`` plays the recorded steps as the model, and ``run_scenario`` scores
the run, so the loop, the tools, the checks and the diagnosis are exactly those of a real run.
The outcome is then compared with what was recorded: every step's status and result, how the
run ended, ``passed``, the failed checks, the failure type with its step and evidence, and the
partial credit. Each difference is named.

How a recorded run ended is replayed faithfully: ``done``, ``waiting``, ``stuck`` and
``step_limit`` are decided by the loop from the replayed steps; ``invalid_reply`` is replayed
as the recorded invalid replies (each with its recorded reject code, which the diagnosis reads),
an engine stop (``engine_unreachable``, ``model_not_loaded``, ``context_overflow``,
``engine_error``) as the engine failure of that name (so a recorded engine fault can never
re-grade into a pass), and ``timeout`` (a wall-clock budget, which a replay cannot measure) as
the recorded late reply, then scored as a timeout: always a failure. A transcript that ends
before the loop does is a difference, and the run is stopped as an engine failure.

Given the cell's protocol (``Replay``, as ``repro check`` does), the recorded steps are not
taken on their word: each recorded raw reply is read again by that protocol's own policy
(``TranscriptPolicy`` with ``ReplayClient``), so the executed call, its thought, each reply's
validity and reject code, and the first prompt (rebuilt from the scenario) are derived, and a
record that says otherwise is a difference.

A re-grade proves that the recorded outcome follows from the recorded calls; it cannot prove
that a model made those calls (only a rerun does). A transcript is hostile input: its size and
nesting are bounded, its entries validated, and anything malformed is a difference, never an
exception.

The package, one job per module: ``transcript`` (a recorded transcript read and bounded),
``replay`` (the recorded run played as the model), ``grade`` (a scenario and a cell re-graded),
``compare`` (every difference named), ``report`` (what a re-grade says) and ``files`` (a cell's
files, and ``python -m harness regrade``).
"""

from __future__ import annotations

from harness.model.fixtures import FIXTURES_ENV
from harness.model.scenario import ScenarioError, load_scenarios
from harness.regrade.files import command, regrade_files
from harness.regrade.grade import Replay, regrade, regrade_all
from harness.regrade.report import Regrade, RegradeReport
from harness.regrade.transcript import MAX_NESTING, MAX_TRANSCRIPT_CHARS, TranscriptError, parse_transcript

# What the host may import: the re-grade, and the scenario loading and fixture folder it needs.
__all__ = [
    "FIXTURES_ENV",
    "MAX_NESTING",
    "MAX_TRANSCRIPT_CHARS",
    "Regrade",
    "RegradeReport",
    "Replay",
    "ScenarioError",
    "TranscriptError",
    "command",
    "load_scenarios",
    "parse_transcript",
    "regrade",
    "regrade_all",
    "regrade_files",
]
