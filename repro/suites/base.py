"""The suite interface: everything the run, the check, the plan, compose and the commands ask of a
suite, whatever runs it (our own harness over scenario files, or another project's harness).

A kind of suite is one implementation of `SuiteKind`, found through the registry
(repro.suites.registry: `kind_of(suite)`), after inspect_ai's sandbox environments: an abstract
class with its lifecycle, implementations named by lazy `"module:object"` entries. Its cut-off, as
httpx's transport base states its own: a kind owns which tasks a suite holds and what a bundle
embeds of them, what its cell's container runs and how its output becomes our records, which check
rules its cells get, and its own report. It does not own the engine, the sandbox, the gate, the
bundle's layout or the verdict: those are the same for every kind.

One cell's lifecycle, in the order the run calls it:

1. `fetch` (`repro suites fetch`, before any run) and `select`: the suite's task ids in run order,
   their categories and one sha256 over what they are made of;
2. `refuse_unfit`: problems that must stop the run before any engine boots;
3. `image` (built by `build_image` in `repro images build`): the image the cell's containers run;
4. `embed`, once per bundle: the files `repro check` recomputes the selection and the outcomes from;
5. `command`, `entrypoint` and `mounts` for each worker's share of the tasks;
6. `progress` for each line the container prints, and `finished` after each task it finishes (an
   interrupted cell keeps those; `--resume` runs only the rest);
7. `collect`: its outputs kept and normalised into `scenarios.jsonl` and `transcripts.jsonl`, or the
   cell failed with why;
8. `check_rules` (in `repro check`), `report` (in `repro external report`) and `messages` (the
   harness's own messages, in `repro export inspect`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from harness.contracts import ProgressEvent
from repro.bundle.layout.reader import BundleReader
from repro.bundle.layout.writer import Bundle, CellWriter
from repro.bundle.records import CellRecord, InputReference, KeptScenario, SourceState
from repro.containers import lifecycle as containers
from repro.containers.sandbox import bind
from repro.core.errors import BadInput
from repro.spec.cells import Cell
from repro.spec.findings import SuiteSelection
from repro.spec.harnesses import HarnessPin
from repro.spec.matrix import Suite
from repro.spec.profiles import PER_SCENARIO, Profile, PromptCache
from repro.store.images import ImageRef

SCENARIO_MOUNT = "/scenarios"  # the suite's folder, read-only, in every cell's container
FIXTURES_MOUNT = "/fixtures"  # the shared fixtures beside it (harness.model.fixtures reads them there)
Log = Callable[[str], None]


class CellOutputs(NamedTuple):
    """What a cell's harness containers left: each worker's output folder, how each container
    ended, and the tasks an interrupted attempt kept (which the workers did not run this time)."""

    out_dirs: list[Path]
    ended: list[containers.Exit]
    kept: Sequence[KeptScenario] = ()


class CheckTools(NamedTuple):
    """What a kind's check rules borrow from the check (repro.check sits above the suites, so it
    passes them in: repro.check.verdict.CHECK_TOOLS)."""

    bounds: Callable[..., list[str]]  # repro.check.bounds.rule_bounds(ev, per_result=, what=)
    finite: Callable[[Any], bool]
    seconds_problem: Callable[[str, float | None], list[str]]
    model_output_files: frozenset[str]  # the cell files that record the model's output
    # repro.check.served.cell_requests_problem(ev, asked): the cell's engine log against `asked` requests
    requests_problem: Callable[[Any, int], str | None]


class SuiteKind(ABC):
    """One kind of suite. Implementations hold no state between calls: a run, a check and a report
    may each make their own instance."""

    name: str  # the registry's key: "scenarios", or the matrix's `external.harness`
    # a lazy "module:object" (rules, ran, tools: CheckTools) -> rules; None: the check's own rules
    check_rules: str | None = None

    def harness_pin(self, suite: Suite, source: SourceState | None) -> HarnessPin:
        """The harness that scores this kind's cells, and what pins its code: ours by the run's
        commit and harness tree digest (`source`, the run record's; None: not known)."""
        if source is None:
            return HarnessPin(name="repro")
        return HarnessPin(
            name="repro", version=source.repro_version, commit=source.commit, tree_digest=source.harness_digest
        )

    def solver(self, suite: Suite, protocol: str) -> str:
        """Who plays the tasks, as an exported log names it: our harness under the cell's protocol."""
        return f"repro-harness/{protocol}"

    def release(self, suite: Suite) -> str | None:
        """The pinned release a report names beside the suite (name==version); None: ours is
        versioned by its sha256 alone."""
        return None

    def author_files(self, suite: Suite) -> bool:
        """Whether the suite's files are the matrix's own, beside it (an author's matrix under
        `paths_from: matrix`: the author's tree at its commit holds them); not for a suite pinned by
        an archive or run by another harness."""
        return False

    def tasks_in_bundle(self, suite: Suite) -> bool:
        """Whether a bundle holds the suite's tasks itself (suites/<id>/scenarios/, embedded or
        referenced), as it does our scenario files; False where they are in another harness's code."""
        return True

    @abstractmethod
    def select(self, suite: Suite, root: Path | None = None) -> SuiteSelection:
        """The suite's tasks in run order, their categories and their sha256 (BadInput when the suite
        names tasks it does not hold). `root`: where the suite's own files are, when not where the
        matrix says (an embedded copy in a bundle)."""

    def fetch(self, suite: Suite, log: Log) -> str | None:
        """Fetch and verify what the suite needs from outside the project (one line saying what), or
        None when it needs nothing."""
        return None

    def refuse_unfit(self, selection: SuiteSelection) -> list[str]:
        """Problems that stop the run before any engine boots (none by default)."""
        return []

    def image(self, suite: Suite, harness: ImageRef) -> ImageRef:
        """The image the suite's cells run in: the harness image unless the kind has its own."""
        return harness

    def build_image(self, suite: Suite, harness: ImageRef, log: Log) -> ImageRef | None:
        """Build the kind's own image (`repro images build`); None when it runs in the harness image."""
        return None

    def input_copy(self, path: str) -> str | None:
        """The suite file a raw output is a copy of (its path in the bundle's layout of the suite),
        when the harness copies its inputs among its outputs; such a copy is kept by reference, as
        its original is (repro.suites.external.raw.RawFile.kept). None: no output is an input's copy."""
        return None

    @abstractmethod
    def embed(self, bundle: Bundle, suite: Suite, selection: SuiteSelection) -> list[InputReference]:
        """Write into the bundle what `repro check` needs to recompute the selection and the outcomes
        that the project or the author wrote; return every other input it needs as a reference
        (repro.suites.references), for run.json `inputs`."""

    @abstractmethod
    def command(
        self, cell: Cell, client: list[str], selection: SuiteSelection, profile: Profile, ids: list[str]
    ) -> list[str]:
        """The container's argv for one worker's share `ids`; `client` names the engine."""

    def entrypoint(self, cell: Cell) -> list[str] | None:
        """The program the cell's container runs; None keeps the image's own (the harness)."""
        return None

    def mounts(self, selection: SuiteSelection) -> list:
        """The read-only mounts of the cell's container: the suite's folder at SCENARIO_MOUNT and the
        shared fixtures beside it, when there are any, at FIXTURES_MOUNT."""
        fixtures = fixtures_beside(selection.folder)
        return [bind(selection.folder, SCENARIO_MOUNT, read_only=True)] + (
            [bind(fixtures, FIXTURES_MOUNT, read_only=True)] if fixtures.is_dir() else []
        )

    def sends_cache_prompt(self) -> bool:
        """Whether the kind's requests carry the profile's `cache_prompt` (if not, the server's
        default applies, which the engine's flags set to the profile's mode all the same)."""
        return True

    def marks_scenarios(self) -> bool:
        """Whether the kind's requests mark each scenario's start for a per-scenario prompt cache
        (its first request says `cache_prompt: false`); if not, its cells run with the cache off in
        that mode (repro.bundle.records.Execution.of)."""
        return True

    def progress(self, line: str) -> ProgressEvent | None:
        """A progress event from one line of the container's output (None for other lines)."""
        return ProgressEvent.parse(line)

    def finished(self, out_dir: Path) -> list[KeptScenario]:
        """The tasks a running worker has finished so far, read from its output folder as each
        finishes, so an interrupted cell keeps them; none by default (such a cell is rerun whole)."""
        return []

    @abstractmethod
    def collect(
        self, writer: CellWriter, record: CellRecord, selection: SuiteSelection, outputs: CellOutputs
    ) -> CellRecord:
        """Each worker's outputs as the cell's records (written through `writer`), or the record of a
        failed cell saying why; `outputs.kept`: the tasks an interrupted attempt finished (from
        `finished`), which the workers did not run this time."""

    def messages(self, reader: BundleReader, cell_id: str) -> dict[str, list[dict]]:
        """The harness's own chat messages per task, where it records them beside our transcript
        (an external harness's raw logs); none by default: our transcript is the record."""
        return {}

    def report(self, reader: BundleReader, cell_id: str) -> dict[str, bytes]:
        """The harness's own report of one cell (file name -> bytes), rendered again from the bundle."""
        raise BadInput(f"suites of kind {self.name} have no report of their own")


def cache_prompt_argv(mode: PromptCache) -> list[str]:
    """The harness's (and a driver's) `--cache-prompt` for the profile's mode: none when off,
    `--cache-prompt scenario` per scenario, `--cache-prompt` across the run."""
    if mode == PER_SCENARIO:
        return ["--cache-prompt", PER_SCENARIO]
    return ["--cache-prompt"] if mode else []


def fixtures_beside(folder: Path) -> Path:
    """The shared fixtures a suite's folder has beside it."""
    return folder.parent / "fixtures"


def fixture_files(fixtures: Path) -> list[Path]:
    """The regular files under a fixtures folder, sorted (links are never followed)."""
    return sorted(p for p in fixtures.rglob("*") if p.is_file() and not p.is_symlink()) if fixtures.is_dir() else []
