"""Verdicts that mean what they say (synthetic bundles): a claim is about its setup, the same
exact setup promises identity, counts compare only the same scenarios, and `--published` and
`--claims` reach one verdict through one comparison of inputs."""

from __future__ import annotations

import json

import pytest

from repro.__main__ import main
from repro.bundle.redact import Redactor
from repro.bundle.setup import ACCEPTABLE, same_build
from repro.report.aggregate import collect
from repro.report.paper import render
from repro.spec.claims import load_claims
from repro.verify.claims import Options, verify_claims
from repro.verify.rerun_rows import load_rerun
from tests.fixtures.synthetic import CANARY
from tests.verify.test_claims_verify import edited, write


def first_verdict(rerun_dir, path, **options):
    return verify_claims(load_claims(path), load_rerun([rerun_dir]), Options(**options)).verdicts[0]


def setup_of(data):
    return data["setups"][data["claims"][0]["setup"]]


# Each pinned input a claim may state, set to something the rerun did not run, with its --accept name.
DIFFERENT_SETUPS = {
    "engine kind": (lambda d: setup_of(d)["engine"].update(kind="ollama"), "engine"),
    "engine build": (lambda d: setup_of(d)["engine"].update(build="fdf5818"), "engine-build"),
    "engine variant": (lambda d: setup_of(d)["engine"].update(variant="cuda"), "engine-variant"),
    "quant": (lambda d: d["models"][d["claims"][0]["model"]].update(quant="Q8_0"), "quant"),
    "temperature": (lambda d: setup_of(d)["decoding"].update(temperature=0.7), "temperature"),
    "context": (lambda d: setup_of(d)["decoding"].update(context=16384), "context"),
    "tokens per step": (lambda d: setup_of(d)["decoding"].update(max_tokens=512), "max-tokens"),
    "harness version": (lambda d: setup_of(d)["harness"].update(version="9.9.9"), "harness"),
    "harness tree": (lambda d: setup_of(d)["harness"].update(tree_digest="ab" * 32), "harness"),
    "accelerator": (lambda d: setup_of(d)["hardware"].update(accelerator="Tesla T4"), "hardware"),
    "threads": (lambda d: setup_of(d)["hardware"].update(threads=1), "threads"),
    "cpu": (lambda d: setup_of(d)["hardware"].update(cpu_model="Another CPU 9000"), "hardware"),
    "chat template": (
        lambda d: d["claims"][0].update(chat_template={"source": "pinned", "sha256": "cd" * 32}),
        "chat-template",
    ),
}


@pytest.mark.parametrize("what", sorted(DIFFERENT_SETUPS))
def test_a_different_setup_is_never_plain_reproduced(rerun_dir, own, tmp_path, capsys, what):
    change, name = DIFFERENT_SETUPS[what]
    path = write(tmp_path, edited(own, change))
    verdict = first_verdict(rerun_dir, path)
    assert verdict.verdict == "REPRODUCED ON ANOTHER SETUP" and verdict.setup == f"differs: {name}"
    assert main(["verify", str(rerun_dir), "--claims", str(path)]) == 1
    out = capsys.readouterr().out
    assert "REPRODUCED ON ANOTHER SETUP" in out and "differs:" in out
    accepted = first_verdict(rerun_dir, path, accept=frozenset({name}))
    assert accepted.verdict == "REPRODUCED" and accepted.setup == f"accepted: {name}"
    assert main(["verify", str(rerun_dir), "--claims", str(path), "--accept", name, "--allow-partial"]) == 0
    assert "(accepted by --accept)" in capsys.readouterr().out


def test_an_unknown_accept_name_is_bad_input(rerun_dir, own, tmp_path, capsys):
    assert main(["verify", str(rerun_dir), "--claims", str(write(tmp_path, own)), "--accept", "threads,gpu"]) == 2
    assert "--accept gpu: not an input name" in capsys.readouterr().err
    assert {"hardware", "threads", "engine-build"} <= set(ACCEPTABLE)


def test_a_short_and_a_full_commit_of_one_build_agree():
    assert same_build("fdf5818", "fdf5818a2b3c4d5e6f708192a3b4c5d6e7f80912")
    assert same_build("B11434", "b11434")
    assert not same_build("fdf5818", "fdf5819a2b3c4d5e6f708192a3b4c5d6e7f80912")
    assert not same_build("b1", "b11434")  # a prefix that is no commit hash names nothing


