"""Redaction: every form of a host path is caught, only at path boundaries; the leak finder names the form."""

from __future__ import annotations

import json
import os
import struct
from dataclasses import replace
from pathlib import Path
from urllib.parse import quote

import pytest

from repro.bundle import redact
from repro.bundle.redact import HostIdentity, Redactor, find_leaks

IDENTITY = HostIdentity(
    project_root="/srv/canary-project",
    home="/root",
    cache="/root/.cache/repro",
    user="canaryuser",
    host="canaryhost",
    fqdn="canaryhost.lab.example.org",
)


@pytest.fixture
def redactor() -> Redactor:
    return Redactor(IDENTITY)


def json_escaped(text: str) -> str:
    return text.replace("/", "\\/")


def unicode_escaped(text: str, upper: bool = False) -> str:
    return text.replace("/", "\\u002F" if upper else "\\u002f")


def url_encoded(text: str, lower: bool = False) -> str:
    encoded = quote(text, safe="")
    return encoded.replace("%2F", "%2f") if lower else encoded


# (name, text, redacted): every form of the home, cache and project paths
FORMS = [
    ("plain-home", "/root/notes.md", "<HOME>/notes.md"),
    ("plain-cache", "/root/.cache/repro/models/x.gguf", "<CACHE>/models/x.gguf"),
    ("plain-project", "/srv/canary-project/scenarios/a.json", "<PROJECT_ROOT>/scenarios/a.json"),
    ("json-home", json_escaped('"/root/notes.md"'), '"<HOME>\\/notes.md"'),
    ("json-cache", json_escaped("/root/.cache/repro/models"), "<CACHE>\\/models"),
    ("json-project", json_escaped("/srv/canary-project/x"), "<PROJECT_ROOT>\\/x"),
    ("unicode-home", unicode_escaped("/root/x"), "<HOME>\\u002fx"),
    ("unicode-upper-cache", unicode_escaped("/root/.cache/repro/x", upper=True), "<CACHE>\\u002Fx"),
    ("unicode-project", unicode_escaped("/srv/canary-project/x"), "<PROJECT_ROOT>\\u002fx"),
    ("url-home", url_encoded("/root/x"), "<HOME>%2Fx"),
    ("url-lower-cache", url_encoded("/root/.cache/repro/x", lower=True), "<CACHE>%2fx"),
    ("url-project", url_encoded("/srv/canary-project/x"), "<PROJECT_ROOT>%2Fx"),
    ("url-in-query", "file=" + url_encoded("/srv/canary-project/x") + "&y=1", "file=<PROJECT_ROOT>%2Fx&y=1"),
    ("file-url", "file:///root/x", "file://<HOME>/x"),
    ("encoded-file-url", "file%3A%2F%2F%2Froot%2Fx", "file%3A%2F%2F<HOME>%2Fx"),
    ("path-alone", "/srv/canary-project", "<PROJECT_ROOT>"),
    ("quoted", "'/srv/canary-project'", "'<PROJECT_ROOT>'"),
    ("end-of-sentence", "in /srv/canary-project.", "in <PROJECT_ROOT>."),
    ("full-host", "on canaryhost.lab.example.org today", "on <HOST> today"),
    ("short-host", "on canaryhost today", "on <HOST> today"),
    ("short-host-other-domain", "canaryhost.local", "<HOST>.local"),
    ("user", "by CanaryUser", "by <USER>"),
]


@pytest.mark.parametrize("name,text,redacted", FORMS, ids=[case[0] for case in FORMS])
def test_every_form_is_redacted(redactor, name, text, redacted):
    assert redactor.text(text) == redacted
    assert redactor.leaks(redacted) == []


# (name, text): look like a host path but are not one; redaction must leave them alone
NOT_PATHS = [
    ("rootfs", "/rootfs/etc"),
    ("root-suffix", "/root-backup/x"),
    ("root-dot-name", "/root.old/x"),
    ("root-inside-other-path", "/srv/root/x"),
    ("json-root-inside-other-path", json_escaped("/srv/root/x")),
    ("url-rootfs", url_encoded("/rootfs/x")),
    ("unicode-rootfs", unicode_escaped("/rootfs/x")),
    ("project-prefix", "/srv/canary-project2/x"),
    ("project-sibling", "/srv/canary-project-old/x"),
    ("relative", "scenarios/root/x"),
    ("host-inside-word", "canaryhostile"),
    ("root-home-alone", "no file could be created in /etc, /home, /opt, /root, /models"),
    ("root-home-quoted", "'/root'"),
]


