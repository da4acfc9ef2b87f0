"""The bridge's JSON-RPC client over a real child process's pipes: lines however they arrive,
a full input pipe, a line past the limit, and a server that exits with or without answering."""

from __future__ import annotations

import sys

import pytest

from toolmesh.runtimes.mcp import stdio_session
from toolmesh.runtimes.mcp.stdio_session import RpcError, ServerExited, StdioSession

#: A server that answers by method: what a real one does on the wire, and what it does badly.
SERVER = r"""
import json, os, sys, time
out = sys.stdout.buffer
def send(data):
    out.write(data); out.flush()
for line in sys.stdin.buffer:
    message = json.loads(line)
    method, ident = message.get("method"), message.get("id")
    if ident is None:
        continue
    if method == "change":  # say the tools changed (and a notification no one hears), then answer
        for said in ("notifications/tools/list_changed", "notifications/other"):
            send(json.dumps({"jsonrpc": "2.0", "method": said}).encode() + b"\n")
    answer = json.dumps({"jsonrpc": "2.0", "id": ident, "result": {"said": message.get("params")}})
    if method == "noisy":  # logs on stdout first: a text line, and a JSON one that has an "id"
        send(b"handling a request\n")
        send(json.dumps({"id": ident, "level": 30, "msg": "handling"}).encode() + b"\n")
    if method == "split":  # one answer in three writes
        for start in range(0, len(answer), len(answer) // 3 + 1):
            send(answer[start:start + len(answer) // 3 + 1].encode()); time.sleep(0.01)
        send(b"\n")
    elif method == "refuse":
        error = {"code": -32602, "message": "no"}
        send(json.dumps({"jsonrpc": "2.0", "id": ident, "error": error}).encode() + b"\n")
    elif method == "long":  # a line that never ends
        send(b"x" * 4096)
    elif method == "last":  # answer, then exit at once
        send(answer.encode() + b"\n"); os._exit(5)
    elif method == "die":
        os._exit(3)
    else:
        send(answer.encode() + b"\n")
"""
COMMAND = [sys.executable, "-c", SERVER]


async def test_answers_arrive_however_the_lines_are_cut() -> None:
    session = await StdioSession.start(COMMAND)
    try:
        assert await session.request("echo", {"n": 1}) == {"said": {"n": 1}}
        assert await session.request("split", {"n": 2}) == {"said": {"n": 2}}
        with pytest.raises(RpcError) as refused:
            await session.request("refuse")
        assert refused.value.code == -32602
    finally:
        await session.close()


async def test_log_lines_on_stdout_answer_nothing_even_with_an_id() -> None:
    session = await StdioSession.start(COMMAND)
    try:
        assert await session.request("noisy", {"n": 1}) == {"said": {"n": 1}}
    finally:
        await session.close()


async def test_list_changed_notifications_go_to_changed() -> None:
    heard: list[str] = []
    session = await StdioSession.start(COMMAND, changed=heard.append)
    try:
        assert await session.request("change", {"n": 1}) == {"said": {"n": 1}}
        assert heard == ["notifications/tools/list_changed"]
    finally:
        await session.close()


async def test_a_request_larger_than_the_pipe_waits_for_the_server_to_read() -> None:
    session = await StdioSession.start(COMMAND)
    try:
        big = "y" * (2 << 20)  # well past a pipe's buffer
        assert await session.request("echo", {"big": big}) == {"said": {"big": big}}
    finally:
        await session.close()


async def test_an_answer_written_just_before_the_server_exits_still_arrives() -> None:
    session = await StdioSession.start(COMMAND)
    try:
        assert await session.request("last", {"n": 3}) == {"said": {"n": 3}}
        # Its status when the session learnt it first, else that its input is closed.
        with pytest.raises(ServerExited, match="exited"):
            await session.request("echo")
    finally:
        await session.close()


async def test_a_server_that_exits_mid_request_fails_it_naming_its_status() -> None:
    session = await StdioSession.start(COMMAND)
    try:
        with pytest.raises(ServerExited, match="exited with status 3"):
            await session.request("die")
    finally:
        await session.close()


async def test_a_line_past_the_limit_ends_the_session(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stdio_session, "MAX_LINE", 1024)
    session = await StdioSession.start(COMMAND)
    try:
        with pytest.raises(ServerExited, match="broke its output"):
            await session.request("long")
    finally:
        await session.close()


async def test_a_command_that_does_not_start_names_itself() -> None:
    with pytest.raises(ServerExited, match="did not start"):
        await StdioSession.start(["/nonexistent/mcp-server"])
