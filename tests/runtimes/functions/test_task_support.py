"""`task_support` on functions: every way to write it reaches the spec, the catalog JSON and the
wire, and a bad value is refused."""

from __future__ import annotations

import pytest

import toolmesh
from toolmesh.errors import DefinitionError
from toolmesh.protocol.wire import spec_from_proto, spec_to_proto
from toolmesh.runtimes.functions.discovery import host_function
from toolmesh.runtimes.functions.spec import spec_from_dict, spec_to_dict


@toolmesh.function(task_support="required")
async def render(quarter: str) -> str:
    """Render a quarter's report."""
    return quarter


def plain() -> str:
    """Nothing to wait for."""
    return ""


def test_the_decorator_and_definition_carry_it_to_the_spec_json_and_wire() -> None:
    spec = host_function(render).spec
    assert spec.task_support == "required"
    assert spec_from_dict(spec_to_dict(spec)) == spec
    assert spec_from_proto(spec_to_proto(spec)) == spec
    definition = toolmesh.FunctionDefinition(
        name="ping", handler=lambda: "pong", description="Ping.", task_support="optional"
    )
    assert definition.host().spec.task_support == "optional"
    undeclared = host_function(plain).spec
    assert undeclared.task_support == "" and "task_support" not in spec_to_dict(undeclared)


def test_a_bad_value_is_refused() -> None:
    with pytest.raises(DefinitionError, match="task_support must be 'optional' or 'required'"):
        host_function(toolmesh.function(task_support="always")(plain))  # type: ignore[arg-type]
