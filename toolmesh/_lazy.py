"""Package attributes that are imported on first use (PEP 562).

Every runtime pod imports `toolmesh`, and every `toolmesh` command line registers
`toolmesh router`: neither may pay for httpx, numpy or onnxruntime up front.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_attributes(
    package: str, homes: Mapping[str, str], namespace: dict[str, Any]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """`__getattr__` and `__dir__` for `package`, whose names in `homes` live in the given
    modules; a loaded name is stored in the package's `namespace` so later lookups are direct."""

    def __getattr__(name: str) -> Any:
        module = homes.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *homes})

    return __getattr__, __dir__
