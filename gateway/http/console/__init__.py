"""The web console at /ui: static pages shipped in the package that call the public HTTP API."""

from toolmesh.gateway.http.console.console_routes import console_routes

__all__ = ["console_routes"]
