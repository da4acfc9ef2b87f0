"""The slim install and the `mesh` extra.

`pip install toolmesh` is what a function author and a client need: the function SDK, runtime
pods and the clients. `pip install 'toolmesh[mesh]'` adds the gateway, the router, MCP, the chat
proxy and `toolmesh deploy render`. On a slim install, a command that needs the extra says so
in one line before it imports anything, instead of ending in a traceback.
"""

from __future__ import annotations

import argparse
import importlib.util
from collections.abc import Sequence

#: How to get the extra.
MESH_INSTALL = "pip install 'toolmesh[mesh]'"
#: The import names of the [mesh] extra's packages in pyproject.toml (less uvloop, which
#: `toolmesh up` does without); a test keeps the two lists in step.
MESH_MODULES = (
    "starlette",
    "uvicorn",
    "httptools",
    "mcp",
    "jwt",
    "cryptography",
    "redis",
    "yaml",
    "numpy",
    "onnx",
    "onnxruntime",
    "tokenizers",
    "safetensors",
)
#: What `toolmesh deploy render` and `toolmesh router ...` import of it.
RENDER_MODULES = ("yaml",)
ROUTER_MODULES = ("numpy", "onnx", "onnxruntime", "tokenizers", "safetensors")


def needs_mesh(parser: argparse.ArgumentParser, modules: Sequence[str] = MESH_MODULES) -> None:
    """Mark a command as needing these modules of the extra; `mesh_refusal` checks them."""
    parser.set_defaults(mesh_command=parser.prog, mesh_modules=tuple(modules))


def mesh_refusal(args: argparse.Namespace) -> str | None:
    """The line to print when the parsed command needs modules of the extra that are not
    installed; None when it can run."""
    modules: Sequence[str] = getattr(args, "mesh_modules", ())
    missing = [name for name in modules if importlib.util.find_spec(name) is None]
    if not missing:
        return None
    return f"{args.mesh_command}: needs the mesh extra ({', '.join(missing)} not installed): {MESH_INSTALL}"
