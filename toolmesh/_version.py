"""The package's version, defined once: pyproject.toml reads it, `toolmesh.__version__` re-exports
it, and internals (tracing's resource, the MCP server info, the default image tag) import it from
here rather than from the package's public face."""

__version__ = "0.1.0"
