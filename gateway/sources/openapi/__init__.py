"""An OpenAPI service as a runtime: each operation a function, called with httpx by the gateway.

document.py reads the document, schemas.py turns its schemas into JSON Schema, operations.py its
operations into FunctionSpecs (remembering where each argument goes), openapi_runtime.py calls them.
"""

from __future__ import annotations

from toolmesh.gateway.sources.openapi.openapi_runtime import OpenApiRuntime

__all__ = ["OpenApiRuntime"]
