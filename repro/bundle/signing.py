"""Bundle signatures: a detached SSH signature over a bundle's MANIFEST.sha256.

`sign_bundle` runs `ssh-keygen -Y sign -n repro-bundle` over the manifest and writes
`MANIFEST.sha256.sig` beside it; `verify_signature` finds the signer in an `allowed_signers` file
(`ssh-keygen -Y find-principals`) and checks the signature (`ssh-keygen -Y verify`), returning the
signer's principal. The namespace keeps a bundle signature from being valid as anything else (a
git commit, a file signature) and the other way round.

The manifest names every other file of the bundle with its sha256, so a signature over the
manifest covers them all, as long as the files still match it (`repro check` verifies that). The
manifest must never list the signature itself: the signature is written after the manifest, and
rewriting the manifest (a resume, a merge) invalidates it.

`require_signed` accepts either this signature or the in-toto attestation beside it
(`repro.bundle.attestation`: a DSSE envelope signed with the same ed25519 key), whichever holds.

Every failure is one line: `BadInput` (exit 2) for a missing or strange file or an unusable key,
`SignatureError` (exit 1) for a signature that does not hold or a signer nobody allowed.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
from pathlib import Path, PurePosixPath
from typing import IO

from repro.bundle.layout.names import ATTESTATION, MANIFEST, SIGNATURE
from repro.core.errors import BadInput, ReproError
from repro.core.files import MAX_ALLOWED_SIGNERS_BYTES, MAX_MANIFEST_BYTES, atomic_write, read_regular, sha256_file

NAMESPACE = "repro-bundle"
MAX_SIGNATURE_BYTES = 64 * 1024  # an ed25519 signature is about 300 bytes, RSA-4096 about 900
VERIFY_TIMEOUT_S = 60
SIGN_TIMEOUT_S = 300  # room to type a key's passphrase
MANIFEST_LINE = re.compile(r"^([0-9a-f]{64})  (\S.*)$")
INSTALL_HINT = "install OpenSSH's client tools (Debian/Ubuntu: apt-get install openssh-client)"


class SignatureError(ReproError):
    """A signature that does not hold, or whose signer is not allowed: exit status 1."""

    exit_code = 1


# ---------------------------------------------------------------------------- signing


def sign_bundle(run_dir: Path, key: Path) -> Path:
    """Sign ``run_dir``'s manifest with the SSH key ``key`` (a private key file, or a public
    key whose private half is in ssh-agent); return the signature's path."""
    manifest = _bundle_file(run_dir, MANIFEST)
    if not key.is_file():
        raise BadInput(f"{key}: no such key file")
    _check_manifest(run_dir, manifest)
    command = [_ssh_keygen(), "-Y", "sign", "-f", str(key.absolute()), "-n", NAMESPACE]
    with manifest.open("rb") as message:
        done = _run(command, message, SIGN_TIMEOUT_S)
    if done.returncode != 0 or not done.stdout.startswith(b"-----BEGIN SSH SIGNATURE-----"):
        raise BadInput(f"{key}: ssh-keygen could not sign with this key: {_reason(done)}")
    target = run_dir / SIGNATURE
    atomic_write(target, done.stdout)  # 0644; the dot-prefixed temporary file is never in a manifest
    return target


def _check_manifest(run_dir: Path, manifest: Path) -> None:
    """Refuse to vouch for a manifest that does not match the files it lists."""
    manifest_entries(run_dir, manifest)


def manifest_entries(run_dir: Path, manifest: Path | None = None) -> list[tuple[str, str]]:
    """(sha256, path) of every file the manifest lists, each checked against the file as it is
    now; BadInput for a line that is not an entry, a signature listed, or a file that differs."""
    manifest = manifest or _bundle_file(run_dir, MANIFEST)
    entries = []
    for number, line in enumerate(
        read_regular(manifest, MAX_MANIFEST_BYTES).decode("utf-8", "replace").splitlines(), start=1
    ):
        match = MANIFEST_LINE.match(line)
        if not match:
            raise BadInput(f"{manifest}:{number}: not a manifest line (sha256, two spaces, a path)")
        digest, name = match.groups()
        if name in (SIGNATURE, ATTESTATION):
            raise BadInput(f"{manifest}:{number}: the manifest lists {name}, which signs the manifest itself")
        path = _bundle_file(run_dir, name)
        if sha256_file(path) != digest:
            raise BadInput(f"{run_dir}: {name} does not match {MANIFEST}; run repro check before signing")
        entries.append((digest, name))
    return entries


# ---------------------------------------------------------------------------- verifying


