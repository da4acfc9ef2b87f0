"""Function specs as tool definitions: every format, strict mode, names, and the errors."""

from __future__ import annotations

import json
import re
from typing import Any, Literal

import pytest
from openai.types.chat import ChatCompletionFunctionToolParam
from openai.types.responses import FunctionToolParam
from pydantic import BaseModel, TypeAdapter

import toolmesh
from toolmesh.errors import InvalidRequest
from toolmesh.gateway.core.tool_formats import ToolFormat, parse_tool_format, tool_definition
from toolmesh.runtimes.functions.discovery import host_function
from toolmesh.runtimes.functions.spec import FunctionSpec, from_tool_name, spec_to_dict

OPENAI_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


class Forecast(BaseModel):
    city: str
    days: list[float]


@toolmesh.function(namespace="weather", read_only=True, idempotent=True, title="Weather forecast")
def get_forecast(city: str, days: int = 3, unit: Literal["celsius", "fahrenheit"] = "celsius") -> Forecast:
    """Daily high temperatures for a city.

    Args:
        city: City name.
        days: How many days ahead.
        unit: Temperature unit.
    """
    return Forecast(city=city, days=[20.0] * days)


@toolmesh.function(namespace="math-tools", destructive=True, open_world=True)
def add(a: float, b: float = 0.0) -> float:
    """Add two numbers."""
    return a + b


def shout(text: str, times: int | None = None) -> str:
    """Upper-case a text."""
    return text.upper() * (times or 1)


def ping() -> None:
    """Do nothing."""


def spec(fn: Any) -> FunctionSpec:
    return host_function(fn).spec


SPECS = [spec(get_forecast), spec(add), spec(shout), spec(ping)]


def _strict_everywhere(schema: Any) -> None:
    """Every object schema in a strict schema forbids extra keys and requires all properties."""
    if isinstance(schema, list):
        for item in schema:
            _strict_everywhere(item)
        return
    if not isinstance(schema, dict):
        return
    if "properties" in schema:
        assert schema["additionalProperties"] is False
        assert sorted(schema["required"]) == sorted(schema["properties"])
    assert "default" not in schema
    for value in schema.values():
        _strict_everywhere(value)


@pytest.mark.parametrize("fmt", list(ToolFormat))
@pytest.mark.parametrize("strict", [False, True])
def test_every_name_is_the_tool_name_openai_accepts(fmt: ToolFormat, strict: bool) -> None:
    for function in SPECS:
        definition = tool_definition(function, fmt, strict=strict)
        name = definition["function"]["name"] if fmt is ToolFormat.OPENAI else definition["name"]
        assert OPENAI_NAME.match(name)
        assert from_tool_name(name) == function.qualified_name
        assert "." not in name


def test_openai_format_is_a_chat_completions_function_tool() -> None:
    forecast = spec(get_forecast)
    definition = tool_definition(forecast, "openai")
    assert definition == {
        "type": "function",
        "function": {
            "name": "weather__get_forecast",
            "description": "Daily high temperatures for a city.",
            "parameters": forecast.input_schema,
        },
    }
    for function in SPECS:
        for strict in (False, True):
            TypeAdapter(ChatCompletionFunctionToolParam).validate_python(
                tool_definition(function, ToolFormat.OPENAI, strict=strict)
            )


def test_openai_strict_uses_the_strict_schema() -> None:
    definition = tool_definition(spec(get_forecast), "openai", strict=True)["function"]
    assert definition["strict"] is True
    parameters = definition["parameters"]
    assert sorted(parameters["required"]) == ["city", "days", "unit"]
    assert parameters["properties"]["days"]["type"] == ["integer", "null"]
    _strict_everywhere(parameters)


def test_responses_format_is_flat_and_always_says_strict() -> None:
    forecast = spec(get_forecast)
    loose = tool_definition(forecast, "responses")
    assert loose == {
        "type": "function",
        "name": "weather__get_forecast",
        "description": "Daily high temperatures for a city.",
        "parameters": forecast.input_schema,
        "strict": False,
    }
    strict = tool_definition(forecast, "responses", strict=True)
    assert strict["strict"] is True
    assert strict["parameters"]["additionalProperties"] is False
    assert "default" not in strict["parameters"]["properties"]["days"]
    for function in SPECS:
        for flag in (False, True):
            definition = tool_definition(function, ToolFormat.RESPONSES, strict=flag)
            TypeAdapter(FunctionToolParam).validate_python(definition)
            assert set(definition) == {"type", "name", "description", "parameters", "strict"}
            if flag:
                _strict_everywhere(definition["parameters"])


