"""What a harness container writes is read back as untrusted (repro.suites.scenarios.collect_results reads it
with read_results and read_transcripts): a link to a host file and a 10 GiB file are refused with
a reason, never followed or read. No engine needed, so it runs in every run."""

from __future__ import annotations

import os

import pytest

from repro.bundle.layout.loading import read_results, read_transcripts
from repro.core.errors import BadInput


def test_a_link_to_a_host_file_is_refused(tmp_path):
    host_file = tmp_path / "host-secret"
    host_file.write_text('{"id": "stolen"}\n')
    out = tmp_path / "out"
    out.mkdir()
    (out / "scenarios.jsonl").symlink_to(host_file)
    with pytest.raises(BadInput, match="not a regular file"):
        read_results(out)


def test_a_10_gib_output_is_refused_unread(tmp_path):
    huge = tmp_path / "transcripts.jsonl"
    huge.touch()
    os.truncate(huge, 10 * 1024**3)  # sparse: no disk used, but its size is 10 GiB
    with pytest.raises(BadInput, match="over the limit"):
        read_transcripts(tmp_path)
