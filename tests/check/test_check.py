"""The validator: VALID only when every rule holds, every reason named, from the bundle alone."""

from __future__ import annotations

import json

from repro.__main__ import main
from repro.bundle.redact import Redactor, find_leaks
from repro.check.verdict import check_run
from tests.fixtures.synthetic import CANARY, write_bundle


def verdicts(run_dir):
    return {c.cell_id: c for c in check_run(run_dir, Redactor(CANARY)).cells}


def test_clean_bundle_is_valid(tmp_path):
    run = write_bundle(tmp_path / "run1")
    cells = verdicts(run)
    assert len(cells) == 2
    assert {c.verdict for c in cells.values()} == {"VALID"}, [c.reasons for c in cells.values()]


def test_redaction_removes_canary_identity(tmp_path):
    run = write_bundle(tmp_path / "run1")
    text = "".join(p.read_text() for p in run.rglob("*") if p.is_file())
    for canary in ("canaryuser", "canaryhost", "/srv/canary-project"):
        assert canary not in text
    assert "<CACHE>/x" in text and "<HOST>" in text
    assert find_leaks(run, Redactor(CANARY)) == []


def test_one_changed_byte_invalidates_only_its_cell(tmp_path):
    run = write_bundle(tmp_path / "run1")
    first, second = sorted(p for p in (run / "cells").iterdir())
    target = first / "scenarios.jsonl"
    data = bytearray(target.read_bytes())
    data[5] ^= 1
    target.write_bytes(bytes(data))
    cells = verdicts(run)
    assert cells[first.name].verdict == "INVALID"
    assert any("sha256 differs" in r for r in cells[first.name].reasons)
    assert cells[second.name].verdict == "VALID"


def test_dirty_tree_identity_and_gate_are_reasons(tmp_path):
    cells = verdicts(write_bundle(tmp_path / "dirty", tree_clean=False))
    assert all(c.verdict == "INVALID" and any("tree was dirty" in r for r in c.reasons) for c in cells.values())
    cells = verdicts(write_bundle(tmp_path / "ident", identity_ok=False))
    assert all(any("engine identity did not match" in r for r in c.reasons) for c in cells.values())
    cells = verdicts(write_bundle(tmp_path / "gate", gate_passed=False))
    assert all(any("latency gate failed" in r for r in c.reasons) for c in cells.values())


def test_leftover_host_path_is_invalid(tmp_path):
    run = write_bundle(tmp_path / "run1")
    cell = sorted((run / "cells").iterdir())[0]
    log = cell / "engine.log"
    log.write_text("loading /home/someone/models/x.gguf\n")
    cells = verdicts(run)
    assert cells[cell.name].verdict == "INVALID"
    assert any("host path /home/someone" in r for r in cells[cell.name].reasons)


