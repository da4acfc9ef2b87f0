"""Runtime pods and the function SDK: how user functions are described, checked and run.

The SDK (decorators, toolsets, the explicit builder, results, context) is
re-exported from the top-level `toolmesh` package; the pod itself starts with
``toolmesh runtime --module MOD``.
"""

from __future__ import annotations

from toolmesh.runtimes.functions.context import Context
from toolmesh.runtimes.functions.decorators import Toolset, function
from toolmesh.runtimes.functions.definition import FunctionDefinition, Parameter
from toolmesh.runtimes.functions.features import Embedded, Message, completion, prompt, resource
from toolmesh.runtimes.functions.results import Binary, Json, Result, Text
from toolmesh.runtimes.functions.spec import Annotations, FunctionSpec

__all__ = [
    "Annotations",
    "Binary",
    "Context",
    "Embedded",
    "FunctionDefinition",
    "FunctionSpec",
    "Json",
    "Message",
    "Parameter",
    "Result",
    "Text",
    "Toolset",
    "completion",
    "function",
    "prompt",
    "resource",
]
