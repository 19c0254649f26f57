"""How the rendered numbers were made, said beside them: per run its profile and hardware, the
commit and repro version, the date, and the check verdict with the signature state; over all
rows the decodings and execution modes; and whether the runs are the whole plan.

A table copied into a paper without this is a number without its conditions: every table's
header (Markdown, HTML) and caption (LaTeX) carries `TableSetup.lines()`, and `repro export
inspect` puts the same facts into each log's metadata.
"""

from __future__ import annotations

import stat
from pathlib import Path

from pydantic import BaseModel

from repro.bundle.layout.reader import BundleReader
from repro.bundle.provenance import SystemDescription
from repro.bundle.records import RunRecord
from repro.bundle.signing import ATTESTATION, SIGNATURE
from repro.check.verdict import RunVerdict
from repro.core.errors import BadInput
from repro.report.coverage import Coverage


class RunSetup(BaseModel):
    run_id: str
    matrix: str
    profile: str
    hardware: str
    commit: str | None
    tree_clean: bool
    repro_version: str
    date: str | None  # when the run finished (else started), UTC
    verdicts: dict[str, int]  # VALID / EXCLUDED / INVALID (/ UNCHECKED, when any) cell counts of repro check
    signature: str  # "signed by X (verified)", "signature present, not verified here", "not signed"
    host_lock: str | None = None  # the lock repro's host environment came from (HostLock.label), None: not recorded

    @classmethod
    def of(cls, verdict: RunVerdict, record: RunRecord, signer: str | None = None) -> RunSetup:
        return cls(
            run_id=record.run_id,
            matrix=record.matrix.name,
            profile=record.profile,
            hardware=hardware_label(record.system),
            commit=record.source.commit,
            tree_clean=record.source.tree_clean,
            repro_version=record.source.repro_version,
            date=record.finished_at or record.started_at,
            verdicts=verdict.counts,
            signature=signature_state(Path(verdict.run_dir), signer),
            host_lock=record.source.host_lock.label if record.source.host_lock else None,
        )

    @property
    def verdict_label(self) -> str:
        """E.g. "repro check: 10 VALID, 6 EXCLUDED, 0 INVALID"."""
        return "repro check: " + ", ".join(f"{n} {name}" for name, n in self.verdicts.items())

    def line(self) -> str:
        commit = (self.commit or "unknown")[:12] + ("" if self.tree_clean else " (dirty tree)")
        date = (self.date or "")[:10] or "undated"
        return (
            f"run {self.run_id}: matrix {self.matrix}, profile {self.profile} ({self.hardware}); commit {commit}, "
            f"repro {self.repro_version}, {date}; {self.verdict_label}; signature: {self.signature}"
        )


class TableSetup(BaseModel):
    runs: list[RunSetup] = []
    decodings: list[str] = []  # every decoding the rows ran with, once each
    executions: list[str] = []  # every execution mode (threads, slots, prompt cache), once each
    coverage: Coverage = Coverage()

    def lines(self) -> list[str]:
        """The setup as short sentences, one per fact, for a header or a caption."""
        lines = [run.line() for run in self.runs]
        if self.decodings:
            lines.append("decoding: " + "; ".join(self.decodings))
        if self.executions:
            lines.append("execution: " + "; ".join(self.executions))
        if self.coverage.partial:
            lines.append(self.coverage.label)
        return lines


def hardware_label(system: SystemDescription) -> str:
    """E.g. "2 x86_64 cores (AMD EPYC), 23.5 GB, no GPU"."""
    gpus = ", ".join(gpu.name for gpu in system.gpus) or "no GPU"
    cores = f"{system.cpu_cores} {system.machine} core{'s' if system.cpu_cores != 1 else ''}"
    return f"{cores} ({system.cpu_model}), {system.memory_gb:g} GB, {gpus}"


def signature_state(run_dir: Path, signer: str | None = None) -> str:
    """Who signed the bundle when that was verified (`--require-signature`), else whether a
    signature lies beside the manifest at all (it is not checked here: `repro check
    --allowed-signers FILE` does)."""
    if signer:
        return f"signed by {signer} (verified)"
    for name in (SIGNATURE, ATTESTATION):
        try:
            if stat.S_ISREG((run_dir / name).lstat().st_mode):
                return "signature present, not verified here"
        except OSError:
            continue
    return "not signed"


def run_setups(verdicts: list[RunVerdict], signers: dict[str, str] | None = None) -> list[RunSetup]:
    """One RunSetup per judged run (signers: run folder -> verified signer); a run whose record
    cannot be read is left out (it is INVALID, and its cells are not in the tables)."""
    setups = []
    for verdict in verdicts:
        try:
            record = BundleReader(Path(verdict.run_dir)).run()
        except BadInput:
            continue
        setups.append(RunSetup.of(verdict, record, (signers or {}).get(verdict.run_dir)))
    return setups
