"""`repro verify --claims`: each claim REPRODUCED, CONSISTENT, DIFFERENT or NOT RERUN, with the
test's figures and every differing pinned input named (synthetic bundles; the real
nondeterminism test, at one thread against two, is tests/e2e/test_claims_threads.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from repro.__main__ import main
from repro.spec.claims import ClaimsFile, dump_claims, load_claims
from repro.verify.claims import Options, verify_claims
from repro.verify.rerun_rows import load_rerun


@pytest.fixture(scope="module")
def own_claims(own) -> ClaimsFile:
    return own


def write(tmp_path: Path, claims: ClaimsFile | dict) -> Path:
    path = tmp_path / "claims.yaml"
    if isinstance(claims, dict):
        claims = ClaimsFile.model_validate(claims)
    path.write_text(dump_claims(claims))
    return path


def edited(claims: ClaimsFile, change) -> dict:
    data = claims.model_dump(mode="python", exclude_none=True)
    change(data)
    return data


def verdicts(rerun_dir: Path, path: Path):
    return {v.claim: v for v in verify_claims(load_claims(path), load_rerun([rerun_dir])).verdicts}


def test_a_run_against_its_own_claims_is_reproduced(rerun_dir, own_claims, tmp_path, capsys):
    path = write(tmp_path, own_claims)
    found = verdicts(rerun_dir, path)
    assert {v.verdict for v in found.values()} == {"REPRODUCED"} and len(found) == 2
    first = next(iter(found.values()))
    assert first.transcripts is not None and (first.transcripts.identical, first.transcripts.compared) == (3, 3)
    assert first.differences == []
    assert main(["verify", str(rerun_dir), "--claims", str(path)]) == 0
    assert "2 REPRODUCED, 0 CONSISTENT, 0 DIFFERENT, 0 NOT RERUN of 2 claims" in capsys.readouterr().out


def not_exact(data):
    """The claim's setups leave out the threads: no identity is promised, the tolerance applies."""
    for setup in data["setups"].values():
        setup["hardware"].pop("threads")


def test_a_differing_transcript_is_never_reproduced(rerun_dir, own_claims, tmp_path):
    def change(data):
        not_exact(data)
        data["claims"][0]["result"]["scenarios"]["notes-002"]["transcripts"] = ["0" * 64]

    first = verdicts(rerun_dir, write(tmp_path, edited(own_claims, change)))[own_claims.claims[0].id]
    assert first.verdict == "CONSISTENT"
    assert first.judgement is not None and first.judgement.test == "mcnemar" and first.judgement.p_value == 1.0
    assert first.transcripts is not None and (first.transcripts.identical, first.transcripts.compared) == (2, 3)


def test_flips_are_tested_and_named_with_the_input_that_differs(rerun_dir, own_claims, tmp_path):
    def change(data):
        claim = data["claims"][0]
        claim["result"]["scenarios"]["notes-002"] = {"passed": [True]}
        claim["result"]["passed"] += 1
        claim["result"]["by_category"]["notes"]["passed"] += 1
        data["setups"][claim["setup"]]["hardware"]["threads"] = 1

    path = write(tmp_path, edited(own_claims, change))
    first = verdicts(rerun_dir, path)[own_claims.claims[0].id]
    assert first.verdict == "CONSISTENT ON ANOTHER SETUP"  # one flip: p = 1, but not the claim's threads
    assert first.judgement is not None and (first.judgement.only_claimed, first.judgement.only_rerun) == (1, 0)
    assert [d.describe() for d in first.differences] == ["threads per engine differs: 1 claimed, 2 rerun"]
    accepted = verify_claims(
        load_claims(path), load_rerun([rerun_dir]), Options(accept=frozenset({"threads"}))
    ).verdicts[0]
    assert accepted.verdict == "CONSISTENT" and accepted.setup == "accepted: threads"
    assert "scenario notes-002 repeat 1: pass claimed, fail rerun" in first.notes
    assert any(note.startswith("category notes:") for note in first.notes)


