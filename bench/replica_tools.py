"""Functions bench/replica_chaos.py calls while it SIGKILLs gateways: a no-op that is safe to
repeat, one whose every run appends its key to a file (so runs twice are counted), a job."""

from __future__ import annotations

import asyncio
import os

import toolmesh


@toolmesh.function(idempotent=True)
async def ping() -> str:
    """Do nothing; running it twice does no harm."""
    return "pong"


@toolmesh.function
def append_line(path: str, line: str) -> int:
    """Append `line` to the file at `path`: a side effect that a second run repeats."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, (line + "\n").encode())
        return os.fstat(fd).st_size
    finally:
        os.close(fd)


@toolmesh.function(idempotent=True)
async def nap(seconds: float = 0.5) -> str:
    """A job's work: sleep, then answer; safe to run again after its gateway died."""
    await asyncio.sleep(seconds)
    return "rested"
