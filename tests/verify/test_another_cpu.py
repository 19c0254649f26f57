"""A rerun on another CPU model (issue 53): the verdict is ON ANOTHER SETUP and names the CPU, the
difference shows both sides' engine kernels, and verify's closing line says what was found,
"differs" only where an outcome or a transcript differs (synthetic bundles)."""

from __future__ import annotations

from pathlib import Path

from repro.__main__ import main
from repro.engines.llamacpp import system_info_features
from repro.spec.claims import load_claims
from repro.verify.claims import verify_claims
from repro.verify.rerun_rows import load_rerun
from tests.fixtures.synthetic import KERNELS
from tests.verify.test_claims_verify import edited, write

EPYC = "AMD EPYC 7B13"


def on_hardware(**update):
    def change(data: dict) -> None:
        for setup in data["setups"].values():
            setup["hardware"].update(update)

    return change


def report_of(rerun_dir: Path, path: Path):
    return verify_claims(load_claims(path), load_rerun([rerun_dir]))


def test_own_claims_state_the_engine_kernels(own) -> None:
    assert {setup.hardware.kernels for setup in own.setups.values()} == {KERNELS}


def test_another_cpu_with_the_same_kernels_is_reproduced_on_another_setup(rerun_dir, own, tmp_path, capsys) -> None:
    path = write(tmp_path, edited(own, on_hardware(cpu_model=EPYC)))
    report = report_of(rerun_dir, path)
    assert {(v.verdict, v.setup) for v in report.verdicts} == {("REPRODUCED ON ANOTHER SETUP", "differs: hardware")}
    [cpu] = report.verdicts[0].differences
    assert cpu.describe() == f"CPU differs: {EPYC} claimed, test cpu rerun; engine kernels the same on both: {KERNELS}"
    n = len(report.verdicts)
    identical = sum(v.transcripts.identical for v in report.verdicts if v.transcripts)
    assert identical > 0
    assert report.conclusion("published") == (
        f"reproduced on another setup (CPU: {EPYC} published, test cpu here, the same engine kernels): "
        f"{n} of {n} claims; {identical} of {identical} transcripts identical"
    )
    assert main(["verify", str(rerun_dir), "--claims", str(path)]) == 1  # the exit codes as documented
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last.startswith("==> reproduced on another setup (CPU: ") and "differ" not in last


def test_another_cpu_with_other_kernels_shows_both_sets(rerun_dir, own, tmp_path) -> None:
    other = "CPU : SSE3 = 1 | AVX = 1 | AVX2 = 1 | AVX512 = 1 | AMX_INT8 = 1"
    report = report_of(rerun_dir, write(tmp_path, edited(own, on_hardware(cpu_model=EPYC, kernels=other))))
    [cpu] = report.verdicts[0].differences
    assert cpu.note == f"engine kernels: {other} claimed, {KERNELS} rerun"
    assert "the same engine kernels" not in report.conclusion()


def test_a_claim_without_kernels_says_they_were_not_recorded(rerun_dir, own, tmp_path) -> None:
    report = report_of(rerun_dir, write(tmp_path, edited(own, on_hardware(cpu_model=EPYC, kernels=None))))
    [cpu] = report.verdicts[0].differences
    assert cpu.note == f"engine kernels: not recorded claimed, {KERNELS} rerun"


def test_the_same_setup_concludes_reproduced(rerun_dir, own, tmp_path, capsys) -> None:
    path = write(tmp_path, own)
    report = report_of(rerun_dir, path)
    n = len(report.verdicts)
    assert report.conclusion().startswith(f"reproduced: {n} of {n} claims; ")
    assert main(["verify", str(rerun_dir), "--claims", str(path)]) == 0
    assert capsys.readouterr().out.strip().splitlines()[-1].startswith("==> reproduced: ")


def test_a_different_outcome_concludes_differs(rerun_dir, own, tmp_path) -> None:
    def flip(data: dict) -> None:
        result = data["claims"][0]["result"]
        first = sorted(result["scenarios"])[0]
        outcome = result["scenarios"][first]
        outcome["passed"] = [not p for p in outcome["passed"]]
        result["passed"] += 1 if outcome["passed"][0] else -1  # the count agrees with the outcomes

    report = report_of(rerun_dir, write(tmp_path, edited(own, flip)))
    assert report.conclusion().startswith(f"differs: 1 of {len(report.verdicts)} claims DIFFERENT")


def test_the_kernels_are_read_from_the_system_info_line() -> None:
    line = (
        "0.00.000.812 T cmn  common_param: system_info: n_threads = 2 (n_threads_batch = 2) / 2 | "
        "CPU : SSE3 = 1 | AVX2 = 1 | OPENMP = 1 | REPACK = 1 | "
    )
    assert system_info_features(f"before\n{line}\nafter") == "CPU : SSE3 = 1 | AVX2 = 1 | OPENMP = 1 | REPACK = 1"
    assert system_info_features("no such line\n") is None
