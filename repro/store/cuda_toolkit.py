"""Which CUDA architectures an engine image is built for, and which toolkit can build them.

The CUDA image is compiled for exactly the compute capabilities its profiles name (one, with
`--profile`), each as machine code (SASS) and PTX. Not every toolkit builds every capability for
this llama.cpp: Debian's CUDA 11.8 (the offline build) lacks device APIs that current ggml uses on
sm_90, so llama-cpp-python dropped sm_90 from its CUDA 11.8 wheels (its pull request 2238). A
profile that needs another toolkit says so in one line when the plan is made, not deep in a
two-hour build. `parse_cuobjdump` reads what a built binary embeds (`cuobjdump --list-elf` and
`--list-ptx`), for the image test and for the build's own check (images/llama-cpp/Dockerfile.cuda).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable

from pydantic import BaseModel, ConfigDict

from repro.core.errors import BadInput
from repro.spec.profiles import Profile

CUDA_BASES_ENV = "REPRO_CUDA_BASES"


class Toolkit(BaseModel):
    """A CUDA toolkit the image can be built with, and what it builds for llama.cpp b11434."""

    model_config = ConfigDict(frozen=True)

    choice: str  # the REPRO_CUDA_BASES value that selects it
    name: str
    version: str
    min_driver: int  # the oldest driver branch its runtime runs on (without forward compatibility)
    architectures: tuple[str, ...]  # CMake architectures ("75") it builds this llama.cpp for


TOOLKITS = {
    "offline": Toolkit(
        choice="offline",
        name="Debian's nvidia-cuda-toolkit",
        version="11.8",
        min_driver=520,
        architectures=("75", "80", "86", "89"),
    ),
    "registry": Toolkit(
        choice="registry",
        name="nvidia/cuda 12.4.1",
        version="12.4",
        min_driver=550,
        architectures=("75", "80", "86", "89", "90"),
    ),
}


def current_toolkit() -> Toolkit:
    """The toolkit a CUDA build uses now (REPRO_CUDA_BASES; offline by default)."""
    choice = os.environ.get(CUDA_BASES_ENV, "offline")
    if choice not in TOOLKITS:
        raise BadInput(f"{CUDA_BASES_ENV}={choice}: expected offline or registry")
    return TOOLKITS[choice]


def architecture(compute_capability: str) -> str:
    """ "7.5" -> "75" (CMake's CUDA_ARCHITECTURES and cuobjdump's sm_75)."""
    if not re.fullmatch(r"\d+\.\d", compute_capability):
        raise BadInput(f"compute capability '{compute_capability}': expected MAJOR.MINOR such as 7.5")
    return compute_capability.replace(".", "")


def unbuildable(profile: Profile, profile_name: str, toolkit: Toolkit) -> str | None:
    """One line when the toolkit cannot build the profile's architecture, else None."""
    if profile.engine_variant != "cuda" or profile.compute_capability is None:
        return None
    return unbuildable_capability(profile.compute_capability, f"profile {profile_name}", toolkit)


def unbuildable_capability(compute_capability: str, who: str, toolkit: Toolkit) -> str | None:
    """One line when the toolkit cannot build this compute capability, with the toolkit that can."""
    arch = architecture(compute_capability)
    if arch in toolkit.architectures:
        return None
    others = [t for t in TOOLKITS.values() if arch in t.architectures]
    fix = (
        f"; build with {CUDA_BASES_ENV}={others[0].choice} ({others[0].name}, CUDA {others[0].version})"
        if others
        else ""
    )
    return (
        f"{who} needs compute capability {compute_capability}, which {toolkit.name} (CUDA {toolkit.version}) "
        f"cannot build for this llama.cpp{fix}"
    )


def profile_architectures(profiles: Iterable[Profile], toolkit: Toolkit) -> list[str]:
    """Every architecture the CUDA profiles name that the toolkit builds, in order."""
    wanted = {
        architecture(p.compute_capability) for p in profiles if p.engine_variant == "cuda" and p.compute_capability
    }
    return sorted(wanted & set(toolkit.architectures), key=int)


class EmbeddedCode(BaseModel):
    """The architectures a binary carries as machine code (ELF/SASS) and as PTX."""

    elf: list[str] = []
    ptx: list[str] = []


LISTED = re.compile(r"^(ELF|PTX) file\s+\d+:\s*\S*?\.sm_(\d+)[a-z]?\.(?:cubin|ptx)\s*$")


def parse_cuobjdump(text: str) -> EmbeddedCode:
    """`cuobjdump --list-elf` / `--list-ptx` output: `ELF file 1: llama-server.1.sm_75.cubin`,
    `PTX file 1: llama-server.1.sm_75.ptx`. Architectures sorted, each once."""
    elf: set[str] = set()
    ptx: set[str] = set()
    for line in text.splitlines():
        if listed := LISTED.match(line.strip()):
            (elf if listed.group(1) == "ELF" else ptx).add(listed.group(2))
    return EmbeddedCode(elf=sorted(elf, key=int), ptx=sorted(ptx, key=int))


def embedded_problems(code: EmbeddedCode, architectures: list[str]) -> list[str]:
    """The binary must carry each architecture asked for as both SASS and PTX, and no other."""
    wanted = sorted(set(architectures), key=int)
    return [
        f"the binary's {kind} code is for {', '.join('sm_' + a for a in found) or 'no architecture'}, "
        f"not {', '.join('sm_' + a for a in wanted)}"
        for kind, found in (("machine (ELF)", code.elf), ("PTX", code.ptx))
        if found != wanted
    ]
