"""Chaos: calls under load while pods, then the template, are killed; what callers lose.

    .venv/bin/python bench/chaos.py [--seconds 30] [--clients 8] [--replicas 2] [--json]

`toolmesh up` runs as a real subprocess with one runtime serving bench/chaos_tools.py
(pods forked from a template process). Eight clients (httpx, kept-alive connections)
call `lookup` (idempotent) and `append` (not idempotent) over HTTP for --seconds,
while the chaos task, every 2 s, SIGKILLs a random pod of the runtime; once, at a
third of the run, SIGKILLs the template process; once, at a sixth of the run (so a
pod exists whatever the template kill does), SIGSTOPs a pod for 5 s, then SIGCONTs
it. Pods are found as children of the template, the template as the gateway's child
whose command line has `--template fork`, both from /proc. /readyz is polled every 100 ms.

Printed: requests, successes, failures by function, HTTP status and error code
(and whether each kind was a retryable 503 with Retry-After), p50/p99 latency of
the successful calls, the seconds the runtime was not ready, the time from the
template kill to the next successful call, and the `toolmesh runtime` processes left after the gateway
exits (found by the run's temporary directory in their command line).

The memory scenario: a function allocating without bound under `max_memory_mb = 1024` while
calls to another function must all succeed.

Issue 13's targets: idempotent calls >= 99.9 % succeed, and any failure is a
retryable 503; calls succeed again within 2 s of a template kill; no orphans.
Everything stays on 127.0.0.1; every loop is bounded in count and time.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
RUNTIME = "chaos"
FUNCTIONS = ("lookup", "append")
#: Longest a single call may take before the client gives up (a frozen pod today holds calls ~31 s).
CALL_TIMEOUT = 40.0
KILL_EVERY = 2.0
FREEZE_FOR = 5.0
READY_EVERY = 0.1


@dataclass
class Call:
    function: str
    sent: float
    done: float
    status: int  # 0: no HTTP answer (client timeout or connection error)
    code: str
    retry_after: bool

    @property
    def ok(self) -> bool:
        return self.status == 200 and not self.code


@dataclass
class Chaos:
    pod_kills: int = 0
    template_kill_at: float | None = None
    template_killed: bool = False
    froze: bool = False
    no_pod_to_kill: int = 0
    events: list[tuple[float, str]] = field(default_factory=list)


# -- processes, from /proc --------------------------------------------------------------------


def _children(pid: int) -> list[int]:
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return []
    return [int(child) for child in text.split()]


def _cmdline(pid: int) -> list[str]:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return [part.decode(errors="replace") for part in raw.split(b"\0") if part]


def template_pid(gateway: int) -> int | None:
    for child in _children(gateway):
        argv = _cmdline(child)
        if "--template" in argv and "fork" in argv:
            return child
    return None


def pod_pids(gateway: int) -> list[int]:
    template = template_pid(gateway)
    return [] if template is None else _children(template)


def runtime_processes(marker: str) -> list[int]:
    """Every live `toolmesh runtime` process whose command line names this run's directory."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        argv = _cmdline(int(entry.name))
        line = " ".join(argv)
        if "toolmesh runtime" in line and marker in line:
            found.append(int(entry.name))
    return sorted(found)


def _signal(pid: int, sig: signal.Signals) -> bool:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        return False
    return True


# -- the gateway --------------------------------------------------------------------------------


def config_text(replicas: int, extra: str = "") -> str:
    return (
        "[gateway]\nhttp_port = 0\ngrpc_port = 0\n\n[router]\nenabled = false\n\n"
        f'[[runtimes]]\nname = "{RUNTIME}"\nmodules = ["chaos_tools"]\nspawn = "fork"\n'
        f'min_replicas = {replicas}\nmax_replicas = {max(replicas, 4)}\nlog_level = "warning"\n'
        f'env = {{ PYTHONPATH = "{BENCH}" }}\n{extra}'
    )


