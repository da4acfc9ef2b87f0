"""Schemas from type hints and docstrings, the explicit builder, toolsets and strict mode."""

from __future__ import annotations

import dataclasses
import enum
from typing import Annotated, Any, Literal

import pydantic
import pytest
from pydantic import Field

import toolmesh
from toolmesh.errors import DefinitionError
from toolmesh.runtimes.functions.discovery import discover, host_function
from toolmesh.runtimes.functions.hosted import Kind
from toolmesh.runtimes.functions.schema import strict_schema


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


class Address(pydantic.BaseModel):
    street: str
    number: int = Field(default=1, ge=1, description="House number")


@dataclasses.dataclass
class Point:
    x: float
    y: float = 0.0


def everything(
    count: int,
    ratio: float,
    label: str,
    enabled: bool,
    tags: list[str],
    scores: dict[str, int],
    mode: Literal["fast", "slow"],
    color: Color,
    address: Address,
    point: Point,
    note: str | None = None,
    limit: Annotated[int, Field(ge=0, le=10, description="At most ten")] = 5,
) -> dict[str, Any]:
    """Take one of everything."""
    return {}


def properties(fn: Any) -> dict[str, Any]:
    schema: dict[str, Any] = host_function(fn).spec.input_schema
    return schema


def test_every_supported_type_maps_to_json_schema() -> None:
    schema = host_function(everything).spec.input_schema
    props = schema["properties"]
    assert props["count"] == {"type": "integer"}
    assert props["ratio"] == {"type": "number"}
    assert props["label"] == {"type": "string"}
    assert props["enabled"] == {"type": "boolean"}
    assert props["tags"] == {"type": "array", "items": {"type": "string"}}
    assert props["scores"] == {"type": "object", "additionalProperties": {"type": "integer"}}
    assert props["mode"] == {"type": "string", "enum": ["fast", "slow"]}
    assert schema["$defs"]["Color"]["enum"] == ["red", "green"]
    assert props["color"] == {"$ref": "#/$defs/Color"}
    address = schema["$defs"]["Address"]
    assert address["required"] == ["street"]
    assert address["properties"]["number"] == {
        "type": "integer",
        "minimum": 1,
        "default": 1,
        "description": "House number",
    }
    assert schema["$defs"]["Point"]["properties"]["x"] == {"type": "number"}
    assert props["note"] == {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None}
    assert props["limit"] == {
        "type": "integer",
        "minimum": 0,
        "maximum": 10,
        "default": 5,
        "description": "At most ten",
    }
    assert set(schema["required"]) == {
        "count",
        "ratio",
        "label",
        "enabled",
        "tags",
        "scores",
        "mode",
        "color",
        "address",
        "point",
    }
    assert schema["type"] == "object"
    assert schema["additionalProperties"] is False
    assert "title" not in schema and "title" not in props["count"]


def test_output_schema_comes_from_the_return_annotation() -> None:
    def locate() -> Point:
        return Point(1, 2)

    def say() -> str:
        return ""

    assert host_function(locate).spec.output_schema is not None
    assert host_function(locate).spec.output_schema["properties"]["x"] == {"type": "number"}  # type: ignore[index]
    assert host_function(say).spec.output_schema is None
    assert host_function(everything).spec.output_schema == {"type": "object", "additionalProperties": True}


def google(city: str, days: int = 3) -> str:
    """Forecast for a city.

    Looks a few days ahead.

    Args:
        city: City name, e.g. "Paris".
        days: How many days.

    Returns:
        The forecast.
    """
    return ""


def numpy_style(city: str, days: int = 3) -> str:
    """Forecast for a city.

    Parameters
    ----------
    city : str
        City name, e.g. "Paris".
    days : int
        How many days.
    """
    return ""


def rest_style(city: str, days: int = 3) -> str:
    """Forecast for a city.

    :param city: City name, e.g. "Paris".
    :param days: How many days.
    """
    return ""


@pytest.mark.parametrize("fn", [google, numpy_style, rest_style], ids=["google", "numpy", "rest"])
def test_argument_descriptions_come_from_any_docstring_style(fn: Any) -> None:
    spec = host_function(fn).spec
    assert spec.description.startswith("Forecast for a city.")
    assert "Args" not in spec.description and ":param" not in spec.description
    assert spec.input_schema["properties"]["city"]["description"] == 'City name, e.g. "Paris".'
    assert spec.input_schema["properties"]["days"]["description"] == "How many days."


