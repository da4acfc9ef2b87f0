"""A registry's functions can change while a pod serves them (a stdio MCP server's list_changed)."""

from __future__ import annotations

import pytest

from toolmesh.errors import FunctionNotFound
from toolmesh.runtimes.functions.definition import FunctionDefinition
from toolmesh.runtimes.functions.registry import Registry


def definition(name: str) -> FunctionDefinition:
    async def handler() -> str:
        return name

    return FunctionDefinition(
        name=name, handler=handler, description=f"Say {name}.", parameters={"type": "object"}
    )


def test_replacing_its_functions_counts_a_revision_only_when_they_differ() -> None:
    registry = Registry([definition("a").host()])
    assert registry.replace([definition("a").host()]) is False
    assert registry.revision == 0
    assert registry.replace([definition("a").host(), definition("b").host()]) is True
    assert registry.revision == 1 and registry.get("b").spec.name == "b"
    assert registry.replace([definition("b").host()]) is True
    assert registry.revision == 2
    with pytest.raises(FunctionNotFound):
        registry.get("a")
