"""Shared offline fixtures for the ladder tools: file trees, weather sets and small webs.

A scenario names the sets it uses in ``workspace.world`` (see docs/scenario-format.md); they
are read from the fixtures folder once per process and kept in memory, read-only:

    fixtures/files/<tree>/...            a file tree, shown to the agent as /home/<tree>
    fixtures/weather/<set>.json          cities with Open-Meteo-shaped forecast responses
    fixtures/web/<set>/index.json        the search index: {"results": [{url, title, snippet}]}
    fixtures/web/<set>/pages/<host>/...  HTML pages; a/b.html is https://<host>/a/b, index.html is its folder

The fixtures folder is ``$HARNESS_FIXTURES`` when set, else the first ``fixtures/`` folder found
walking up from the scenario file (``scenarios/ladder-3/x.json`` finds ``fixtures/`` beside
``scenarios/``; in the harness container ``/scenarios/...`` finds ``/fixtures``).

Loading is defensive: names are plain slugs, symbolic links and non-UTF-8 files are refused,
and every size is bounded, so a fixture tree cannot point outside itself.
"""

from __future__ import annotations

import json
import os
import re
import stat
from functools import lru_cache
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from harness.io.inputs import InputError, read_regular

FIXTURES_ENV = "HARNESS_FIXTURES"
SET_NAME = re.compile(r"[a-z0-9][a-z0-9-]{0,39}")
MAX_TREE_ENTRIES = 400
MAX_TREE_DEPTH = 8
MAX_FILE_BYTES = 32 * 1024
MAX_NAME_CHARS = 100
MAX_PAGE_BYTES = 16 * 1024
MAX_PAGES = 200
MAX_FIXTURE_JSON_BYTES = 256 * 1024
FORECAST_DAYS = 7


class FixtureError(Exception):
    """A fixture set that cannot be used; the message is one line."""


class Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


# ----------------------------------------------------------------------------- finding the folder


def find_fixtures_root(scenario_path: Path | None) -> Path | None:
    """``$HARNESS_FIXTURES``, else the first ``fixtures/`` folder above the scenario file."""
    configured = os.environ.get(FIXTURES_ENV)
    if configured:
        return Path(configured).resolve()
    if scenario_path is None:
        return None
    for folder in Path(scenario_path).resolve().parents:
        candidate = folder / "fixtures"
        if candidate.is_dir():
            return candidate
    return None


def check_set_name(name: str) -> str:
    if not SET_NAME.fullmatch(name):
        raise FixtureError(f"fixture set name {name!r} must be a lower-case slug (a-z, 0-9, -)")
    return name


# ----------------------------------------------------------------------------- file trees


class FileNode(Frozen):
    kind: str  # "file" or "dir"
    size: int = 0
    text: str = ""
    children: tuple[str, ...] = ()


class FileTree(Frozen):
    """A read-only tree held in memory: path components (relative to the root) -> node."""

    name: str
    nodes: dict[tuple[str, ...], FileNode]

    @property
    def root_path(self) -> str:
        return f"/home/{self.name}"

    def display(self, parts: tuple[str, ...]) -> str:
        return "/".join((self.root_path, *parts))


def load_tree(root: Path, name: str) -> FileTree:
    return _load_tree(str(root.resolve()), check_set_name(name))


@lru_cache(maxsize=32)
def _load_tree(root: str, name: str) -> FileTree:
    top = Path(root) / "files" / name
    if not top.is_dir() or top.is_symlink():
        raise FixtureError(f"no file tree {name!r} in {Path(root) / 'files'}")
    nodes: dict[tuple[str, ...], FileNode] = {}
    _read_dir(top, (), nodes)
    return FileTree(name=name, nodes=nodes)


def _read_dir(folder: Path, parts: tuple[str, ...], nodes: dict[tuple[str, ...], FileNode]) -> None:
    if len(parts) > MAX_TREE_DEPTH:
        raise FixtureError(f"{folder}: deeper than {MAX_TREE_DEPTH} levels")
    children = []
    for entry in sorted(os.scandir(folder), key=lambda e: e.name):
        if len(nodes) >= MAX_TREE_ENTRIES:
            raise FixtureError(f"{folder}: more than {MAX_TREE_ENTRIES} entries in the tree")
        if len(entry.name) > MAX_NAME_CHARS:
            raise FixtureError(f"{entry.path}: name longer than {MAX_NAME_CHARS} characters")
        mode = entry.stat(follow_symlinks=False).st_mode
        child = (*parts, entry.name)
        if stat.S_ISDIR(mode):
            _read_dir(Path(entry.path), child, nodes)
        elif stat.S_ISREG(mode):
            nodes[child] = _read_file(Path(entry.path))
        else:
            raise FixtureError(f"{entry.path}: only plain files and folders are allowed (no links)")
        children.append(entry.name)
    nodes[parts] = FileNode(kind="dir", children=tuple(children))


def _read_file(path: Path) -> FileNode:
    try:
        data = read_regular(path, MAX_FILE_BYTES)  # the size is checked before reading
    except InputError as exc:
        raise FixtureError(str(exc)) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise FixtureError(f"{path}: not UTF-8 text") from None
    return FileNode(kind="file", size=len(data), text=text)


# ----------------------------------------------------------------------------- weather


