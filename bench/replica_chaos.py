"""Replica chaos: two gateways behind nginx, one SIGKILLed every few seconds; what callers lose.

    .venv/bin/python bench/replica_chaos.py [--seconds 40] [--clients 8] [--kill-every 5] [--json]

A real `redis-server` on loopback; two `toolmesh up` gateways started from one toolmesh.toml
(`[state] url` on that Redis, so they share rate limits, sessions and one job queue; `[project]
id` the same; `[jobs] lease` short), on two fixed ports, each serving bench/replica_tools.py;
nginx (Debian's nginx-light, `-p <tmpdir>`, not a daemon) in front with both as its upstream,
retrying a request on the other one (`proxy_next_upstream error timeout http_502 http_503
non_idempotent`, 2 tries, 0.5 s connect timeout, `max_fails=0`, upstream keepalive closed after 4 s,
before uvicorn's 5 s). For --seconds, --clients clients (httpx,
kept-alive connections to nginx) each loop over:

  ping         an idempotent no-op, one request per call (the load balancer's retry only);
  append_line  not idempotent: appends the call's `Idempotency-Key` to a file, so a run twice
               is a duplicate line; the client sends the same key again on a retryable error
               (no answer, 429, 502, 503, 504) for up to 20 s;
  a job        once a second per client: POST /v1/jobs to `nap` (idempotent) with an
               `Idempotency-Key`, again with the same key on a retryable error.

Meanwhile every --kill-every seconds one gateway (each in turn) is SIGKILLed and started again
on its port. After the run every job is polled until it ends (or is declared lost), the file is
counted, and the `toolmesh runtime` processes of every killed gateway still alive are orphans
(each gateway runs with its own TMPDIR, which its pods' command lines name); the other gateway's
runtime processes at each kill must all still live once the killed one serves again.

Printed: requests and their success %, the idempotent no-op's success %, keyed calls, their
success %, duplicates (lines written twice) and failures by error code, jobs submitted,
succeeded, failed (by code), lost, and orphan pods. Issue 33's targets: >= 99.9 % of
idempotent calls succeed, 0 duplicates of keyed calls with >= 99.5 % of them succeeding
(needs Idempotency-Key on calls), 100 % of jobs `succeeded`, none lost, no orphans.
Everything stays on 127.0.0.1; every loop is bounded in count and time.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
#: Longest one request may take before the client gives up.
CALL_TIMEOUT = 30.0
#: Seconds a client keeps sending one keyed call again after retryable errors.
KEYED_DEADLINE = 20.0
#: Seconds between one client's job submissions.
JOB_EVERY = 1.0
#: Seconds a job may take to end after the run (its lease lapses, another gateway runs it).
JOB_DEADLINE = 60.0
#: A job's lease: a killed gateway's jobs are taken over this long after its last renewal.
LEASE = 2.0
RETRYABLE_STATUSES = {0, 429, 502, 503, 504}
RETRYABLE_CODES = {"unavailable", "overloaded", "rate_limited", "state_unavailable"}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_port(port: int, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return
        time.sleep(0.05)
    raise RuntimeError(f"nothing listens on port {port} after {timeout} s")


def runtime_processes(marker: str) -> list[int]:
    """Live `toolmesh runtime` processes whose command line names `marker` (a gateway's TMPDIR)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker in argv and "toolmesh" in argv and state != "Z":
            found.append(int(entry.name))
    return sorted(found)


def alive(pids: list[int]) -> list[int]:
    return [pid for pid in pids if Path(f"/proc/{pid}").exists()]


# -- the processes ------------------------------------------------------------------------------


@contextlib.contextmanager
def redis_server(workdir: Path, binary: str = "redis-server") -> Iterator[str]:
    port = free_port()
    process = subprocess.Popen(
        [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        cwd=workdir,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_port(port)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        process.kill()
        process.wait(10)


def nginx_conf(workdir: Path, listen: int, upstreams: list[int]) -> str:
    # max_fails=0: a refused connect costs a retry on the other at once, whereas a gateway marked
    # down for fail_timeout may be the only one up again by then (the other just killed).
    servers = "".join(f"    server 127.0.0.1:{port} max_fails=0;\n" for port in upstreams)
    temp = "".join(
        f"  {kind}_temp_path {workdir / ('nginx-' + kind)};\n"
        for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    return (
        f"daemon off;\nworker_processes 1;\npid {workdir / 'nginx.pid'};\n"
        f"error_log {workdir / 'nginx-error.log'} warn;\nevents {{ worker_connections 1024; }}\n"
        f"http {{\n  access_log off;\n{temp}"
        f"  upstream gateways {{\n{servers}    keepalive 32;\n    keepalive_timeout 4s;\n  }}\n"
        f"  server {{\n    listen 127.0.0.1:{listen};\n    client_max_body_size 1m;\n"
        "    location / {\n      proxy_pass http://gateways;\n      proxy_http_version 1.1;\n"
        '      proxy_set_header Connection "";\n      proxy_set_header Host $host;\n'
        "      proxy_next_upstream error timeout http_502 http_503 non_idempotent;\n"
        "      proxy_next_upstream_tries 2;\n      proxy_connect_timeout 500ms;\n"
        f"      proxy_read_timeout {CALL_TIMEOUT:g}s;\n    }}\n  }}\n}}\n"
    )


@contextlib.contextmanager
def nginx(workdir: Path, upstreams: list[int], binary: str = "/usr/sbin/nginx") -> Iterator[str]:
    listen = free_port()
    conf = workdir / "nginx.conf"
    conf.write_text(nginx_conf(workdir, listen, upstreams))
    process = subprocess.Popen(
        [binary, "-p", str(workdir), "-c", str(conf), "-e", str(workdir / "nginx-error.log")],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        try:
            wait_port(listen)
        except RuntimeError:
            raise RuntimeError((workdir / "nginx-error.log").read_text()) from None
        yield f"http://127.0.0.1:{listen}"
    finally:
        process.send_signal(signal.SIGQUIT)
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def gateway_config(state_url: str) -> str:
    return (
        '[project]\nid = "replica-chaos"\n\n'
        "[gateway]\nhttp_port = 0\ngrpc_port = 0\naccess_log = false\n\n"
        "[router]\nenabled = false\n\n"
        f'[state]\nurl = "{state_url}"\n\n'
        f"[jobs]\nlease = {LEASE}\n\n"
        '[[runtimes]]\nname = "replica"\nmodules = ["replica_tools"]\nmin_replicas = 1\n'
        f'log_level = "warning"\nenv = {{ PYTHONPATH = "{BENCH}" }}\n'
    )


@dataclass
class Gateways:
    """The two gateways, by slot: started, SIGKILLed, started again on the same port."""

    workdir: Path
    config: Path
    ports: list[int]
    processes: list[subprocess.Popen[bytes] | None] = field(default_factory=lambda: [None, None])
    markers: list[str] = field(default_factory=lambda: ["", ""])
    #: The TMPDIR of every gateway that was SIGKILLed: its pods must be gone.
    killed: list[str] = field(default_factory=list)
    started: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def start(self, slot: int) -> None:
        with self.lock:
            self.started += 1
            number = self.started
        marker = self.workdir / f"gw{slot}-{number}"
        marker.mkdir()
        log = (self.workdir / f"gateway-{slot}-{number}.log").open("wb")
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "toolmesh",
                "up",
                "--config",
                str(self.config),
                "--http-port",
                str(self.ports[slot]),
            ],
            stdout=subprocess.PIPE,
            stderr=log,
            cwd=ROOT,
            env={**os.environ, "TMPDIR": str(marker), "PYTHONPATH": str(ROOT)},
        )
        log.close()
        assert process.stdout is not None
        if not process.stdout.readline():
            raise RuntimeError(
                f"gateway {slot} did not start; see {self.workdir}/gateway-{slot}-{number}.log"
            )
        self.processes[slot], self.markers[slot] = process, str(marker)

    def kill(self, slot: int) -> None:
        process = self.processes[slot]
        if process is None:
            return
        process.kill()
        process.wait()
        if process.stdout is not None:
            process.stdout.close()
        self.killed.append(self.markers[slot])
        self.processes[slot] = None

    def stop(self) -> None:
        for process in self.processes:
            if process is not None:
                process.send_signal(signal.SIGTERM)
        for process in self.processes:
            if process is not None:
                try:
                    process.wait(30)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
                if process.stdout is not None:
                    process.stdout.close()


# -- the load -----------------------------------------------------------------------------------


@dataclass
class Record:
    #: Every request a client sent: (what, HTTP status or 0, error code or "").
    requests: list[tuple[str, int, str]] = field(default_factory=list)
    keyed_ok: int = 0
    #: Keyed calls that still failed after their retries, by the last error's code.
    keyed_failures: Counter[str] = field(default_factory=Counter)
    keyed_retries: int = 0
    jobs: list[str] = field(default_factory=list)
    job_submit_failures: Counter[str] = field(default_factory=Counter)
    kills: int = 0
    restart_s: list[float] = field(default_factory=list)
    #: Pods of the gateway that was not killed that died meanwhile (its pool disturbed).
    survivor_pods_lost: int = 0


async def request(
    http: httpx.AsyncClient, what: str, path: str, body: dict[str, Any], record: Record, key: str = ""
) -> tuple[int, str, dict[str, Any]]:
    """One request: (status, error code, body); status 0 when there was no answer."""
    headers = {"Idempotency-Key": key} if key else {}
    try:
        answer = await http.post(path, json=body, headers=headers)
    except httpx.HTTPError as failure:
        record.requests.append((what, 0, type(failure).__name__))
        return 0, type(failure).__name__, {}
    try:
        document = answer.json()
    except ValueError:
        document = None
    code = ""
    if not isinstance(document, dict):
        document, code = {}, f"no_envelope_{answer.status_code}"  # nginx's own page
    elif answer.status_code >= 400:
        code = str((document.get("error") or {}).get("code", "?"))
    elif document.get("is_error"):
        code = "result:" + str((document.get("error") or {}).get("code", "?"))
    record.requests.append((what, answer.status_code, code))
    return answer.status_code, code, document


def retryable(status: int, code: str) -> bool:
    return status in RETRYABLE_STATUSES or code.removeprefix("result:") in RETRYABLE_CODES


async def keyed(
    http: httpx.AsyncClient, what: str, path: str, body: dict[str, Any], key: str, record: Record
) -> dict[str, Any] | None:
    """A call sent again with its key until it succeeds, fails for good, or KEYED_DEADLINE."""
    deadline = time.monotonic() + KEYED_DEADLINE
    tries = 0
    while True:
        tries += 1
        status, code, document = await request(http, what, path, body, record, key)
        if status in (200, 202) and not code:
            record.keyed_retries += tries - 1
            return document
        if not retryable(status, code) or time.monotonic() >= deadline:
            record.keyed_retries += tries - 1
            (record.keyed_failures if what == "append" else record.job_submit_failures)[
                code or str(status)
            ] += 1
            return None
        await asyncio.sleep(min(0.5, 0.05 * tries))


async def client(http: httpx.AsyncClient, number: int, until: float, marks: Path, record: Record) -> None:
    sequence = 0
    next_job = time.monotonic() + number * JOB_EVERY / 8
    while time.monotonic() < until:
        sequence += 1
        if time.monotonic() >= next_job:
            next_job += JOB_EVERY
            key = f"job-{number}-{sequence}"
            job = await keyed(
                http, "job", "/v1/jobs", {"function": "nap", "arguments": {"seconds": 0.5}}, key, record
            )
            if job is not None:
                record.jobs.append(str(job["id"]))
        elif sequence % 2:
            await request(http, "ping", "/v1/functions/ping/invoke", {}, record)
        else:
            key = f"append-{number}-{sequence}"
            body = {"path": str(marks), "line": key}
            if await keyed(http, "append", "/v1/functions/append_line/invoke", body, key, record) is not None:
                record.keyed_ok += 1


async def killer(gateways: Gateways, until: float, every: float, record: Record) -> None:
    """SIGKILL a gateway every `every` seconds, each in turn, and start it again at once; one at
    a time: the next kill waits until the last one's gateway serves again."""
    slot = 0
    restarted: asyncio.Task[None] | None = None
    next_kill = time.monotonic() + every
    while next_kill < until:
        await asyncio.sleep(max(0.0, next_kill - time.monotonic()))
        if restarted is not None:
            await restarted
        survivor = runtime_processes(gateways.markers[1 - slot])
        gateways.kill(slot)
        record.kills += 1
        restarted = asyncio.create_task(_restart(gateways, slot, record, survivor))
        slot = 1 - slot
        next_kill += every
    if restarted is not None:
        await restarted


async def _restart(gateways: Gateways, slot: int, record: Record, survivor: list[int]) -> None:
    began = time.monotonic()
    await asyncio.to_thread(gateways.start, slot)
    record.restart_s.append(time.monotonic() - began)
    record.survivor_pods_lost += len(survivor) - len(alive(survivor))


async def job_outcomes(http: httpx.AsyncClient, ids: list[str]) -> Counter[str]:
    """Each job's end: its status (failed ones with their code), or `lost`."""
    outcomes: Counter[str] = Counter()
    deadline = time.monotonic() + JOB_DEADLINE
    waiting = list(ids)
    while waiting and time.monotonic() < deadline:
        still = []
        for job_id in waiting:
            try:
                answer = await http.get(f"/v1/jobs/{job_id}")
            except httpx.HTTPError:
                still.append(job_id)
                continue
            if answer.status_code == 404:
                outcomes["lost"] += 1
                continue
            if answer.status_code != 200:
                still.append(job_id)
                continue
            job = answer.json()
            if job["status"] in ("queued", "running"):
                still.append(job_id)
            elif job["status"] == "succeeded":
                outcomes["succeeded"] += 1
                # Run again by another gateway after the one running it was killed.
                outcomes["taken_over"] += job["attempts"] > 1
            else:
                outcomes[f"{job['status']}:{(job.get('error') or {}).get('code', '?')}"] += 1
        waiting = still
        if waiting:
            await asyncio.sleep(0.5)
    outcomes["lost"] += len(waiting)  # never ended
    return outcomes


async def load(
    url: str, gateways: Gateways, seconds: float, clients: int, every: float, marks: Path
) -> dict[str, Any]:
    record = Record()
    limits = httpx.Limits(max_connections=clients * 2, max_keepalive_connections=clients * 2)
    async with httpx.AsyncClient(base_url=url, timeout=CALL_TIMEOUT, limits=limits) as http:
        until = time.monotonic() + seconds
        await asyncio.gather(
            killer(gateways, until, every, record),
            *(client(http, n, until, marks, record) for n in range(clients)),
        )
        outcomes = await job_outcomes(http, record.jobs)
    return {"record": record, "jobs": outcomes}


def summarize(run: dict[str, Any], marks: Path, orphans: list[int], seconds: float) -> dict[str, Any]:
    record: Record = run["record"]
    lines = Counter(marks.read_text().splitlines()) if marks.exists() else Counter()
    requests = record.requests
    pings = [r for r in requests if r[0] == "ping"]
    keyed_calls = record.keyed_ok + sum(record.keyed_failures.values())
    outcomes: Counter[str] = run["jobs"]

    def pct(part: int, whole: int) -> float:
        return 100.0 * part / whole if whole else 100.0

    return {
        "seconds": seconds,
        "kills": record.kills,
        "restart_s_max": max(record.restart_s, default=0.0),
        "requests": len(requests),
        "requests_ok_pct": pct(sum(1 for r in requests if r[1] in (200, 202) and not r[2]), len(requests)),
        "idempotent_calls": len(pings),
        "idempotent_ok_pct": pct(sum(1 for r in pings if r[1] == 200 and not r[2]), len(pings)),
        "idempotent_failures": dict(Counter(f"{r[1]} {r[2]}" for r in pings if r[1] != 200 or r[2])),
        "keyed_calls": keyed_calls,
        "keyed_ok_pct": pct(record.keyed_ok, keyed_calls),
        "keyed_retries": record.keyed_retries,
        "keyed_duplicates": sum(n - 1 for n in lines.values() if n > 1),
        "keyed_failures": dict(record.keyed_failures),
        "jobs_submitted": len(record.jobs),
        "job_submit_failures": dict(record.job_submit_failures),
        "jobs_succeeded": outcomes["succeeded"],
        "jobs_lost": outcomes["lost"],
        "jobs_taken_over": outcomes["taken_over"],
        "jobs_other": {k: v for k, v in outcomes.items() if k not in ("succeeded", "lost", "taken_over")},
        "orphan_pods": orphans,
        "survivor_pods_lost": record.survivor_pods_lost,
    }


def run(
    seconds: float,
    clients: int,
    kill_every: float,
    workdir: Path,
    nginx_binary: str = "/usr/sbin/nginx",
    redis_binary: str = "redis-server",
) -> dict[str, Any]:
    """The whole scenario in `workdir`; the summary `print_report` prints."""
    marks = workdir / "appended.txt"
    with redis_server(workdir, redis_binary) as state_url:
        config = workdir / "toolmesh.toml"
        config.write_text(gateway_config(state_url))
        gateways = Gateways(workdir, config, [free_port(), free_port()])
        try:
            for slot in (0, 1):
                gateways.start(slot)
            with nginx(workdir, gateways.ports, nginx_binary) as url:
                result = asyncio.run(load(url, gateways, seconds, clients, kill_every, marks))
        finally:
            gateways.stop()
        time.sleep(1.0)  # pods notice their gateway's death within a moment: give them one
        orphans = sorted({pid for marker in gateways.killed for pid in runtime_processes(marker)})
        for pid in orphans:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    return summarize(result, marks, orphans, seconds)


def print_report(s: dict[str, Any], clients: int, every: float) -> None:
    print(
        f"{s['seconds']:g} s, {clients} clients, cpus {os.cpu_count()}; {s['kills']} gateway SIGKILLs "
        f"(every {every:g} s; slowest restart {s['restart_s_max']:.1f} s)"
    )
    print()
    print("| measure | value | target |")
    print("|---|---:|---|")
    rows = [
        ("requests (all kinds, each try)", f"{s['requests']}", ""),
        ("requests succeeded", f"{s['requests_ok_pct']:.2f} %", ""),
        ("idempotent calls (`ping`)", f"{s['idempotent_calls']}", ""),
        ("idempotent calls succeeded", f"{s['idempotent_ok_pct']:.2f} %", ">= 99.9 %"),
        ("keyed calls (`append_line`, Idempotency-Key)", f"{s['keyed_calls']}", ""),
        ("keyed calls succeeded (after client retries)", f"{s['keyed_ok_pct']:.2f} %", ">= 99.5 %"),
        ("keyed calls' retries", f"{s['keyed_retries']}", ""),
        ("keyed calls run twice (duplicate lines)", f"{s['keyed_duplicates']}", "0"),
        ("jobs submitted", f"{s['jobs_submitted']}", ""),
        ("jobs succeeded", f"{s['jobs_succeeded']}", "all"),
        ("jobs run again on the other gateway (attempts > 1)", f"{s['jobs_taken_over']}", ""),
        ("jobs lost", f"{s['jobs_lost']}", "0"),
        ("orphan pods", f"{len(s['orphan_pods'])}", "0"),
        ("the other gateway's pods lost meanwhile", f"{s['survivor_pods_lost']}", "0"),
    ]
    for name, value, target in rows:
        print(f"| {name} | {value} | {target} |")
    print()
    for title, found in (
        ("idempotent call failures", s["idempotent_failures"]),
        ("keyed call failures by code", s["keyed_failures"]),
        ("job submit failures by code", s["job_submit_failures"]),
        ("jobs that ended otherwise", s["jobs_other"]),
    ):
        print(f"{title}: {found or 'none'}")


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=40.0, help="length of the run (default 40)")
    parser.add_argument("--clients", type=int, default=8, help="concurrent clients (default 8)")
    parser.add_argument("--kill-every", type=float, default=5.0, help="seconds between SIGKILLs (default 5)")
    parser.add_argument("--keep", type=Path, help="copy the run's logs (gateways, nginx) here")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    args = parser.parse_args()
    for tool in ("/usr/sbin/nginx", "redis-server"):
        if shutil.which(tool) is None:
            print(f"needs {tool} (apt-get install nginx-light redis-server)", file=sys.stderr)
            return 2
    with tempfile.TemporaryDirectory(prefix="tm-replica-") as tmp:
        summary = run(args.seconds, args.clients, args.kill_every, Path(tmp))
        if args.keep:
            args.keep.mkdir(parents=True, exist_ok=True)
            for log in Path(tmp).glob("*.log"):
                shutil.copy(log, args.keep / log.name)
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        print_report(summary, args.clients, args.kill_every)
    return 0


if __name__ == "__main__":
    sys.exit(main())
