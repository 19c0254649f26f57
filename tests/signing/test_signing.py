"""Bundle signatures: sign a manifest with an SSH key, verify it against allowed signers, tamper."""

from __future__ import annotations

import hashlib
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from repro.__main__ import main
from repro.bundle.layout.names import MANIFEST, SIGNATURE
from repro.bundle.signing import NAMESPACE, SignatureError, sign_bundle, verify_signature
from repro.core.errors import BadInput, ReproError

pytestmark = pytest.mark.skipif(
    shutil.which("ssh-keygen") is None, reason="ssh-keygen missing: apt-get install openssh-client"
)


def _key(folder: Path, name: str) -> Path:
    key = folder / name
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", name, "-f", str(key)], check=True)
    return key


def _allowed(folder: Path, *signers: tuple[str, Path]) -> Path:
    path = folder / "allowed_signers"
    path.write_text(
        "".join(
            f'{principal} namespaces="{NAMESPACE}" {key.with_suffix(".pub").read_text()}' for principal, key in signers
        )
    )
    return path


def _bundle(folder: Path) -> Path:
    run_dir = folder / "run-1"
    cell = run_dir / "cells" / "cell-a"
    cell.mkdir(parents=True)
    (run_dir / "run.json").write_text('{"run_id": "run-1"}\n')
    (cell / "scenarios.jsonl").write_text('{"id": "x", "passed": true}\n')
    names = ["cells/cell-a/scenarios.jsonl", "run.json"]
    lines = [f"{hashlib.sha256((run_dir / n).read_bytes()).hexdigest()}  {n}" for n in names]
    (run_dir / MANIFEST).write_text("\n".join(lines) + "\n")
    return run_dir


@pytest.fixture
def keys(tmp_path: Path) -> dict[str, Path]:
    folder = tmp_path / "keys"
    folder.mkdir()
    return {name: _key(folder, name) for name in ("alice", "mallory")}


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    return _bundle(tmp_path)


def test_sign_then_verify_names_the_signer(tmp_path, keys, run_dir) -> None:
    signature = sign_bundle(run_dir, keys["alice"])
    assert signature == run_dir / SIGNATURE
    assert signature.read_text().startswith("-----BEGIN SSH SIGNATURE-----")
    assert stat.S_IMODE(signature.stat().st_mode) == 0o644
    assert [p.name for p in run_dir.iterdir() if p.name.startswith(".")] == []
    allowed = _allowed(tmp_path, ("alice@example.org", keys["alice"]), ("mallory@example.org", keys["mallory"]))
    assert verify_signature(run_dir, allowed) == "alice@example.org"


def test_a_tampered_manifest_fails_with_one_line(tmp_path, keys, run_dir) -> None:
    sign_bundle(run_dir, keys["alice"])
    manifest = run_dir / MANIFEST
    manifest.write_text(
        manifest.read_text().replace("run.json", "run.json\n" + "0" * 64 + "  cells/cell-a/extra.jsonl", 1)
    )
    with pytest.raises(SignatureError) as caught:
        verify_signature(run_dir, _allowed(tmp_path, ("alice@example.org", keys["alice"])))
    message = str(caught.value)
    assert "\n" not in message and "alice@example.org" in message and "incorrect signature" in message


def test_a_signer_not_allowed_is_refused(tmp_path, keys, run_dir) -> None:
    sign_bundle(run_dir, keys["mallory"])
    with pytest.raises(SignatureError, match="signed by no key that .* allows"):
        verify_signature(run_dir, _allowed(tmp_path, ("alice@example.org", keys["alice"])))


def test_a_signature_in_another_namespace_is_refused(tmp_path, keys, run_dir) -> None:
    message = (run_dir / MANIFEST).open("rb")
    done = subprocess.run(
        ["ssh-keygen", "-Y", "sign", "-f", str(keys["alice"]), "-n", "git"],
        stdin=message,
        capture_output=True,
        check=True,
    )
    (run_dir / SIGNATURE).write_bytes(done.stdout)
    with pytest.raises(SignatureError, match="namespace"):
        verify_signature(run_dir, _allowed(tmp_path, ("alice@example.org", keys["alice"])))