def test_on_the_same_exact_setup_a_raised_count_is_different(rerun_dir, own, tmp_path):
    """The exact CPU setup promises identity: counts only, 1 of 3 raised to 3 of 3 (Fisher would
    say p = 0.4) is DIFFERENT, and the verdict names the rule it used."""

    def change(data):
        claim = data["claims"][1]
        claim["result"] = {"passed": 3, "total": 3}

    found = {
        v.claim: v
        for v in verify_claims(load_claims(write(tmp_path, edited(own, change))), load_rerun([rerun_dir])).verdicts
    }
    raised = found[own.claims[1].id]
    assert (own.claims[1].result.passed, raised.verdict) == (1, "DIFFERENT")
    assert (
        raised.judgement is not None
        and raised.judgement.test == "exact"
        and raised.rule
        and raised.rule.startswith("identity")
    )
    assert found[own.claims[0].id].verdict == "REPRODUCED"


def test_equal_counts_on_the_same_exact_setup_are_consistent_in_counts_only(rerun_dir, own, tmp_path, capsys):
    """REPRODUCED needs outcomes paired scenario by scenario: equal counts do not show equal
    outcomes, so a claim of counts alone gets the verdict that says so, and verify fails (issue 49)."""

    def change(data):
        for claim in data["claims"]:
            result = claim["result"]
            claim["result"] = {"passed": result["passed"], "total": result["total"]}

    path = write(tmp_path, edited(own, change))
    verdict = first_verdict(rerun_dir, path)
    assert verdict.verdict == "CONSISTENT (COUNTS ONLY)" and verdict.judgement is not None
    assert verdict.judgement.test == "exact"
    assert main(["verify", str(rerun_dir), "--claims", str(path)]) == 1
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last.startswith("==> consistent in counts only"), last


def test_a_claim_that_states_no_cpu_model_is_judged_by_the_tolerance_test(rerun_dir, own, tmp_path):
    """The CPU model is a pinned input of the exact setup: a claim that leaves it out promises no
    identity, and the rule line names what it did not state (issue 49)."""

    def change(data):
        for setup in data["setups"].values():
            setup["hardware"].pop("cpu_model", None)

    verdict = first_verdict(rerun_dir, write(tmp_path, edited(own, change)))
    assert verdict.rule is not None and verdict.rule.startswith("the tolerance test")
    assert "the CPU model" in verdict.rule and verdict.verdict == "REPRODUCED"


def test_a_suite_named_by_version_alone_is_not_rerun(rerun_dir, own, tmp_path):
    def change(data):
        for suite in data["suites"].values():
            suite.pop("sha256", None)
            suite["version"] = "9.9.9"

    verdict = first_verdict(rerun_dir, write(tmp_path, edited(own, change)))
    assert verdict.verdict == "NOT RERUN" and "by version 9.9.9 alone" in verdict.reasons[0]


def test_allow_partial_with_nothing_rerun_fails(rerun_dir, own, tmp_path, capsys):
    def change(data):
        for model in data["models"].values():
            model["sha256"] = "e" * 64

    path = write(tmp_path, edited(own, change))
    assert main(["verify", str(rerun_dir), "--claims", str(path), "--allow-partial"]) == 1
    assert "==> not rerun: none of the" in capsys.readouterr().out


def test_several_reruns_of_one_claim_are_judged_whatever_their_order(rerun_dir, own, tmp_path):
    """Two rerun rows answer one claim, one with a flipped outcome: the worst verdict stands and
    the output says they disagree, in either order; a run given twice is one run (issue 49)."""
    from repro.verify.rerun_rows import Rerun

    path = write(tmp_path, own)
    rerun = load_rerun([rerun_dir])
    first = rerun.rows[0]
    scenario = sorted(first.row.scenarios)[0]
    flipped_outcomes = {**first.row.scenarios, scenario: [not ok for ok in first.row.scenarios[scenario]]}
    passed = first.row.passed + (1 if flipped_outcomes[scenario][0] else -1)
    flipped = first.model_copy(
        update={
            "row": first.row.model_copy(
                update={"key": "zz-another-run", "scenarios": flipped_outcomes, "passed": passed}
            )
        }
    )
    answers = []
    for rows in ([first, flipped, *rerun.rows[1:]], [flipped, first, *rerun.rows[1:]]):
        report = verify_claims(load_claims(path), Rerun(rows=rows, planned=rerun.planned, runs=rerun.runs))
        [verdict] = [v for v in report.verdicts if v.claim == own.claims[0].id]
        answers.append((verdict.verdict, verdict.rerun_row, tuple(verdict.notes)))
    assert answers[0] == answers[1] and answers[0][0] == "DIFFERENT"
    assert any("rerun rows answer this claim and disagree" in note for note in answers[0][2])
    twice = verify_claims(load_claims(path), load_rerun([rerun_dir, rerun_dir]))
    assert all(not any("rerun rows" in note for note in v.notes) for v in twice.verdicts)
    assert {v.verdict for v in twice.verdicts} == {"REPRODUCED"}


