"""An OpenAPI service as a runtime: each operation a function, called with httpx by the gateway.

document.py reads the document (references.py bundles the other files its `$ref`s name into it),
schemas.py turns its schemas into JSON Schema, operations.py its operations into FunctionSpecs
(remembering where each argument goes), servers.py says where they are served, request.py,
parameters.py and bodies.py make a call's HTTP request, answers.py sends it and makes the answer a
result, and openapi_runtime.py is the runtime holding them together.
"""

from __future__ import annotations

from toolmesh.gateway.sources.openapi.openapi_runtime import OpenApiRuntime

__all__ = ["OpenApiRuntime"]