@pytest.mark.parametrize("name,text", NOT_PATHS, ids=[case[0] for case in NOT_PATHS])
def test_only_path_boundaries_are_replaced(redactor, name, text):
    assert redactor.text(text) == text
    assert redactor.leaks(text) == []


def test_a_personal_home_alone_is_the_host_s_but_root_alone_names_no_one(redactor):
    """Found by checking, as root, a bundle another user made: its sandbox audit lists the folders
    it tried (`..., /opt, /root, /models`), which a root reviewer's check called a leak of its home."""
    personal = Redactor(replace(redactor.identity, home="/home/canary", cache="/home/canary/.cache/repro"))
    assert personal.text("in '/home/canary', /home/canary.") == "in '<HOME>', <HOME>."
    assert personal.leaks("tried /opt, /home/canary, /models") == ["the host's <HOME> path"]
    assert redactor.text("tried /opt, /root, /models and /root/x") == "tried /opt, /root, /models and <HOME>/x"


def test_json_stays_valid_json(redactor):
    document = json.dumps({"workspace": "/root/.cache/repro/work", "project": "/srv/canary-project"}).replace(
        "/", "\\/"
    )
    assert json.loads(redactor.text(document)) == {"workspace": "<CACHE>/work", "project": "<PROJECT_ROOT>"}


def test_json_with_unicode_escapes_stays_valid_json(redactor):
    document = '{"cwd": "' + unicode_escaped("/srv/canary-project/x") + '"}'
    assert json.loads(redactor.text(document)) == {"cwd": "<PROJECT_ROOT>/x"}


LEAK_FORMS = [
    ("plain", "/srv/canary-project/x", "the host's <PROJECT_ROOT> path"),
    ("json", json_escaped("/srv/canary-project/x"), "the host's <PROJECT_ROOT> path (JSON-escaped)"),
    ("unicode", unicode_escaped("/srv/canary-project/x"), "the host's <PROJECT_ROOT> path (\\u002f-escaped)"),
    ("url", url_encoded("/srv/canary-project/x"), "the host's <PROJECT_ROOT> path (URL-encoded)"),
    ("full-host", "canaryhost.lab.example.org", "the host's host name"),
    ("other-home-plain", "/home/someone/x", "host path /home/someone/x"),
    ("other-home-json", json_escaped("/home/someone/x"), "host path \\/home\\/someone\\/x (JSON-escaped)"),
    (
        "other-home-unicode",
        unicode_escaped("/home/someone/x"),
        "host path \\u002fhome\\u002fsomeone\\u002fx (\\u002f-escaped)",
    ),
    ("other-home-url", url_encoded("/Users/someone/x"), "host path %2FUsers%2Fsomeone%2Fx (URL-encoded)"),
]


@pytest.mark.parametrize("name,text,leak", LEAK_FORMS, ids=[case[0] for case in LEAK_FORMS])
def test_the_leak_finder_names_each_form(redactor, name, text, leak):
    assert leak in redactor.leaks(text)


def test_the_leak_finder_is_quiet_on_lookalikes(redactor):
    assert redactor.leaks(" ".join(text for _, text in NOT_PATHS)) == []


def test_host_names_full_and_short():
    assert IDENTITY.host_names() == ["canaryhost.lab.example.org", "canaryhost"]
    generic = HostIdentity(
        project_root="/p", home="/h", cache="/c", user="u", host="localhost", fqdn="localhost.localdomain"
    )
    assert generic.host_names() == []


