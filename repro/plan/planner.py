"""Plan: the cells of a matrix on one profile (model x engine x protocol x suite x repeat).

Cells are ordered deterministically (matrix order) and their ids are stable: a readable slug
plus a short hash of everything the cell's number depends on. A cell that cannot run on the
profile is kept in the plan as excluded, with its reason; nothing is silently dropped.
"""

from __future__ import annotations

import hashlib
import json
from itertools import product

from pydantic import BaseModel

from repro.core.errors import BadInput
from repro.core.files import GIB
from repro.engines.registry import engine_class
from repro.spec.cells import Cell, ExclusionKind
from repro.spec.findings import TemplateFacts
from repro.spec.matrix import EngineSpec, LoadedMatrix, Matrix, ModelSpec, Protocol, Suite
from repro.spec.profiles import Profile
from repro.spec.runtimes import RuntimeSpec

# Protocols the harness implements (harness.protocols.PROTOCOLS); a cell naming another is listed as excluded.
IMPLEMENTED_PROTOCOLS = {"json_schema", "native_tools", "react", "json_prompt"}


class Plan(BaseModel):
    matrix_path: str
    matrix_sha256: str
    matrix_name: str
    profile: str
    cells: list[Cell]
    excluded: list[Cell]

    def groups(self) -> list[tuple[tuple[str, str], list[Cell]]]:
        ordered: dict[tuple[str, str], list[Cell]] = {}
        for cell in self.cells:
            ordered.setdefault(cell.group, []).append(cell)
        return list(ordered.items())


def make_plan(
    loaded: LoadedMatrix, profile_name: str, profile: Profile, templates: dict[str, TemplateFacts] | None = None
) -> Plan:
    """The cells on a profile. `templates` (model id -> TemplateFacts, for models whose GGUF is at
    hand) adds the capability preflight: a protocol the template cannot carry is excluded."""
    matrix = loaded.matrix
    runnable, excluded = [], []
    suite_parts = [
        (suite, part) for suite in matrix.suites for part in (range(1, suite.parts + 1) if suite.parts else [None])
    ]
    runtimes = [None if r.raw else r for r in matrix.runtimes]
    combos = product(
        matrix.models, matrix.engines, runtimes, matrix.protocols, suite_parts, range(1, matrix.repeats + 1)
    )
    for model, engine, runtime, protocol, (suite, part), repeat in combos:
        cell = _cell(matrix, model, engine, protocol, (suite, part), repeat, profile_name, runtime)
        found = exclusion_reason(matrix, cell, profile_name, profile)
        preflight = template_reason(cell, (templates or {}).get(model.id))
        if found is None and preflight:
            found = preflight, "configuration"
        if found:
            excluded.append(cell.model_copy(update={"excluded": found[0], "excluded_kind": found[1]}))
        else:
            runnable.append(cell)
    return Plan(
        matrix_path=str(loaded.path),
        matrix_sha256=loaded.sha256,
        matrix_name=matrix.name,
        profile=profile_name,
        cells=runnable,
        excluded=excluded,
    )


def stored_plan(
    loaded: LoadedMatrix, profile_name: str, profile: Profile, *, require_all: bool = False
) -> tuple[Plan, dict[str, TemplateFacts]]:
    """The plan with the capability preflight for every model whose GGUF is in the store (all of
    them with `require_all`: a shard's split must not depend on which models a machine holds)."""
    from repro.store.chat_template import stored_template_facts

    reads_templates = any(e.facts.template_from_gguf for e in loaded.matrix.engines)
    llama_models = list(loaded.matrix.models) if reads_templates else []
    templates = stored_template_facts(llama_models, required={m.id for m in llama_models} if require_all else set())
    return make_plan(loaded, profile_name, profile, templates=templates), templates


def suite_identity(suite: Suite) -> dict:
    """What of a suite enters a cell id. A field added later (`source`) enters only when set, so
    every cell id of a matrix without it stays what it was."""
    identity = suite.model_dump(mode="json")
    if suite.source is None:
        identity.pop("source")
    elif suite.source.go is None:
        identity["source"].pop("go")  # a source form added later (repro.spec.matrix.EngineSource)
    identity.pop("carry")  # what a bundle carries of the suite is not what the cell runs
    return identity


def engine_identity(engine: EngineSpec) -> dict:
    """What of an engine enters a cell id. Fields added later enter only where they apply (a Go
    module source, and the CPU flags its cgo build takes), so every cell id of a matrix without
    them stays what it was."""
    identity = engine.model_dump(mode="json")
    build = identity.get("build")
    if build is not None and build["source"].get("go") is None:
        build["source"].pop("go")
        build.pop("cpu_flags")
    return identity


