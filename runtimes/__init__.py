"""Runtime pods and the function SDK: how user functions are described, checked and run.

The SDK (decorators, toolsets, the explicit builder, results, context) is
re-exported from the top-level `toolmesh` package; the pod itself starts with
``toolmesh runtime --module MOD``.
"""

from __future__ import annotations

from toolmesh.runtimes.context import Context
from toolmesh.runtimes.decorators import Toolset, function
from toolmesh.runtimes.definition import FunctionDefinition, Parameter
from toolmesh.runtimes.results import Binary, Json, Result, Text
from toolmesh.runtimes.spec import Annotations, FunctionSpec

__all__ = [
    "Annotations",
    "Binary",
    "Context",
    "FunctionDefinition",
    "FunctionSpec",
    "Json",
    "Parameter",
    "Result",
    "Text",
    "Toolset",
    "function",
]
