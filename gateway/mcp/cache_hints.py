"""The 2026-07-28 caching hints (SEP-2549) on list and read results.

Lists: fresh for `LIST_TTL_MS`, since a catalog change is announced on `subscriptions/listen`
streams (endpoint.py) and clients of the handshake era re-list when they need to. Resource
reads: `READ_TTL_MS` (0, stale at once), since a read is a function call whose answer may
change from one call to the next. Scope: "public" only when the gateway needs no API key;
with keys, what a list holds depends on the key's scopes, so a cache must not share it.
"""

from __future__ import annotations

from typing import Literal

LIST_TTL_MS = 60_000
READ_TTL_MS = 0


def cache_scope(open_gateway: bool) -> Literal["public", "private"]:
    """ "public" when every caller sees the same thing (no API keys), else "private"."""
    return "public" if open_gateway else "private"
