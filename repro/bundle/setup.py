"""The one setup record of a number, and the one comparison of two (issue 49).

A number depends on more than its scenarios: the model's bytes, quant and chat template; the
engine's kind, build, image and variant; the decoding; the harness's pin; the suite's bytes and the
scenarios of its part; the profile and what it pins (threads, slots, prompt cache, replicas); and
the hardware (the CPU model, its cores and architecture, the accelerator with its driver and CUDA
version). `SetupRecord` holds every one of them as one side states it (None: not stated); `cell_setup`
derives a cell's from its bundle's records alone; a claim states what it states.

`compare` lays two setups side by side, input by input: `same`, `differs` (a -> b), `not stated`
(the first side says nothing of it, so it is not compared) or `not recorded` (the first side
states it, the second does not: a difference, since nothing shows they agree). The rerun's
preflight and verdict, `repro verify` (claims and published rows), `results merge`, the tables'
rows (a row is made of cells whose setups agree) and `repro compare` all use this record and this
comparison, so one pair of setups gets one answer from each (tests/rerun/test_one_setup.py).

Each input has a name a reviewer may accept as differing (`--accept threads,hardware`); the
model's bytes and the suite's cannot be accepted: another model or another scenario set is
another number, not another setup.
"""

from __future__ import annotations

import json
from typing import Literal

from pydantic import BaseModel

from repro.bundle.records import CellRecord, GpuInfo, ImageInfo, RunRecord
from repro.core.errors import BadInput
from repro.core.files import sha256_bytes
from repro.engines.registry import engine_class
from repro.spec.findings import TemplateFacts
from repro.spec.harnesses import HarnessPin
from repro.spec.matrix import EngineSpec
from repro.spec.profiles import PromptCache

# The names of the inputs a reviewer may accept as differing (--accept), and what each covers.
ACCEPTABLE: dict[str, str] = {
    "quant": "the model's quantisation",
    "model-file": "the GGUF's size",
    "chat-template": "the chat template the model was shown the task through",
    "engine": "the engine kind (llama.cpp, ollama)",
    "engine-build": "the engine's build or version, and the image it was built into (source, build info, Dockerfile)",
    "engine-variant": "the engine image variant (cpu, cuda)",
    "harness": "the harness's version, commit, tree digest or archive",
    "temperature": "the sampling temperature",
    "seed": "the sampling seed",
    "max-tokens": "the tokens per step",
    "context": "the context size",
    "profile": "the repro hardware profile and its other settings",
    "hardware": "the accelerator (a GPU by name, driver and CUDA version, or none) and the host CPU "
    "(model, cores, architecture)",
    "threads": "the threads per engine",
    "slots": "the parallel sequences per engine",
    "prompt-cache": "the engine's prompt cache",
    "replicas": "the engine replicas sharing a cell's scenarios",
    "runtime": "the agent runtime that produced the turns: its package and version (docs/runtimes.md)",
}
# Inputs no --accept covers: another model or another scenario set is another number.
UNACCEPTABLE: dict[str, str] = {"model": "the model's bytes (GGUF sha256)", "suite": "the scenario files and ids"}
SAME_KERNELS = "engine kernels the same on both"
HEX = frozenset("0123456789abcdef")
SHORT_COMMIT = 7  # the shortest commit hash that names a build (git's default abbreviation)
Status = Literal["same", "differs", "not stated", "not recorded"]
DIFFERING: frozenset[str] = frozenset({"differs", "not recorded"})


class TemplatePin(BaseModel):
    source: str
    sha256: str | None = None


