"""mkdocs hook: the configuration and errors references, generated from the code at build time.

A page holding the marker `<!-- reference:config -->` or `<!-- reference:errors -->` gets the
table in its place, so the references cannot drift from `MeshConfig` and the error table.
The configuration is walked through type hints from `toolmesh.config.MeshConfig` (not by module
name); each key's description is its field's `description`, else the `#:` comment above it.
"""

from __future__ import annotations

import ast
import inspect
import json
import re
import sys
import textwrap
import types
import typing
from collections.abc import Iterator
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

# The checkout being built, not whatever toolmesh the environment has installed.
ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

CONFIG_MARKER = "<!-- reference:config -->"
ERRORS_MARKER = "<!-- reference:errors -->"
API_MARKER = "<!-- reference:api -->"


@dataclass(frozen=True)
class Key:
    table: str
    name: str
    type: str
    default: str
    description: str


def _comments(cls: type) -> dict[str, str]:
    """Field name -> the `#:` comment lines just above it (or a trailing `#` comment) in the class."""
    try:
        source = textwrap.dedent(inspect.getsource(cls))
    except (OSError, TypeError):
        return {}
    lines = source.splitlines()
    found: dict[str, str] = {}
    for node in ast.parse(source).body[0].body:  # type: ignore[attr-defined]
        if not (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)):
            continue
        above: list[str] = []
        i = node.lineno - 2
        while i >= 0 and lines[i].strip().startswith("#:"):
            above.insert(0, lines[i].strip()[2:].strip())
            i -= 1
        if not above:
            last = lines[(node.end_lineno or node.lineno) - 1]
            if "  # " in last:
                above = [last.split("  # ", 1)[1].strip()]
        if above:
            found[node.target.id] = " ".join(above)
    return found


def _descriptions(model: type[BaseModel]) -> dict[str, str]:
    found: dict[str, str] = {}
    for cls in reversed(model.__mro__):
        if isinstance(cls, type) and issubclass(cls, BaseModel) and cls is not BaseModel:
            found.update(_comments(cls))
    for name, field in model.model_fields.items():
        if field.description:
            found[name] = field.description
    return found


def _unwrap(hint: Any) -> tuple[Any, bool]:
    """The model inside `hint` (Optional, tuple[X, ...], Annotated), and whether it is an array of tables."""
    origin = typing.get_origin(hint)
    if origin is typing.Annotated:
        return _unwrap(typing.get_args(hint)[0])
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        if len(args) == 1:
            return _unwrap(args[0])
    if origin in (tuple, list):
        args = [a for a in typing.get_args(hint) if a is not Ellipsis]
        if len(args) == 1:
            inner, _ = _unwrap(args[0])
            return inner, True
    return hint, False


def _flag_table(hint: Any) -> type[BaseModel] | None:
    """The table of a key that is a flag or a table (`tls = true` or `tls = { ... }`), else None."""
    args = typing.get_args(hint) if typing.get_origin(hint) in (typing.Union, types.UnionType) else ()
    tables = [a for a in args if _is_model(a)]
    return tables[0] if len(tables) == 1 and len(args) == 2 and bool in args else None


def _is_model(hint: Any) -> bool:
    return isinstance(hint, type) and issubclass(hint, BaseModel)


def _type_name(hint: Any) -> str:
    if typing.get_origin(hint) is typing.Annotated:
        return _type_name(typing.get_args(hint)[0])
    if typing.get_origin(hint) is typing.Literal:
        return " | ".join(json.dumps(a) for a in typing.get_args(hint))
    text = hint.__name__ if isinstance(hint, type) and not typing.get_args(hint) else str(hint)
    # Module paths say where a type lives today, which is no business of the reader's: keep the name.
    text = re.sub(r"\b(?:[A-Za-z_]\w*\.)+([A-Za-z_]\w*)", r"\1", text)
    # TOML has arrays, not tuples.
    text = re.sub(r"tuple\[(.*), \.\.\.\]", r"list[\1]", text)
    return text.replace("NoneType", "None")


def _default(field: Any) -> str:
    if field.default_factory is not None:
        try:
            value = field.default_factory()
        except TypeError:
            return "(computed)"
    elif field.default is PydanticUndefined:
        return "required"
    else:
        value = field.default
    if isinstance(value, BaseModel):
        return "(table)"
    if isinstance(value, Enum):
        value = value.value
    if isinstance(value, Path):
        value = str(value)
    if isinstance(value, tuple | frozenset | set):
        value = list(value)
    try:
        return json.dumps(value)
    except TypeError:
        return str(value)


