"""Which traces are recorded: the standard OTEL_TRACES_SAMPLER choices, decided per span.

The same decisions the SDK's samplers make (a ratio compares the trace id's low 64 bits with a
bound, so every process of a trace agrees), written out because a sampler object's call costs
more than the span it decides on.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping

SAMPLER_ENV = "OTEL_TRACES_SAMPLER"
SAMPLER_ARG_ENV = "OTEL_TRACES_SAMPLER_ARG"
DEFAULT_SAMPLER = "parentbased_always_on"
_LOW_64_BITS = (1 << 64) - 1

log = logging.getLogger("toolmesh.tracing")

#: (trace id, the parent's sampled flag or None for a root span) -> record this span?
Sampler = Callable[[int, "bool | None"], bool]


def sampler_from(environ: Mapping[str, str]) -> Sampler:
    name = environ.get(SAMPLER_ENV, "").strip().lower() or DEFAULT_SAMPLER
    decision = name.removeprefix("parentbased_")
    if decision == "traceidratio":
        ratio = _ratio(environ.get(SAMPLER_ARG_ENV, ""))
        bound = round(ratio * (_LOW_64_BITS + 1))
        if name.startswith("parentbased_"):
            return lambda trace_id, parent: (trace_id & _LOW_64_BITS) < bound if parent is None else parent
        return lambda trace_id, parent: (trace_id & _LOW_64_BITS) < bound
    if decision not in _ALWAYS:
        log.warning("unknown sampler, using the default", extra={"sampler": name, "default": DEFAULT_SAMPLER})
        name, decision = DEFAULT_SAMPLER, "always_on"
    # Roots get a fixed answer rather than a call of their own: each Python call on a request's
    # path costs about half a µs in a server (cold caches).
    root = _ALWAYS[decision]
    if name.startswith("parentbased_"):
        return lambda trace_id, parent: root if parent is None else parent
    return lambda trace_id, parent: root


def _ratio(argument: str) -> float:
    try:
        ratio = float(argument) if argument.strip() else 1.0
    except ValueError:
        ratio = -1.0
    if not 0.0 <= ratio <= 1.0:
        log.warning("sampler argument must be a ratio in [0, 1]; using 1", extra={"argument": argument})
        return 1.0
    return ratio


_ALWAYS = {"always_on": True, "always_off": False}
