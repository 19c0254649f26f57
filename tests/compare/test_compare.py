"""`repro compare`: paired verdicts on the same scenarios, unpaired intervals otherwise, flips, failure types."""

from __future__ import annotations

import json

from repro.__main__ import main
from repro.bundle.redact import Redactor
from repro.report.aggregate import collect
from repro.report.paper import render
from repro.report.tables import TableRow
from repro.verify.compare import compare, load_tables
from tests.compare.bundles import write_bundle
from tests.fixtures.synthetic import CANARY

IDS = [f"notes-{n:03d}" for n in range(1, 13)]


def outcomes(passing: int, failure: str = "wrong_outcome"):
    """The first `passing` of twelve scenarios pass; the rest fail with `failure`."""

    def scenarios(cell):
        return [(sid, "notes", i < passing, None if i < passing else failure, None) for i, sid in enumerate(IDS)]

    return scenarios


def tables(tmp_path, name, passing, failure="wrong_outcome", repeats=1):
    return collect(
        [write_bundle(tmp_path / name, outcomes(passing, failure), repeats=repeats, models=1)], Redactor(CANARY)
    )


def test_paired_better_with_exact_p_value_flips_and_failure_types(tmp_path):
    result = compare(tables(tmp_path, "a", 2), tables(tmp_path, "b", 8, "stuck"))
    (row,) = result.rows
    assert row.test == "paired" and row.verdict == "better" and row.p_value == 2 / 2**6
    assert [f.scenario for f in row.flips] == IDS[2:8] and {f.direction for f in row.flips} == {"fixed"}
    assert row.failure_types == {"stuck": (0, 4), "wrong_outcome": (10, 0)}
    assert result.settings == [] and result.only_before == result.only_after == []


def test_paired_worse_and_no_clear_difference(tmp_path):
    base = tables(tmp_path, "a", 8)
    assert compare(base, tables(tmp_path, "b", 2)).rows[0].verdict == "worse"
    small = compare(base, tables(tmp_path, "c", 5)).rows[0]  # 3 discordant pairs: p = 0.25
    assert small.verdict == "no clear difference" and small.p_value == 0.25


def test_unpaired_when_repeats_differ(tmp_path):
    row = compare(tables(tmp_path, "a", 2), tables(tmp_path, "b", 11, repeats=2)).rows[0]
    assert row.test == "unpaired" and row.interval is not None and row.interval.low > 0 and row.verdict == "better"


def test_settings_that_differ_are_named(tmp_path):
    before = tables(tmp_path, "a", 6)
    before.rows[0].suite_sha256 = "e" * 64
    after = before.model_copy(deep=True)
    after.rows[0].engine_identity = "b9999 (other)"
    after.rows[0].suite_sha256 = "f" * 64
    row = compare(before, after).rows[0]
    assert [s.name for s in row.settings] == ["suite sha256", "engine build"]
    assert row.test == "unpaired"  # other suite bytes: not the same scenarios


def test_cli_reads_bundles_and_results_json_and_fails_on_worse(tmp_path, capsys):
    good = write_bundle(tmp_path / "good", outcomes(9), models=1)
    bad = write_bundle(tmp_path / "bad", outcomes(2), models=1)
    render(collect([good], Redactor(CANARY)), tmp_path / "paper")
    assert load_tables(tmp_path / "paper").rows[0].passed == 9
    assert main(["compare", str(tmp_path / "paper" / "results.json"), str(bad)]) == 0
    out = capsys.readouterr().out
    assert "WORSE" in out and "9/12 -> 2/12 (-58.3 points)" in out and "exact McNemar p=0.0156" in out
    assert "broken (7): notes-003" in out and "failure type wrong_outcome: 3 -> 10" in out
    assert main(["compare", str(good), str(bad), "--fail-on", "worse"]) == 1
    assert main(["compare", str(bad), str(good), "--fail-on", "worse"]) == 0