def test_cloudflare_format_has_name_description_parameters() -> None:
    shouting = spec(shout)
    assert tool_definition(shouting, "cloudflare") == {
        "name": "shout",
        "description": "Upper-case a text.",
        "parameters": shouting.input_schema,
    }
    # No strict mode in Cloudflare: the flag leaves the schema as it is.
    assert tool_definition(shouting, "cloudflare", strict=True)["parameters"] == shouting.input_schema


def test_mcp_format_carries_title_hints_and_object_output_schema() -> None:
    forecast = spec(get_forecast)
    assert tool_definition(forecast, "mcp") == {
        "name": "weather__get_forecast",
        "title": "Weather forecast",
        "description": "Daily high temperatures for a city.",
        "inputSchema": forecast.input_schema,
        "outputSchema": forecast.output_schema,
        "annotations": {
            "title": "Weather forecast",
            "readOnlyHint": True,
            "destructiveHint": False,
            "idempotentHint": True,
            "openWorldHint": False,
        },
    }
    assert forecast.output_schema is not None and forecast.output_schema["type"] == "object"


def test_mcp_leaves_out_output_schemas_that_are_not_objects_and_empty_titles() -> None:
    adding = spec(add)
    assert adding.output_schema == {"type": "number"}
    tool = tool_definition(adding, "mcp")
    assert "outputSchema" not in tool
    assert "title" not in tool and "title" not in tool["annotations"]
    assert tool["annotations"] == {
        "readOnlyHint": False,
        "destructiveHint": True,
        "idempotentHint": False,
        "openWorldHint": True,
    }
    assert tool["inputSchema"]["type"] == "object"
    assert "outputSchema" not in tool_definition(spec(shout), "mcp")  # str: no output schema at all


@pytest.mark.parametrize("fmt", ["", "OpenAI", "anthropic", "json"])
def test_unknown_format_is_an_invalid_request_listing_the_valid_ones(fmt: str) -> None:
    with pytest.raises(InvalidRequest) as caught:
        tool_definition(spec(add), fmt)
    assert caught.value.param == "format"
    assert caught.value.http_status == 400
    for valid in ("'openai'", "'responses'", "'cloudflare'", "'mcp'"):
        assert valid in caught.value.message
    assert repr(fmt) in caught.value.message


def test_parse_tool_format_accepts_the_names_and_the_enum() -> None:
    assert parse_tool_format("mcp") is ToolFormat.MCP
    assert parse_tool_format(ToolFormat.RESPONSES) is ToolFormat.RESPONSES
    assert [f.value for f in ToolFormat] == ["openai", "responses", "cloudflare", "mcp"]


def test_spec_to_dict_is_toolmesh_own_form_with_the_qualified_name() -> None:
    document = spec_to_dict(spec(get_forecast))
    assert document["name"] == "weather.get_forecast"
    assert document["namespace"] == "weather"
    assert document["annotations"] == {
        "read_only": True,
        "destructive": False,
        "idempotent": True,
        "open_world": False,
        "title": "Weather forecast",
        "free_text": "auto",
    }
    assert document["output_schema"]["type"] == "object"
    assert set(document) == {
        "name",
        "namespace",
        "description",
        "parameters",
        "output_schema",
        "annotations",
        "timeout",
        "streaming",
        "version",
        "examples",
    }


def test_the_strict_schema_still_validates_what_the_model_sends() -> None:
    """A strict-mode model sends every property, null for "not given"; the function accepts that."""
    hosted = host_function(get_forecast)
    schema = tool_definition(hosted.spec, "responses", strict=True)["parameters"]
    sent = {name: None for name in schema["properties"]} | {"city": "Paris"}
    assert hosted.validator.validate(json.dumps(sent).encode()) == {"city": "Paris"}
