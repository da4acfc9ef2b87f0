"""Which of a service's operations, tools or methods a runtime keeps (`include`/`exclude` globs);
their names are made in runtimes/functions/spec.py."""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence


def selected(name: str, include: Sequence[str], exclude: Sequence[str]) -> bool:
    """Whether `name` passes `include` (none: everything) and is in no `exclude` (globs)."""

    def matches(patterns: Sequence[str]) -> bool:
        return any(fnmatch.fnmatchcase(name, p) for p in patterns)

    return (not include or matches(include)) and not matches(exclude)
