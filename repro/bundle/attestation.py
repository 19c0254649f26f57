"""Bundle attestations: an in-toto Statement v1 with a SLSA v1 provenance predicate, signed in a
DSSE envelope (ed25519), written beside the SSH signature as `MANIFEST.sha256.intoto.jsonl`.

The statement's subjects are every file of the bundle with its sha256 (the manifest's entries and
the manifest itself). Its predicate (`https://slsa.dev/provenance/v1`) says how the bundle was
made: external parameters (the matrix, the profile and the selection: `--only`, the shard, the
planned cells), resolved dependencies (each GGUF, engine image and its pinned source archive, the
harness image, its source tree and wheel lock, each chat template, each suite and its source
archive), the builder (repro's version and the project commit) and the start and finish times.

The envelope is signed with the same ed25519 key as `repro sign` (an OpenSSH or PEM private key
file), so the reviewer's `allowed_signers` file serves for both: `verify_attestation` accepts a
signature by any ssh-ed25519 key it lists for the `repro-bundle` namespace, then requires every
subject to match the bundle's files as they are. The envelope follows the DSSE specification and
is verified by securesystemslib's own DSSE code, so any in-toto tooling reads it too.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any

from repro import __version__
from repro.bundle.layout.names import ATTESTATION, MANIFEST
from repro.bundle.layout.reader import BundleReader
from repro.bundle.signing import NAMESPACE, SignatureError, manifest_entries
from repro.core.errors import BadInput
from repro.core.files import MAX_ALLOWED_SIGNERS_BYTES, atomic_write, read_regular, sha256_file

STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
PREDICATE_TYPE = "https://slsa.dev/provenance/v1"
PAYLOAD_TYPE = "application/vnd.in-toto+json"
BUILD_TYPE = "urn:repro:bundle:v1"  # what the external parameters mean: a repro matrix run on a profile
MAX_ATTESTATION_BYTES = 16 * 1024**2
NAMESPACES_OPTION = re.compile(r'namespaces="([^"]*)"', re.IGNORECASE)


# ---------------------------------------------------------------------------- the statement


def statement(run_dir: Path) -> dict[str, Any]:
    """The in-toto Statement v1 for a bundle whose files match its manifest."""
    entries = manifest_entries(run_dir)
    subjects = [{"name": name, "digest": {"sha256": digest}} for digest, name in entries]
    subjects.append({"name": MANIFEST, "digest": {"sha256": sha256_file(run_dir / MANIFEST)}})
    return {
        "_type": STATEMENT_TYPE,
        "subject": subjects,
        "predicateType": PREDICATE_TYPE,
        "predicate": provenance(run_dir),
    }


def provenance(run_dir: Path) -> dict[str, Any]:
    """The SLSA v1 provenance predicate of a bundle, from its run.json and cell.json files."""
    bundle = BundleReader(run_dir)
    run = bundle.run()
    records = [bundle.cell(cell_id) for cell_id in bundle.cell_ids()]
    external = {
        "matrix": {"path": run.matrix.path, "name": run.matrix.name, "sha256": run.matrix.sha256},
        "profile": {"name": run.profile, "settings": run.profile_settings.model_dump(mode="json")},
        "selection": {
            "only": run.only,
            "shard": run.shard,
            "planned_cells": run.planned_cells,
            "excluded_cells": run.excluded_cells,
        },
    }
    return {
        "buildDefinition": {
            "buildType": BUILD_TYPE,
            "externalParameters": external,
            "resolvedDependencies": dependencies(run, records),
        },
        "runDetails": {
            "builder": {
                "id": f"urn:repro:{__version__}:{run.source.commit or 'uncommitted'}",
                "version": {"repro": __version__, "commit": run.source.commit or ""},
            },
            "metadata": {"invocationId": run.run_id, "startedOn": run.started_at, "finishedOn": run.finished_at or ""},
        },
    }


def dependencies(run: Any, records: list[Any]) -> list[dict[str, Any]]:
    """Every pinned input, once each, as SLSA resource descriptors (name and sha256)."""
    found: dict[str, dict[str, Any]] = {}

    def add(name: str, digest: str | None, **annotations: str) -> None:
        if digest:
            found.setdefault(
                name,
                {
                    "name": name,
                    "digest": {"sha256": digest.removeprefix("sha256:")},
                    **({"annotations": annotations} if annotations else {}),
                },
            )

    add("harness-tree", run.source.harness_digest)
    for model_id, facts in sorted(run.chat_templates.items()):
        add(f"chat-template:{model_id}", facts.sha256)
    for record in records:
        cell = record.cell
        add(f"model:{cell.model.id}", cell.model.sha256, file_size=str(cell.model.file_size))
        if cell.engine.build is not None:
            add(f"engine-source:{cell.engine.id}", cell.engine.build.source.sha256)
        if record.engine_image:
            add(
                f"engine-image:{record.engine_image.reference}",
                record.engine_image.id,
                pinned_by=record.engine_image.pinned_by,
            )
        if record.harness_image:
            add(f"harness-image:{record.harness_image.reference}", record.harness_image.id)
            add("harness-wheel-lock", record.harness_image.labels.get("repro.requirements_sha256"))
        add(f"suite:{cell.suite.id}", record.suite_sha256)
        if cell.suite.source is not None:
            add(f"suite-source:{cell.suite.id}", cell.suite.source.sha256)
    return list(found.values())


# ---------------------------------------------------------------------------- signing


def attest_bundle(run_dir: Path, key: Path) -> Path:
    """Write the bundle's statement, signed in a DSSE envelope with the ed25519 private key file
    ``key`` (OpenSSH or PEM, without a passphrase), as one JSON line; return its path."""
    from securesystemslib.dsse import Envelope
    from securesystemslib.signer import CryptoSigner, SSlibKey

    private = _ed25519_private_key(key)
    signer = CryptoSigner(private, SSlibKey.from_crypto(private.public_key()))
    payload = json.dumps(statement(run_dir), sort_keys=True, separators=(",", ":")).encode()
    envelope = Envelope(payload=payload, payload_type=PAYLOAD_TYPE, signatures={})
    envelope.sign(signer)
    target = run_dir / ATTESTATION
    atomic_write(target, (json.dumps(envelope.to_dict(), sort_keys=True) + "\n").encode())
    return target


def _ed25519_private_key(key: Path) -> Any:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from cryptography.hazmat.primitives.serialization import load_pem_private_key, load_ssh_private_key

    data = read_regular(key, 64 * 1024, follow_links=True) if key.is_file() else None
    if data is None:
        raise BadInput(f"{key}: no such key file (a DSSE attestation needs the private key file, not ssh-agent)")
    for load in (load_ssh_private_key, load_pem_private_key):
        try:
            private = load(data, password=None)
        except (ValueError, TypeError):
            continue
        if isinstance(private, Ed25519PrivateKey):
            return private
        raise BadInput(f"{key}: not an ed25519 key (a DSSE attestation is signed with ed25519)")
    raise BadInput(f"{key}: not a private key file without a passphrase (OpenSSH or PEM)")


# ---------------------------------------------------------------------------- verifying


def verify_attestation(run_dir: Path, allowed_signers: Path) -> str:
    """The principal whose ed25519 key (from ``allowed_signers``) signed the bundle's DSSE
    envelope, once the statement's subjects are the bundle's files as they are now.
    ``SignatureError`` when the envelope is missing, signed by no allowed key, or stale."""
    from securesystemslib.dsse import Envelope
    from securesystemslib.exceptions import VerificationError

    principals = allowed_keys(allowed_signers)
    path = run_dir / ATTESTATION
    if not path.is_file() or path.is_symlink():
        raise SignatureError(f"{run_dir}: no attestation ({ATTESTATION}); sign it with repro sign")
    try:
        envelope = Envelope.from_dict(json.loads(read_regular(path, MAX_ATTESTATION_BYTES)))
        accepted = envelope.verify(list(principals.values()), 1)
    except VerificationError as error:
        raise SignatureError(
            f"{path}: signed by no ed25519 key that {allowed_signers} allows ({str(error)[:160]})"
        ) from None
    except (ValueError, KeyError, TypeError, AttributeError) as error:
        raise SignatureError(f"{path}: not a DSSE envelope ({str(error)[:160]})") from None
    _check_statement(run_dir, envelope.payload_type, envelope.payload)
    keyid = next(iter(accepted))
    return next(principal for principal, key in principals.items() if key.keyid == keyid)


def _check_statement(run_dir: Path, payload_type: str, payload: bytes) -> None:
    """The envelope holds an in-toto statement whose subjects are exactly this bundle's files."""
    if payload_type != PAYLOAD_TYPE:
        raise SignatureError(f"{run_dir / ATTESTATION}: payload type {payload_type[:80]!r}, not {PAYLOAD_TYPE}")
    try:
        signed = json.loads(payload)
        subjects = {s["name"]: s["digest"]["sha256"] for s in signed["subject"]}
        kind = (signed["_type"], signed["predicateType"])
    except (ValueError, KeyError, TypeError) as error:
        raise SignatureError(f"{run_dir / ATTESTATION}: not an in-toto statement ({str(error)[:120]})") from None
    if kind != (STATEMENT_TYPE, PREDICATE_TYPE):
        raise SignatureError(
            f"{run_dir / ATTESTATION}: a {kind[0]} with a {kind[1]} predicate, not a repro provenance statement"
        )
    try:
        now = {name: digest for digest, name in manifest_entries(run_dir)} | {MANIFEST: sha256_file(run_dir / MANIFEST)}
    except BadInput as error:
        raise SignatureError(f"{run_dir}: the bundle does not match its manifest ({error})") from None
    if subjects != now:
        changed = sorted(set(subjects.items()) ^ set(now.items()))
        raise SignatureError(
            f"{run_dir / ATTESTATION}: its subjects are not the bundle's files as they are now "
            f"(first: {changed[0][0][:120]})"
        )