def _cell(
    matrix: Matrix,
    model: ModelSpec,
    engine: EngineSpec,
    protocol: Protocol,
    suite_part: tuple[Suite, int | None],
    repeat: int,
    profile: str,
    runtime: RuntimeSpec | None = None,
) -> Cell:
    """One cell (of one part of its suite, when the suite has parts: the part enters its id and
    name; of a runtime other than raw, likewise)."""
    suite, part = suite_part
    identity = {
        "model": model.sha256,
        "engine": engine_identity(engine),
        "protocol": protocol,
        "suite": suite_identity(suite),
        "decoding": matrix.decoding.model_dump(mode="json"),
        "repeat": repeat,
        "profile": profile,
    }
    if model.chat_template is not None:  # enters the id only when pinned, so older ids stay
        identity["chat_template"] = model.chat_template.sha256
    if part is not None:
        identity["part"] = part
    if runtime is not None:
        identity["runtime"] = runtime.model_dump(mode="json")
    digest = hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:8]
    named = f"{suite.id}-p{part}of{suite.parts}" if part is not None else suite.id
    played = f"{runtime.id}-{protocol}" if runtime is not None else protocol
    slug = f"{model.id}__{engine.id}__{played}__{named}__r{repeat}"
    return Cell(
        id=f"{slug}-{digest}",
        model=model,
        engine=engine,
        protocol=protocol,
        suite=suite,
        repeat=repeat,
        profile=profile,
        decoding=matrix.decoding,
        part=part,
        runtime=runtime,
    )


def exclusion_reason(
    matrix: Matrix, cell: Cell, profile_name: str, profile: Profile
) -> tuple[str, ExclusionKind] | None:
    """Why the plan leaves a cell out, and whose choice it is: the matrix's (its profile list, its
    `exclude` rules: the author's) or repro's (what the harness, engine or profile cannot carry)."""
    if profile_name not in matrix.profiles:
        return f"the matrix does not run on profile {profile_name} (it allows: {', '.join(matrix.profiles)})", "author"
    implemented = cell.suite.protocols(IMPLEMENTED_PROTOCOLS)
    if cell.protocol not in implemented:
        return (
            f"protocol {cell.protocol} is not implemented by this harness yet (implemented: "
            f"{', '.join(sorted(implemented))})",
            "configuration",
        )
    if (why := cell.runtime_reason()) is not None:
        return why, "configuration"
    if not cell.engine.serves(profile.engine_variant):
        return (
            f"engine {cell.engine.id} has no {profile.engine_variant} image for profile {profile_name}",
            "configuration",
        )
    size_gb = cell.model.file_size / GIB
    if size_gb > profile.max_model_gb:
        return (
            f"model {cell.model.id} ({size_gb:.2f} GB) exceeds the {profile.max_model_gb:g} GB that profile "
            f"{profile_name} takes",
            "configuration",
        )
    for rule in matrix.exclude:
        if (
            _rule_matches(rule.model, cell.model.id)
            and _rule_matches(rule.engine, cell.engine.id)
            and _rule_matches(rule.protocol, cell.protocol)
        ):
            return rule.reason, "author"
    return None


def template_reason(cell: Cell, facts: TemplateFacts | None) -> str | None:
    """The capability preflight: why the engine cannot carry the cell's protocol (configuration)."""
    return engine_class(cell.engine.kind).preflight(cell.model, cell.protocol, facts)


def _rule_matches(wanted: str | None, actual: str) -> bool:
    return wanted is None or wanted == actual


def select_cells(plan: Plan, only: list[str]) -> list[Cell]:
    """The cells named by `--only` (all when none), in plan order; BadInput for unknown or excluded ids."""
    if not only:
        return list(plan.cells)
    known = {c.id for c in plan.cells}
    excluded = {c.id for c in plan.excluded}
    for cell_id in only:
        if cell_id in excluded:
            raise BadInput(f"cell {cell_id} is excluded on profile {plan.profile}")
        if cell_id not in known:
            raise BadInput(
                f"unknown cell {cell_id} (see: repro matrix plan {plan.matrix_path} --profile {plan.profile})"
            )
    return [c for c in plan.cells if c.id in only]


def listed_exclusions(plan: Plan, shard: tuple[int, int] | None) -> tuple[dict[str, str], dict[str, ExclusionKind]]:
    """The plan's exclusions as run.json lists them, with who excluded each: all of them in an
    unsharded run and on a sharded run's first shard, none on its other shards (listed once, so a
    merge counts each once). The run writes them by this rule and `repro check` expects it."""
    if shard is not None and shard[0] != 1:
        return {}, {}
    excluded = {cell.id: cell.excluded or "excluded" for cell in plan.excluded}
    return excluded, {cell.id: cell.excluded_kind for cell in plan.excluded if cell.excluded_kind}


def shard_cells(cells: list[Cell], shard: tuple[int, int] | None) -> list[Cell]:
    """Round-robin over the plan's order: the same plan and n always give the same split."""
    if shard is None:
        return cells
    index, count = shard
    return [cell for position, cell in enumerate(cells) if position % count == index - 1]


def parse_shard(text: str) -> tuple[int, int]:
    index, _, count = text.partition("/")
    ascii_digits = all(part.isascii() and part.isdigit() and len(part) <= 6 for part in (index, count))
    if not ascii_digits or not 1 <= int(index) <= int(count):
        raise BadInput(f"--shard {text}: expected i/n with 1 <= i <= n, e.g. 2/4")
    return int(index), int(count)