def test_unsigned_and_garbage_signatures(tmp_path, keys, run_dir) -> None:
    allowed = _allowed(tmp_path, ("alice@example.org", keys["alice"]))
    with pytest.raises(SignatureError, match="not signed"):
        verify_signature(run_dir, allowed)
    (run_dir / SIGNATURE).write_text("not a signature\n")
    with pytest.raises(SignatureError):
        verify_signature(run_dir, allowed)
    (run_dir / SIGNATURE).write_bytes(b"x" * 100_000)
    with pytest.raises(BadInput, match="over the limit of"):
        verify_signature(run_dir, allowed)


def test_links_and_missing_files_are_bad_input(tmp_path, keys, run_dir) -> None:
    allowed = _allowed(tmp_path, ("alice@example.org", keys["alice"]))
    with pytest.raises(BadInput, match="no such allowed_signers"):
        verify_signature(run_dir, tmp_path / "nobody")
    with pytest.raises(BadInput, match="no such key"):
        sign_bundle(run_dir, tmp_path / "no-key")
    with pytest.raises(BadInput, match="not a bundle folder"):
        sign_bundle(tmp_path / "nowhere", keys["alice"])
    sign_bundle(run_dir, keys["alice"])
    (run_dir / SIGNATURE).rename(tmp_path / "elsewhere.sig")
    (run_dir / SIGNATURE).symlink_to(tmp_path / "elsewhere.sig")
    with pytest.raises(BadInput, match="a link"):
        verify_signature(run_dir, allowed)


def test_refuses_to_sign_a_manifest_that_does_not_match(keys, run_dir) -> None:
    (run_dir / "run.json").write_text('{"run_id": "forged"}\n')
    with pytest.raises(BadInput, match="run.json does not match MANIFEST.sha256"):
        sign_bundle(run_dir, keys["alice"])
    (run_dir / MANIFEST).write_text("0" * 64 + "  ../../etc/passwd\n")
    with pytest.raises(BadInput, match="unsafe path"):
        sign_bundle(run_dir, keys["alice"])
    assert not (run_dir / SIGNATURE).exists()


def test_not_a_key_is_one_line_bad_input(tmp_path, run_dir) -> None:
    junk = tmp_path / "junk"
    junk.write_text("not a key\n")
    with pytest.raises(BadInput, match="could not sign") as caught:
        sign_bundle(run_dir, junk)
    assert "\n" not in str(caught.value)


def test_missing_ssh_keygen_says_what_to_install(monkeypatch, keys, run_dir) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(ReproError, match="openssh-client"):
        sign_bundle(run_dir, keys["alice"])


