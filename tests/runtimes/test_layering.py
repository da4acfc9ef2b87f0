"""The runtimes (the function SDK and the pod) never import the gateway's side of toolmesh.

Every pod imports these modules; one import of the gateway, the router, the clients, the
deploy renderer or the mesh's toml config would drag those (and their dependencies) into
every pod. The process tests check what a running pod
has loaded; this one also covers imports on paths those tests do not run.
"""

from __future__ import annotations

import ast
from pathlib import Path

import toolmesh.runtimes

RUNTIMES = Path(toolmesh.runtimes.__file__).resolve().parent
FORBIDDEN = ("toolmesh.gateway", "toolmesh.router", "toolmesh.client", "toolmesh.deploy", "toolmesh.config")


def _imports(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module is not None and node.level == 0:
            found += [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
    return found


def test_no_runtime_module_imports_the_gateway_side() -> None:
    modules = sorted(RUNTIMES.rglob("*.py"))
    assert len(modules) > 20
    offending = {
        f"{path.relative_to(RUNTIMES)}: {name}"
        for path in modules
        for name in _imports(path)
        if any(name == f or name.startswith(f + ".") for f in FORBIDDEN)
    }
    assert not offending
