"""The pinned inputs of a number, as a claim states them and as a rerun ran them, and the one
comparison of the two that `repro verify --claims` and `repro verify --published` both use.

A claim is about its setup: "137 of 160 on a T4, llama.cpp fdf5818, Q4_K_M, temperature 0". A
rerun that ran another engine, build, variant, quant, template, decoding, harness, accelerator or
thread count did not rerun that claim, whatever its count: every input the claim states is
compared with the rerun's (an input the claim leaves out is not compared), and each difference
has a name a reviewer may accept (`--accept threads,hardware`). A difference not accepted turns
the verdict into one "ON ANOTHER SETUP" and fails the verify.

Where the claim and the rerun are the same exact setup (a CPU engine, the same threads, one slot,
prompt cache off, the same engine build, model bytes and harness, every one of them stated), the
claim promises identity: `exactness` says so, and the verdict allows no tolerance there.
"""

from __future__ import annotations

from pydantic import BaseModel

from repro.core.errors import BadInput
from repro.spec.harnesses import HarnessPin

# The names of the inputs a reviewer may accept as differing (--accept), and what each covers.
ACCEPTABLE: dict[str, str] = {
    "quant": "the model's quantisation",
    "model-file": "the GGUF's size",
    "chat-template": "the chat template the model was shown the task through",
    "engine": "the engine kind (llama.cpp, ollama)",
    "engine-build": "the engine's build or version",
    "engine-variant": "the engine image variant (cpu, cuda)",
    "harness": "the harness's version, commit, tree digest or archive",
    "temperature": "the sampling temperature",
    "seed": "the sampling seed",
    "max-tokens": "the tokens per step",
    "context": "the context size",
    "profile": "the repro hardware profile",
    "hardware": "the accelerator (a GPU by name and driver, or none) and the host CPU",
    "threads": "the threads per engine",
    "slots": "the parallel sequences per engine",
    "prompt-cache": "the engine's prompt cache",
}
SAME_KERNELS = "engine kernels the same on both"
HEX = frozenset("0123456789abcdef")
SHORT_COMMIT = 7  # the shortest commit hash that names a build (git's default abbreviation)


class TemplatePin(BaseModel):
    source: str
    sha256: str | None = None


class Pins(BaseModel):
    """Every input a number depends on beyond its model bytes, protocol and scenarios, as one side
    states it (None: not stated). A rerun states all it recorded."""

    quant: str | None = None
    file_size: int | None = None  # bytes
    file_size_gb: float | None = None  # as a source prints it (two decimals)
    chat_template: TemplatePin | None = None
    engine_kind: str | None = None
    engine_build: str | None = None  # a claim's one name of the build
    engine_names: list[str] = []  # a rerun's every name of its build (identity, label, commit, bN)
    engine_variant: str | None = None
    harness: HarnessPin | None = None
    temperature: float | None = None
    seed: int | None = None
    max_tokens: int | None = None
    context: int | None = None
    profile: str | None = None
    accelerator: str | None = None
    accelerator_stated: bool = False  # "accelerator: null" (a CPU) is a statement; absence is not
    driver_version: str | None = None  # the GPU driver
    cpu_model: str | None = None  # the host CPU (its kernels can change a CPU engine's sums)
    kernels: str | None = None  # the engine's instruction set (shown beside a CPU difference, never compared)
    threads: int | None = None
    slots: int | None = None
    cache_prompt: bool | None = None


class InputDifference(BaseModel):
    name: str  # an ACCEPTABLE name
    what: str  # as printed: "threads per engine"
    claimed: str
    rerun: str
    accepted: bool = False
    note: str | None = None  # what else a reader needs beside it (a CPU difference: both kernel sets)

    def describe(self) -> str:
        accepted = " (accepted by --accept)" if self.accepted else ""
        note = f"; {self.note}" if self.note else ""
        return f"{self.what} differs: {self.claimed} claimed, {self.rerun} rerun{accepted}{note}"


def parse_accept(values: list[str]) -> frozenset[str]:
    """--accept a,b --accept c: the names, each one of ACCEPTABLE (else one line, exit 2)."""
    names = frozenset(name.strip() for value in values for name in value.split(",") if name.strip())
    unknown = sorted(names - set(ACCEPTABLE))
    if unknown:
        raise BadInput(f"--accept {unknown[0]}: not an input name; known: {', '.join(ACCEPTABLE)}")
    return names


def differences(claimed: Pins, rerun: Pins, accept: frozenset[str] = frozenset()) -> list[InputDifference]:
    """Every input `claimed` states that `rerun` ran otherwise, each marked accepted or not."""
    found = (
        plain_differences(claimed, rerun)
        + build_differences(claimed, rerun)
        + harness_differences(claimed.harness, rerun.harness)
    )
    found += size_differences(claimed, rerun) + hardware_differences(claimed, rerun)
    return [d.model_copy(update={"accepted": d.name in accept}) for d in found]


def plain_differences(claimed: Pins, rerun: Pins) -> list[InputDifference]:
    compared = [
        ("quant", "quant", "quant"),
        ("engine", "engine", "engine_kind"),
        ("engine-variant", "engine variant", "engine_variant"),
        ("temperature", "temperature", "temperature"),
        ("seed", "seed", "seed"),
        ("max-tokens", "max tokens per step", "max_tokens"),
        ("context", "context", "context"),
        ("profile", "hardware profile", "profile"),
        ("hardware", "GPU driver", "driver_version"),
        ("hardware", "CPU", "cpu_model"),
        ("threads", "threads per engine", "threads"),
        ("slots", "engine slots", "slots"),
        ("prompt-cache", "prompt cache", "cache_prompt"),
    ]
    return [
        InputDifference(
            name=name,
            what=what,
            claimed=shown(getattr(claimed, field)),
            rerun=shown(getattr(rerun, field)),
            note=kernels_note(claimed.kernels, rerun.kernels) if field == "cpu_model" else None,
        )
        for name, what, field in compared
        if getattr(claimed, field) is not None and getattr(claimed, field) != getattr(rerun, field)
    ]


