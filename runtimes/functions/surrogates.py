"""Naming a lone surrogate in arguments, instead of a JSON parser's "hex escape" complaint.

JSON's "\\ud800" escape is valid JSON text but names no character: pydantic's parser refuses it
with "unexpected end of hex escape", which tells a caller nothing. Python's own parser reads it,
so the argument that holds one can be found and named.
"""

from __future__ import annotations

import json
import re
from typing import Any

from toolmesh.errors import Violation

_SURROGATE = re.compile("[\ud800-\udfff]")


def lone_surrogate(raw: Any) -> Violation | None:
    """The violation for the first lone surrogate in the JSON text `raw`, if that is what is wrong."""
    if isinstance(raw, bytes | bytearray):
        raw = bytes(raw).decode(errors="replace")
    if not isinstance(raw, str):
        return None
    try:
        document = json.loads(raw)
    except ValueError:
        return None
    return _find(document, "")


def _find(value: Any, path: str) -> Violation | None:
    if isinstance(value, str):
        found = _SURROGATE.search(value)
        if found is None:
            return None
        where = path or "arguments"
        return Violation(
            path,
            "text (UTF-8)",
            f"a lone surrogate U+{ord(found.group()):04X}",
            f"{where}: holds a lone surrogate (U+{ord(found.group()):04X}) at character {found.start()},"
            " which is not text: send UTF-8",
        )
    items: list[tuple[str, Any]] = []
    if isinstance(value, dict):
        for key, item in value.items():
            if _SURROGATE.search(key):
                return Violation(
                    path,
                    "a key in UTF-8",
                    "a lone surrogate",
                    f"a key at {path or 'the top'} holds a lone surrogate, which is not text: send UTF-8",
                )
            items.append((f"{path}.{key}" if path else key, item))
    elif isinstance(value, list):
        items = [(f"{path}.{i}" if path else str(i), item) for i, item in enumerate(value)]
    for item_path, item in items:
        found_violation = _find(item, item_path)
        if found_violation is not None:
            return found_violation
    return None
