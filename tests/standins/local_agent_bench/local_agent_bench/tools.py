"""The stand-in's four tools (not Local Agent Bench's code). get_weather calls Open-Meteo's hosts,
written here with no setting to change them; a network error is not caught (it ends the run)."""

from __future__ import annotations

import json
import os
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

GEOCODING = "https://geocoding-api.open-meteo.com/v1/search"
FORECAST = "https://api.open-meteo.com/v1/forecast"
BUILT_IN = {"berlin": (52.52, 13.41), "zurich": (47.37, 8.55)}  # no geocoding for these
MAX_READ = 4000

TOOLS = {
    "get_cwd": "get_cwd(): the current working folder",
    "list_directory": 'list_directory({"path": "."}): the names in a folder',
    "read_file": 'read_file({"path": "README.md"}): a text file\'s first 4000 characters',
    "get_weather": 'get_weather({"city": "Lisbon"}): the current weather in a city',
}


def fetch_json(url: str, query: dict[str, Any]) -> dict[str, Any]:
    with urllib.request.urlopen(url + "?" + urllib.parse.urlencode(query), timeout=30) as response:
        return json.loads(response.read().decode())


def coordinates(city: str) -> tuple[float, float]:
    if city.strip().lower() in BUILT_IN:
        return BUILT_IN[city.strip().lower()]
    found = fetch_json(GEOCODING, {"name": city, "count": 1}).get("results") or []
    if not found:
        raise LookupError(f"no such city: {city}")
    return float(found[0]["latitude"]), float(found[0]["longitude"])


def get_weather(city: str) -> dict[str, Any]:
    latitude, longitude = coordinates(city)
    query = {"latitude": latitude, "longitude": longitude, "current": "temperature_2m,weather_code,wind_speed_10m"}
    return {"city": city, "current": fetch_json(FORECAST, query).get("current", {})}


def run(name: str, args: dict[str, Any]) -> Any:
    if name == "get_cwd":
        return os.getcwd()
    if name == "list_directory":
        return sorted(p.name for p in Path(str(args.get("path", "."))).iterdir())
    if name == "read_file":
        return Path(str(args["path"])).read_text(errors="replace")[:MAX_READ]
    if name == "get_weather":
        return get_weather(str(args["city"]))
    raise KeyError(name)
