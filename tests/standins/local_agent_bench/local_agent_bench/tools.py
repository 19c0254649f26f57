"""The stand-in's four tools (not LAB's code), with the names, arguments and result fields LAB's
tools have. get_weather calls Open-Meteo's hosts over HTTPS, written here with no setting to change
them, and resolves Berlin and Zurich from a table of its own (no geocoding); a network error is not
caught: it ends the run, as LAB's does."""

from __future__ import annotations

import json
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]  # the project folder, wherever it was copied
GEOCODING = "https://geocoding-api.open-meteo.com/v1/search"
FORECAST = "https://api.open-meteo.com/v1/forecast"
CURRENT = "temperature_2m,relative_humidity_2m,precipitation,weather_code,wind_speed_10m"
TABLE = {
    "berlin": {"name": "Berlin", "country": "Germany", "latitude": 52.52, "longitude": 13.405},
    "zurich": {"name": "Zurich", "country": "Switzerland", "latitude": 47.3769, "longitude": 8.5417},
}
DESCRIPTIONS = [
    "get_cwd: the project folder's absolute path. args: {}",
    'list_directory: the entries of a folder of the project. args: {"path": "."}',
    'read_file: a text file of the project. args: {"path": "benchmarks/fixtures.md"}',
    'get_weather: the current weather in a place (Open-Meteo). args: {"location": "Lisbon"}',
]


class ToolError(RuntimeError):
    """A tool refused its arguments (a path outside the project, a place it cannot find)."""


def inside(path: str) -> Path:
    found = (ROOT / path).resolve()
    if not found.is_relative_to(ROOT):
        raise ToolError(f"outside the project: {path}")
    return found


def get_cwd() -> dict[str, Any]:
    return {"cwd": str(ROOT)}


def list_directory(path: str = ".") -> dict[str, Any]:
    folder = inside(path)
    if not folder.is_dir():
        raise ToolError(f"not a folder: {path}")
    entries = [{"name": p.name, "type": "directory" if p.is_dir() else "file"} for p in sorted(folder.iterdir())]
    return {"path": str(folder), "entries": entries}


def read_file(path: str) -> dict[str, Any]:
    file = inside(path)
    if not file.is_file():
        raise ToolError(f"not a file: {path}")
    return {"path": str(file), "content": file.read_text(encoding="utf-8")}


def fetch(url: str, query: dict[str, Any]) -> dict[str, Any]:
    with urllib.request.urlopen(f"{url}?{urllib.parse.urlencode(query)}", timeout=20) as response:
        return json.loads(response.read().decode("utf-8"))


def place(location: str) -> dict[str, Any]:
    known = [v for k, v in TABLE.items() if k in location.lower()]
    if known:
        return known[0]
    found = fetch(GEOCODING, {"name": location, "count": 1, "language": "en", "format": "json"}).get("results")
    if not found:
        raise ToolError(f"no such place: {location}")
    return found[0]


def forecast(latitude: float, longitude: float) -> dict[str, Any]:
    return fetch(FORECAST, {"latitude": latitude, "longitude": longitude, "current": CURRENT, "timezone": "auto"})


def get_weather(location: str) -> dict[str, Any]:
    where = place(location)
    now = forecast(where["latitude"], where["longitude"])["current"]
    return {
        "location": where["name"],
        "country": where.get("country"),
        "time": now["time"],
        "temperature_c": now["temperature_2m"],
        "wind_speed_kmh": now.get("wind_speed_10m"),
    }


TOOLS = {"get_cwd": get_cwd, "list_directory": list_directory, "read_file": read_file, "get_weather": get_weather}


def call_tool(name: str, args: dict[str, Any]) -> dict[str, Any]:
    if name not in TOOLS:
        raise ToolError(f"no tool named {name}")
    return TOOLS[name](**args)
