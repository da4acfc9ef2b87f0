"""The OpenAPI document of the HTTP API (`openapi_document`), split by group of routes."""

from toolmesh.gateway.http.openapi.api_document import openapi_document

__all__ = ["openapi_document"]
