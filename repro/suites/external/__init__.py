"""External suites: another project's benchmark harness, run sealed from its pinned release.

A matrix suite with `external` names the harness, its wheel and that wheel's sha256, and a lock of
every wheel it installs; repro.spec.harnesses holds what validation knows of each harness. Every
other part of repro applies as to our own suites: the plan, the sealed engine, the gate, the
sandbox and its audit, healing, bundles, check, tables. What differs is the suite kind
(`base.Adapter`, one implementation of repro.suites.base.SuiteKind for all of them), and within
it the adapter of each harness: which tasks its release holds, the container's command, how its
raw outputs become our ScenarioResult lines, which of its checks `repro check` re-executes
(`check_rules`), and its own report.

- `base`: `Adapter`, the raw files and their index;
- `raw`: an external cell's raw outputs named in the cell (`raw.<path>`), and where a bundle keeps
  the suite's wheel and lock;
- `evidence`: a bundle's embedded wheel and lock, and a cell's raw outputs, verified;
- `check_rules`: the kind's `repro check` rules, in place of those that read our scenario files;
- `wheels`, `image`: the pinned wheels fetched and verified on the host, and the sealed image;
- `toolcallbench`, `toolcallbench_check`, `toolcallbench_raw`: ToolCallBench's adapter, its
  re-executed checks, and what its run leaves in its output folder;
- `tholos`, `tholos_check`, `tholos_raw`: the same three for Tholos-Bench's own runner
  (`tholos bench`), pinned by its source archive;
- `inspect_task`: an inspect_ai task run by inspect_ai itself, its log as our records, its scorers
  re-run by check;
- `lab`, `lab_check`, `lab_raw`: Local Agent Bench's own code, pinned by its source archive, on
  Ollama, its weather hosts answered by fixture hosts; its verdicts kept; its summary re-derived and
  its own scoring re-run by check; its result file and benchmark files as both read them;
- `carried`: a source archive the bundle carries, found and verified;
- `rebuild`: a suite's image built again from a bundle's own pins at its commit
  (`repro images build --from-bundle`).

docs/external-suites.md says how to add another harness; ToolCallBench is the worked example.
"""

# The modules other packages may import (tests/foundation/test_public_names.py keeps it so).
__all__ = [
    "base",
    "check_rules",
    "evidence",
    "lab_raw",
    "raw",
    "rebuild",
    "wheels",
]