class SetupRecord(BaseModel):
    """Every input a number depends on, as one side states it (None: not stated). A cell's, from
    its bundle, states all its records hold."""

    model_sha256: str | None = None
    quant: str | None = None
    file_size: int | None = None  # bytes
    file_size_gb: float | None = None  # as a source prints it (two decimals)
    chat_template: TemplatePin | None = None
    engine_kind: str | None = None
    engine_build: str | None = None  # the one name a side gives its build
    engine_names: list[str] = []  # a rerun's every name of its build (identity, label, commit, bN)
    engine_image: str | None = None  # the image: its source, build info and Dockerfile (or its digest)
    engine_variant: str | None = None
    harness: HarnessPin | None = None
    runtime: str | None = None  # who produced the turns: "raw" (our own client) or a runtime's package==version
    temperature: float | None = None
    seed: int | None = None
    max_tokens: int | None = None
    context: int | None = None
    suite_sha256: str | None = None  # the selected scenario files' bytes
    scenarios: str | None = None  # the ids of this part: "40 ids, sha256 1a2b3c4d5e6f"
    profile: str | None = None
    profile_settings: str | None = None  # the profile's settings as run but its threads, by sha256
    threads: int | None = None
    slots: int | None = None
    cache_prompt: PromptCache | None = None  # False, "scenario" or True (repro.spec.profiles)
    replicas: int | None = None
    accelerator: str | None = None
    accelerator_stated: bool = False  # "accelerator: null" (a CPU) is a statement; absence is not
    driver_version: str | None = None  # the GPU driver
    cuda_version: str | None = None
    cpu_model: str | None = None  # the host CPU (its kernels can change a CPU engine's sums)
    cpu_cores: int | None = None
    arch: str | None = None
    kernels: str | None = None  # the engine's instruction set (shown beside a CPU difference, never compared)

    def without_part(self) -> SetupRecord:
        """The setup of the whole the part belongs to (its parts differ in their ids alone)."""
        return self.model_copy(update={"scenarios": None})


class InputDifference(BaseModel):
    """One input of two setups, as `compare` found it (a difference, unless its status says otherwise)."""

    name: str  # an ACCEPTABLE or UNACCEPTABLE name
    what: str  # as printed: "threads per engine"
    claimed: str
    rerun: str
    status: Status = "differs"
    accepted: bool = False
    note: str | None = None  # what else a reader needs beside it (a CPU difference: both kernel sets)

    @property
    def differs(self) -> bool:
        return self.status in DIFFERING

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


# (name, as printed, field): the inputs compared as equal values
PLAIN: list[tuple[str, str, str]] = [
    ("model", "model sha256", "model_sha256"),
    ("quant", "quant", "quant"),
    ("engine", "engine", "engine_kind"),
    ("engine-build", "engine image", "engine_image"),
    ("engine-variant", "engine variant", "engine_variant"),
    ("temperature", "temperature", "temperature"),
    ("seed", "seed", "seed"),
    ("max-tokens", "max tokens per step", "max_tokens"),
    ("context", "context", "context"),
    ("suite", "suite sha256", "suite_sha256"),
    ("suite", "scenarios of this part", "scenarios"),
    ("profile", "hardware profile", "profile"),
    ("profile", "the profile's settings as run", "profile_settings"),
    ("threads", "threads per engine", "threads"),
    ("slots", "engine slots", "slots"),
    ("prompt-cache", "prompt cache", "cache_prompt"),
    ("replicas", "engine replicas", "replicas"),
    ("runtime", "agent runtime", "runtime"),
    ("hardware", "GPU driver", "driver_version"),
    ("hardware", "CUDA version", "cuda_version"),
    ("hardware", "CPU", "cpu_model"),
    ("hardware", "CPU cores", "cpu_cores"),
    ("hardware", "architecture", "arch"),
]


def compare(a: SetupRecord, b: SetupRecord, accept: frozenset[str] = frozenset()) -> list[InputDifference]:
    """Every input of `a` beside `b`'s, each `same`, `differs`, `not stated` (by a) or `not
    recorded` (by b), a difference marked accepted where its name is in `accept`."""
    rows = plain_rows(a, b) + build_rows(a, b) + harness_rows(a.harness, b.harness)
    rows += size_rows(a, b) + [accelerator_row(a, b)]
    return [row.model_copy(update={"accepted": row.differs and row.name in accept}) for row in rows]


def differences(
    claimed: SetupRecord, rerun: SetupRecord, accept: frozenset[str] = frozenset()
) -> list[InputDifference]:
    """Every input `claimed` states that `rerun` ran otherwise (or does not record), each marked
    accepted or not."""
    return [row for row in compare(claimed, rerun, accept) if row.differs]


def status_of(stated: object, ran: object, same: bool) -> Status:
    if stated is None:
        return "not stated"
    if ran is None:
        return "not recorded"
    return "same" if same else "differs"


def row(
    name: str, what: str, stated: object, ran: object, same: bool | None = None, note: str | None = None
) -> InputDifference:
    """One input: its status, both sides as printed."""
    return InputDifference(
        name=name,
        what=what,
        claimed=shown(stated),
        rerun=shown(ran),
        status=status_of(stated, ran, stated == ran if same is None else same),
        note=note,
    )