def test_cli_exit_codes(tmp_path, capsys):
    run = write_bundle(tmp_path / "run1")
    assert main(["check", str(run), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out[0]["run_id"] == "run1"
    (run / "MANIFEST.sha256").unlink()
    assert main(["check", str(run)]) == 1
    assert main(["check", str(tmp_path / "nothing")]) == 2


def test_relaxed_sandbox_is_invalid(tmp_path):
    import json as _json

    from repro.bundle.layout.names import MANIFEST
    from repro.core.files import sha256_file

    run = write_bundle(tmp_path / "run1")
    cell = sorted((run / "cells").iterdir())[0]
    record = _json.loads((cell / "cell.json").read_text())
    record["sandbox"]["harness"]["read_only"] = False
    record["sandbox"]["harness"]["user"] = "0:0"
    (cell / "cell.json").write_text(_json.dumps(record))
    # re-sign the manifest, as a careless or dishonest author might: the rules still catch it
    lines = [
        f"{sha256_file(p)}  {p.relative_to(run).as_posix()}"
        for p in sorted(run.rglob("*"))
        if p.is_file() and p.name != MANIFEST
    ]
    (run / MANIFEST).write_text("\n".join(lines) + "\n")
    reasons = verdicts(run)[cell.name].reasons
    assert "harness sandbox: root filesystem is writable" in reasons
    assert any("runs as root" in r for r in reasons)


def partial_bundle(tmp_path):
    """A legitimate run of `--only` its first cell: the other planned cell is not in it."""
    from tests.check.test_forgeries import edit_run, planned, rehash

    run = write_bundle(tmp_path / "run1")
    chosen, other = planned(run)[:2]
    edit_run(run, lambda record: record.update(only=[chosen], planned_cells=[chosen]))
    import shutil

    shutil.rmtree(run / "cells" / other)
    rehash(run)
    return run, chosen, other


def test_a_partial_run_says_which_planned_cells_it_lacks(tmp_path, capsys):
    """Issue 25, item 9: --only and shards are legitimate, and never silent: the verdict, the
    tables (md, tex, html) and results.json name every planned cell the bundle lacks, and why."""
    run, chosen, other = partial_bundle(tmp_path)
    verdict = check_run(run, Redactor(CANARY))
    assert [(c.cell_id, c.verdict) for c in verdict.cells] == [(chosen, "VALID")]
    assert [(a.cell_id, a.reason) for a in verdict.absent] == [(other, "not selected: the run ran --only 1 cell(s)")]
    capsys.readouterr()
    assert main(["check", str(run)]) == 0
    assert f"ABSENT   {other}" in capsys.readouterr().out
    out = tmp_path / "tables"
    assert main(["paper", "render", str(run), "--out", str(out)]) == 0
    for name in ("results.md", "results.tex", "report.html"):
        text = (out / name).read_text()
        assert "A partial run" in text and "partial: 1 of 2 planned cells" in text, name
        # the tables' caption counts them; results.md and report.html name them
        assert name.endswith(".tex") or other in text, name
    assert [a["cell_id"] for a in json.loads((out / "results.json").read_text())["absent"]] == [other]


def test_json_output_parses_and_a_run_problem_without_cells_fails(tmp_path, capsys):
    """Issue 25, items 9 and 10: stdout of --json is the JSON alone; a run whose every cell is gone
    still fails (exit 1) on its run-level problems."""
    from tests.check.test_forgeries import forge_only_cell_removed, rehash

    run = write_bundle(tmp_path / "run1")
    forge_only_cell_removed(run)
    rehash(run)
    capsys.readouterr()
    assert main(["check", str(run), "--json"]) == 1
    (verdict,) = json.loads(capsys.readouterr().out)
    assert {c["verdict"] for c in verdict["cells"]} == {"INVALID"} and verdict["run_problems"]


def test_the_summary_line_of_a_partial_run_says_partial(tmp_path, capsys):
    """Issue 32, item 4: `repro check`'s summary line says how much of the plan the bundle holds."""
    run, chosen, _ = partial_bundle(tmp_path)
    capsys.readouterr()
    assert main(["check", str(run)]) == 0
    assert "1 VALID, 0 EXCLUDED, 0 INVALID; partial: 1 of 2 planned cells (--only, 1 cell)" in capsys.readouterr().out


def test_a_partial_rerun_leaves_its_absent_rows_not_rerun(tmp_path, capsys):
    """verify counts a claimed row absent from a partial rerun as NOT RERUN, with the reason, and
    exits 1 unless --allow-partial."""
    from repro.spec.claims import Source, dump_claims
    from repro.verify.own_claims import claims_from_rerun
    from repro.verify.rerun_rows import load_rerun

    whole = write_bundle(tmp_path / "whole")
    claims = claims_from_rerun(
        load_rerun([whole]), Source(citation="test", url="https://example.org/x", date="2026-12-02")
    )
    path = tmp_path / "claims.yaml"
    path.write_text(dump_claims(claims))
    run, _, other = partial_bundle(tmp_path / "partial")
    capsys.readouterr()
    assert main(["verify", str(run), "--claims", str(path)]) == 1
    out = capsys.readouterr().out
    assert "1 REPRODUCED, 0 CONSISTENT, 0 DIFFERENT, 1 NOT RERUN of 2 claims" in out
    assert f"cell {other}: absent from this partial run: not selected: the run ran --only 1 cell(s)" in out
    assert main(["verify", str(run), "--claims", str(path), "--allow-partial"]) == 0