def test_a_stated_tolerance_of_zero_makes_one_flip_different(rerun_dir, own_claims, tmp_path, capsys):
    def change(data):
        claim = data["claims"][0]
        claim["result"]["scenarios"]["notes-002"] = {"passed": [True]}
        claim["result"]["passed"] += 1
        claim["result"].pop("by_category")
        claim["tolerance"] = {"passed_within": 0, "reason": "the paper promises identical counts"}
        not_exact(data)

    path = write(tmp_path, edited(own_claims, change))
    first = verdicts(rerun_dir, path)[own_claims.claims[0].id]
    assert first.verdict == "DIFFERENT" and first.tolerance == "pass count within 0 (stated by the claim)"
    assert main(["verify", str(rerun_dir), "--claims", str(path)]) == 1
    assert "DIFFERENT" in capsys.readouterr().out


def test_counts_only_are_compared_by_fishers_exact_test(rerun_dir, own_claims, tmp_path):
    def change(data):
        not_exact(data)
        for claim in data["claims"]:
            claim["result"] = {"passed": 3, "total": 3}

    found = verdicts(rerun_dir, write(tmp_path, edited(own_claims, change)))
    # 3/3 against 2/3 and 1/3: p = 1 and 0.4, within; counts alone say no more (issue 49)
    assert {v.verdict for v in found.values()} == {"CONSISTENT (COUNTS ONLY)"}
    assert all(v.judgement is not None and v.judgement.test == "fisher" for v in found.values())


def test_a_claim_without_sha256_or_not_in_the_matrix_is_not_rerun(rerun_dir, own_claims, tmp_path, capsys):
    def change(data):
        first, second = list(data["models"])
        data["models"][first].pop("sha256")
        data["models"][second]["sha256"] = "e" * 64

    path = write(tmp_path, edited(own_claims, change))
    found = list(verdicts(rerun_dir, path).values())
    assert [v.verdict for v in found] == ["NOT RERUN", "NOT RERUN"]
    assert found[0].reasons[0].startswith("the claim names no GGUF sha256")
    assert "is not in the rerun's matrix" in found[1].reasons[0]
    assert main(["verify", str(rerun_dir), "--claims", str(path)]) == 1
    # --allow-partial lets a claim go unrerun, not every claim: with nothing rerun it fails (issue 49)
    assert main(["verify", str(rerun_dir), "--claims", str(path), "--allow-partial"]) == 1
    capsys.readouterr()


def test_another_protocol_is_not_rerun_with_the_reason(rerun_dir, own_claims, tmp_path):
    def change(data):
        data["claims"][0]["protocol"] = "react"

    first = verdicts(rerun_dir, write(tmp_path, edited(own_claims, change)))[own_claims.claims[0].id]
    assert (
        first.verdict == "NOT RERUN"
        and "another setup: the rerun ran" in first.reasons[0]
        and "not react" in first.reasons[0]
    )


def test_json_output_is_the_verdicts_alone(rerun_dir, own_claims, tmp_path, capsys):
    path = write(tmp_path, own_claims)
    capsys.readouterr()
    assert main(["verify", str(rerun_dir), "--claims", str(path), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert [v["verdict"] for v in report["verdicts"]] == ["REPRODUCED", "REPRODUCED"] and report["sha256"]


def test_published_and_claims_are_exclusive_and_a_bad_claims_file_is_exit_2(rerun_dir, tmp_path, capsys):
    assert main(["verify", str(rerun_dir)]) == 2
    bad = tmp_path / "bad.yaml"
    bad.write_text("format: 2\n")
    assert main(["verify", str(rerun_dir), "--claims", str(bad)]) == 2
    err = capsys.readouterr().err
    assert f"{bad}:1 format: input should be 1" in err


def test_a_published_row_absent_from_the_rerun_is_not_rerun(rerun_dir, tmp_path, capsys):
    """--published: a row of the published numbers that no VALID rerun row has says NOT RERUN, and
    fails the verify unless --allow-partial."""
    from repro.bundle.redact import Redactor
    from repro.report.aggregate import collect
    from repro.report.paper import render
    from tests.fixtures.synthetic import CANARY

    render(collect([rerun_dir], Redactor(CANARY)), tmp_path / "paper")
    path = tmp_path / "paper" / "results.json"
    data = json.loads(path.read_text())
    data["rows"].append({**data["rows"][1], "suite": "other-suite"})
    path.write_text(json.dumps(data))
    capsys.readouterr()
    assert main(["verify", str(rerun_dir), "--published", str(path)]) == 1
    assert "NOT RERUN" in capsys.readouterr().out
    assert main(["verify", str(rerun_dir), "--published", str(path), "--allow-partial"]) == 0