def test_repro_sign_command(tmp_path, keys, run_dir, capsys) -> None:
    assert main(["sign", str(run_dir), "--key", str(keys["alice"])]) == 0
    out = capsys.readouterr().out
    assert f"signed {run_dir}" in out and f'namespaces="{NAMESPACE}" ssh-ed25519 ' in out
    assert verify_signature(run_dir, _allowed(tmp_path, ("alice@example.org", keys["alice"]))) == "alice@example.org"
    assert main(["sign", str(run_dir), "--key", str(tmp_path / "missing")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith("no such key file") and "\n" not in err


def test_sign_and_check_with_allowed_signers_through_the_cli(tmp_path, keys) -> None:
    """`repro sign`, then `repro check --allowed-signers` names the signer; a tampered manifest
    makes check fail in one line."""
    import subprocess
    import sys

    from tests.fixtures.synthetic import write_bundle

    run = write_bundle(tmp_path / "run1")
    env = {"DOCKER_HOST": "unix:///nonexistent.sock", "PATH": "/usr/bin:/bin"}

    def repro(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "repro", *args], capture_output=True, text=True, env=env)

    assert repro("sign", str(run), "--key", str(keys["alice"])).returncode == 0
    allowed = _allowed(tmp_path, ("alice@example.org", keys["alice"]))
    checked = repro("check", str(run), "--allowed-signers", str(allowed))
    assert "signed: run1 by alice@example.org" in checked.stdout, checked.stdout + checked.stderr
    manifest = run / MANIFEST
    manifest.write_text(manifest.read_text().replace("a", "b", 1))
    tampered = repro("check", str(run), "--allowed-signers", str(allowed))
    assert tampered.returncode != 0 and "signed:" not in tampered.stdout
    assert len((tampered.stdout + tampered.stderr).strip().splitlines()) == 1


def test_render_and_verify_can_require_a_signature(tmp_path, keys, capsys) -> None:
    """`paper render --require-signature` renders a bundle signed by an allowed signer and
    refuses an unsigned one (exit 1, nothing written); `verify --require-signature` needs the
    published bundle, not its results.json."""
    from repro.__main__ import main
    from tests.fixtures.synthetic import write_bundle

    signed, unsigned = write_bundle(tmp_path / "signed" / "run1"), write_bundle(tmp_path / "unsigned" / "run1")
    sign_bundle(signed, keys["alice"])
    allowed = _allowed(tmp_path, ("alice@example.org", keys["alice"]))
    assert (
        main(["paper", "render", str(signed), "--out", str(tmp_path / "ok"), "--require-signature", str(allowed)]) == 0
    )
    assert "signed: run1 by alice@example.org" in capsys.readouterr().out
    # the tables say so
    assert "signature: signed by alice@example.org (verified)" in (tmp_path / "ok" / "results.md").read_text()
    assert (
        main(
            ["paper", "render", str(unsigned), "--out", str(tmp_path / "refused"), "--require-signature", str(allowed)]
        )
        == 1
    )
    assert not (tmp_path / "refused").exists() and "not signed" in capsys.readouterr().err
    published = tmp_path / "ok" / "results.json"
    assert main(["verify", str(signed), "--published", str(published), "--require-signature", str(allowed)]) == 2
    assert main(["verify", str(signed), "--published", str(signed), "--require-signature", str(allowed)]) == 0
    assert main(["verify", str(signed), "--published", str(unsigned), "--require-signature", str(allowed)]) == 1


@pytest.mark.parametrize(
    "argv",
    [
        ["check", "{run}", "--allowed-signers", "{folder}"],
        ["paper", "render", "{run}", "--out", "{out}", "--require-signature", "{folder}"],
        ["verify", "{run}", "--published", "{run}", "--require-signature", "{folder}"],
    ],
    ids=["check", "paper-render", "verify"],
)
def test_a_folder_as_allowed_signers_is_a_usage_error(tmp_path, capsys, argv) -> None:
    """Issue 34: a folder given as the allowed_signers file is bad input (one line, exit 2), said
    before the bundle is looked at, not read as "not signed" (exit 1); nothing is rendered."""
    from repro.__main__ import main
    from tests.fixtures.synthetic import write_bundle

    run, folder = write_bundle(tmp_path / "run1"), tmp_path / "signers"
    folder.mkdir()
    values = {"run": str(run), "folder": str(folder), "out": str(tmp_path / "tables")}
    assert main([word.format(**values) for word in argv]) == 2
    captured = capsys.readouterr()
    assert captured.err.strip() == f"{folder}: a folder, not an allowed_signers file", captured.err
    assert not (tmp_path / "tables").exists()


# ---------------------------------------------------------------- in-toto attestations (issue 25)


def test_the_attestation_verifies_with_the_librarys_own_dsse_verifier(tmp_path, keys) -> None:
    """The DSSE envelope is checked by securesystemslib's verifier, not ours: signed by alice's
    key, an in-toto Statement v1 whose subjects are every file of the bundle with its sha256 and
    whose SLSA v1 predicate names the matrix, the profile, the selection and the pinned inputs."""
    import json

    from cryptography.hazmat.primitives.serialization import load_ssh_public_key
    from securesystemslib.dsse import Envelope
    from securesystemslib.exceptions import VerificationError
    from securesystemslib.signer import SSlibKey

    from repro.bundle.attestation import attest_bundle
    from tests.fixtures.synthetic import write_bundle

    run = write_bundle(tmp_path / "run1")
    path = attest_bundle(run, keys["alice"])
    envelope = Envelope.from_dict(json.loads(path.read_text()))
    alice = SSlibKey.from_crypto(load_ssh_public_key(keys["alice"].with_suffix(".pub").read_bytes()))
    assert list(envelope.verify([alice], 1)) == [alice.keyid]
    statement = json.loads(envelope.payload)
    assert envelope.payload_type == "application/vnd.in-toto+json"
    assert (statement["_type"], statement["predicateType"]) == (
        "https://in-toto.io/Statement/v1",
        "https://slsa.dev/provenance/v1",
    )
    files = {
        p.relative_to(run).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in run.rglob("*")
        if p.is_file() and p != path
    }
    assert {s["name"]: s["digest"]["sha256"] for s in statement["subject"]} == files
    build = statement["predicate"]["buildDefinition"]
    assert set(build["externalParameters"]) == {"matrix", "profile", "selection"}
    names = {d["name"] for d in build["resolvedDependencies"]}
    assert {"harness-tree", "harness-image:repro/harness:k", "suite:synthetic"} <= names and any(
        n.startswith("model:") for n in names
    )
    assert any(n.startswith("chat-template:") for n in names)
    mallory = SSlibKey.from_crypto(load_ssh_public_key(keys["mallory"].with_suffix(".pub").read_bytes()))
    with pytest.raises(VerificationError, match="threshold"):
        envelope.verify([mallory], 1)


def test_check_accepts_the_attestation_alone_and_refuses_it_stale(tmp_path, keys, capsys) -> None:
    """`repro check --allowed-signers` accepts either signature; an attestation by a key nobody
    allowed, or over files that changed since, is refused (exit 1)."""
    from repro.bundle.attestation import attest_bundle
    from repro.bundle.layout.writer import Bundle
    from repro.bundle.redact import Redactor
    from tests.fixtures.synthetic import CANARY, write_bundle

    run = write_bundle(tmp_path / "run1")
    attest_bundle(run, keys["alice"])
    allowed = _allowed(tmp_path, ("alice@example.org", keys["alice"]))
    assert not (run / SIGNATURE).exists()
    capsys.readouterr()
    assert main(["check", str(run), "--allowed-signers", str(allowed)]) == 0
    assert "signed: run1 by alice@example.org (in-toto attestation, DSSE)" in capsys.readouterr().out
    (tmp_path / "mallory").mkdir()
    assert (
        main(
            [
                "check",
                str(run),
                "--allowed-signers",
                str(_allowed(tmp_path / "mallory", ("mallory@example.org", keys["mallory"]))),
            ]
        )
        == 1
    )
    assert "signed by no ed25519 key" in capsys.readouterr().err
    engine_log = next(run.glob("cells/*/engine.log"))
    engine_log.write_text(engine_log.read_text() + "llama server listening\n")
    # a forger's fresh manifest: the attestation still names the old files
    Bundle(run, Redactor(CANARY)).write_manifest()
    assert main(["check", str(run), "--allowed-signers", str(allowed)]) == 1
    assert "subjects are not the bundle's files" in capsys.readouterr().err


def test_check_json_with_allowed_signers_is_json_alone(tmp_path, keys, capsys) -> None:
    """Issue 25, item 10: stdout of `repro check --json --allowed-signers` parses; the signer is a field."""
    import json

    from tests.fixtures.synthetic import write_bundle

    run = write_bundle(tmp_path / "run1")
    sign_bundle(run, keys["alice"])
    allowed = _allowed(tmp_path, ("alice@example.org", keys["alice"]))
    capsys.readouterr()
    assert main(["check", str(run), "--json", "--allowed-signers", str(allowed)]) == 0
    (verdict,) = json.loads(capsys.readouterr().out)
    assert verdict["signer"] == "alice@example.org"