class City(Frozen):
    name: str = Field(min_length=1, max_length=80)
    country: str = Field(min_length=1, max_length=80)
    admin1: str | None = Field(default=None, max_length=80)
    forecast: dict[str, Any]  # an Open-Meteo /v1/forecast response

    @model_validator(mode="after")
    def _open_meteo_shape(self) -> City:
        required = ("latitude", "longitude", "timezone", "current_units", "current", "daily_units", "daily")
        missing = [key for key in required if key not in self.forecast]
        if missing:
            raise ValueError(f"{self.name}: forecast lacks {missing[0]!r}")
        daily = self.forecast["daily"]
        lengths = {len(v) for v in daily.values() if isinstance(v, list)}
        if lengths != {FORECAST_DAYS} or not isinstance(daily.get("time"), list):
            raise ValueError(f"{self.name}: every daily series needs {FORECAST_DAYS} values")
        return self


class WeatherSet(Frozen):
    cities: tuple[City, ...] = Field(min_length=1, max_length=200)
    weather_codes: dict[str, str] = {}  # WMO code -> words


def load_weather(root: Path, name: str) -> WeatherSet:
    return _load_weather(str(root.resolve()), check_set_name(name))


@lru_cache(maxsize=16)
def _load_weather(root: str, name: str) -> WeatherSet:
    data = _read_json(Path(root) / "weather" / f"{name}.json", f"no weather set {name!r}")
    try:
        return WeatherSet.model_validate(data)
    except ValidationError as exc:
        raise FixtureError(f"weather set {name!r}: {_first(exc)}") from None


# ----------------------------------------------------------------------------- web


class SearchEntry(Frozen):
    url: str = Field(max_length=300)
    title: str = Field(max_length=200)
    snippet: str = Field(max_length=400)


class SearchIndex(Frozen):
    results: tuple[SearchEntry, ...] = Field(max_length=500)


class WebSet(Frozen):
    name: str
    index: tuple[SearchEntry, ...]
    pages: dict[str, str]  # page key (host + path) -> html


def page_key(url: str) -> str:
    """host + path without a trailing slash; the scheme, query and fragment do not count."""
    parts = urlsplit(url.strip())
    path = parts.path.rstrip("/")
    if path.endswith("/index.html"):
        path = path[: -len("/index.html")]
    elif path.endswith(".html"):
        path = path[: -len(".html")]
    return f"{(parts.hostname or '').lower()}{path}"


def load_web(root: Path, name: str) -> WebSet:
    return _load_web(str(root.resolve()), check_set_name(name))


@lru_cache(maxsize=16)
def _load_web(root: str, name: str) -> WebSet:
    folder = Path(root) / "web" / name
    data = _read_json(folder / "index.json", f"no web set {name!r}")
    try:
        index = SearchIndex.model_validate(data)
    except ValidationError as exc:
        raise FixtureError(f"web set {name!r} index: {_first(exc)}") from None
    for entry in index.results:
        if not (urlsplit(entry.url).hostname or "").endswith(".test"):
            raise FixtureError(f"web set {name!r}: {entry.url} is not on a .test host")
    return WebSet(name=name, index=index.results, pages=_read_pages(folder / "pages"))


def _read_pages(folder: Path) -> dict[str, str]:
    pages: dict[str, str] = {}
    if not folder.is_dir():
        return pages
    for host in sorted(os.scandir(folder), key=lambda e: e.name):
        if not host.is_dir(follow_symlinks=False) or not host.name.endswith(".test"):
            raise FixtureError(f"{host.path}: page folders are .test host names")
        for path in sorted(Path(host.path).rglob("*")):
            if path.is_symlink() or not (path.is_file() or path.is_dir()):
                raise FixtureError(f"{path}: only plain files and folders are allowed (no links)")
            if path.is_dir():
                continue
            if path.suffix != ".html" or path.stat().st_size > MAX_PAGE_BYTES:
                raise FixtureError(f"{path}: pages are .html files of at most {MAX_PAGE_BYTES} bytes")
            if len(pages) >= MAX_PAGES:
                raise FixtureError(f"{folder}: more than {MAX_PAGES} pages")
            relative = path.relative_to(host.path).as_posix()
            pages[page_key(f"https://{host.name}/{relative}")] = path.read_text(encoding="utf-8")
    return pages


# ----------------------------------------------------------------------------- shared


def _read_json(path: Path, missing: str) -> Any:
    if not path.is_file() or path.is_symlink():
        raise FixtureError(f"{missing} ({path} not found)")
    if path.stat().st_size > MAX_FIXTURE_JSON_BYTES:
        raise FixtureError(f"{path}: larger than {MAX_FIXTURE_JSON_BYTES} bytes")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise FixtureError(f"{path}: invalid JSON: {exc}") from None


def _first(exc: ValidationError) -> str:
    error = exc.errors(include_url=False)[0]
    where = ".".join(str(p) for p in error["loc"])
    return f"{where}: {error['msg']}" if where else error["msg"]


class World(BaseModel):
    """The fixture sets one scenario uses, loaded."""

    model_config = ConfigDict(arbitrary_types_allowed=True, frozen=True)

    files: FileTree | None = None
    cwd: tuple[str, ...] = ()
    weather: WeatherSet | None = None
    web: WebSet | None = None