def test_find_leaks_reports_each_file_and_form(tmp_path, redactor):
    (tmp_path / "cells" / "a").mkdir(parents=True)
    (tmp_path / "run.json").write_text(json.dumps({"cwd": "/srv/canary-project"}).replace("/", "\\/"))
    (tmp_path / "cells" / "a" / "log.txt").write_text("GET /x?dir=" + url_encoded("/root/.cache/repro/y"))
    (tmp_path / "clean.txt").write_text("<HOME>/x and /rootfs")
    assert find_leaks(tmp_path, redactor) == [
        "cells/a/log.txt: host path %2Froot%2F.cache%2Frepro%2Fy (URL-encoded)",
        "cells/a/log.txt: the host's <CACHE> path (URL-encoded)",
        "cells/a/log.txt: the host's <HOME> path (URL-encoded)",
        "run.json: the host's <PROJECT_ROOT> path (JSON-escaped)",
    ]


def test_find_leaks_never_follows_a_link(tmp_path, redactor):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("/srv/canary-project")
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    os.symlink(outside / "secret.txt", bundle / "link.txt")
    os.symlink(outside, bundle / "folder-link")
    problems = find_leaks(bundle, redactor)
    assert problems == ["folder-link: not scanned (not a regular file)", "link.txt: not scanned (not a regular file)"]


def test_current_identity_redacts_this_host():
    redactor = Redactor()
    home = str(Path.home())
    if home in ("", "/"):
        pytest.skip("no home folder")
    assert home not in redactor.text(f"{home}/x").replace("<HOME>", "")


def test_a_home_the_suite_names_is_data_not_a_leak():
    """A fixture's fictional /home/mira/... (and a path a model built under it) is scenario data;
    another home, and this host's own home, are still leaks."""
    from repro.bundle.redact import data_homes

    identity = HostIdentity(
        project_root="/srv/p",
        home="/home/canaryuser",
        cache="/home/canaryuser/.cache/repro",
        user="canaryuser",
        host="canaryhost",
    )
    redactor = Redactor(identity)
    data = data_homes('{"cwd": "/home/mira/projects/tide-app"}')
    assert data == frozenset({"/home/mira"})
    assert redactor.leaks("listed /home/mira/projects/tide-app/docs_folder_a", data) == []
    assert redactor.leaks("read %2Fhome%2Fmira%2Fprojects", data) == []
    assert redactor.leaks("read /home/bob/secret", data) == ["host path /home/bob/secret"]
    assert "the host's <HOME> path" in redactor.leaks("read /home/canaryuser/x", data | {"/home/canaryuser"})


def test_what_a_model_wrote_is_held_to_this_hosts_identity_only(tmp_path):
    """A model may name any home (/home/lena/thesis): in results and transcripts only this host's
    own paths and names count; in a file the host wrote, any home does."""
    identity = HostIdentity(
        project_root="/srv/p",
        home="/home/canaryuser",
        cache="/home/canaryuser/.cache/repro",
        user="canaryuser",
        host="canaryhost",
    )
    redactor = Redactor(identity)
    (tmp_path / "transcripts.jsonl").write_text('{"reply": "see /home/lena/thesis"}\n')
    (tmp_path / "cell.json").write_text('{"reason": "see /home/lena/thesis"}\n')
    (tmp_path / "scenarios.jsonl").write_text('{"error": "read /home/canaryuser/x"}\n')
    leaks = find_leaks(tmp_path, redactor, model_output=frozenset({"transcripts.jsonl", "scenarios.jsonl"}))
    assert leaks == [
        "cell.json: host path /home/lena/thesis",
        "scenarios.jsonl: the host's <HOME> path",
        "scenarios.jsonl: the host's user name",
    ]


@pytest.mark.parametrize("name,text,leak", LEAK_FORMS, ids=[case[0] for case in LEAK_FORMS])
@pytest.mark.parametrize("offset", [0, 1, 7, 63, 64, 65])
def test_a_leak_across_a_chunk_boundary_is_found(redactor, monkeypatch, name, text, leak, offset):
    """The scan takes large texts in chunks (redact.TextScan): a leak that starts just before a
    chunk's end, or straddles it, is found all the same, and found once."""
    monkeypatch.setattr(redact, "SCAN_CHUNK", 64)
    padding = "x" * (3 * 64 - offset)
    found = redactor.leaks(padding + " " + text + " " + padding)
    assert leak in found and len(found) == len(set(found))


def test_a_leak_in_a_large_text_is_found(redactor):
    """A text of many chunks that holds the leak's literal only near its start (docs/performance.md
    has the time a 200 MB transcripts file takes to check)."""
    text = "/srv/canary-project/x " + "y" * (20 * 1024 * 1024)
    assert redactor.leaks(text) == ["the host's <PROJECT_ROOT> path"]


