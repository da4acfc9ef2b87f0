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
    if name.endswith("traceidratio"):
        ratio = _ratio(environ.get(SAMPLER_ARG_ENV, ""))
        bound = round(ratio * (_LOW_64_BITS + 1))
        by_ratio: Callable[[int], bool] = lambda trace_id: (trace_id & _LOW_64_BITS) < bound  # noqa: E731
    else:
        by_ratio = _ALWAYS.get(name.removeprefix("parentbased_"), _ALWAYS["always_on"])
        if name.removeprefix("parentbased_") not in _ALWAYS:
            log.warning(
                "unknown sampler, using the default", extra={"sampler": name, "default": DEFAULT_SAMPLER}
            )
            name = DEFAULT_SAMPLER
    if name.startswith("parentbased_"):
        return lambda trace_id, parent: by_ratio(trace_id) if parent is None else parent
    return lambda trace_id, parent: by_ratio(trace_id)


def _ratio(argument: str) -> float:
    try:
        ratio = float(argument) if argument.strip() else 1.0
    except ValueError:
        ratio = -1.0
    if not 0.0 <= ratio <= 1.0:
        log.warning("sampler argument must be a ratio in [0, 1]; using 1", extra={"argument": argument})
        return 1.0
    return ratio


_ALWAYS: dict[str, Callable[[int], bool]] = {
    "always_on": lambda trace_id: True,
    "always_off": lambda trace_id: False,
}
