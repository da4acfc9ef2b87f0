"""The contract stands on its own: importing it loads nothing of the pod's or the gateway's."""

from __future__ import annotations

import json
import subprocess
import sys

from toolmesh.errors import FunctionTimeout, InvalidArguments
from toolmesh.protocol.calls import Call, Outcome, new_request_id, outcome_of
from toolmesh.protocol.loop_report import LoopReport
from toolmesh.runtimes.functions.results import ErrorInfo, Result, Text

MODULES = ("calls", "channel", "defaults", "frames", "loop_report", "pod_env", "wire")


def test_importing_the_contract_loads_neither_side() -> None:
    imports = "; ".join(f"import toolmesh.protocol.{name}" for name in MODULES)
    script = f"import json, sys; {imports}; print(json.dumps(sorted(sys.modules)))"
    loaded = json.loads(
        subprocess.run([sys.executable, "-c", script], capture_output=True, check=True).stdout
    )
    sides = [m for m in loaded if m.startswith(("toolmesh.runtimes.pod", "toolmesh.gateway"))]
    assert sides == []


def test_request_ids_are_32_hex_digits_and_differ() -> None:
    first, second = new_request_id(), new_request_id()
    assert len(first) == 32 and int(first, 16) >= 0
    assert first != second


def test_outcomes_name_how_a_call_ended() -> None:
    def failed(code: str) -> Result:
        return Result(content=[Text("x")], is_error=True, error=ErrorInfo(code=code, message="x"))

    assert outcome_of(Result(content=[Text("ok")])) == Outcome.OK
    assert outcome_of(failed(InvalidArguments.code)) == Outcome.INVALID_ARGUMENTS
    assert outcome_of(failed(FunctionTimeout.code)) == Outcome.TIMEOUT
    assert outcome_of(failed("something_else")) == Outcome.ERROR
    assert Call("tools.add").arguments == b""


def test_a_loop_report_survives_its_line() -> None:
    report = LoopReport(
        blocked=2.5, function="tools.blocker", request_id="r1", condemned=True, started=frozenset({"a"})
    )
    assert LoopReport.decode(report.encode()) == report
    assert LoopReport().encode() == b"{}\n"
    assert LoopReport.decode(b"{}\n") == LoopReport()
    # A pod whose functions changed says which revision it serves, blocked or not.
    assert LoopReport(listing=3).encode() == b'{"listing":3}\n'
    assert LoopReport.decode(LoopReport(listing=3).encode()) == LoopReport(listing=3)
    assert LoopReport.decode(LoopReport(blocked=1.0, listing=2).encode()).listing == 2