@contextlib.contextmanager
def gateway(
    workdir: Path, config: str, label: str, cwd: Path = ROOT
) -> Iterator[tuple[subprocess.Popen[str], str]]:
    """`toolmesh up` with `config`, run from `cwd` (whose toolmesh package it then runs)."""
    path = workdir / f"{label}.toml"
    path.write_text(config)
    # TMPDIR puts the template's socket directory (on its command line) inside `workdir`,
    # which is how orphans of this run are told apart from anyone else's pods.
    env = {**os.environ, "TMPDIR": str(workdir)}
    with (workdir / f"{label}.log").open("w") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "toolmesh", "up", "--config", str(path), "--log-level", "warning"],
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
            cwd=cwd,
            env=env,
        )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        if not line:
            raise RuntimeError(f"the gateway did not start; see {workdir / label}.log")
        yield process, f"http://127.0.0.1:{json.loads(line)['http_port']}"
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


async def wait_ready(http: httpx.AsyncClient, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(httpx.HTTPError):
            answer = await http.get("/readyz")
            if answer.status_code == 200 and len(answer.json()["runtimes"]) > 0:
                return
        await asyncio.sleep(0.1)
    raise RuntimeError(f"the gateway was not ready within {timeout} s")


# -- load, chaos and readiness ------------------------------------------------------------------


async def call(http: httpx.AsyncClient, function: str, arguments: dict[str, Any]) -> Call:
    sent = time.monotonic()
    try:
        answer = await http.post(f"/v1/functions/{function}/invoke", json=arguments)
    except httpx.TimeoutException:
        return Call(function, sent, time.monotonic(), 0, "client_timeout", False)
    except httpx.HTTPError as failure:
        return Call(function, sent, time.monotonic(), 0, type(failure).__name__, False)
    done = time.monotonic()
    code = ""
    try:
        body = answer.json()
    except ValueError:
        body = None
    if answer.status_code != 200:
        error = body.get("error") if isinstance(body, dict) else None
        code = str(error.get("code")) if isinstance(error, dict) else "(no envelope)"
    elif isinstance(body, dict) and body.get("is_error"):
        # A function-level error inside a 200: still a failed call for the caller.
        error = body.get("error") or {}
        code = f"result:{error.get('code', '?')}"
    return Call(function, sent, done, answer.status_code, code, "retry-after" in answer.headers)


async def client(http: httpx.AsyncClient, number: int, until: float, calls: list[Call]) -> None:
    sequence = 0
    while time.monotonic() < until:
        function = FUNCTIONS[(number + sequence) % len(FUNCTIONS)]
        argument = {"key": f"k{number}-{sequence}"} if function == "lookup" else {"item": f"i{sequence}"}
        calls.append(await call(http, function, argument))
        sequence += 1


async def chaos(gateway_pid: int, start: float, seconds: float, record: Chaos) -> None:
    # The freeze comes first (at 1/6 of the run, for 5 s) so a pod still exists to freeze
    # whatever the template kill at 1/3 does; pod kills go on meanwhile, never at the frozen pod.
    freeze_at = start + seconds / 6
    template_at = start + seconds / 3
    rng = random.Random(13)
    next_kill = start + KILL_EVERY
    frozen: int | None = None
    thaw_at = 0.0
    while (now := time.monotonic()) < start + seconds:
        if not record.froze and now >= freeze_at:
            record.froze = True
            pods = pod_pids(gateway_pid)
            if pods and _signal(frozen := rng.choice(pods), signal.SIGSTOP):
                thaw_at = now + FREEZE_FOR
                record.events.append((now - start, f"SIGSTOP pod {frozen}"))
            else:
                record.events.append((now - start, "no pod to freeze"))
        if frozen is not None and now >= thaw_at:
            _signal(frozen, signal.SIGCONT)
            record.events.append((now - start, f"SIGCONT pod {frozen}"))
            frozen = None
        if not record.template_killed and now >= template_at:
            record.template_killed = True
            template = template_pid(gateway_pid)
            if template is not None and _signal(template, signal.SIGKILL):
                record.template_kill_at = time.monotonic()
                record.events.append((now - start, f"SIGKILL template {template}"))
            else:
                record.events.append((now - start, "no template to kill"))
        if now >= next_kill:
            next_kill += KILL_EVERY
            pods = [pid for pid in pod_pids(gateway_pid) if pid != frozen]
            if pods and _signal(rng.choice(pods), signal.SIGKILL):
                record.pod_kills += 1
            else:
                record.no_pod_to_kill += 1
        await asyncio.sleep(0.05)
    if frozen is not None:
        _signal(frozen, signal.SIGCONT)


async def readiness(http: httpx.AsyncClient, until: float) -> float:
    """Seconds /readyz said the runtime was not ready (or did not answer)."""
    not_ready = 0.0
    last = time.monotonic()
    while last < until:
        ready = False
        with contextlib.suppress(httpx.HTTPError, ValueError):
            answer = await http.get("/readyz", timeout=1.0)
            ready = answer.status_code == 200 and bool(answer.json()["runtimes"].get(RUNTIME))
        await asyncio.sleep(READY_EVERY)
        now = time.monotonic()
        if not ready:
            not_ready += now - last
        last = now
    return not_ready


async def load_run(url: str, gateway_pid: int, seconds: float, clients: int) -> dict[str, Any]:
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with (
        httpx.AsyncClient(base_url=url, timeout=CALL_TIMEOUT, limits=limits) as http,
        httpx.AsyncClient(base_url=url, timeout=5.0) as probe,
    ):
        await wait_ready(probe)
        calls: list[Call] = []
        record = Chaos()
        start = time.monotonic()
        until = start + seconds
        tasks = [client(http, n, until, calls) for n in range(clients)]
        *_, not_ready = await asyncio.gather(
            *tasks, chaos(gateway_pid, start, seconds, record), readiness(probe, until)
        )
    return {"calls": calls, "chaos": record, "not_ready": not_ready, "start": start}


# -- the memory scenario ------------------------------------------------------------------------


async def memory_run(url: str, seconds: float, clients: int) -> dict[str, Any]:
    """`hoard` grows without bound on one connection while `clients` others call `lookup`."""
    async with (
        httpx.AsyncClient(base_url=url, timeout=CALL_TIMEOUT) as http,
        httpx.AsyncClient(base_url=url, timeout=CALL_TIMEOUT) as greedy_http,
    ):
        await wait_ready(http)
        calls: list[Call] = []
        greedy: list[Call] = []
        until = time.monotonic() + seconds

        async def lookups(number: int) -> None:
            sequence = 0
            while time.monotonic() < until:
                calls.append(await call(http, "lookup", {"key": f"m{number}-{sequence}"}))
                sequence += 1

        async def hoarder() -> None:
            while time.monotonic() < until:
                greedy.append(await call(greedy_http, "hoard", {"megabytes": 64}))

        await asyncio.gather(hoarder(), *(lookups(n) for n in range(clients)))
    return {"calls": calls, "greedy": greedy}


# -- the report ---------------------------------------------------------------------------------


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * len(ordered) + 0.5) - 1))]