def test_field_description_wins_over_the_docstring() -> None:
    def pick(n: Annotated[int, Field(description="from Field")]) -> int:
        """Pick.

        Args:
            n: from docstring
        """
        return n

    assert properties(pick)["properties"]["n"]["description"] == "from Field"


def test_decorator_options_reach_the_spec() -> None:
    @toolmesh.function(
        name="lookup",
        namespace="geo",
        description="Find a place.",
        timeout=2.5,
        read_only=True,
        idempotent=True,
        version="2",
    )
    def find(query: str) -> str:
        """Ignored docstring."""
        return query

    spec = host_function(find).spec
    assert spec.qualified_name == "geo.lookup"
    assert spec.description == "Find a place."
    assert spec.timeout == 2.5
    assert spec.annotations.read_only and spec.annotations.idempotent
    assert not spec.annotations.destructive
    assert spec.version == "2"
    assert find("x") == "x", "the decorator returns the function unchanged"


def test_context_parameter_is_hidden_from_the_schema() -> None:
    async def with_ctx(x: int, ctx: toolmesh.Context) -> int:
        return x

    hosted = host_function(with_ctx)
    assert list(hosted.spec.input_schema["properties"]) == ["x"]
    assert hosted.context_param == "ctx"
    assert hosted.kind is Kind.ASYNC


def test_generators_are_streaming() -> None:
    def lines() -> Any:
        yield "a"

    async def alines() -> Any:
        yield "a"

    assert host_function(lines).spec.streaming and host_function(lines).kind is Kind.SYNC_GENERATOR
    assert host_function(alines).spec.streaming and host_function(alines).kind is Kind.ASYNC_GENERATOR


@pytest.mark.parametrize("name", ["_private", "a__b", "trailing_", "has.dot", "1st", "with space"])
def test_bad_names_are_refused_at_load_time(name: str) -> None:
    def f() -> None: ...

    with pytest.raises(DefinitionError, match="invalid function name"):
        toolmesh.runtimes.functions.hosted.host_callable(f, name=name)


def test_args_and_positional_only_are_refused() -> None:
    def star(*values: int) -> None: ...

    def positional(a: int, /) -> None: ...

    for fn in (star, positional):
        with pytest.raises(DefinitionError, match="named arguments only"):
            host_function(fn)


def test_kwargs_allow_extra_arguments() -> None:
    def loose(a: int, **rest: Any) -> None: ...

    hosted = host_function(loose)
    assert hosted.spec.input_schema["additionalProperties"] is True
    assert hosted.validator.validate(b'{"a": 1, "b": "x"}') == {"a": 1, "b": "x"}


def test_unresolvable_annotations_fail_clearly() -> None:
    def broken(a: NoSuchType) -> None:  # type: ignore[name-defined]  # noqa: F821
        ...

    with pytest.raises(DefinitionError, match="broken: cannot resolve its type hints"):
        host_function(broken)


def test_strict_mode_requires_everything_and_nulls_the_optional() -> None:
    strict = strict_schema(host_function(everything).spec.input_schema)
    props = strict["properties"]
    assert strict["required"] == list(props)
    assert strict["additionalProperties"] is False
    assert props["count"] == {"type": "integer"}
    assert props["limit"]["type"] == ["integer", "null"]
    assert "default" not in props["limit"]
    assert props["note"] == {"anyOf": [{"type": "string"}, {"type": "null"}]}
    address = strict["$defs"]["Address"]
    assert address["required"] == ["street", "number"]
    assert address["additionalProperties"] is False
    assert address["properties"]["number"]["type"] == ["integer", "null"]


def test_strict_mode_null_means_the_default() -> None:
    hosted = host_function(everything)
    args = hosted.validator.validate(
        b'{"count": 1, "ratio": 1, "label": "l", "enabled": true, "tags": [], "scores": {}, "mode": "fast",'
        b' "color": "red", "address": {"street": "s"}, "point": {"x": 1}, "note": null, "limit": null}'
    )
    assert "limit" not in args, "null for a non-nullable optional argument falls back to its default"
    assert args["note"] is None, "null for a nullable argument is passed as None"
    assert args["color"] is Color.RED and isinstance(args["address"], Address) and args["point"] == Point(1.0)
    assert args["ratio"] == 1.0 and isinstance(args["ratio"], float)