def plain_rows(a: SetupRecord, b: SetupRecord) -> list[InputDifference]:
    return [
        row(
            name,
            what,
            getattr(a, field),
            getattr(b, field),
            note=kernels_note(a.kernels, b.kernels) if field == "cpu_model" and a.cpu_model != b.cpu_model else None,
        )
        for name, what, field in PLAIN
    ]


def kernels_note(claimed: str | None, rerun: str | None) -> str:
    """Both sides' engine kernels, beside a CPU difference: a CPU engine's sums follow the
    instruction set it computes with, not the CPU's name."""
    if claimed is not None and claimed == rerun:
        return f"{SAME_KERNELS}: {claimed}"
    return f"engine kernels: {claimed or 'not recorded'} claimed, {rerun or 'not recorded'} rerun"


def build_rows(a: SetupRecord, b: SetupRecord) -> list[InputDifference]:
    """The engine build by any of its names (a short and a full commit hash of one build agree),
    and the chat template by its source and bytes."""
    ran = b.engine_names or ([b.engine_build] if b.engine_build else [])
    build = row(
        "engine-build",
        "engine build",
        a.engine_build,
        ran[0] if ran else None,
        same=a.engine_build is not None and any(same_build(a.engine_build, name) for name in ran),
    )
    template, served = a.chat_template, b.chat_template
    same_template = (
        template is not None
        and served is not None
        and (template.source, template.sha256 or served.sha256) == (served.source, served.sha256)
    )
    return [
        build,
        row(
            "chat-template",
            "chat template",
            template and template_label(template),
            served and template_label(served),
            same=same_template,
        ),
    ]


def same_build(claimed: str, name: str) -> bool:
    """One build under two names: equal, or two hashes of which one abbreviates the other."""
    a, b = claimed.strip().lower(), name.strip().lower()
    if a == b:
        return True
    short, long = sorted((a, b), key=len)
    return len(short) >= SHORT_COMMIT and set(short) <= HEX and set(long) <= HEX and long.startswith(short)


def harness_rows(claimed: HarnessPin | None, rerun: HarnessPin | None) -> list[InputDifference]:
    """The harness's pin: its version and archive; ours by its tree digest where the first side
    states one (the commit then only says where it came from), else by its commit."""
    claimed, rerun = claimed or HarnessPin(name="-"), rerun or HarnessPin(name="-")
    fields = [("version", "version"), ("archive sha256", "archive_sha256"), ("tree digest", "tree_digest")]
    if claimed.tree_digest is None:
        fields.append(("commit", "commit"))
    found = []
    for what, field in fields:
        stated, ran = getattr(claimed, field), getattr(rerun, field)
        same = stated == ran or (
            field == "commit" and stated is not None and ran is not None and same_build(stated, ran)
        )
        found.append(row("harness", f"harness {what}", stated, ran, same=same))
    return found


def size_rows(a: SetupRecord, b: SetupRecord) -> list[InputDifference]:
    """The GGUF's size in bytes, and in GB as a source prints it (to two decimals)."""
    rows = [row("model-file", "file size", a.file_size, b.file_size)]
    if a.file_size_gb is not None:
        ran = None if b.file_size is None else f"{b.file_size / 1e9:.2f} GB"
        same = b.file_size is not None and abs(b.file_size / 1e9 - a.file_size_gb) <= 0.005
        rows.append(row("model-file", "file size", f"{a.file_size_gb:g} GB", ran, same=same))
    return rows


def accelerator_row(a: SetupRecord, b: SetupRecord) -> InputDifference:
    """The accelerator: a GPU by name, or a CPU alone (stated as such: "accelerator: null")."""
    stated = (a.accelerator or "CPU only") if a.accelerator_stated else None
    return row("hardware", "hardware", stated, b.accelerator or "CPU only")


def template_label(template: TemplatePin) -> str:
    return f"{template.source} {str(template.sha256 or '-')[:12]}"


def shown(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)[:12] if isinstance(value, str) and len(value) in (40, 64) else str(value)


