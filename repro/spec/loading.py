"""Loading a matrix file: its YAML read within bounds and validated (`load_matrix`, with the
profiles it may name), then held to what one model cannot check alone: ids once each, profiles
that exist, paths inside the project (or the author's folder), external suites whose pins and
decoding their harness can run. Each problem is one `FILE:LINE field.path: reason` line of a
BadInput (repro.spec.matrix is the schema itself).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from pydantic import (
    ValidationError,
)

from repro.core.config import PROJECT_ROOT
from repro.core.errors import BadInput
from repro.core.yamlsource import YamlDocument, format_problem, load_yaml_document, pydantic_problems
from repro.spec.harnesses import HARNESSES, HarnessFacts
from repro.spec.matrix import URL, ExternalSuite, LoadedMatrix, Matrix
from repro.spec.profiles import Profiles, load_profiles


def matrix_root(path: str | Path, paths_from: str) -> Path:
    """The folder a matrix's own relative paths start from: the project, or (`paths_from: matrix`)
    the matrix's own folder."""
    return PROJECT_ROOT if paths_from == "project" else Path(path).absolute().parent.resolve()


def root_problems(root: Path) -> list[tuple[tuple, str]]:
    """`paths_from: matrix` is for a matrix outside the project: inside it, its files are the project's."""
    if root == PROJECT_ROOT or not _is_within(root, PROJECT_ROOT.resolve()):
        return []
    return [
        (
            ("paths_from",),
            "a matrix inside the project takes its paths from the project: paths_from: "
            "matrix is for a matrix kept outside it",
        )
    ]


# ---------------------------------------------------------------- loading


def load_matrix(
    path: str | Path,
    profile_names: set[str] | None = None,
    *,
    embedded: bool = False,
    document: YamlDocument | None = None,
) -> LoadedMatrix:
    """Load and validate a matrix file (or its `document`, already read); raise BadInput with one
    line per problem. An `embedded` copy (a bundle's matrix.yaml) is read without following links,
    and the files it names are not looked for: only its plan is recomputed from it."""
    document = document or load_yaml_document(path, follow_links=not embedded)
    try:
        matrix = Matrix.model_validate(document.data)
    except ValidationError as error:
        raise BadInput(f"{path}: invalid matrix", lines=pydantic_problems(document, error)) from None
    if embedded:
        known_profiles = set(matrix.profiles)  # the run's own profile settings are in run.json
    else:
        known_profiles = profile_names if profile_names is not None else set(matrix_profiles(path).profiles)
    root = PROJECT_ROOT if embedded else matrix_root(path, matrix.paths_from)
    found = _cross_check(matrix, known_profiles) + (
        [] if embedded else root_problems(root) + path_problems(matrix, author_root=root)
    )
    problems = [format_problem(document, loc, reason) for loc, reason in found]
    if problems:
        raise BadInput(f"{path}: invalid matrix", lines=problems)
    digest = hashlib.sha256(document.raw).hexdigest()
    return LoadedMatrix(path=Path(path), sha256=digest, matrix=matrix, root=root)


def load_matrix_and_profiles(path: str | Path) -> tuple[LoadedMatrix, Profiles]:
    """A matrix with the profiles it may name (`matrix_profiles`)."""
    document = load_yaml_document(path)  # read once: a matrix of thousands of models takes a second to read
    profiles = matrix_profiles(path, document)
    return load_matrix(path, set(profiles.profiles), document=document), profiles


def matrix_profiles(path: str | Path, document: YamlDocument | None = None) -> Profiles:
    """The profiles a matrix (or its `document`, already read) may name: the project's, and those
    of its own profiles file (`profiles_file`) when it has one; a name in both is refused."""
    profiles = load_profiles()
    document = document or load_yaml_document(path)
    data = document.data if isinstance(document.data, dict) else {}
    named, paths_from = data.get("profiles_file"), data.get("paths_from", "project")
    if not isinstance(named, str) or paths_from not in ("project", "matrix"):
        return profiles  # no profiles file (or a malformed one, which validation names)
    root = matrix_root(path, paths_from)
    reason = _outside_reason(named, root, "project" if root == PROJECT_ROOT else "matrix")
    if reason:
        raise BadInput(f"{path}: profiles_file {reason}")
    own = load_profiles(root / named)
    both = sorted(set(own.profiles) & set(profiles.profiles))
    if both:
        raise BadInput(
            f"{path}: profiles_file {named} names profile(s) the project has already: "
            f"{', '.join(both)} (give yours other names)"
        )
    return Profiles(profiles={**profiles.profiles, **own.profiles})