def test_explicit_builder() -> None:
    def convert(value: float, to: str = "c") -> float:
        return value

    definition = toolmesh.FunctionDefinition(
        name="convert",
        namespace="units",
        description="Convert a temperature.",
        handler=convert,
        parameters=[
            toolmesh.Parameter("value", "number", "Temperature"),
            toolmesh.Parameter("to", "string", "Target unit", enum=["c", "f"], default="c"),
            toolmesh.Parameter("history", "array", items="integer", required=False),
            toolmesh.Parameter(
                "options",
                "object",
                properties=[toolmesh.Parameter("precision", "integer", default=1)],
                required=False,
            ),
        ],
    )
    hosted = definition.host()
    schema = hosted.spec.input_schema
    assert hosted.spec.qualified_name == "units.convert"
    assert schema["required"] == ["value"]
    assert schema["properties"]["value"] == {"type": "number", "description": "Temperature"}
    assert schema["properties"]["to"]["enum"] == ["c", "f"]
    assert schema["properties"]["to"]["default"] == "c"
    assert schema["properties"]["history"] == {"type": "array", "items": {"type": "integer"}}
    assert schema["$defs"]["Options"]["properties"]["precision"] == {"type": "integer", "default": 1}
    assert hosted.validator.validate(b'{"value": 20, "to": "f"}') == {"value": 20.0, "to": "f"}
    assert hosted.validator.validate(b'{"value": 20}') == {"value": 20.0, "to": "c"}, (
        "declared defaults are passed"
    )
    with pytest.raises(toolmesh.InvalidArguments) as caught:
        hosted.validator.validate(b'{"value": "hot", "to": "k", "options": {"precision": "x"}}')
    assert {v.path for v in caught.value.violations} == {"value", "to", "options.precision"}


def test_toolset_is_a_namespace_with_a_description() -> None:
    class TextTools(toolmesh.Toolset):
        """Tools for text."""

        def __init__(self) -> None:
            self.suffix = "!"

        def shout(self, text: str) -> str:
            """Upper-case the text.

            Args:
                text: What to shout.
            """
            return text.upper() + self.suffix

        @toolmesh.function(name="whisper-it", idempotent=True)
        def whisper(self, text: str) -> str:
            """Lower-case the text."""
            return text.lower()

        def _helper(self) -> None: ...

    assert TextTools.toolmesh_namespace == "text_tools"
    assert TextTools.method_names() == ["shout", "whisper"]
    rendered = TextTools.render()
    assert rendered.startswith("# text_tools\nTools for text.")
    assert "text_tools.shout(text: string)\n    Upper-case the text." in rendered
    assert "- text (string, required): What to shout." in rendered
    assert "text_tools.whisper-it(text: string)" in rendered


def test_discovery_follows_all_and_skips_imports(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "mod_plain.py").write_text(
        "from os.path import join\n"
        "import toolmesh\n"
        "class Model:\n    pass\n"
        "def visible(a: int) -> int:\n    return a\n"
        "def _hidden() -> None: ...\n"
        "class Tools(toolmesh.Toolset):\n    def t(self) -> None: ...\n"
    )
    (tmp_path / "mod_defs.py").write_text(
        "import toolmesh\n"
        "def _handler(x: int) -> int:\n    return x\n"
        "double = toolmesh.FunctionDefinition(name='double', handler=_handler,"
        " parameters=[toolmesh.Parameter('x', 'integer')])\n"
    )
    (tmp_path / "mod_all.py").write_text(
        "__all__ = ['chosen']\ndef chosen() -> None: ...\ndef other() -> None: ...\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    import importlib

    functions, namespaces = discover(importlib.import_module("mod_plain"))
    assert [f.spec.qualified_name for f in functions] == ["visible", "tools.t"]
    assert [n.name for n in namespaces] == ["tools"]
    functions, _ = discover(importlib.import_module("mod_defs"))
    assert [f.spec.qualified_name for f in functions] == ["double"], "definitions are found without __all__"
    functions, _ = discover(importlib.import_module("mod_all"))
    assert [f.spec.qualified_name for f in functions] == ["chosen"]


def test_content_items_in_lists_and_unions_have_no_output_schema() -> None:
    def report() -> list[toolmesh.Text | toolmesh.Binary]:
        return [toolmesh.Text("x")]

    def either() -> toolmesh.Text | toolmesh.Json:
        return toolmesh.Text("x")

    assert host_function(report).spec.output_schema is None
    assert host_function(either).spec.output_schema is None
