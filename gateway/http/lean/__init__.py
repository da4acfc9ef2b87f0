"""The HTTP doors' lean path: the hottest routes served without Starlette's per-request layers."""
