"""Function names for what a service calls otherwise (an OpenAPI operation, an MCP tool, a gRPC
method): which ones a runtime keeps (`include`/`exclude` globs), and each one's name made one the
mesh can carry, short enough and unique."""

from __future__ import annotations

import fnmatch
import hashlib
import re
from collections.abc import Sequence

from toolmesh.runtimes.functions.spec import MAX_TOOL_NAME, TOOL_NAME_SEPARATOR

#: Characters of the hash that keeps a shortened or clashing name unique.
_HASH = 8


def name_limit(namespace: str) -> int:
    """The longest function name under `namespace` (so that its tool name fits 64 characters)."""
    return MAX_TOOL_NAME - len(namespace) - len(TOOL_NAME_SEPARATOR)


def function_name(raw: str, limit: int, taken: set[str]) -> str:
    """`raw` made a valid function name of at most `limit` characters, not in `taken`."""
    name = re.sub(r"[^A-Za-z0-9]+", "_", raw).strip("_") or "operation"
    if not name[0].isalpha():
        name = f"op_{name}"
    if len(name) > limit or name in taken:
        digest = hashlib.sha256(raw.encode()).hexdigest()[:_HASH]
        name = f"{name[: limit - _HASH - 1].rstrip('_')}_{digest}"
    counter = 2
    unique = name
    while unique in taken:  # a hash that clashes too: count
        unique = f"{name[: limit - len(str(counter)) - 1].rstrip('_')}_{counter}"
        counter += 1
    taken.add(unique)
    return unique


def selected(name: str, include: Sequence[str], exclude: Sequence[str]) -> bool:
    """Whether `name` passes `include` (none: everything) and is in no `exclude` (globs)."""

    def matches(patterns: Sequence[str]) -> bool:
        return any(fnmatch.fnmatchcase(name, p) for p in patterns)

    return (not include or matches(include)) and not matches(exclude)
