"""Who vouches for a bundle: either kind of signature (the SSH signature over the manifest,
repro.bundle.signing, or the in-toto attestation's DSSE envelope, repro.bundle.attestation), the
first present that holds."""

from __future__ import annotations

from pathlib import Path

from repro.bundle.attestation import verify_attestation
from repro.bundle.layout.discovery import find_runs
from repro.bundle.layout.names import ATTESTATION, SIGNATURE
from repro.bundle.signing import SignatureError, exists_plain, require_allowed_signers, verify_signature


def require_signed(paths: list[Path], allowed_signers: Path) -> list[tuple[Path, str]]:
    """Every run under `paths` with its signer from `allowed_signers`; SignatureError at the first
    run that is not signed by one of them (what --require-signature and --allowed-signers ask).
    Either signature serves: the SSH signature over the manifest or the in-toto attestation's
    DSSE envelope; the signer is named with the kind that held. An allowed_signers that is not a
    file is BadInput before any run is looked at."""
    require_allowed_signers(allowed_signers)
    return [(run_dir, signed_by(run_dir, allowed_signers)) for path in paths for run_dir in find_runs(path)]


def signed_by(run_dir: Path, allowed_signers: Path) -> str:
    """Who signed the bundle, by the first signature present that holds; the first failure when
    none does, "not signed" when there is none."""
    kinds = [(SIGNATURE, verify_signature, ""), (ATTESTATION, verify_attestation, " (in-toto attestation, DSSE)")]
    present = [(verify, label) for name, verify, label in kinds if exists_plain(run_dir / name)]
    if not present:
        raise SignatureError(f"{run_dir}: not signed (no {SIGNATURE} or {ATTESTATION}); sign it with repro sign")
    failures: list[SignatureError] = []
    for verify, label in present:
        try:
            return verify(run_dir, allowed_signers) + label
        except SignatureError as error:
            failures.append(error)
    raise failures[0]
