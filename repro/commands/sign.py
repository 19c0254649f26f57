"""`repro sign BUNDLE --key KEY`: a detached SSH signature over the bundle's manifest, and an
in-toto attestation (SLSA provenance in a DSSE envelope) signed with the same ed25519 key."""

from __future__ import annotations

from pathlib import Path

import typer

from repro.bundle.attestation import attest_bundle
from repro.bundle.signing import NAMESPACE, sign_bundle
from repro.core.errors import BadInput


def sign(
    bundle: Path = typer.Argument(..., help="A run folder (results/<run-id>) whose MANIFEST.sha256 to sign."),
    key: Path = typer.Option(
        ..., "--key", help="An SSH private key, or a public key whose private half is in ssh-agent."
    ),
) -> None:
    """Sign a bundle's MANIFEST.sha256 with an SSH key (ssh-keygen -Y sign, namespace repro-bundle)
    and, with an ed25519 private key file, write its in-toto attestation in a DSSE envelope.

    Exit codes: 0 signed; 1 ssh-keygen failed; 2 bad input."""
    signature = sign_bundle(bundle, key)
    typer.echo(f"signed {bundle}: {signature}")
    try:
        typer.echo(f"attested {bundle}: {attest_bundle(bundle, key)}")
    except BadInput as error:
        typer.echo(f"no in-toto attestation written: {error}", err=True)
    public = key if key.suffix == ".pub" else key.with_name(key.name + ".pub")
    if public.is_file():
        typer.echo(
            f'reviewers verify with this allowed_signers line: <your principal> namespaces="{NAMESPACE}" '
            f"{public.read_text().strip()}"
        )
