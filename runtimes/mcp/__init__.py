"""A stdio MCP server as a runtime (`mcp_command`): its pods host the bridge module, which starts the
server (one process per pod) with the official MCP client and serves its tools as functions.

Only names here: the bridge itself (mcp_bridge.py) is imported by the pods, never by the gateway.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

#: The module a runtime with `mcp_command` serves.
BRIDGE_MODULE = "toolmesh.runtimes.mcp.mcp_bridge"
#: The server's command line (a JSON array), in the pods' environment.
COMMAND_ENV = "TOOLMESH_MCP_COMMAND"
#: The namespace of its tools (the runtime's name), in the pods' environment.
NAMESPACE_ENV = "TOOLMESH_MCP_NAMESPACE"
#: "1" when the server is offered roots (the runtime's `roots = true`), in the pods' environment.
ROOTS_ENV = "TOOLMESH_MCP_ROOTS"
#: The names (or globs) of the pod's variables the server gets besides the common ones (a JSON
#: array: the runtime's `env` and `inherit_env`), in the pods' environment (server_env.py).
PASSED_ENV = "TOOLMESH_MCP_PASSED_ENV"


def bridge_environment(
    command: Sequence[str], namespace: str, roots: bool = False, passed: Sequence[str] = ()
) -> dict[str, str]:
    """What the pods of an `mcp_command` runtime need in their environment: the server's command,
    the namespace of its functions (the runtime's name), whether it is offered roots, and which
    variables it gets (`passed`)."""
    found = {COMMAND_ENV: json.dumps(list(command)), NAMESPACE_ENV: namespace}
    if roots:
        found[ROOTS_ENV] = "1"
    if passed:
        found[PASSED_ENV] = json.dumps(sorted(set(passed)))
    return found


__all__ = ["BRIDGE_MODULE", "COMMAND_ENV", "NAMESPACE_ENV", "PASSED_ENV", "ROOTS_ENV", "bridge_environment"]
