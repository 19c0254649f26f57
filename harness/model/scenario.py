"""The scenario model: a superset of the Tholos-Bench format, and its loader.

A bad file raises ``ScenarioError`` with a one-line message ``FILE field.path: reason``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    ValidationError,
    ValidationInfo,
    model_validator,
)

from harness.io.inputs import MAX_SCENARIO_BYTES, InputError, parse_json, read_text
from harness.model.checks_model import CHECK_TYPES, Check
from harness.model.fixtures import FixtureError, World, find_fixtures_root, load_tree, load_weather, load_web
from harness.model.tool_specs import FILE_TOOLS, TOOL_SPECS, WEATHER_TOOLS, WEB_TOOLS

Cell = StrictBool | StrictInt | StrictFloat | StrictStr | None
OWNER = "you"


class ScenarioError(Exception):
    """A scenario file that cannot be used; the message is one line."""


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class AgentSpec(Strict):
    name: str = Field(min_length=1)
    role: str
    tools: list[str]
    max_steps: int | None = Field(default=None, ge=1, le=50)


class TableSpec(Strict):
    name: str = Field(min_length=1)
    columns: list[str] = Field(min_length=1)
    rows: list[dict[str, Cell]] = []


class NoteSpec(Strict):
    title: str = Field(min_length=1)
    body: str


class MemorySpec(Strict):
    agent: str
    text: str


class TaskSpec(Strict):
    title: str
    details: str | None = None
    to: str | None = None
    status: str | None = None


class RuleSpec(Strict):
    agent: str = "*"
    tool: str
    match: str = "*"
    decision: Literal["allow", "ask", "deny"]


class WorldSpec(Strict):
    """The shared fixture sets a scenario uses (see harness/model/fixtures.py), loaded when it validates."""

    files: str | None = None  # fixtures/files/<files>, shown as /home/<files>
    cwd: str = ""  # the agent's starting folder, relative to the tree
    weather: str | None = None  # fixtures/weather/<weather>.json
    web: str | None = None  # fixtures/web/<web>/
    _loaded: World | None = PrivateAttr(default=None)

    @model_validator(mode="after")
    def _load(self, info: ValidationInfo) -> WorldSpec:
        path = (info.context or {}).get("scenario_path")
        root = find_fixtures_root(Path(path) if path else None)
        if root is None:
            raise ValueError(
                "no fixtures/ folder above the scenario (mount it beside the scenarios, or set HARNESS_FIXTURES)"
            )
        try:
            self._loaded = self._load_sets(root)
        except FixtureError as exc:
            raise ValueError(str(exc)) from None
        return self

    def _load_sets(self, root: Path) -> World:
        tree = load_tree(root, self.files) if self.files else None
        cwd = tuple(p for p in self.cwd.split("/") if p not in ("", "."))
        if ".." in cwd or (cwd and tree is None):
            raise FixtureError(f"cwd {self.cwd!r} must be a folder inside the file tree")
        if tree is not None and getattr(tree.nodes.get(cwd), "kind", None) != "dir":
            raise FixtureError(f"cwd {self.cwd!r} is not a folder of file tree {self.files!r}")
        weather = load_weather(root, self.weather) if self.weather else None
        web = load_web(root, self.web) if self.web else None
        return World(files=tree, cwd=cwd, weather=weather, web=web)

    def loaded(self) -> World | None:
        return self._loaded


class WorkspaceSpec(Strict):
    agents: list[AgentSpec] = Field(min_length=1)
    tables: list[TableSpec] = []
    notes: list[NoteSpec] = []
    memories: list[MemorySpec] = []
    tasks: list[TaskSpec] = []
    rules: list[RuleSpec] = []
    world: WorldSpec | None = None

    def loaded_world(self) -> World | None:
        return self.world.loaded() if self.world else None


class TaskTrigger(Strict):
    kind: Literal["task"]
    from_: str = Field(default=OWNER, alias="from")
    title: str
    details: str = ""


class ScheduleTrigger(Strict):
    kind: Literal["schedule"]
    prompt: str


class FollowUpTrigger(Strict):
    kind: Literal["follow_up"]
    note: str


class MessageTrigger(Strict):
    kind: Literal["message"]
    text: str


Trigger = Annotated[TaskTrigger | ScheduleTrigger | FollowUpTrigger | MessageTrigger, Field(discriminator="kind")]


class Respond(Strict):
    approve: bool | None = None
    answer: str | None = None


class Interfere(Strict):
    """An edit by the owner, applied once after the first matching step."""

    after_tool: str
    table: str | None = None
    row_match: dict[str, Any] | None = None
    set: dict[str, Cell] | None = None
    note: str | None = None
    append: str | None = None

    @model_validator(mode="after")
    def _one_target(self) -> Interfere:
        if (self.table is None) == (self.note is None):
            raise ValueError("give exactly one of table or note")
        if self.table is not None and not self.set:
            raise ValueError("a table interference needs set")
        if self.note is not None and self.append is None:
            raise ValueError("a note interference needs append")
        return self


class ReferenceStep(Strict):
    tool: str
    args: dict[str, Any]


class Scenario(Strict):
    id: str = Field(min_length=1)
    category: str = Field(min_length=1)
    about: str
    template: str
    agent: str
    max_steps: int = Field(ge=1, le=50)
    workspace: WorkspaceSpec
    trigger: Trigger
    reference: list[ReferenceStep] = Field(min_length=1)
    expect: list[Check] = Field(min_length=1)
    fixtures: dict[str, str] | None = None
    respond: Respond | None = None
    interfere: Interfere | None = None
    level: int | None = Field(default=None, ge=0, le=8)

    def agent_spec(self, name: str | None = None) -> AgentSpec:
        wanted = (name or self.agent).casefold()
        return next(a for a in self.workspace.agents if a.name.casefold() == wanted)


# ----------------------------------------------------------------------------- loading


def load_scenario(path: str | Path) -> Scenario:
    """Load and validate one scenario file (a regular file of at most MAX_SCENARIO_BYTES)."""
    path = Path(path)
    try:
        text = read_text(path, MAX_SCENARIO_BYTES)
    except InputError as exc:
        raise ScenarioError(str(exc)) from None
    return parse_scenario(path, text)


def parse_scenario(path: Path, text: str) -> Scenario:
    """Validate the text of the scenario file `path`."""
    try:
        data = parse_json(path, text)
    except InputError as exc:
        raise ScenarioError(str(exc)) from None
    if not isinstance(data, dict):
        raise ScenarioError(f"{path}: the file must hold one JSON object")
    try:
        scenario = Scenario.model_validate(data, context={"scenario_path": str(path)})
    except ValidationError as exc:
        field, reason = _first_error(exc, data)
        raise ScenarioError(f"{path} {field}: {reason}") from None
    problem = semantic_problem(scenario)
    if problem:
        field, reason = problem
        raise ScenarioError(f"{path} {field}: {reason}")
    return scenario


def scenario_files(path: str | Path) -> list[Path]:
    """The scenario files at `path`: the file itself, or every ``*.json`` below the folder. A FIFO
    or device is listed too, so that the loader refuses it by name rather than it being skipped."""
    path = Path(path)
    if path.is_dir():
        return sorted(p for p in path.rglob("*.json") if not p.is_dir())
    if not path.exists():
        raise ScenarioError(f"{path}: no such file or folder")
    return [path]


def load_scenarios(path: str | Path, only: list[str] | None = None, ids: list[str] | None = None) -> list[Scenario]:
    """Load a file or a folder (recursively), sorted by category then id.

    ``only`` keeps the given categories, ``ids`` the given scenario ids. The first bad file
    raises ScenarioError.
    """
    scenarios = [load_scenario(p) for p in scenario_files(path)]
    seen: dict[str, str] = {}
    for scenario in scenarios:
        if scenario.id in seen:
            raise ScenarioError(f"{path} id: duplicate scenario id {scenario.id!r}")
        seen[scenario.id] = scenario.category
    if only:
        scenarios = [s for s in scenarios if s.category in set(only)]
    if ids:
        scenarios = [s for s in scenarios if s.id in set(ids)]
    return sorted(scenarios, key=lambda s: (s.category, s.id))


# ----------------------------------------------------------------------------- errors


def _first_error(exc: ValidationError, data: Any) -> tuple[str, str]:
    error = exc.errors(include_url=False)[0]
    field = _field_path(error["loc"], data)
    kind = error["type"]
    if kind == "union_tag_invalid":
        tag = error.get("ctx", {}).get("tag")
        what = {"expect": "check type", "trigger": "trigger kind"}.get(str(error["loc"][0]), "kind")
        key = error.get("ctx", {}).get("discriminator", "").strip("'") or "type"
        return f"{field}.{key}", f"unknown {what} {tag!r}"
    if kind == "union_tag_not_found":
        key = error.get("ctx", {}).get("discriminator", "").strip("'") or "type"
        return f"{field}.{key}", "field required"
    if kind == "missing":
        return field, "field required"
    if kind == "extra_forbidden":
        return field, "unknown field"
    if error["loc"] and error["loc"][-1] in {"bool", "int", "float", "str"}:
        return field, "a cell must be a string, number, boolean or null"
    message = error["msg"]
    if message.startswith("Value error, "):
        message = message[len("Value error, ") :]
    return field, message


def _field_path(loc: tuple, data: Any) -> str:
    """Render a pydantic location as ``a.b[2].c``, skipping union tags not in the data."""
    parts: list[str] = []
    node = data
    for key in loc:
        if isinstance(node, list) and isinstance(key, int):
            parts.append(f"[{key}]")
            node = node[key] if key < len(node) else None
        elif isinstance(node, dict) and isinstance(key, str) and (key in node or not _is_tag(key)):
            parts.append(f".{key}" if parts else key)
            node = node.get(key)
        elif isinstance(node, dict) and not _is_tag(key):
            parts.append(f".{key}" if parts else str(key))
            node = None
    return "".join(parts) or "(file)"


def _is_tag(key: Any) -> bool:
    triggers = {"task", "schedule", "follow_up", "message"}
    return isinstance(key, str) and (key in CHECK_TYPES or key in triggers or "[" in key)


# ----------------------------------------------------------------------------- semantics


def semantic_problem(scenario: Scenario) -> tuple[str, str] | None:
    """The first cross-field problem as (field, reason), or None."""
    checks = (
        _agents_problem,
        _world_problem,
        _tables_problem,
        _reference_problem,
        _fixtures_problem,
        _interfere_problem,
    )
    for check in checks:
        problem = check(scenario)
        if problem:
            return problem
    return None


def _agents_problem(s: Scenario) -> tuple[str, str] | None:
    names = [a.name.casefold() for a in s.workspace.agents]
    if s.agent.casefold() not in names:
        return "agent", f"agent {s.agent!r} is not in workspace.agents"
    for i, agent in enumerate(s.workspace.agents):
        if names.count(agent.name.casefold()) > 1:
            return f"workspace.agents[{i}].name", f"duplicate agent name {agent.name!r}"
        if agent.name.casefold() == OWNER:
            return f"workspace.agents[{i}].name", f"{OWNER!r} is reserved for the owner"
        for j, tool in enumerate(agent.tools):
            if tool not in TOOL_SPECS:
                return f"workspace.agents[{i}].tools[{j}]", f"unknown tool {tool!r}"
        if "finish" not in agent.tools:
            return f"workspace.agents[{i}].tools", "every agent needs finish"
    for i, memory in enumerate(s.workspace.memories):
        if memory.agent.casefold() not in names:
            return f"workspace.memories[{i}].agent", f"unknown agent {memory.agent!r}"
    return None


WORLD_NEEDS = ((FILE_TOOLS, "files"), (WEATHER_TOOLS, "weather"), (WEB_TOOLS, "web"))


def _world_problem(s: Scenario) -> tuple[str, str] | None:
    """Every ladder tool an agent has needs its fixture set in workspace.world."""
    world = s.workspace.world
    for i, agent in enumerate(s.workspace.agents):
        for tools, field in WORLD_NEEDS:
            used = sorted(tools & set(agent.tools))
            if used and (world is None or getattr(world, field) is None):
                return f"workspace.agents[{i}].tools", f"{used[0]} needs workspace.world.{field}"
    return None


def _tables_problem(s: Scenario) -> tuple[str, str] | None:
    seen: set[str] = set()
    for i, table in enumerate(s.workspace.tables):
        if table.name.casefold() in seen:
            return f"workspace.tables[{i}].name", f"duplicate table {table.name!r}"
        seen.add(table.name.casefold())
        if len({c.casefold() for c in table.columns}) != len(table.columns):
            return f"workspace.tables[{i}].columns", "duplicate column"
        for r, row in enumerate(table.rows):
            unknown = [k for k in row if k not in table.columns]
            if unknown:
                return f"workspace.tables[{i}].rows[{r}]", f"unknown column {unknown[0]!r}"
    titles = [n.title.casefold() for n in s.workspace.notes]
    for i, note in enumerate(s.workspace.notes):
        if titles.count(note.title.casefold()) > 1:
            return f"workspace.notes[{i}].title", f"duplicate note {note.title!r}"
    return None


def _reference_problem(s: Scenario) -> tuple[str, str] | None:
    tools = s.agent_spec().tools
    last = len(s.reference) - 1
    for i, step in enumerate(s.reference):
        spec = TOOL_SPECS.get(step.tool)
        if spec is None:
            return f"reference[{i}].tool", f"unknown tool {step.tool!r}"
        if step.tool not in tools:
            return f"reference[{i}].tool", f"tool {step.tool!r} is not among {s.agent}'s tools"
        if set(step.args) != set(spec.args):
            missing = [a for a in spec.args if a not in step.args]
            extra = [a for a in step.args if a not in spec.args]
            reason = f"missing argument {missing[0]!r}" if missing else f"unknown argument {extra[0]!r}"
            return f"reference[{i}].args", reason
        if (step.tool == "finish") != (i == last):
            return f"reference[{i}].tool", "finish must be the last step, and only the last"
    return None


def _fixtures_problem(s: Scenario) -> tuple[str, str] | None:
    for url in s.fixtures or {}:
        host = (urlsplit(url).hostname or "").lower()
        if not host.endswith(".test"):
            return f"fixtures.{url}", "fixture hosts must end in .test"
    return None


def _interfere_problem(s: Scenario) -> tuple[str, str] | None:
    spec = s.interfere
    if spec is None:
        return None
    if spec.after_tool not in TOOL_SPECS:
        return "interfere.after_tool", f"unknown tool {spec.after_tool!r}"
    if spec.table is not None:
        table = next((t for t in s.workspace.tables if t.name == spec.table), None)
        if table is None:
            return "interfere.table", f"no table {spec.table!r} in the workspace"
        unknown = [k for k in spec.set or {} if k not in table.columns]
        if unknown:
            return "interfere.set", f"unknown column {unknown[0]!r}"
    if spec.note is not None and spec.note not in {n.title for n in s.workspace.notes}:
        return "interfere.note", f"no note {spec.note!r} in the workspace"
    return None
