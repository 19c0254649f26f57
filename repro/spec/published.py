"""Where other projects publish the inputs the project's matrices pin, as facts: a sha256 and where
a reviewer gets those bytes. A bundle's reference (repro.bundle.records.InputReference) names it,
so a reviewer knows where to fetch what the bundle does not carry; an input not listed here is
named by its pin (a PyPI release, a repository at a commit, an archive's name and sha256)."""

from __future__ import annotations

PUBLISHED: dict[str, str] = {
    # Tholos-Bench's 160 scenario files, published as loose files, pinned as `repro suites pack` packs them
    "6966a9848aef9a90c644b9014e9f30361a9a1d72f5bce27a6b05aa61f761f343": (
        "the Tholos-Bench scenario files (160, Apache-2.0) as published in the public repository "
        "mertkayacs/tholos; pinned as `repro suites pack FOLDER` packs them (docs/external-suites.md)"
    ),
    # Tholos-Bench's runner, tholos 0.1.2: no release on a package registry
    "48e6604a17753b65322ba8e73fc03202a1b3811f176e3691f7deb5243609e466": (
        "Tholos-Bench's runner (tholos 0.1.2, Apache-2.0), files of the public repository mertkayacs/tholos at "
        "commits f9836a06, 7539179d, dc0d6b2a, 28e15256, b95f6954 and ac9a33ba, packed deterministically as "
        "docs/external-suites.md says"
    ),
}


def published_at(sha256: str, pin: str) -> str:
    """Where the input with this sha256 is published: the facts above, else its pin in words."""
    return PUBLISHED.get(sha256) or f"{pin} (sha256 {sha256[:12]})"