def allowed_keys(allowed_signers: Path) -> dict[str, Any]:
    """principal -> SSlibKey for every ssh-ed25519 key the file allows under the repro-bundle
    namespace (the allowed_signers format of ssh-keygen; other key types cannot verify DSSE here)."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
    from cryptography.hazmat.primitives.serialization import load_ssh_public_key
    from securesystemslib.signer import SSlibKey

    if not allowed_signers.is_file():
        raise BadInput(f"{allowed_signers}: no such allowed_signers file")
    keys: dict[str, Any] = {}
    for line in (
        read_regular(allowed_signers, MAX_ALLOWED_SIGNERS_BYTES, follow_links=True)
        .decode("utf-8", "replace")
        .splitlines()
    ):
        parsed = _signer_line(line)
        if parsed is None:
            continue
        principals, key_text = parsed
        try:
            public = load_ssh_public_key(key_text.encode())
        except (ValueError, TypeError):
            continue
        if not isinstance(public, Ed25519PublicKey):  # the lines kept are ssh-ed25519 (_signer_line)
            continue
        key = SSlibKey.from_crypto(public)
        for principal in principals:
            keys.setdefault(principal, key)
    return keys


def _signer_line(line: str) -> tuple[list[str], str] | None:
    """(principals, "ssh-ed25519 BASE64") of an allowed_signers line that allows the repro-bundle
    namespace with an ed25519 key; None for anything else (comments, other keys, other namespaces)."""
    try:
        fields = shlex.split(line, comments=True)
    except ValueError:
        return None
    if "ssh-ed25519" not in fields[1:] or fields.index("ssh-ed25519") + 1 >= len(fields):
        return None
    at = fields.index("ssh-ed25519")
    namespaces = NAMESPACES_OPTION.search(line)  # without the option, a key is valid in every namespace
    if namespaces is not None and NAMESPACE not in namespaces.group(1).split(","):
        return None
    return fields[0].split(","), f"ssh-ed25519 {fields[at + 1]}"
