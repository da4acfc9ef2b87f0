"""An OpenAPI service as a runtime: each operation a function, called with httpx by the gateway.

document.py reads the document (references.py bundles the other files its `$ref`s name into it),
schemas.py turns its schemas into JSON Schema, operations.py its operations into FunctionSpecs
(remembering where each argument goes), request.py and bodies.py make a call's HTTP request, and
openapi_runtime.py sends it.
"""

from __future__ import annotations

from toolmesh.gateway.sources.openapi.openapi_runtime import OpenApiRuntime

__all__ = ["OpenApiRuntime"]
