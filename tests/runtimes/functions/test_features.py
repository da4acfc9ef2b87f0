"""The SDK side of resources, prompts and completions: what is checked when a module is
loaded, how they are described, and how a prompt's return value becomes messages."""

from __future__ import annotations

import pytest

import toolmesh
from toolmesh.errors import DefinitionError
from toolmesh.protocol.wire import spec_from_proto, spec_to_proto
from toolmesh.runtimes.functions.discovery import host_function
from toolmesh.runtimes.functions.features import prompt_messages, template_variables
from toolmesh.runtimes.functions.spec import COMPLETION, RESOURCE, spec_from_dict, spec_to_dict


def test_a_template_resource_is_described_with_its_variables_as_parameters() -> None:
    @toolmesh.resource("db://{table}/{row}", mime_type="application/json", title="Row")
    def row(table: str, row: str) -> dict[str, str]:
        """One row."""
        return {"table": table, "row": row}

    spec = host_function(row).spec
    assert spec.feature is not None and spec.feature.kind == RESOURCE
    assert (spec.feature.uri, spec.feature.mime_type, spec.feature.title) == (
        "db://{table}/{row}",
        "application/json",
        "Row",
    )
    assert template_variables(spec.feature.uri) == ["table", "row"]
    assert spec.annotations.read_only
    assert spec_from_proto(spec_to_proto(spec)) == spec
    assert spec_from_dict(spec_to_dict(spec)) == spec


def test_parameters_and_template_variables_must_agree() -> None:
    @toolmesh.resource("db://{table}")
    def extra(table: str, limit: int) -> str:
        return ""

    @toolmesh.resource("db://static")
    def needs_argument(table: str) -> str:
        return ""

    @toolmesh.resource("db://{other}")
    def misnamed(table: str = "") -> str:
        return ""

    for fn in (extra, needs_argument, misnamed):
        with pytest.raises(DefinitionError, match="template variables"):
            host_function(fn)


def test_generators_and_completions_without_value_are_refused() -> None:
    @toolmesh.prompt
    def streams() -> object:
        yield "no"

    @toolmesh.completion("p", "a")
    def no_value(prefix: str) -> list[str]:
        return []

    with pytest.raises(DefinitionError, match="generator"):
        host_function(streams)
    with pytest.raises(DefinitionError, match="`value`"):
        host_function(no_value)

    @toolmesh.completion("p", "a")
    def suggest(value: str) -> list[str]:
        return [value]

    spec = host_function(suggest).spec
    assert spec.feature is not None and (spec.feature.kind, spec.feature.target) == (COMPLETION, "p")


def test_tools_have_no_feature() -> None:
    def tool(x: int) -> int:
        return x

    assert host_function(tool).spec.feature is None
    assert spec_from_proto(spec_to_proto(host_function(tool).spec)).feature is None


def test_prompt_return_values_become_messages() -> None:
    assert prompt_messages("hi") == [{"role": "user", "content": {"type": "text", "text": "hi"}}]
    messages = prompt_messages(
        [
            toolmesh.Binary(b"\x01", "audio/wav"),
            toolmesh.Embedded("a://b", data=b"\x02", mime_type="application/pdf"),
            toolmesh.Message(toolmesh.Text("sure"), role="assistant"),
            {"role": "user", "content": {"type": "text", "text": "as is"}},
        ]
    )
    assert messages == [
        {"role": "user", "content": {"type": "audio", "data": "AQ==", "mimeType": "audio/wav"}},
        {
            "role": "user",
            "content": {
                "type": "resource",
                "resource": {"uri": "a://b", "mimeType": "application/pdf", "blob": "Ag=="},
            },
        },
        {"role": "assistant", "content": {"type": "text", "text": "sure"}},
        {"role": "user", "content": {"type": "text", "text": "as is"}},
    ]
    with pytest.raises(TypeError, match="Embedded"):
        prompt_messages([toolmesh.Binary(b"%PDF", "application/pdf")])
    with pytest.raises(TypeError, match="cannot hold"):
        prompt_messages([3.5])
