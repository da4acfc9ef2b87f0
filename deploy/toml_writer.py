"""A small TOML writer for toolmesh.toml: tables, arrays of tables, and the value types a
config holds (strings, numbers, booleans, lists, string maps as inline tables).

The standard library reads TOML but cannot write it; this covers exactly what
`MeshConfig` dumps to, and the tests read every output back with `tomllib`.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any

_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def _key(key: str) -> str:
    return key if _BARE_KEY.match(key) else _string(key)


def _string(value: str) -> str:
    # JSON string escapes are valid TOML basic-string escapes; non-ASCII stays as is
    # (TOML's \u escapes may not encode surrogates), DEL is the one control JSON keeps.
    return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{_key(k)} = {_value(v)}" for k, v in value.items() if v is not None) + "}"
    if isinstance(value, Sequence):
        return "[" + ", ".join(_value(item) for item in value) + "]"
    raise TypeError(f"cannot write {type(value).__name__} as TOML")


def _is_table_array(value: Any) -> bool:
    return (
        isinstance(value, Sequence)
        and not isinstance(value, str)
        and bool(value)
        and all(isinstance(item, Mapping) for item in value)
    )


def _body(table: Mapping[str, Any]) -> list[str]:
    # Inside a table, maps are inline tables: a toolmesh.toml nests no deeper.
    return [f"{_key(key)} = {_value(value)}" for key, value in table.items() if value is not None]


def dumps(document: Mapping[str, Any], header: str = "") -> str:
    """TOML text for `document`: top-level scalars, then one [table] or [[array]] per section.

    Top-level mappings become [tables] and lists of mappings [[arrays of tables]]; deeper
    maps are inline tables. TOML has no null: a key whose value is None is left out (so it
    reads back as its default). `header` is written first as `#` comment lines.
    """
    lines = [f"# {line}".rstrip() for line in header.splitlines()]
    top = [
        f"{_key(key)} = {_value(value)}"
        for key, value in document.items()
        if value is not None and not isinstance(value, Mapping) and not _is_table_array(value)
    ]
    if top:
        lines += ["", *top] if lines else top
    for key, value in document.items():
        if isinstance(value, Mapping):
            lines += ["", f"[{_key(key)}]", *_body(value)]
        elif _is_table_array(value):
            for item in value:
                lines += ["", f"[[{_key(key)}]]", *_body(item)]
    return "\n".join(lines).lstrip("\n") + "\n"
