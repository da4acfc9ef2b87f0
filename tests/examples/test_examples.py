"""The examples together, as `make up` serves them, and as the CLI describes them."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import TYPE_CHECKING

import pytest

from tests.conftest import ROOT
from toolmesh.protocol.wire import spec_from_proto
from toolmesh.v1 import function_pb2

if TYPE_CHECKING:
    from tests.examples.conftest import Client, Serve

MODULES = [
    f"examples.{name}" for name in ("weather", "delivery", "arithmetic", "text", "knowledge", "streaming")
]
TOOLS = {
    "get_current_weather",
    "get_forecast",
    "convert_temperature",
    "plan_packing",
    "delivery.list_products",
    "delivery.place_order",
    "delivery.track_order",
    "delivery.cancel_order",
    "arithmetic.add",
    "arithmetic.subtract",
    "arithmetic.multiply",
    "arithmetic.divide",
    "arithmetic.power",
    "arithmetic.evaluate",
    "text.summarise",
    "text.extract_links",
    "text.extract_page_info",
    "knowledge.search_help_center",
    "knowledge.answer_question",
    "stream_text",
    "countdown",
    "run_job",
}


@pytest.fixture
async def everything(serve: Serve) -> Client:
    return await serve(*MODULES)


async def test_one_pod_serves_every_example_tool_and_no_helper(everything: Client) -> None:
    listing = await everything.stub.ListFunctions(function_pb2.ListFunctionsRequest())
    assert {spec_from_proto(s).qualified_name for s in listing.functions} == TOOLS
    namespaces = {n.name: n.description for n in listing.namespaces}
    assert set(namespaces) == {"delivery", "arithmetic"}
    assert all(namespaces.values()), "a toolset's docstring describes its namespace"


async def test_every_function_and_argument_is_described(everything: Client) -> None:
    """The docstrings are Google, NumPy and reST style; each must reach the schema."""
    listing = await everything.stub.ListFunctions(function_pb2.ListFunctionsRequest())
    for spec in map(spec_from_proto, listing.functions):
        assert spec.description, spec.qualified_name
        for name, prop in spec.input_schema["properties"].items():
            assert prop.get("description"), f"{spec.qualified_name}({name}) has no description"


@pytest.mark.parametrize("function", sorted(TOOLS))
async def test_unknown_arguments_are_refused_by_name(everything: Client, function: str) -> None:
    result = await everything.call(function, surprise=1)
    assert result.is_error and result.error is not None
    assert result.error.code == "invalid_arguments"
    assert "surprise" in {v.path for v in result.error.violations}


@pytest.mark.parametrize("strict", [False, True])
def test_cli_describes_weather_as_openai_tools(strict: bool) -> None:
    command = [
        sys.executable,
        "-m",
        "toolmesh",
        "functions",
        "--module",
        "examples.weather",
        "--format",
        "openai",
    ]
    done = subprocess.run(
        [*command, "--strict"] if strict else command, cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr

    tools = {tool["function"]["name"]: tool for tool in json.loads(done.stdout)}
    assert set(tools) == {"get_current_weather", "get_forecast", "convert_temperature", "plan_packing"}
    assert all(tool["type"] == "function" for tool in tools.values())
    forecast = tools["get_forecast"]["function"]
    assert forecast["description"].startswith("Get the daily weather forecast")
    days = forecast["parameters"]["properties"]["days"]
    assert (days["minimum"], days["maximum"]) == (1, 7)
    assert "ctx" not in tools["plan_packing"]["function"]["parameters"]["properties"]
    if strict:
        assert forecast["strict"] is True
        assert forecast["parameters"]["required"] == ["city", "days", "unit"]
        assert forecast["parameters"]["additionalProperties"] is False
    else:
        assert forecast["parameters"]["required"] == ["city"]
        assert forecast["parameters"]["properties"]["unit"]["enum"] == ["celsius", "fahrenheit"]