@pytest.mark.parametrize(
    ("claimed", "reason"),
    [
        ({"passed": 137, "total": 160}, "the claim counts 160 scenarios, the rerun ran 3"),
        (
            {"passed": 3, "total": 160, "tolerance": {"passed_within": 1, "reason": "r"}},
            "the claim counts 160 scenarios, the rerun ran 3",
        ),
        ({"sha256": "ef" * 32}, "has sha256 efefefefefef, the rerun's"),
    ],
)
def test_counts_over_another_scenario_set_are_not_rerun(rerun_dir, own, tmp_path, claimed, reason):
    def change(data):
        claim = data["claims"][0]
        suite = data["suites"][claim["suite"]]
        if "sha256" in claimed:
            suite["sha256"] = claimed["sha256"]
            return
        data["suites"]["the-whole-suite"] = {**suite, "scenarios": claimed["total"]}
        claim["suite"] = "the-whole-suite"
        claim["result"] = {"passed": claimed["passed"], "total": claimed["total"]}
        if "tolerance" in claimed:
            claim["tolerance"] = claimed["tolerance"]

    verdict = first_verdict(rerun_dir, write(tmp_path, edited(own, change)))
    assert verdict.verdict == "NOT RERUN" and reason in verdict.reasons[0]


def test_a_claim_without_its_suite_count_still_compares_only_the_same_total(rerun_dir, own, tmp_path):
    def change(data):
        claim = data["claims"][0]
        data["suites"][claim["suite"]].pop("scenarios")
        claim["result"] = {"passed": 2, "total": 3 * 160}

    verdict = first_verdict(rerun_dir, write(tmp_path, edited(own, change)))
    assert (
        verdict.verdict == "NOT RERUN" and "the claim counts 480 scenario runs, the rerun ran 3" in verdict.reasons[0]
    )


def test_published_and_claims_reach_the_same_verdicts(rerun_dir, tmp_path, capsys):
    """One verify: the published rows, given as a results.json, as the bundle, or as the claims
    file `repro claims from-results` writes, answer the same verdicts for the same rerun."""
    render(collect([rerun_dir], Redactor(CANARY)), tmp_path / "paper")
    results_json = tmp_path / "paper" / "results.json"
    claims = tmp_path / "claims.yaml"
    assert (
        main(
            [
                "claims",
                "from-results",
                str(rerun_dir),
                "--out",
                str(claims),
                "--citation",
                "c",
                "--url",
                "https://example.org/x",
            ]
        )
        == 0
    )
    capsys.readouterr()
    answers = {}
    for name, args in {
        "claims": ["--claims", str(claims)],
        "json": ["--published", str(results_json)],
        "bundle": ["--published", str(rerun_dir)],
    }.items():
        assert main(["verify", str(rerun_dir), *args, "--json"]) == 0
        report = json.loads(capsys.readouterr().out)
        answers[name] = [(v["verdict"], v["setup"], v["rerun_row"]) for v in report["verdicts"]]
    assert answers["claims"] == answers["json"] == answers["bundle"]
    assert {verdict for verdict, _, _ in answers["json"]} == {"REPRODUCED"}


def test_a_published_row_on_another_thread_count_is_named_and_fails(rerun_dir, tmp_path, capsys):
    render(collect([rerun_dir], Redactor(CANARY)), tmp_path / "paper")
    path = tmp_path / "paper" / "results.json"
    data = json.loads(path.read_text())
    data["rows"][0]["execution"]["threads"] = 1
    path.write_text(json.dumps(data))
    assert main(["verify", str(rerun_dir), "--published", str(path)]) == 1
    out = capsys.readouterr().out
    assert "REPRODUCED ON ANOTHER SETUP" in out and "threads per engine differs: 1 claimed, 2 rerun" in out
    assert main(["verify", str(rerun_dir), "--published", str(path), "--accept", "threads"]) == 0


def test_counts_only_never_verify_a_row_that_holds_some_parts() -> None:
    """A counts-only claim made from one part, against a rerun row holding another part of the same
    size: the counts cannot say which scenarios they count, so no count is compared (issue 49)."""
    from types import SimpleNamespace

    from repro.report.tables import TableRow
    from repro.spec.claims import ClaimResult, ClaimSuite
    from repro.verify.claims import scenario_set_problem

    suite = ClaimSuite(id="tholos-runner", sha256="ab" * 32)
    resolved = SimpleNamespace(suite=suite, claim=SimpleNamespace(result=ClaimResult(passed=4, total=40)))
    part = TableRow.model_construct(
        parts="part 2 of 4", suite_sha256="ab" * 32, scenarios={f"s{i}": [True] for i in range(40)}, total=40
    )
    problem = scenario_set_problem(resolved, part)  # type: ignore[arg-type]
    assert problem is not None and "part 2 of 4" in problem and "counts only" in problem
    whole = part.model_copy(update={"parts": None})
    assert scenario_set_problem(resolved, whole) is None  # type: ignore[arg-type]
