"""What checking a call's arguments costs in the pod, per call, measured in one process.

    .venv/bin/python bench/argument_validation.py [--calls N] [--rounds R]

Rows, side by side in one run (alternating rounds, the median round reported):
- the pydantic call of a flat and of a nested signature (10 nested models), as the pod made it before
  (each class's own config: strict and closed only at the top level) and as it makes it now (strict
  and extra="forbid" given at validation time, reaching nested models), and the whole check now;
- a nested call with one violation (the error path, violations built);
- a hand-written JSON Schema 2020-12 document (jsonschema) next to the same arguments as
  `toolmesh.Parameter`s (pydantic).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import time
from collections.abc import Callable
from typing import Any

import pydantic

import toolmesh
from toolmesh.runtimes.functions.discovery import host_function


class Line(pydantic.BaseModel):
    sku: str
    qty: int


def flat(city: str, days: int = 3, metric: bool = True) -> None: ...


def nested(customer: str, lines: list[Line]) -> None: ...


CONTACT = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "phone": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name"],
    "additionalProperties": False,
}
CONTACT_PARAMETERS = [
    toolmesh.Parameter("name", "string"),
    toolmesh.Parameter("phone", "string", required=False),
    toolmesh.Parameter("age", "integer", required=False),
]


def rows() -> dict[str, Callable[[], Any]]:
    flat_v, nested_v = host_function(flat).validator, host_function(nested).validator
    flat_model, nested_model = flat_v._model, nested_v._model  # type: ignore[attr-defined]
    flat_body = b'{"city": "Oslo", "days": 5}'
    lines = [{"sku": f"s{i}", "qty": i} for i in range(10)]
    nested_body = json.dumps({"customer": "ada", "lines": lines}).encode()
    bad_body = json.dumps({"customer": "ada", "lines": [*lines[:9], {"sku": "x", "qty": "2"}]}).encode()
    schema_v = toolmesh.FunctionDefinition("contact", lambda **kw: kw, parameters=CONTACT).host().validator
    params_v = toolmesh.FunctionDefinition("contact", lambda **kw: kw, parameters=CONTACT_PARAMETERS).host()
    contact_body = b'{"name": "Ada", "phone": "+47 1234", "age": 36}'

    def refused() -> None:
        with contextlib.suppress(toolmesh.InvalidArguments):
            nested_v.validate(bad_body)

    return {
        "flat: the pydantic call before (top level strict)": lambda: flat_model.model_validate_json(
            flat_body
        ),
        "flat: the pydantic call now (every depth)": lambda: flat_model.model_validate_json(
            flat_body, strict=True, extra="forbid"
        ),
        "flat: the whole check now (with keyword arguments)": lambda: flat_v.validate(flat_body),
        "nested: the pydantic call before": lambda: nested_model.model_validate_json(nested_body),
        "nested: the pydantic call now": lambda: nested_model.model_validate_json(
            nested_body, strict=True, extra="forbid"
        ),
        "nested: the whole check now": lambda: nested_v.validate(nested_body),
        "nested, one violation: the whole check (error path)": refused,
        "hand-written JSON Schema (jsonschema)": lambda: schema_v.validate(contact_body),
        "the same as toolmesh.Parameter (pydantic)": lambda: params_v.validator.validate(contact_body),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    table = rows()
    times: dict[str, list[float]] = {name: [] for name in table}
    for _ in range(args.rounds):
        for name, call in table.items():
            start = time.perf_counter()
            for _ in range(args.calls):
                call()
            times[name].append((time.perf_counter() - start) / args.calls * 1e6)
    print(f"{'arguments checked':58} {'µs / call (median of rounds)':>30}")
    for name, samples in times.items():
        print(f"{name:58} {statistics.median(samples):>30.2f}")


if __name__ == "__main__":
    main()
