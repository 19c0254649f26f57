"""Result bundles on disk, one job per module:

- `names`: the layout's names, and the checks every path into a bundle passes;
- `writer`: `Bundle` and `CellWriter`, atomic redacted writes; `mark_latest`;
- `loading`: run.json, cell.json and a cell's JSON Lines, parsed within bounds;
- `integrity`: strange entries, a cell's files against its cell.json, the manifest;
- `reader`: `BundleReader`, every read of a bundle;
- `discovery`: finding runs, and the one `--resume` goes on;
- `merge`: the shards of one run merged.


    results/<run-id>/run.json                 the run record (repro.bundle.records.RunRecord)
    results/<run-id>/cells/<cell-id>/...      scenarios.jsonl, transcripts.jsonl, logs, cell.json
    results/<run-id>/inputs/<sha256>.<ext>    external inputs no public address serves, carried (an external
                                              harness's archive)
    results/<run-id>/MANIFEST.sha256          sha256 of every other file

Every byte written passes through the redactor and is written atomically (0644 files, 0755
folders). A cell is written into `cells/.<id>.partial/` and renamed into place only once
complete, so a partial cell is never taken for a complete one; `cell.json` (written last) lists
the sha256 of the cell's other files, which is how `--resume` knows a cell is complete and intact.
While a cell runs, each finished scenario is kept in the partial folder as it finishes
(`kept/<scenario-id>.json`, one atomic write each, beside `partial.json`, what they belong to):
an interrupted cell keeps them, `--resume` verifies them (`kept_scenarios`) and reruns only the
rest, and the complete cell holds neither. `repro check` calls a partial folder left in a bundle
INVALID (`BundleReader.partial_cells`).

A bundle may come from someone else: everything outside this package reads one through a
`BundleReader`, whose every read is bounded (repro.core.files' MAX_*_BYTES), never follows a link and
checks each id before it names a path; anything but regular files and folders (a symlink, a
device, a dot-entry) is reported, never read.
"""

# The modules other packages may import (tests/foundation/test_public_names.py keeps it so).
__all__ = [
    "discovery",
    "integrity",
    "loading",
    "merge",
    "names",
    "reader",
    "writer",
]