def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys):
    good = write_bundle(tmp_path / "good", outcomes(9), models=1)
    assert main(["compare", str(good), str(tmp_path / "nothing")]) == 2
    assert capsys.readouterr().err.strip().endswith("nothing: no such file or folder")
    (tmp_path / "junk.json").write_text(json.dumps({"rows": 3}))
    assert main(["compare", str(tmp_path / "junk.json"), str(good)]) == 2
    assert main(["compare", str(good), str(good), "--fail-on", "sideways"]) == 2


def test_an_unpaired_comparison_names_only_scenarios_whose_pass_rate_changed():
    from repro.verify.compare import flips

    def row(scenarios: dict[str, list[bool]]) -> TableRow:
        return TableRow.model_construct(scenarios=scenarios)

    before = row({"a": [False], "b": [True], "c": [False]})
    after = row({"a": [False, False], "b": [True, False], "c": [True, True]})
    assert [(f.scenario, f.direction) for f in flips(before, after)] == [("b", "broken"), ("c", "fixed")]
    # repeat by repeat
    assert [f.scenario for f in flips(row({"a": [True, False]}), row({"a": [False, True]}))] == ["a"]


def test_a_pair_of_setups_is_named_alike_by_verify_and_by_compare(tmp_path):
    """Issue 49: one comparison of setups. Row A stated as a claim (as `claims from-results` writes
    it) and verified against row B names the same inputs as `repro compare A B`."""
    import datetime

    from repro.bundle.records import Execution
    from repro.bundle.setup import differences
    from repro.spec.claims import Source
    from repro.spec.harnesses import HarnessPin
    from repro.spec.matrix import Decoding
    from repro.verify.claims import Resolved
    from repro.verify.compare import SETTINGS
    from repro.verify.own_claims import claims_from_rerun
    from repro.verify.rerun_rows import Rerun, RerunRow

    before = tables(tmp_path, "a", 6)
    after = before.model_copy(deep=True)
    row_a, row_b = before.rows[0], after.rows[0]
    row_a.engine_kind, row_a.cpu_model = "llama.cpp", "AMD EPYC"
    row_a.execution = Execution(threads=2, slots=1, cache_prompt=False)
    row_b.engine_kind, row_b.cpu_model, row_b.engine_identity = "ollama", "Intel Xeon", "0.11.4"
    row_b.engine_names = ["0.11.4"]
    row_b.execution = Execution(threads=4, slots=1, cache_prompt=True)
    harness = HarnessPin(name="repro", commit="a" * 40, tree_digest="b" * 64)
    assert row_a.setup is not None  # the rows' setup records, made to say the same as their fields
    row_a.setup = row_a.setup.model_copy(
        update={"engine_kind": "llama.cpp", "cpu_model": "AMD EPYC", "threads": 2, "harness": harness}
    )
    row_b.setup = row_a.setup.model_copy(
        update={
            "engine_kind": "ollama",
            "cpu_model": "Intel Xeon",
            "engine_build": "0.11.4",
            "engine_names": ["0.11.4"],
            "threads": 4,
            "cache_prompt": True,
        }
    )
    setup = row_a.setup
    decoding = Decoding(
        temperature=setup.temperature, seed=setup.seed, max_tokens=setup.max_tokens, context=setup.context
    )
    stated = RerunRow(row=row_a, harness=harness, decoding=decoding)
    ran = RerunRow(row=row_b, harness=harness, decoding=decoding)
    source = Source(citation="row A", url="https://example.org/a", date=datetime.date(2026, 12, 4))
    claims = claims_from_rerun(Rerun(rows=[stated]), source)
    verified = {d.what for d in differences(Resolved.of(claims.claims[0], claims).pins(), ran.pins())}
    compared = {s.name for s in compare(before, after).rows[0].settings} - set(SETTINGS)
    assert verified == compared == {"engine", "engine build", "CPU", "threads per engine", "prompt cache"}
