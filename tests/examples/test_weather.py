"""examples.weather: deterministic forecasts, the hand-written converter, composition through ctx."""

from __future__ import annotations

import datetime as dt
import json
from typing import TYPE_CHECKING

import pytest

from toolmesh.v1 import function_pb2

if TYPE_CHECKING:
    from tests.examples.conftest import Client, Serve


@pytest.fixture
async def weather(serve: Serve) -> Client:
    return await serve("examples.weather")


async def test_forecast_has_the_requested_days_and_is_deterministic(weather: Client) -> None:
    before = dt.date.today()
    forecast = await weather.ok("get_forecast", city="Lisbon", days=5)
    again = await weather.ok("get_forecast", city="  lisbon ", days=5)

    assert forecast["city"] == "Lisbon" and forecast["unit"] == "celsius"
    dates = [dt.date.fromisoformat(day["date"]) for day in forecast["days"]]
    assert dates[0] in (before, dt.date.today())
    assert dates == [dates[0] + dt.timedelta(days=n) for n in range(5)]
    assert again["days"] == forecast["days"], "case and spacing of the city must not change the weather"
    for day in forecast["days"]:
        assert day["low"] <= day["high"]
        assert 0 <= day["precipitation_chance"] <= 100


async def test_each_city_has_its_own_weather(weather: Client) -> None:
    singapore = await weather.ok("get_forecast", city="Singapore", days=7)
    oslo = await weather.ok("get_forecast", city="Oslo", days=7)
    assert singapore["days"] != oslo["days"]
    # Whatever the season, Singapore is warmer than Oslo.
    assert min(d["high"] for d in singapore["days"]) > max(d["low"] for d in oslo["days"])


async def test_fahrenheit_is_the_same_weather_in_other_units(weather: Client) -> None:
    celsius = await weather.ok("get_forecast", city="Tokyo", days=3)
    fahrenheit = await weather.ok("get_forecast", city="Tokyo", days=3, unit="fahrenheit")
    assert fahrenheit["unit"] == "fahrenheit"
    for c, f in zip(celsius["days"], fahrenheit["days"], strict=True):
        assert f["high"] == pytest.approx(c["high"] * 9 / 5 + 32, abs=0.051)
        assert f["condition"] == c["condition"]


async def test_current_weather_agrees_with_todays_forecast(weather: Client) -> None:
    current = await weather.ok("get_current_weather", city="Cape Town")
    today = (await weather.ok("get_forecast", city="Cape Town", days=1))["days"][0]
    assert current["date"] == today["date"]
    assert current["condition"] == today["condition"]
    assert today["low"] <= current["temperature"] <= today["high"]
    assert 0 <= current["humidity"] <= 100


@pytest.mark.parametrize(
    ("arguments", "path"),
    [
        ({"city": "Paris", "days": 8}, "days"),
        ({"city": "Paris", "days": 0}, "days"),
        ({"city": "   "}, "city"),
        ({"city": "Paris", "unit": "kelvin"}, "unit"),
        ({}, "city"),
    ],
)
async def test_bad_forecast_arguments_are_named(
    weather: Client, arguments: dict[str, object], path: str
) -> None:
    result = await weather.call("get_forecast", **arguments)
    assert result.is_error and result.error is not None
    assert result.error.code == "invalid_arguments"
    assert [v.path for v in result.error.violations] == [path]


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        (
            {"value": 100, "from_unit": "celsius", "to_unit": "fahrenheit"},
            {"value": 212.0, "unit": "fahrenheit"},
        ),
        ({"value": 212, "from_unit": "fahrenheit"}, {"value": 100.0, "unit": "celsius"}),
        ({"value": 0, "from_unit": "kelvin", "to_unit": "celsius"}, {"value": -273.15, "unit": "celsius"}),
    ],
)
async def test_convert_temperature(weather: Client, arguments: dict[str, object], expected: object) -> None:
    assert await weather.ok("convert_temperature", **arguments) == expected


async def test_below_absolute_zero_is_an_error(weather: Client) -> None:
    result = await weather.call("convert_temperature", value=-300, from_unit="celsius")
    assert result.is_error and result.error is not None
    assert result.error.code == "function_error"
    assert "below absolute zero" in result.error.message


async def test_every_weather_function_declares_its_output_and_is_safe_to_retry(weather: Client) -> None:
    listing = await weather.stub.ListFunctions(function_pb2.ListFunctionsRequest())
    specs = {spec.name: spec for spec in listing.functions}
    assert set(specs) == {"get_current_weather", "get_forecast", "convert_temperature", "plan_packing"}
    for spec in specs.values():
        assert json.loads(spec.output_schema)["type"] == "object", spec.name
        assert spec.annotations.read_only and spec.annotations.idempotent, spec.name


@pytest.mark.parametrize("city", ["Oslo", "Dubai", "London", "Sydney", "Springfield"])
async def test_packing_follows_the_forecast(weather: Client, city: str) -> None:
    """plan_packing reads the forecast through ctx.invoke; its advice must match that forecast."""
    packing = await weather.ok("plan_packing", city=city, days=7)
    days = (await weather.ok("get_forecast", city=city, days=7))["days"]

    wet = [
        d
        for d in days
        if d["condition"] in ("showers", "rain", "thunderstorms") or d["precipitation_chance"] >= 60
    ]
    assert ("umbrella" in packing["items"]) == bool(wet)
    assert ("warm coat" in packing["items"]) == any(d["low"] <= 5 for d in days)
    assert ("sunscreen" in packing["items"]) == any(d["high"] >= 25 for d in days)
    assert packing["items"][0] == "clothes for 7 days"
    assert len(packing["reasons"]) == sum(
        [
            bool(wet),
            any(d["condition"] == "snow" for d in days),
            any(d["low"] <= 5 for d in days),
            any(d["high"] >= 25 for d in days),
            any(d["wind_kph"] >= 35 for d in days),
        ]
    )