def summarize(run: dict[str, Any], orphans: list[int], seconds: float) -> dict[str, Any]:
    calls: list[Call] = run["calls"]
    record: Chaos = run["chaos"]
    per_function: dict[str, Any] = {}
    for function in FUNCTIONS:
        mine = [c for c in calls if c.function == function]
        ok = [c for c in mine if c.ok]
        # Latency of the calls that succeeded: what a caller waits for an answer it can use.
        latencies = [(c.done - c.sent) * 1000 for c in ok]
        per_function[function] = {
            "requests": len(mine),
            "successes": len(ok),
            "success_pct": 100 * len(ok) / len(mine) if mine else 0.0,
            "p50_ms": statistics.median(latencies) if latencies else 0.0,
            "p99_ms": percentile(latencies, 99) if latencies else 0.0,
            "max_ms": max(latencies, default=0.0),
        }
    failures: Counter[tuple[str, int, str, bool]] = Counter()
    for c in calls:
        if not c.ok:
            retryable = c.status == 503 and c.retry_after and c.code in ("unavailable", "overloaded")
            failures[(c.function, c.status, c.code, retryable)] += 1
    recovery: float | None = None
    if record.template_kill_at is not None:
        after = [c.done for c in calls if c.ok and c.sent >= record.template_kill_at]
        recovery = min(after) - record.template_kill_at if after else None
    return {
        "seconds": seconds,
        "functions": per_function,
        "failures": [
            {"function": f, "status": s, "code": code, "retryable_503": r, "count": n}
            for (f, s, code, r), n in sorted(failures.items(), key=lambda item: -item[1])
        ],
        "not_ready_s": run["not_ready"],
        "template_kill_at_s": None
        if record.template_kill_at is None
        else record.template_kill_at - run["start"],
        "template_kill_to_success_s": recovery,
        "pod_kills": record.pod_kills,
        "no_pod_to_kill": record.no_pod_to_kill,
        "events": [f"{at:5.1f} s  {what}" for at, what in record.events],
        "orphans": orphans,
    }