def _cross_check(matrix: Matrix, known_profiles: set[str]) -> list[tuple[tuple, str]]:
    """Problems pydantic cannot see: duplicate ids and references to unknown names."""
    problems: list[tuple[tuple, str]] = []
    for section in ("models", "engines", "suites"):
        problems += _duplicates(section, [item.id for item in getattr(matrix, section)])
    problems += _duplicates("protocols", list(matrix.protocols), field=None)
    for index, name in enumerate(matrix.profiles):
        if name not in known_profiles:
            problems.append(
                (("profiles", index), f"unknown profile '{name}' (known: {', '.join(sorted(known_profiles))})")
            )

    problems += external_problems(matrix)
    model_ids = {m.id for m in matrix.models}
    engine_ids = {e.id for e in matrix.engines}
    for index, rule in enumerate(matrix.exclude):
        if rule.model is not None and rule.model not in model_ids:
            problems.append((("exclude", index, "model"), f"unknown model '{rule.model}'"))
        if rule.engine is not None and rule.engine not in engine_ids:
            problems.append((("exclude", index, "engine"), f"unknown engine '{rule.engine}'"))
    return problems


def path_problems(
    matrix: Matrix, root: Path = PROJECT_ROOT, author_root: Path | None = None
) -> list[tuple[tuple, str]]:
    """Every path field must name something inside the project: no `../` out of it, no absolute path
    elsewhere; a suite's path inside its source stays inside it. The matrix's own files (scenario
    folders, profiles file, model paths) are under `author_root` instead, the matrix's folder when
    it lies outside the project (the engines' Dockerfiles and the chat templates stay the project's)."""
    problems = [
        (("suites", index, "path"), "a path inside the suite's source must be relative, without ..")
        for index, suite in enumerate(matrix.suites)
        if suite.source is not None and (suite.path.startswith("/") or ".." in Path(suite.path).parts)
    ]
    own = author_root or root
    fields = [(loc, value, root) for loc, value in _path_fields(matrix)]
    fields += [(loc, value, own) for loc, value in _own_path_fields(matrix)]
    for loc, value, base in fields:
        reason = _outside_reason(value, base, "project" if base == root else "matrix")
        if reason:
            problems.append((loc, reason))
    return problems


def _own_path_fields(matrix: Matrix) -> list[tuple[tuple, str]]:
    """(location, value) of the fields that name the matrix's own files: scenario folders, the
    profiles file, a model's local path."""
    fields: list[tuple[tuple, str]] = [
        (("suites", index, "path"), suite.path)
        for index, suite in enumerate(matrix.suites)
        if suite.source is None and suite.external is None
    ]
    for index, model in enumerate(matrix.models):
        fields += [
            (("models", index, "sources", number, "path"), source.path)
            for number, source in enumerate(model.sources)
            if source.path is not None
        ]
    if matrix.profiles_file is not None:
        fields.append((("profiles_file",), matrix.profiles_file))
    return fields


def _path_fields(matrix: Matrix) -> list[tuple[tuple, str]]:
    """(location, value) of every field of the matrix that names a local file or folder."""
    fields: list[tuple[tuple, str]] = [
        (("suites", index, "external", "requirements", "path"), suite.external.requirements.path)
        for index, suite in enumerate(matrix.suites)
        if suite.external
    ]
    fields += [
        (("suites", index, "external", "archive"), suite.external.archive)
        for index, suite in enumerate(matrix.suites)
        if suite.external and suite.external.archive is not None and not URL.match(suite.external.archive)
    ]
    for index, suite in enumerate(matrix.suites):
        source = suite.source
        if source is not None and source.archive is not None and not URL.match(source.archive):
            fields.append((("suites", index, "source", "archive"), source.archive))
    for index, model in enumerate(matrix.models):
        if model.chat_template is not None:
            fields.append((("models", index, "chat_template", "path"), model.chat_template.path))
    for index, engine in enumerate(matrix.engines):
        build = engine.build
        if build is None:
            continue
        fields.append((("engines", index, "build", "dockerfile"), build.dockerfile))
        if build.cuda_dockerfile is not None:
            fields.append((("engines", index, "build", "cuda_dockerfile"), build.cuda_dockerfile))
        if build.source.archive is not None and not URL.match(build.source.archive):
            fields.append((("engines", index, "build", "source", "archive"), build.source.archive))
    return fields