def verify_signature(run_dir: Path, allowed_signers: Path) -> str:
    """The principal (from ``allowed_signers``) whose key signed ``run_dir``'s manifest under the
    ``repro-bundle`` namespace. ``SignatureError`` when the bundle is unsigned, the signer is not
    allowed, or the signature does not hold for the manifest as it is now."""
    allowed = _allowed_signers(allowed_signers)
    manifest = _bundle_file(run_dir, MANIFEST)
    if not exists_plain(run_dir / SIGNATURE):
        raise SignatureError(f"{run_dir}: not signed (no {SIGNATURE}); sign it with repro sign")
    signature = _bundle_file(run_dir, SIGNATURE)
    read_regular(signature, MAX_SIGNATURE_BYTES)
    principals = _find_principals(signature, allowed)
    reasons = []
    for principal in principals:
        with manifest.open("rb") as message:
            done = _run(
                [
                    _ssh_keygen(),
                    "-Y",
                    "verify",
                    "-f",
                    allowed,
                    "-I",
                    principal,
                    "-n",
                    NAMESPACE,
                    "-s",
                    str(signature.absolute()),
                ],
                message,
                VERIFY_TIMEOUT_S,
            )
        if done.returncode == 0:
            return principal
        reasons.append(_reason(done))
    raise SignatureError(
        f"{signature}: does not hold for {MANIFEST} as signed by {', '.join(principals)} ({reasons[0]}): "
        "the manifest changed after signing"
    )


def _allowed_signers(path: Path) -> str:
    require_allowed_signers(path)
    read_regular(path, MAX_ALLOWED_SIGNERS_BYTES, follow_links=True)
    return str(path.absolute())


def require_allowed_signers(path: Path) -> None:
    """An allowed_signers file given by the user is a file: a folder or a missing path is bad input
    (exit 2), said before any bundle is looked at, never read as "not signed" (exit 1)."""
    if path.is_dir():
        raise BadInput(f"{path}: a folder, not an allowed_signers file")
    if not path.is_file():
        raise BadInput(f"{path}: no such allowed_signers file")


def _find_principals(signature: Path, allowed: str) -> list[str]:
    done = _run(
        [_ssh_keygen(), "-Y", "find-principals", "-s", str(signature.absolute()), "-f", allowed], None, VERIFY_TIMEOUT_S
    )
    principals = [line.strip() for line in done.stdout.decode("utf-8", "replace").splitlines() if line.strip()][:16]
    if done.returncode != 0 or not principals:
        raise SignatureError(f"{signature}: signed by no key that {allowed} allows ({_reason(done)})")
    return principals


# ---------------------------------------------------------------------------- files and ssh-keygen


def _bundle_file(run_dir: Path, name: str) -> Path:
    """A regular file inside the bundle, reached without following a link."""
    relative = PurePosixPath(name)
    if relative.is_absolute() or ".." in relative.parts or not relative.parts:
        raise BadInput(f"{run_dir}: unsafe path {name[:120]!r} in the bundle")
    info = _lstat(run_dir)
    if info is None or not stat.S_ISDIR(info.st_mode):
        raise BadInput(f"{run_dir}: not a bundle folder")
    path = run_dir
    for part in relative.parts:
        path = path / part
        info = _lstat(path)
        if info is None:
            raise BadInput(f"{path}: missing from the bundle")
        if stat.S_ISLNK(info.st_mode):
            raise BadInput(f"{path}: a link in the bundle (links are never followed)")
    if not stat.S_ISREG(info.st_mode):
        raise BadInput(f"{path}: not a regular file")
    return path


def _lstat(path: Path) -> os.stat_result | None:
    try:
        return path.lstat()
    except FileNotFoundError:
        return None
    except OSError as error:
        raise BadInput(f"{path}: cannot read: {error.strerror or error}") from None


def exists_plain(path: Path) -> bool:
    return _lstat(path) is not None


def _ssh_keygen() -> str:
    found = shutil.which("ssh-keygen")
    if found is None:
        raise ReproError(f"ssh-keygen not found: {INSTALL_HINT}")
    return found


def _run(command: list[str], stdin: IO[bytes] | None, timeout: float) -> subprocess.CompletedProcess[bytes]:
    try:
        return subprocess.run(
            command,
            stdin=stdin if stdin is not None else subprocess.DEVNULL,
            capture_output=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise ReproError(f"ssh-keygen -Y {command[2]} did not finish within {timeout:.0f} s") from None
    except OSError as error:
        raise ReproError(f"cannot run ssh-keygen: {error.strerror or error}; {INSTALL_HINT}") from None


def _reason(done: subprocess.CompletedProcess[bytes]) -> str:
    """The last line ssh-keygen wrote on stderr that says something (not its progress chatter)."""
    for stream in (done.stderr, done.stdout):
        lines = [line.strip() for line in stream.decode("utf-8", "replace").splitlines()]
        meaningful = [
            line for line in lines if line and not line.startswith(("Signing data on standard input", "-----"))
        ]
        if meaningful:
            return meaningful[-1][:200]
    return f"ssh-keygen exit status {done.returncode}"
