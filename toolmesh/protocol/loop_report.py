"""The liveness report a pod's liveness thread sends the gateway, one JSON line per ping.

    gateway -> pod   b"?"              (any byte: one answer per byte)
    pod -> gateway   {"blocked": 2.5, "function": "tools.blocker", "request_id": "...",
                      "timeout": 30, "where": "tools.py:9 in blocker", "condemned": false,
                      "started": [], "listing": 0}\\n   ({} while the loop runs, or {"listing": 2})

`listing` is the revision of the functions the pod serves: 0 while they are those its template
listed, counted up each time they change on their own (a stdio MCP server's `list_changed`),
so that the gateway, which compares it at every ping, reads them again.

The pod's side is runtimes/pod/isolation/liveness_socket.py, the gateway's gateway/pool/liveness.py.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field

#: Longest answer line read back; a report lists at most the pod's calls in flight.
MAX_LINE = 1024 * 1024


@dataclass(frozen=True, slots=True)
class LoopReport:
    """How a pod's event loop is, as its liveness thread says."""

    #: Seconds the loop has not run, once past the pod's threshold; 0 while it runs.
    blocked: float = 0.0
    #: The call whose code holds the loop ("" when none was found: code outside any call).
    function: str = ""
    request_id: str = ""
    #: That call's time limit, in seconds.
    timeout: float = 0.0
    #: Where the loop thread was when the stall was noticed, "file:line in function".
    where: str = ""
    #: The call passed its limit with the loop still blocked: the pod turns calls away and
    #: waits to be replaced.
    condemned: bool = False
    #: When condemned: request ids of the calls the pod had started (any other call sent to
    #: it never ran there, so it may go to another pod).
    started: frozenset[str] = field(default_factory=frozenset)
    #: The revision of the functions the pod serves (0: its template's).
    listing: int = 0

    def encode(self) -> bytes:
        if not self.blocked and not self.condemned:
            return b'{"listing":%d}\n' % self.listing if self.listing else b"{}\n"
        fields = asdict(self)
        fields["started"] = sorted(self.started)
        return json.dumps(fields).encode() + b"\n"

    @classmethod
    def decode(cls, line: bytes) -> LoopReport:
        fields = json.loads(line)
        if not isinstance(fields, dict):
            raise ValueError("a liveness answer is a JSON object")
        return cls(
            blocked=float(fields.get("blocked", 0.0)),
            function=str(fields.get("function", "")),
            request_id=str(fields.get("request_id", "")),
            timeout=float(fields.get("timeout", 0.0)),
            where=str(fields.get("where", "")),
            condemned=bool(fields.get("condemned", False)),
            started=frozenset(str(i) for i in fields.get("started", ())),
            listing=int(fields.get("listing", 0)),
        )
