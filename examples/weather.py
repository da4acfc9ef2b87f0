"""Simulated weather: current conditions, forecasts, unit conversion and packing advice.

Nothing here touches the network. Each (city, date) pair seeds its own random
generator, so the same question always gets the same answer, and a city keeps a
plausible climate of its own from one day to the next.

Three ways of writing a tool are shown side by side: decorated functions whose
schemas come from type hints, a hand-written `FunctionDefinition`, and a
function that takes a `Context` to call other tools.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import math
import random
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field

import toolmesh

Unit = Literal["celsius", "fahrenheit"]
Condition = Literal["sunny", "partly cloudy", "cloudy", "fog", "showers", "rain", "thunderstorms", "snow"]
City = Annotated[str, Field(max_length=80, pattern=r"\S")]
Days = Annotated[int, Field(ge=1, le=7)]


class CurrentWeather(BaseModel):
    """The weather in a city right now."""

    city: str
    date: dt.date
    unit: Unit
    condition: Condition
    temperature: float
    feels_like: float
    humidity: int = Field(description="Relative humidity in percent")
    wind_kph: float


class DayForecast(BaseModel):
    """One day of a forecast."""

    date: dt.date
    condition: Condition
    high: float
    low: float
    precipitation_chance: int = Field(description="Chance of rain or snow in percent")
    wind_kph: float


class Forecast(BaseModel):
    """A forecast of consecutive days, starting today."""

    city: str
    unit: Unit
    days: list[DayForecast]


class PackingList(BaseModel):
    """What to pack for a trip, and why."""

    city: str
    days: int
    items: list[str]
    reasons: list[str]


@dataclass(frozen=True)
class _Day:
    """One simulated day, always in Celsius."""

    forecast: DayForecast
    current: float
    humidity: int


def _seed(*parts: object) -> int:
    # hash() is salted per process; a digest keeps the weather stable across restarts.
    text = "|".join(str(part).casefold() for part in parts)
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big")


# Rough (yearly mean °C, seasonal swing °C) for well-known cities, so answers look plausible;
# a negative swing puts summer in January (southern hemisphere).
_CLIMATES = {
    "lisbon": (17.5, 6),
    "london": (11.5, 7),
    "oslo": (6, 10.5),
    "paris": (12.5, 8),
    "new york": (13, 11.5),
    "chicago": (10, 14),
    "tokyo": (16, 11),
    "singapore": (27.5, 1),
    "dubai": (28, 8.5),
    "cairo": (22, 7.5),
    "sydney": (18.5, -5),
    "cape town": (17, -4),
}


def _climate(city: str) -> tuple[float, float]:
    known = _CLIMATES.get(city.casefold())
    if known is not None:
        return known
    rng = random.Random(_seed(city))
    return rng.uniform(8, 20), rng.uniform(3, 11)


def _simulate(city: str, day: dt.date) -> _Day:
    mean, swing = _climate(city)
    rng = random.Random(_seed(city, day.isoformat()))
    season = swing * math.cos(2 * math.pi * (day.timetuple().tm_yday - 200) / 365.25)
    high = round(mean + season + rng.gauss(4, 2.5), 1)
    low = round(high - rng.uniform(5, 11), 1)
    chance = rng.randint(0, 100)
    likely: tuple[Condition, ...]
    if chance >= 70:
        likely = ("snow",) if high < 1 else ("rain", "thunderstorms") if high > 18 else ("rain",)
    elif chance >= 45:
        likely = ("showers", "cloudy")
    else:
        likely = ("sunny", "sunny", "partly cloudy", "fog" if low < 8 else "cloudy")
    forecast = DayForecast(
        date=day,
        condition=rng.choice(likely),
        high=high,
        low=low,
        precipitation_chance=chance,
        wind_kph=round(rng.uniform(3, 45), 1),
    )
    humidity = min(100, 35 + chance // 2 + rng.randint(0, 15))
    return _Day(forecast=forecast, current=round(rng.uniform(low, high), 1), humidity=humidity)


def _to_unit(celsius: float, unit: Unit) -> float:
    return round(celsius * 9 / 5 + 32 if unit == "fahrenheit" else celsius, 1)


def _feels_like(celsius: float, humidity: int, wind_kph: float) -> float:
    # Steadman's apparent temperature, as used by the Australian Bureau of Meteorology.
    vapour = humidity / 100 * 6.105 * math.exp(17.27 * celsius / (237.7 + celsius))
    return celsius + 0.33 * vapour - 0.70 * (wind_kph / 3.6) - 4.0


@toolmesh.function(
    read_only=True,
    idempotent=True,
    examples=[
        "what's the weather in Lisbon right now?",
        "is it raining in Oslo?",
        "how warm is it in Madrid today in fahrenheit",
    ],
)
def get_current_weather(city: City, unit: Unit = "celsius") -> CurrentWeather:
    """Get the current weather conditions in a city.

    Args:
        city: City name, e.g. "Lisbon".
        unit: Temperature unit for the answer.
    """
    name = " ".join(city.split())
    day = _simulate(name, dt.date.today())
    wind = day.forecast.wind_kph
    return CurrentWeather(
        city=name,
        date=day.forecast.date,
        unit=unit,
        condition=day.forecast.condition,
        temperature=_to_unit(day.current, unit),
        feels_like=_to_unit(_feels_like(day.current, day.humidity, wind), unit),
        humidity=day.humidity,
        wind_kph=wind,
    )


@toolmesh.function(
    read_only=True,
    idempotent=True,
    examples=[
        "forecast for Berlin for the next 5 days",
        "will it rain in Dublin this week?",
        "what will the weather be like in Rome tomorrow",
    ],
)
def get_forecast(city: City, days: Days = 3, unit: Unit = "celsius") -> Forecast:
    """Get the daily weather forecast for a city, starting today.

    Args:
        city: City name, e.g. "Lisbon".
        days: How many days to forecast, from 1 to 7.
        unit: Temperature unit for the answer.
    """
    name = " ".join(city.split())
    today = dt.date.today()
    forecasts = []
    for offset in range(days):
        day = _simulate(name, today + dt.timedelta(days=offset)).forecast
        forecasts.append(
            day.model_copy(update={"high": _to_unit(day.high, unit), "low": _to_unit(day.low, unit)})
        )
    return Forecast(city=name, unit=unit, days=forecasts)


# Each unit as (offset, scale) from Kelvin: kelvin = (value + offset) * scale.
_KELVIN = {"celsius": (273.15, 1.0), "fahrenheit": (459.67, 5 / 9), "kelvin": (0.0, 1.0)}


def _convert_temperature(value: float, from_unit: str, to_unit: str) -> dict[str, Any]:
    offset, scale = _KELVIN[from_unit]
    kelvin = (value + offset) * scale
    if kelvin < 0:
        raise ValueError(f"{value} {from_unit} is below absolute zero")
    offset, scale = _KELVIN[to_unit]
    return {"value": round(kelvin / scale - offset, 2), "unit": to_unit}


_UNITS = list(_KELVIN)

convert_temperature = toolmesh.FunctionDefinition(
    name="convert_temperature",
    description="Convert a temperature between Celsius, Fahrenheit and Kelvin.",
    parameters=[
        toolmesh.Parameter("value", "number", "The temperature to convert"),
        toolmesh.Parameter("from_unit", "string", "Unit of the given value", enum=_UNITS),
        toolmesh.Parameter("to_unit", "string", "Unit to convert to", enum=_UNITS, default="celsius"),
    ],
    handler=_convert_temperature,
    examples=[
        "convert 98.6 fahrenheit to celsius",
        "what is 20 celsius in fahrenheit",
        "how many kelvin is 0 degrees celsius",
    ],
    annotations=toolmesh.Annotations(read_only=True, idempotent=True),
    output_schema={
        "type": "object",
        "properties": {"value": {"type": "number"}, "unit": {"type": "string", "enum": _UNITS}},
        "required": ["value", "unit"],
    },
)


@toolmesh.function(
    read_only=True,
    idempotent=True,
    examples=[
        "what should I pack for 4 days in Edinburgh?",
        "packing list for a weekend trip to Vienna",
        "do I need an umbrella or a coat for Prague",
    ],
)
async def plan_packing(city: City, ctx: toolmesh.Context, days: Days = 3) -> PackingList:
    """Suggest what to pack for a trip, based on the forecast for its days.

    Args:
        city: Destination city.
        days: Length of the trip in days, from 1 to 7.
    """
    result = await ctx.invoke("get_forecast", {"city": city, "days": days, "unit": "celsius"})
    forecast = Forecast.model_validate(result.structured)
    ctx.logger.info("packing for %d days in %s", days, forecast.city)
    items = [f"clothes for {days} day{'s' if days > 1 else ''}", "phone charger"]
    reasons = []

    def need(what: list[str], why: str, when: list[DayForecast]) -> None:
        if when:
            items.extend(item for item in what if item not in items)
            reasons.append(f"{why} on {', '.join(d.date.strftime('%a %d %b') for d in when)}")

    wet = ("showers", "rain", "thunderstorms")
    rainy = [d for d in forecast.days if d.condition in wet or d.precipitation_chance >= 60]
    need(["umbrella", "waterproof jacket"], "Rain likely", rainy)
    need(["warm boots", "gloves"], "Snow expected", [d for d in forecast.days if d.condition == "snow"])
    need(["warm coat", "hat"], "Cold (5 °C or lower)", [d for d in forecast.days if d.low <= 5])
    need(["sunscreen", "sunglasses"], "Hot (25 °C or higher)", [d for d in forecast.days if d.high >= 25])
    need(["windproof layer"], "Strong wind", [d for d in forecast.days if d.wind_kph >= 35])
    return PackingList(city=forecast.city, days=days, items=items, reasons=reasons)