def print_report(summary: dict[str, Any], memory: dict[str, Any]) -> None:
    print(
        f"{summary['seconds']:g} s, cpus {os.cpu_count()}; {summary['pod_kills']} pods SIGKILLed "
        f"(every {KILL_EVERY:g} s; {summary['no_pod_to_kill']} times no pod to kill)"
    )
    for event in summary["events"]:
        print(f"  {event}")
    print()
    print("| function | requests | successes | success % | p50 ms (ok) | p99 ms (ok) | max ms (ok) |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, row in summary["functions"].items():
        label = f"{name} ({'idempotent' if name == 'lookup' else 'not idempotent'})"
        print(
            f"| {label} | {row['requests']} | {row['successes']} | {row['success_pct']:.1f} "
            f"| {row['p50_ms']:.1f} | {row['p99_ms']:.1f} | {row['max_ms']:.0f} |"
        )
    print()
    if summary["failures"]:
        print("| function | HTTP status | error code | count | retryable 503 with Retry-After |")
        print("|---|---:|---|---:|---|")
        for row in summary["failures"]:
            status = row["status"] or "none"
            verdict = "yes" if row["retryable_503"] else "**no**"
            print(f"| {row['function']} | {status} | {row['code']} | {row['count']} | {verdict} |")
    else:
        print("no failed calls")
    print()
    recovery = summary["template_kill_to_success_s"]
    recovery_text = "never (no success afterwards)" if recovery is None else f"{recovery:.2f} s"
    print(f"runtime not ready (/readyz every {READY_EVERY:g} s): {summary['not_ready_s']:.1f} s")
    print(f"template kill to the next success: {recovery_text}  (target <= 2 s)")
    orphans = summary["orphans"]
    listed = f" {orphans}" if orphans else ""
    print(f"orphan `toolmesh runtime` processes after the gateway exited: {len(orphans)}{listed}")
    print()
    print(
        f"memory scenario: {memory['lookup_ok']}/{memory['lookup_requests']} concurrent `lookup` calls "
        f"succeeded (target 100 %); `hoard` calls: {memory['greedy_requests']}, "
        f"failures by code: {memory['greedy_failures']}"
    )


def reap(orphans: list[int]) -> None:
    """Kill what this run left behind (only processes found by its own directory)."""
    for pid in orphans:
        _signal(pid, signal.SIGCONT)
        _signal(pid, signal.SIGKILL)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=30.0, help="length of the load run (default 30)")
    parser.add_argument("--clients", type=int, default=8, help="concurrent clients (default 8)")
    parser.add_argument("--replicas", type=int, default=2, help="min_replicas of the runtime (default 2)")
    parser.add_argument("--memory-seconds", type=float, default=10.0, help="memory scenario (default 10)")
    parser.add_argument("--log", type=Path, help="copy the gateway's log here")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="toolmesh-chaos-") as tmp:
        workdir = Path(tmp)
        with gateway(workdir, config_text(args.replicas), "load") as (process, url):
            run = asyncio.run(load_run(url, process.pid, args.seconds, args.clients))
        time.sleep(1.0)  # pods of a runtime drain after the gateway; give them the same second
        orphans = runtime_processes(tmp)
        reap(orphans)
        if args.log:
            args.log.write_text((workdir / "load.log").read_text())
        summary = summarize(run, orphans, args.seconds)
        extra = "max_memory_mb = 1024\n"
        with gateway(workdir, config_text(args.replicas, extra), "memory") as (process, url):
            result = asyncio.run(memory_run(url, args.memory_seconds, args.clients))
        reap(runtime_processes(tmp))
        lookups: list[Call] = result["calls"]
        greedy: list[Call] = result["greedy"]
        memory = {
            "lookup_requests": len(lookups),
            "lookup_ok": sum(c.ok for c in lookups),
            "greedy_requests": len(greedy),
            "greedy_failures": dict(Counter(f"{c.status} {c.code}" for c in greedy if not c.ok)),
        }
    if args.json:
        print(json.dumps({**summary, "memory": memory}, indent=2))
    else:
        print_report(summary, memory)
    return 0


if __name__ == "__main__":
    sys.exit(main())
