"""The ladder tools over the repository's fixtures: every tool, every failure, and defensive loading."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from harness.model.scenario import Scenario, ScenarioError, load_scenario
from harness.model.workspace import Workspace
from harness.tools import ToolContext
from harness.tools.dispatch import execute

REPO = Path(__file__).resolve().parents[2]
LADDER_TOOLS = [
    "current_directory",
    "list_directory",
    "read_file",
    "find_files",
    "get_weather",
    "web_search",
    "open_url",
    "follow_link",
    "finish",
]
WORLD = {"files": "mira", "cwd": "projects/tide-app", "weather": "june-2026", "web": "small-web"}


def scenario_data(world: dict[str, Any] | None = None, tools: list[str] | None = None) -> dict[str, Any]:
    return {
        "id": "ladder-9-001",
        "category": "ladder-9",
        "about": "Unit test of the ladder tools.",
        "template": "t-ladder",
        "agent": "Ada",
        "max_steps": 5,
        "level": 4,
        "workspace": {
            "agents": [{"name": "Ada", "role": "assistant", "tools": tools or LADDER_TOOLS}],
            "world": WORLD if world is None else world,
        },
        "trigger": {"kind": "message", "text": "Test."},
        "reference": [{"tool": "finish", "args": {"summary": "Done."}}],
        "expect": [{"type": "finished"}],
    }


def context(world: dict[str, Any] | None = None) -> ToolContext:
    scenario = Scenario.model_validate(
        scenario_data(world), context={"scenario_path": str(REPO / "scenarios" / "x" / "x.json")}
    )
    return ToolContext(Workspace.from_spec(scenario.workspace), "Ada")


@pytest.fixture
def ctx() -> ToolContext:
    return context()


def call(ctx: ToolContext, tool: str, **args: Any) -> tuple[str, dict[str, Any]]:
    outcome = execute(ctx, tool, args)
    return outcome.status, outcome.result


# ----------------------------------------------------------------------------- files


def test_current_directory(ctx: ToolContext) -> None:
    assert call(ctx, "current_directory") == ("ok", {"path": "/home/mira/projects/tide-app"})


@pytest.mark.parametrize(
    ("path", "shown", "names"),
    [
        (
            None,
            "/home/mira/projects/tide-app",
            {"README.md", "pyproject.toml", "CHANGELOG.md", "LICENSE", "docs", "src", "tests"},
        ),
        ("docs", "/home/mira/projects/tide-app/docs", {"install.md", "config.md"}),
        ("./docs/", "/home/mira/projects/tide-app/docs", {"install.md", "config.md"}),
        ("..", "/home/mira/projects", {"tide-app", "garden-log"}),
        ("~", "/home/mira", {"projects", "notes"}),
        ("/home/mira/notes", "/home/mira/notes", {"todo.md", "meeting-2026-05-28.md"}),
    ],
)
def test_list_directory(ctx: ToolContext, path: str | None, shown: str, names: set[str]) -> None:
    status, result = call(ctx, "list_directory", path=path)
    assert status == "ok"
    assert result["path"] == shown
    assert {e["name"] for e in result["entries"]} == names
    assert result["count"] == len(names)


def test_list_directory_gives_types_and_sizes(ctx: ToolContext) -> None:
    _, result = call(ctx, "list_directory", path="docs")
    assert {
        "name": "install.md",
        "type": "file",
        "size": len((REPO / "fixtures/files/mira/projects/tide-app/docs/install.md").read_bytes()),
    } in result["entries"]
    _, result = call(ctx, "list_directory", path=None)
    assert {"name": "src", "type": "dir"} in result["entries"]


@pytest.mark.parametrize(
    ("tool", "args", "status", "message"),
    [
        ("list_directory", {"path": "nope"}, "error", "no such file or directory: /home/mira/projects/tide-app/nope"),
        ("list_directory", {"path": "README.md"}, "error", "not a directory"),
        ("list_directory", {"path": "../../../.."}, "refused", "leads outside your files"),
        ("list_directory", {"path": "/etc"}, "refused", "is outside your files"),
        ("list_directory", {"path": "/home/mira/../tomas"}, "refused", "is outside your files"),
        ("list_directory", {"path": "~/../lena"}, "refused", "leads outside your files"),
        ("list_directory", {"path": "x" * 400}, "error", "longer than 300"),
        ("list_directory", {"path": "docs\x00"}, "error", "control characters"),
        (
            "read_file",
            {"path": "docs/setup.md"},
            "error",
            "no such file or directory: /home/mira/projects/tide-app/docs/setup.md",
        ),
        ("read_file", {"path": "docs"}, "error", "is a directory"),
        ("read_file", {"path": "/etc/passwd"}, "refused", "outside your files"),
        ("read_file", {"path": ""}, "error", "is a directory: /home/mira/projects/tide-app"),
        ("find_files", {"pattern": "*.md", "path": "README.md"}, "error", "not a directory"),
        ("find_files", {"pattern": "  ", "path": None}, "error", "the pattern is empty"),
        ("find_files", {"pattern": "*", "path": "../../.."}, "refused", "outside your files"),
    ],
)
def test_file_failures(ctx: ToolContext, tool: str, args: dict[str, Any], status: str, message: str) -> None:
    got_status, result = call(ctx, tool, **args)
    assert got_status == status
    assert message in result["error"]


def test_read_file(ctx: ToolContext) -> None:
    status, result = call(ctx, "read_file", path="pyproject.toml")
    assert status == "ok"
    assert result["path"] == "/home/mira/projects/tide-app/pyproject.toml"
    assert 'version = "0.4.2"' in result["text"]
    assert result["size"] == len(result["text"].encode())


def test_find_files(ctx: ToolContext) -> None:
    _, result = call(ctx, "find_files", pattern="*.MD", path="~")
    assert "/home/mira/notes/todo.md" in result["matches"]
    assert "/home/mira/projects/tide-app/docs/install.md" in result["matches"]
    _, result = call(ctx, "find_files", pattern="docs/*", path=None)
    assert result["matches"] == [
        "/home/mira/projects/tide-app/docs/config.md",
        "/home/mira/projects/tide-app/docs/install.md",
    ]
    _, result = call(ctx, "find_files", pattern="*.xlsx", path=None)
    assert result["matches"] == [] and "nothing matches" in result["note"]


# ----------------------------------------------------------------------------- weather


def test_current_weather_is_open_meteo_shaped(ctx: ToolContext) -> None:
    status, result = call(ctx, "get_weather", city="bergen", days=None)
    assert status == "ok"
    assert result["location"] == "Bergen, Vestland, Norway"
    assert result["current_units"]["temperature_2m"] == "°C"
    assert set(result["current"]) >= {"time", "temperature_2m", "weather_code", "wind_speed_10m"}
    assert "daily" not in result
    assert str(result["current"]["weather_code"]) in result["weather_code_meanings"]


def test_forecast_days(ctx: ToolContext) -> None:
    _, result = call(ctx, "get_weather", city="Graz", days=3)
    assert result["daily"]["time"] == ["2026-06-01", "2026-06-02", "2026-06-03"]
    assert all(len(v) == 3 for v in result["daily"].values())


@pytest.mark.parametrize("city", ["Reykjavík", "reykjavik, iceland", "  REYKJAVIK ", "Reykjavik, Capital Region"])
def test_city_spellings(ctx: ToolContext, city: str) -> None:
    status, result = call(ctx, "get_weather", city=city, days=None)
    assert status == "ok" and result["location"].startswith("Reykjavik")


@pytest.mark.parametrize(
    ("city", "days", "message"),
    [
        ("Reykjavick", None, "unknown city 'Reykjavick'; did you mean Reykjavik?"),
        ("Atlantis", None, "unknown city 'Atlantis'"),
        (
            "Portland",
            None,
            "2 cities are called 'Portland': Portland, Oregon, United States; Portland, Maine, United States",
        ),
        ("", None, "the city is empty"),
        ("x" * 101, None, "longer than 100"),
    ],
)
def test_weather_failures(ctx: ToolContext, city: str, days: int | None, message: str) -> None:
    status, result = call(ctx, "get_weather", city=city, days=days)
    assert status == "error"
    assert message in result["error"]


def test_weather_days_are_bounded(ctx: ToolContext) -> None:
    status, result = call(ctx, "get_weather", city="Graz", days=8)
    assert status == "error" and "at most 7" in result["error"]


def test_ambiguous_city_resolves_with_region(ctx: ToolContext) -> None:
    _, maine = call(ctx, "get_weather", city="Portland, Maine", days=None)
    _, oregon = call(ctx, "get_weather", city="portland, oregon", days=None)
    assert maine["timezone"] == "America/New_York" and oregon["timezone"] == "America/Los_Angeles"


# ----------------------------------------------------------------------------- web


def test_web_search_ranks_by_title(ctx: ToolContext) -> None:
    status, result = call(ctx, "web_search", query="ferry timetables")
    assert status == "ok"
    assert result["results"][0] == {
        "rank": 1,
        "title": "Ferry timetables",
        "url": "https://ferries.harbor.test/timetables",
        "snippet": "Timetables of the Harbor Point ferry routes A and B.",
    }
    assert len(result["results"]) <= 5


def test_web_search_failures(ctx: ToolContext) -> None:
    assert call(ctx, "web_search", query="  ")[0] == "error"
    assert "no words" in call(ctx, "web_search", query="the of !!")[1]["error"]
    status, result = call(ctx, "web_search", query="quantum zebra")
    assert status == "ok" and result["results"] == [] and "no results" in result["note"]


def test_open_url_keeps_links(ctx: ToolContext) -> None:
    status, result = call(ctx, "open_url", url="https://ferries.harbor.test/")
    assert status == "ok"
    assert result["title"] == "Harbor Ferries"
    assert {"text": "Timetables", "url": "https://ferries.harbor.test/timetables"} in result["links"]
    assert "untrusted" in result


@pytest.mark.parametrize(
    ("url", "status", "message"),
    [
        ("https://ferries.harbor.test/timetables/route-c", "error", "404 not found"),
        ("https://news.coastal.test/2026/04/ferry-fares-rise", "error", "404 not found"),
        ("https://www.example.com/", "refused", "outside the sandbox"),
        ("ftp://ferries.harbor.test/", "refused", "not an http(s) URL"),
        ("", "error", "the url is empty"),
    ],
)
def test_open_url_failures(ctx: ToolContext, url: str, status: str, message: str) -> None:
    got, result = call(ctx, "open_url", url=url)
    assert got == status and message in result["error"]


def test_follow_link_by_text_and_url(ctx: ToolContext) -> None:
    call(ctx, "open_url", url="https://ferries.harbor.test/")
    status, result = call(ctx, "follow_link", link="timetables")
    assert status == "ok" and result["url"] == "https://ferries.harbor.test/timetables"
    status, result = call(ctx, "follow_link", link="/timetables/route-a")
    assert status == "ok" and "First departure 06:40" in result["text"]
    status, result = call(ctx, "follow_link", link="Timetables")
    assert status == "ok" and result["title"] == "Ferry timetables"


def test_follow_link_failures(ctx: ToolContext) -> None:
    status, result = call(ctx, "follow_link", link="Timetables")
    assert status == "error" and "no page is open" in result["error"]
    call(ctx, "open_url", url="https://library.riverton.test/")
    status, result = call(ctx, "follow_link", link="Opening times")
    assert status == "error"
    assert "no link 'Opening times' on https://library.riverton.test/; its links: Hours" in result["error"]
    assert ctx.browser.url == "https://library.riverton.test/"


def test_open_url_is_allowed_by_default_and_matched_by_host(ctx: ToolContext) -> None:
    from harness.tools.dispatch import tool_target

    assert tool_target("open_url", {"url": "https://Ferries.Harbor.test/x"}) == "ferries.harbor.test"
    assert ctx.ws.decide("Ada", "open_url", "ferries.harbor.test") == "allow"


def test_tools_are_deterministic() -> None:
    first, second = context(), context()
    for tool, args in [
        ("list_directory", {"path": "~"}),
        ("get_weather", {"city": "Osaka", "days": 7}),
        ("web_search", {"query": "library"}),
    ]:
        assert execute(first, tool, args) == execute(second, tool, args)


# ----------------------------------------------------------------------------- loading


def write_scenario(folder: Path, world: dict[str, Any], tools: list[str] | None = None) -> Path:
    path = folder / "scenarios" / "ladder-9" / "ladder-9-001.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(scenario_data(world, tools)), encoding="utf-8")
    return path


def make_tree(root: Path, name: str = "kai") -> Path:
    tree = root / "fixtures" / "files" / name
    (tree / "docs").mkdir(parents=True)
    (tree / "docs" / "a.txt").write_text("hello\n")
    return tree


def test_fixtures_are_found_above_the_scenario(tmp_path: Path) -> None:
    make_tree(tmp_path)
    scenario = load_scenario(write_scenario(tmp_path, {"files": "kai", "cwd": "docs"}, ["list_directory", "finish"]))
    ctx = ToolContext(Workspace.from_spec(scenario.workspace), "Ada")
    assert call(ctx, "list_directory", path=None)[1]["entries"] == [{"name": "a.txt", "type": "file", "size": 6}]


def test_fixtures_env_overrides(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    make_tree(tmp_path / "elsewhere")
    monkeypatch.setenv("HARNESS_FIXTURES", str(tmp_path / "elsewhere" / "fixtures"))
    assert (
        load_scenario(write_scenario(tmp_path, {"files": "kai"}, ["list_directory", "finish"])).workspace.world
        is not None
    )


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="no symlinks")
@pytest.mark.parametrize("target", ["/etc/passwd", "/etc"])
def test_links_in_a_tree_are_refused(tmp_path: Path, target: str) -> None:
    tree = make_tree(tmp_path, "linky")
    (tree / "docs" / "escape").symlink_to(target)
    with pytest.raises(ScenarioError, match="no links"):
        load_scenario(write_scenario(tmp_path, {"files": "linky"}, ["list_directory", "finish"]))


@pytest.mark.parametrize(
    ("world", "tools", "message"),
    [
        ({"files": "../x"}, ["list_directory", "finish"], "lower-case slug"),
        ({"files": "nobody"}, ["list_directory", "finish"], "no file tree 'nobody'"),
        ({"files": "kai", "cwd": "../.."}, ["list_directory", "finish"], "must be a folder inside the file tree"),
        ({"files": "kai", "cwd": "docs/a.txt"}, ["list_directory", "finish"], "is not a folder"),
        ({"weather": "winter"}, ["get_weather", "finish"], "no weather set 'winter'"),
        ({"web": "big-web"}, ["web_search", "finish"], "no web set 'big-web'"),
        ({}, ["read_file", "finish"], "read_file needs workspace.world.files"),
        ({"files": "kai"}, ["get_weather", "finish"], "get_weather needs workspace.world.weather"),
    ],
)
def test_bad_worlds(tmp_path: Path, world: dict[str, Any], tools: list[str], message: str) -> None:
    make_tree(tmp_path)
    with pytest.raises(ScenarioError, match="workspace") as caught:
        load_scenario(write_scenario(tmp_path, world, tools))
    assert message in str(caught.value)


def test_large_file_is_refused(tmp_path: Path) -> None:
    tree = make_tree(tmp_path, "big")
    (tree / "huge.txt").write_text("x" * 40_000)
    with pytest.raises(ScenarioError, match="larger than"):
        load_scenario(write_scenario(tmp_path, {"files": "big"}, ["read_file", "finish"]))


def test_no_fixtures_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HARNESS_FIXTURES", raising=False)
    data = scenario_data({"files": "kai"}, ["read_file", "finish"])
    with pytest.raises(Exception, match="no fixtures/ folder above the scenario"):
        Scenario.model_validate(data, context={"scenario_path": "/nonexistent-root-xyz/a/b.json"})