def cell_setup(run: RunRecord, cell: CellRecord, harness: HarnessPin | None) -> SetupRecord:
    """A cell's setup from its bundle's records alone: the matrix's pins of the cell as run.json
    embeds them, what the cell recorded of its engine image, template, suite and execution, and
    the run's host. `harness`: the harness's pin as the cell's suite kind gives it (the layer
    below the suites passes None: not stated)."""
    spec, execution = cell.cell, cell.execution
    decoding, settings = spec.decoding, run.profile_settings
    gpus = cell.gpu or []
    return SetupRecord(
        model_sha256=spec.model.sha256,
        quant=spec.model.quant,
        file_size=spec.model.file_size,
        chat_template=served_template(run.chat_templates.get(spec.model.id), cell),
        engine_kind=spec.engine.kind,
        engine_build=spec.engine.expected_identity(),
        engine_names=engine_names(spec.engine, cell.reported_identity),
        engine_image=image_label(cell.engine_image),
        engine_variant=settings.engine_variant,
        harness=harness,
        runtime=spec.via.pin,
        temperature=decoding.temperature,
        seed=decoding.seed,
        max_tokens=decoding.max_tokens,
        context=decoding.context,
        suite_sha256=cell.suite_sha256,
        scenarios=ids_label(cell.suite_ids),
        profile=run.profile,
        profile_settings=settings_digest(settings.model_dump(mode="json")),
        threads=execution.threads if execution else settings.threads,
        slots=execution.slots if execution else 1,
        cache_prompt=execution.cache_prompt if execution else False,
        replicas=execution.replicas if execution else 1,
        accelerator=", ".join(device.name for device in gpus) or cell.accelerator,
        accelerator_stated=True,
        driver_version=gpus[0].driver_version if gpus else None,
        cuda_version=cuda_of(run.system.gpus) if gpus else None,
        cpu_model=run.system.cpu_model,
        cpu_cores=run.system.cpu_cores,
        arch=run.system.machine,
        kernels=cell.engine_kernels,
    )


def served_template(facts: TemplateFacts | None, record: CellRecord) -> TemplatePin | None:
    """The chat template the cell's engine used: the GGUF's or the pinned one (`facts`, run.json)
    with the sha256 the engine reported serving, or repro's explicit one that the engine reported
    (source `explicit`: Ollama's Go template for the family)."""
    reported = record.engine_settings.reported
    if facts is None:
        served = engine_class(record.cell.engine.kind).served_template(reported)
        return None if served is None else TemplatePin(source="explicit", sha256=sha256_text(served))
    return TemplatePin(source=facts.source, sha256=reported.get("chat_template_sha256"))


def engine_names(engine: EngineSpec, reported: str | None) -> list[str]:
    """Every name a source may give an engine build: its identity, the one the engine reported
    (None: not booted), its label, and for a source build its commit and build number."""
    names = [engine.expected_identity(), reported or "", engine.label]
    if engine.build is not None and engine.build.build_number is not None:
        names += [engine.build.build_commit or "", f"b{engine.build.build_number}"]
    return list(dict.fromkeys(name for name in names if name))


def image_label(image: ImageInfo | None) -> str | None:
    """The engine image as its pins name it: the source, the build info it stamps and its
    Dockerfile's sha256; or, for an image pinned by digest, its reference."""
    if image is None:
        return None
    if image.pinned_by == "digest":
        return f"image {image.reference}"
    labels = image.labels
    return image_pin_label(
        labels.get("repro.source", "?"), labels.get("repro.build_info", "?"), labels.get("repro.dockerfile_sha256", "?")
    )


def image_pin_label(source: str, build_info: str, dockerfile_sha256: str) -> str:
    return f"{source}, build_info {build_info}, Dockerfile {dockerfile_sha256[:12]}"


def ids_label(ids: list[str]) -> str | None:
    """A part's scenario ids as one comparable label: their count and the sha256 of the sorted ids."""
    if not ids:
        return None
    return f"{len(ids)} ids, sha256 {sha256_text(chr(10).join(sorted(ids)))[:12]}"


def settings_digest(settings: dict) -> str:
    """The profile's settings as run (gate, tolerance, GPUs, slots, prompt cache: what --prompt-cache
    changes), by sha256; its threads are compared on their own and its description is words."""
    rest = {k: v for k, v in settings.items() if k not in ("threads", "description")}
    return sha256_text(json.dumps(rest, sort_keys=True))[:12]


def cuda_of(gpus: list[GpuInfo]) -> str | None:
    """The CUDA versions of these host GPUs, as one label (None: no GPU, or none recorded)."""
    return ", ".join(sorted({gpu.cuda for gpu in gpus if gpu.cuda})) or None


def sha256_text(text: str) -> str:
    return sha256_bytes(text.encode())
