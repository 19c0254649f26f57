"""The one bounded reader of repro (repro.core.files.read_regular, open_regular) and the one file
digest (sha256_file): what they refuse, each in one line, on real files of each kind."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from repro.core.errors import BadInput
from repro.core.files import open_regular, read_regular, sha256_file
from repro.core.yamlsource import read_json_bounded


def test_a_regular_file_within_the_limit_is_read_whole(tmp_path):
    path = tmp_path / "a.txt"
    path.write_bytes(b"12345")
    assert read_regular(path, 5) == b"12345"


def test_a_link_is_refused_unless_asked(tmp_path):
    target = tmp_path / "target.txt"
    target.write_bytes(b"secret")
    link = tmp_path / "link.txt"
    link.symlink_to(target)
    with pytest.raises(BadInput, match=r"link\.txt: not a regular file \(a link: links are not followed\)$"):
        read_regular(link, 100)
    with pytest.raises(BadInput, match="a link"):
        open_regular(link, 100)
    assert read_regular(link, 100, follow_links=True) == b"secret"


def test_what_is_not_a_regular_file_is_refused(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(BadInput, match="fifo: not a regular file$"):
        read_regular(fifo, 100)
    with pytest.raises(BadInput, match="a folder, not a file$"):
        read_regular(tmp_path, 100)
    with pytest.raises(BadInput, match="missing: no such file$"):
        read_regular(tmp_path / "missing", 100)


def test_a_file_over_the_limit_is_refused_not_cut_short(tmp_path):
    path = tmp_path / "big.bin"
    path.write_bytes(b"x" * 11)
    with pytest.raises(BadInput, match=r"big\.bin: 11 bytes, over the limit of 10 bytes$"):
        read_regular(path, 10)


def test_a_file_that_grows_while_read_is_refused():
    """/proc/self/status is a regular file whose size reads 0 and whose content is longer: the
    read finds more than the look allowed, as a file that grew between the two would."""
    status = Path("/proc/self/status")
    if not status.is_file() or status.stat().st_size != 0:
        pytest.skip("no /proc with zero-size status files here")
    with pytest.raises(BadInput, match=r"status: grew while read, over the limit of 10 bytes$"):
        read_regular(status, 10)


def test_json_is_read_through_the_same_reader(tmp_path):
    target = tmp_path / "real.json"
    target.write_text('{"a": 1}')
    link = tmp_path / "link.json"
    link.symlink_to(target)
    assert read_json_bounded(link) == {"a": 1}  # the JSON reader follows links unless told not to
    with pytest.raises(BadInput, match="a link"):
        read_json_bounded(link, follow_links=False)


def test_the_file_digest_is_the_sha256_of_its_bytes_and_a_missing_file_is_one_line(tmp_path):
    path = tmp_path / "f.bin"
    path.write_bytes(b"abc" * 1_000_000)
    assert sha256_file(path) == hashlib.sha256(b"abc" * 1_000_000).hexdigest()
    with pytest.raises(BadInput, match="cannot read"):
        sha256_file(tmp_path / "missing")