def every_pattern_run(redactor: Redactor, text: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """What Redactor.text gave before it looked for each rule's literal first: every pattern, run."""
    with monkeypatch.context() as patched:
        patched.setattr(redact, "holds", lambda text, literal, fold: True)
        return redactor.text(text)


LOOKALIKES = [
    url_encoded("/srv/canary-project/x").replace("canary", "CANARY"),  # a URL-encoded path in another case
    # long s: re.IGNORECASE takes it for an s
    url_encoded("/srv/canary-project/x").replace("c", "C").replace("s", "\u017f"),
    "by CANARYU\u017fER at CANARYHOST",  # long s in a word
    "by canaryuser, on canaryhost.lab.example.org, in /root/.cache/repro/x and /srv/canary-project",
    "nothing of this host here",
]


@pytest.mark.parametrize("text", [*(case[1] for case in FORMS), *(case[1] for case in NOT_PATHS), *LOOKALIKES])
def test_looking_for_each_literal_first_redacts_what_every_pattern_did(redactor, monkeypatch, text):
    """Redaction runs a rule's pattern only over a text that holds the rule's literal (large cell
    files cost a literal search per rule): the text it gives is the one every pattern gave."""
    assert redactor.text(text) == every_pattern_run(redactor, text, monkeypatch)
    assert redactor.text(text * 3) == every_pattern_run(redactor, text * 3, monkeypatch)


def test_letters_that_fold_unlike_lower_are_still_found(monkeypatch):
    """re.IGNORECASE takes a dotless i for an i and a long s for an s, which lower() leaves as they
    are; a literal that is not ASCII may fold in other ways, so its pattern always runs."""
    redactor = Redactor(replace(IDENTITY, user="mira", project_root="/srv/mira-studies"))
    for text in ("by M\u0131RA today", url_encoded("/srv/m\u0131ra-\u017ftudies/x"), "by MIRA"):
        assert "mira" not in redactor.text(text).lower().replace("\u0131", "i")
        assert redactor.text(text) == every_pattern_run(redactor, text, monkeypatch)
    beyond = Redactor(replace(IDENTITY, user="J\u00f6rg\u0130"))
    assert (
        beyond.text("by J\u00d6RG\u0130 today")
        == every_pattern_run(beyond, "by J\u00d6RG\u0130 today", monkeypatch)
        == "by <USER> today"
    )


# Two bytes of a stored 8-byte float that spell a host named "vm", between bytes that are not
# letters: what made a ToolCallBench SQLite file look like it named the CI machine.
FLOAT_SPELLING_VM = struct.pack("<d", struct.unpack("<d", b"\x01\x07vm\x90\x12\xd0?")[0])


def test_a_short_host_name_in_binary_data_is_noise_but_a_path_or_a_long_name_is_not():
    short = Redactor(
        HostIdentity(
            project_root="/srv/p",
            home="/home/ann",
            cache="/home/ann/.cache/repro",
            user="ann",
            host="vm",
            fqdn="localhost",
        )
    )
    database = b"SQLite format 3\x00" + FLOAT_SPELLING_VM + b"\x00" * 8
    assert not short.names_host(database)
    assert short.leaks(database.decode("utf-8", errors="replace"), binary=True) == []
    assert short.names_host(database + b"\x00/home/ann/x\x00")  # a path is looked for in binary data too
    assert short.names_host(b"uploaded from vm at noon")  # and in text, every name
    long = Redactor(IDENTITY)
    assert long.names_host(b"SQLite format 3\x00\x00canaryhost\x00")


def test_find_leaks_tells_binary_from_text(tmp_path):
    identity = HostIdentity(
        project_root="/srv/p", home="/home/ann", cache="/home/ann/.cache/repro", user="ann", host="vm", fqdn="localhost"
    )
    (tmp_path / "raw.results.sqlite").write_bytes(b"SQLite format 3\x00" + FLOAT_SPELLING_VM)
    (tmp_path / "log.txt").write_text("ssh vm\n")
    assert find_leaks(tmp_path, Redactor(identity)) == ["log.txt: the host's host name"]
