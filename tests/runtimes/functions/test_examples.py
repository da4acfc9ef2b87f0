"""Example prompts on functions: every way to write them reaches the spec, and bad ones are refused."""

from __future__ import annotations

import pytest

import toolmesh
from toolmesh.errors import DefinitionError
from toolmesh.runtimes.functions.discovery import host_function, host_toolset
from toolmesh.runtimes.functions.spec import spec_from_dict, spec_to_dict


@toolmesh.function(examples=["convert 98.6 fahrenheit to celsius", "  how cold is 0 F in C?  "])
def convert_temperature(value: float, from_unit: str, to_unit: str) -> float:
    """Convert a temperature between units."""
    return value


class Weather(toolmesh.Toolset):
    """Weather tools."""

    @toolmesh.function(examples=["is it raining in Oslo?"])
    def current(self, city: str) -> str:
        """Current weather for a city."""
        return city


def test_decorator_toolset_and_definition_carry_examples() -> None:
    spec = host_function(convert_temperature).spec
    assert spec.examples == ("convert 98.6 fahrenheit to celsius", "how cold is 0 F in C?")
    assert [h.spec.examples for h in host_toolset(Weather)] == [("is it raining in Oslo?",)]
    definition = toolmesh.FunctionDefinition(
        name="ping", handler=lambda: "pong", description="Ping.", examples=["are you there?"]
    )
    assert definition.host().spec.examples == ("are you there?",)


def test_examples_survive_the_catalog_json_form() -> None:
    spec = host_function(convert_temperature).spec
    data = spec_to_dict(spec)
    assert data["examples"] == list(spec.examples)
    assert spec_from_dict(data) == spec
    assert spec_from_dict({"name": "x", "description": "d"}).examples == ()


@pytest.mark.parametrize("bad", [[""], ["ok", 3]])
def test_bad_examples_are_refused(bad: object) -> None:
    def f() -> None:
        """Nothing."""

    with pytest.raises(DefinitionError, match="examples"):
        host_function(toolmesh.function(examples=bad)(f))  # type: ignore[arg-type]
    with pytest.raises(DefinitionError, match="not one string"):
        toolmesh.function(examples="oneword")