def _outside_reason(value: str, root: Path, where: str = "project") -> str | None:
    """Why `value` leaves the `root` folder of the project (or of the matrix) (None when it stays inside)."""
    if not value.strip():
        return "an empty path"
    if "\0" in value:
        return "a path with a NUL character"
    try:
        path = Path(value).expanduser()
        candidate = path if path.is_absolute() else root / path
        inside = _is_within(Path(os.path.normpath(candidate)), root) and _is_within(candidate.resolve(), root.resolve())
    except (OSError, RuntimeError, ValueError) as error:
        return f"'{value}' cannot be resolved ({error})"
    if inside:
        return None
    return f"'{value}' leaves the {where}: paths must stay inside the {where} folder"


def _is_within(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def _duplicates(section: str, values: list[str], field: str | None = "id") -> list[tuple[tuple, str]]:
    first_seen: dict[str, int] = {}
    problems = []
    for index, value in enumerate(values):
        if value in first_seen:
            loc = (section, index, field) if field else (section, index)
            problems.append((loc, f"duplicate {field or 'entry'} '{value}' (first at {section}[{first_seen[value]}])"))
        else:
            first_seen[value] = index
    return problems


def external_problems(matrix: Matrix) -> list[tuple[tuple, str]]:
    """Matrix problems of its external suites: code the adapter was not written for (its output
    format and checks are read by version), tasks from the wrong place, a path out of the release,
    decoding the harness fixes itself, and a protocol or an engine it cannot drive (it talks to
    the engine with its own requests)."""
    problems: list[tuple[tuple, str]] = []
    for index, suite in enumerate(matrix.suites):
        if suite.external is None:
            continue
        facts = HARNESSES[suite.external.harness]
        problems += code_problems(facts, suite.external, index)
        if facts.tasks_from == "code" and suite.source is not None:
            problems.append(
                (
                    ("suites", index, "source"),
                    "an external suite's tasks come from its wheel: give external or source, not both",
                )
            )
        if facts.tasks_from == "source" and suite.source is None:
            problems.append(
                (
                    ("suites", index, "source"),
                    f"{facts.name} runs scenario files: give the suite a source (its pinned scenario archive)",
                )
            )
        if suite.path.startswith("/") or ".." in suite.path.split("/"):
            problems.append((("suites", index, "path"), "a path inside the wheel must be relative, without .."))
        problems += decoding_problems(facts, matrix)
        problems += [
            (
                ("engines", number, "kind"),
                f"{facts.name} runs on {' or '.join(sorted(facts.engine_kinds))} engines ({facts.request_kind}); "
                f"engine {engine.id} is {engine.kind}",
            )
            for number, engine in enumerate(matrix.engines)
            if engine.kind not in facts.engine_kinds
        ]
        wrong = [p for p in matrix.protocols if p not in facts.protocols]
        if wrong:
            problems.append(
                (
                    ("suites", index, "external"),
                    f"{facts.name} drives the engine with its own requests ({facts.request_kind}): "
                    f"the matrix's protocols must be {', '.join(sorted(facts.protocols))} "
                    f"(found {', '.join(wrong)}); run it in a matrix of its own",
                )
            )
    return problems


def code_problems(facts: HarnessFacts, external: ExternalSuite, index: int) -> list[tuple[tuple, str]]:
    """The harness's code must be what the adapter reads: a wheel it knows with that wheel's
    sha256, or a source archive it knows (a git pin is read by the archive's layout)."""
    where = ("suites", index, "external")
    if external.wheel is not None:
        known = facts.known_wheels.get(external.wheel)
        if known is None:
            return [
                ((*where, "wheel"), f"{facts.name} reads {', '.join(sorted(facts.known_wheels)) or 'no wheel'} only")
            ]
        return (
            [((*where, "sha256"), f"{external.wheel} is the wheel with sha256 {known}")]
            if known != external.sha256
            else []
        )
    if not facts.known_archives:
        return [(where, f"{facts.name} is pinned by its wheel, not by a source archive")]
    if external.archive is not None and external.sha256 not in facts.known_archives:
        known_text = "; ".join(f"{sha} ({what})" for sha, what in facts.known_archives.items())
        return [((*where, "sha256"), f"{facts.name} reads the archive {known_text} only (or a git pin)")]
    return []


def decoding_problems(facts: HarnessFacts, matrix: Matrix) -> list[tuple[tuple, str]]:
    """A harness that sends its own decoding (Tholos: temperature 0, 512 tokens per step): a matrix
    that says otherwise would describe another run."""
    wrong = {name: value for name, value in facts.fixed_decoding.items() if getattr(matrix.decoding, name) != value}
    if not wrong:
        return []
    fixed = ", ".join(f"{name} {value:g}" for name, value in facts.fixed_decoding.items())
    found = ", ".join(f"{name} {getattr(matrix.decoding, name):g}" for name in facts.fixed_decoding)
    return [(("decoding",), f"{facts.name} sends {fixed} itself; the matrix's decoding says {found}")]