def kernels_note(claimed: str | None, rerun: str | None) -> str:
    """Both sides' engine kernels, beside a CPU difference: a CPU engine's sums follow the
    instruction set it computes with, not the CPU's name."""
    if claimed is not None and claimed == rerun:
        return f"{SAME_KERNELS}: {claimed}"
    return f"engine kernels: {claimed or 'not recorded'} claimed, {rerun or 'not recorded'} rerun"


def build_differences(claimed: Pins, rerun: Pins) -> list[InputDifference]:
    """The engine build by any of its names (a short and a full commit hash of one build agree),
    and the chat template by its source and bytes."""
    found = []
    if claimed.engine_build is not None and not any(
        same_build(claimed.engine_build, name) for name in rerun.engine_names
    ):
        found.append(
            InputDifference(
                name="engine-build",
                what="engine build",
                claimed=claimed.engine_build,
                rerun=(rerun.engine_names or ["-"])[0],
            )
        )
    template, served = claimed.chat_template, rerun.chat_template
    if template is not None and (
        served is None or (template.source, template.sha256 or served.sha256) != (served.source, served.sha256)
    ):
        found.append(
            InputDifference(
                name="chat-template",
                what="chat template",
                claimed=template_label(template),
                rerun=template_label(served),
            )
        )
    return found


def same_build(claimed: str, name: str) -> bool:
    """One build under two names: equal, or two hashes of which one abbreviates the other."""
    a, b = claimed.strip().lower(), name.strip().lower()
    if a == b:
        return True
    short, long = sorted((a, b), key=len)
    return len(short) >= SHORT_COMMIT and set(short) <= HEX and set(long) <= HEX and long.startswith(short)


def harness_differences(claimed: HarnessPin | None, rerun: HarnessPin | None) -> list[InputDifference]:
    """The harness's pin: its version and archive; ours by its tree digest where the claim states
    one (the commit then only says where it came from), else by its commit."""
    if claimed is None:
        return []
    rerun = rerun or HarnessPin(name="-")
    fields = [("version", "version"), ("archive sha256", "archive_sha256"), ("tree digest", "tree_digest")]
    if claimed.tree_digest is None:
        fields.append(("commit", "commit"))
    found = []
    for what, field in fields:
        stated, ran = getattr(claimed, field), getattr(rerun, field)
        if stated is not None and not (
            ran is not None and (stated == ran or (field == "commit" and same_build(stated, ran)))
        ):
            found.append(
                InputDifference(name="harness", what=f"harness {what}", claimed=shown(stated), rerun=shown(ran))
            )
    return found


def size_differences(claimed: Pins, rerun: Pins) -> list[InputDifference]:
    found = []
    if claimed.file_size is not None and rerun.file_size is not None and claimed.file_size != rerun.file_size:
        found.append(
            InputDifference(
                name="model-file",
                what="file size",
                claimed=f"{claimed.file_size} bytes",
                rerun=f"{rerun.file_size} bytes",
            )
        )
    if (
        claimed.file_size_gb is not None
        and rerun.file_size is not None
        and abs(rerun.file_size / 1e9 - claimed.file_size_gb) > 0.005
    ):
        found.append(
            InputDifference(
                name="model-file",
                what="file size",
                claimed=f"{claimed.file_size_gb:g} GB",
                rerun=f"{rerun.file_size / 1e9:.2f} GB",
            )
        )
    return found


def hardware_differences(claimed: Pins, rerun: Pins) -> list[InputDifference]:
    if not claimed.accelerator_stated or (claimed.accelerator or None) == (rerun.accelerator or None):
        return []
    return [
        InputDifference(
            name="hardware",
            what="hardware",
            claimed=claimed.accelerator or "CPU only",
            rerun=rerun.accelerator or "CPU only",
        )
    ]


def exactness(claimed: Pins, rerun: Pins, found: list[InputDifference]) -> str | None:
    """None when claim and rerun are the same exact setup (identity promised); else why not."""
    if found:
        return "the setups differ"
    if rerun.engine_variant != "cpu" or rerun.accelerator:
        return "the rerun ran on a GPU"
    if rerun.slots != 1 or rerun.cache_prompt is not False or rerun.threads is None:
        return "the rerun's execution is not exact (several slots, a prompt cache, or threads not recorded)"
    unstated = [name for name, value in exact_statements(claimed).items() if value is None]
    if unstated:
        return f"the claim does not state {', '.join(unstated)}"
    return None


def exact_statements(claimed: Pins) -> dict[str, object]:
    """What a claim must state to promise identity."""
    harness = claimed.harness
    pinned = harness and (harness.tree_digest or harness.commit or harness.archive_sha256 or harness.version)
    cpu = True if claimed.engine_variant == "cpu" or (claimed.accelerator_stated and not claimed.accelerator) else None
    return {
        "the engine build": claimed.engine_build,
        "the threads": claimed.threads,
        "the slots": claimed.slots,
        "the prompt cache": claimed.cache_prompt,
        "the harness's pin": pinned or None,
        "a CPU engine": cpu,
        "the CPU model": claimed.cpu_model,
    }


def template_label(template: TemplatePin | None) -> str:
    return "none recorded" if template is None else f"{template.source} {str(template.sha256 or '-')[:12]}"


def shown(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)[:12] if isinstance(value, str) and len(value) in (40, 64) else str(value)
