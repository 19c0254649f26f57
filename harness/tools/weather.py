"""get_weather over a fixture weather set: Open-Meteo-shaped current conditions and daily forecast.

A city is found by name, or by ``name, country`` / ``name, region`` (case and accents do not
matter). An unknown city fails with close spellings suggested; a name shared by several cities
fails and lists them, so the agent can retry with the region.
"""

from __future__ import annotations

import difflib
import unicodedata
from typing import Any

from harness.model.fixtures import City, WeatherSet
from harness.tools.context import OK, Handler, Result, ToolContext, ToolFailure, ToolOutcome, bounded, weather_set

MAX_CITY_CHARS = 100


def normalized(text: str) -> str:
    """Lower case, accents dropped, spaces collapsed."""
    decomposed = unicodedata.normalize("NFKD", text)
    plain = "".join(c for c in decomposed if not unicodedata.combining(c))
    return " ".join(plain.casefold().replace(",", " , ").split()).replace(" ,", ",")


def _names(city: City) -> set[str]:
    base = normalized(city.name)
    names = {base, f"{base}, {normalized(city.country)}"}
    if city.admin1:
        names.add(f"{base}, {normalized(city.admin1)}")
        names.add(f"{base}, {normalized(city.admin1)}, {normalized(city.country)}")
    return names


def _label(city: City) -> str:
    return ", ".join(x for x in (city.name, city.admin1, city.country) if x)


def find_city(weather: WeatherSet, query: str) -> City:
    wanted = normalized(bounded(query, "city", MAX_CITY_CHARS))
    found = [c for c in weather.cities if wanted in _names(c)]
    if len(found) == 1:
        return found[0]
    if found:
        options = "; ".join(_label(c) for c in found)
        raise ToolFailure(
            f"{len(found)} cities are called {query.strip()!r}: {options}. "
            f"Give the region too, like {_label(found[0])!r}"
        )
    known = {normalized(c.name): c.name for c in weather.cities}
    close = difflib.get_close_matches(wanted.split(",")[0].strip(), sorted(known), n=3, cutoff=0.75)
    hint = f"; did you mean {', '.join(known[c] for c in close)}?" if close else ""
    raise ToolFailure(f"unknown city {query.strip()!r}{hint}")


def get_weather(ctx: ToolContext, city: str, days: int | None) -> ToolOutcome:
    weather = weather_set(ctx)
    found = find_city(weather, city)
    forecast = found.forecast
    result: Result = {
        "location": _label(found),
        **{
            k: forecast[k]
            for k in ("latitude", "longitude", "timezone", "utc_offset_seconds", "elevation")
            if k in forecast
        },
        "current_units": forecast["current_units"],
        "current": forecast["current"],
    }
    if days:
        result["daily_units"] = forecast["daily_units"]
        result["daily"] = {key: values[:days] for key, values in forecast["daily"].items()}
    codes = _codes_in(result)
    if codes and weather.weather_codes:
        result["weather_code_meanings"] = {c: weather.weather_codes[c] for c in codes if c in weather.weather_codes}
    return ToolOutcome(OK, result)


def _codes_in(result: Result) -> list[str]:
    codes: list[Any] = [result["current"].get("weather_code")]
    codes += list(result.get("daily", {}).get("weather_code", []))
    return sorted({str(c) for c in codes if c is not None}, key=int)


HANDLERS: dict[str, Handler] = {"get_weather": get_weather}
