"""The harness effect on one model: two rows of the same scenario files, one per harness.

    python benchmarks/harness_effect.py RESULTS_JSON [--ours SUITE] [--theirs SUITE]

RESULTS_JSON is what `repro paper render` writes (or a published `paper/published/*.json`); the
two rows are the ones whose suite is `--ours` (default tholos-bench, our harness) and `--theirs`
(default tholos-runner, `tholos bench`). They must hold the same model, engine, decoding and
scenario ids, once each. Prints each row's count, the flips in each direction, the exact McNemar
test on the discordant pairs, and every category where the two rows' counts differ. Reads only
the file; exit 2 when the rows cannot be paired.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from repro.report.stats import mcnemar, wilson

SAME = ("model_sha256", "engine_identity", "decoding", "profile")


class Refused(ValueError):
    """The two rows cannot be paired (said in one line)."""


def pick(rows: list[dict], suite: str) -> dict:
    found = [row for row in rows if row["suite"] == suite]
    if len(found) != 1:
        raise Refused(f"harness_effect: {len(found)} rows of suite {suite}, expected one")
    return found[0]


def paired(ours: dict, theirs: dict) -> list[tuple[str, bool, bool]]:
    """(scenario id, ours passed, theirs passed) for every scenario both rows ran once."""
    differ = [field for field in SAME if ours.get(field) != theirs.get(field)]
    if differ:
        raise Refused(f"harness_effect: the rows differ in {', '.join(differ)}: not one model on one setup")
    if sorted(ours["scenarios"]) != sorted(theirs["scenarios"]):
        raise Refused("harness_effect: the rows ran different scenario ids")
    if any(len(outcomes) != 1 for row in (ours, theirs) for outcomes in row["scenarios"].values()):
        raise Refused("harness_effect: a scenario ran more than once (repeats): pair them by repeat first")
    return [(sid, ours["scenarios"][sid][0], theirs["scenarios"][sid][0]) for sid in sorted(ours["scenarios"])]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path)
    parser.add_argument("--ours", default="tholos-bench")
    parser.add_argument("--theirs", default="tholos-runner")
    args = parser.parse_args()
    try:
        rows = json.loads(args.results.read_text())["rows"]
    except (OSError, ValueError, KeyError) as error:
        print(f"harness_effect: {args.results}: not a results.json ({error})", file=sys.stderr)
        return 2
    try:
        ours, theirs = pick(rows, args.ours), pick(rows, args.theirs)
        pairs = paired(ours, theirs)
    except Refused as refusal:
        print(refusal, file=sys.stderr)
        return 2
    for name, row in ((args.ours, ours), (args.theirs, theirs)):
        interval = wilson(row["passed"], row["total"])
        print(f"{name}: {row['passed']} of {row['total']} (Wilson 95% {interval.low:.2f} to {interval.high:.2f})")
    only_ours = [sid for sid, a, b in pairs if a and not b]
    only_theirs = [sid for sid, a, b in pairs if b and not a]
    test = mcnemar([(b, a) for _, a, b in pairs])
    print(f"both passed {sum(a and b for _, a, b in pairs)}, neither {sum(not a and not b for _, a, b in pairs)}")
    print(f"only {args.ours}: {len(only_ours)} ({', '.join(only_ours) or 'none'})")
    print(f"only {args.theirs}: {len(only_theirs)} ({', '.join(only_theirs) or 'none'})")
    print(f"exact McNemar on {len(only_ours) + len(only_theirs)} discordant pairs: p = {test.p_value:.4g}")
    for category in sorted(set(ours["by_category"]) | set(theirs["by_category"])):
        a, b = ours["by_category"].get(category, [0, 0]), theirs["by_category"].get(category, [0, 0])
        if a != b:
            print(f"  {category}: {args.ours} {a[0]} of {a[1]}, {args.theirs} {b[0]} of {b[1]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