def config_keys() -> Iterator[Key]:
    """Every key of `toolmesh.toml`, table by table, from `MeshConfig` down through its type hints."""
    from toolmesh.config import MeshConfig

    def walk(model: type[BaseModel], table: str) -> Iterator[Key]:
        hints = typing.get_type_hints(model, include_extras=True)
        described = _descriptions(model)
        nested: list[tuple[type[BaseModel], str]] = []
        for name, field in model.model_fields.items():
            if field.exclude or (model is MeshConfig and name == "directory"):
                continue  # set by load_config, not a key of the file
            hint = hints.get(name, field.annotation)
            inner, many = _unwrap(hint)
            if _is_model(inner) and model is MeshConfig:
                nested.append((inner, f"[[{name}]]" if many else f"[{name}]"))
                continue
            if _is_model(inner) and not many:
                nested.append((inner, f"[{table.strip('[]')}.{name}]"))
                continue
            text = described.get(name) or (inspect.getdoc(inner) if _is_model(inner) else "") or ""
            yield Key(table, name, _type_name(hint), _default(field), text)
            flagged = _flag_table(hint)
            if flagged is not None:
                nested.append((flagged, f"[{table.strip('[]')}.{name}]"))
        for inner, sub in nested:
            yield from walk(inner, sub)

    yield from walk(MeshConfig, "")


def config_models() -> dict[str, type[BaseModel]]:
    """Table -> the model behind it (for the tests: every field of each must be listed)."""
    from toolmesh.config import MeshConfig

    found: dict[str, type[BaseModel]] = {}

    def walk(model: type[BaseModel], table: str) -> None:
        found[table] = model
        hints = typing.get_type_hints(model, include_extras=True)
        for name, field in model.model_fields.items():
            inner, many = _unwrap(hints.get(name, field.annotation))
            flagged = _flag_table(hints.get(name, field.annotation))
            if flagged is not None:
                walk(flagged, f"[{table.strip('[]')}.{name}]")
            if _is_model(inner) and model is MeshConfig:
                walk(inner, f"[[{name}]]" if many else f"[{name}]")
            elif _is_model(inner) and not many:
                walk(inner, f"[{table.strip('[]')}.{name}]")

    walk(MeshConfig, "")
    return found


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def config_reference() -> str:
    out: list[str] = []
    table = None
    for key in config_keys():
        if key.table != table:
            table = key.table
            out += ["", f"## `{table}`" if table else "## Top level", ""]
            out += ["| key | type | default | description |", "|---|---|---|---|"]
        out.append(
            f"| `{key.name}` | `{_cell(key.type)}` | `{_cell(key.default)}` | {_cell(key.description)} |"
        )
    return "\n".join(out).strip() + "\n"


def errors_reference() -> str:
    from toolmesh.errors import ERROR_CLASSES

    out = [
        "| class | code | HTTP | gRPC | OpenAI `type` | MCP (JSON-RPC) | retryable | raised when |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for cls in ERROR_CLASSES:
        doc = _cell(" ".join((inspect.getdoc(cls) or "").split()))
        retry = "yes" if cls.retryable else "no"
        out.append(
            f"| `{cls.__name__}` | `{cls.code}` | {cls.http_status} | `{cls.grpc_status.name}` "
            f"| `{cls.openai_type}` | {cls.jsonrpc_code} | {retry} | {doc} |"
        )
    return "\n".join(out) + "\n"


def api_reference() -> str:
    """`toolmesh.__all__` and `toolmesh.client.__all__`, each name with its docstring's first line."""
    import toolmesh
    import toolmesh.client

    out: list[str] = []
    for module in (toolmesh, toolmesh.client):
        out += ["", f"### `{module.__name__}`", "", "| name | what it is |", "|---|---|"]
        for name in sorted(module.__all__):
            value = getattr(module, name)
            doc = inspect.getdoc(value) if not isinstance(value, str) else f"the version, {value!r}"
            first = (doc or "").strip().split("\n\n")[0].removesuffix("::").removesuffix(":")
            out.append(f"| `{module.__name__}.{name}` | {_cell(' '.join(first.split()))} |")
    return "\n".join(out).strip() + "\n"


def on_page_markdown(markdown: str, **_: Any) -> str:
    if CONFIG_MARKER in markdown:
        markdown = markdown.replace(CONFIG_MARKER, config_reference())
    if API_MARKER in markdown:
        markdown = markdown.replace(API_MARKER, api_reference())
    if ERRORS_MARKER in markdown:
        markdown = markdown.replace(ERRORS_MARKER, errors_reference())
    return markdown
