"""The official Python SDK (`mcp`, pinned in requirements.txt) as one MCP client of Plandesk, for
python.test.mjs, which plays the person and checks the store. One run does one thing, given as
JSON in argv[1]:

  {"transport": "stdio" | "http", "mode": "auto" | "legacy",
   "cli": PLANDESK, "workspace": DIR, "url": URL, "token": TOKEN or null,
   "action": "call" | "progress" | "cancel" | "timeout" | "connect",
   "arguments": {...}, "timeout": SECONDS, "read_timeout": SECONDS}

and reports on stdout, one JSON object a line: {"event": "connected", "protocolVersion": V},
{"event": "calling"}, then {"event": "result", "result": CallToolResult} for a call (with
"progress": the reports heard, for "progress"),
{"event": "cancelled"} once the call is cancelled (after the test writes a line to stdin),
{"event": "timed-out", "error": E}, or {"event": "error", "error": E}; over HTTP,
{"event": "http", "method": M, "status": S} for each response. After cancelling or
timing out, the client stays connected until stdin ends, so the test sees what the
cancellation itself did, not the client's going away. The environment (PLANDESK_DATA_DIR and
the rest) is passed on to `plandesk mcp`.
"""

import json
import os
import sys

import anyio
import httpx2
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client


def say(**event):
    print(json.dumps(event), flush=True)


async def read_line():
    return await anyio.to_thread.run_sync(sys.stdin.readline)


def server_of(spec):
    if spec["transport"] == "stdio":
        return StdioServerParameters(
            command=spec["cli"],
            args=["mcp", "--workspace", spec["workspace"]],
            env=dict(os.environ),
            cwd=spec["workspace"],
        )
    headers = {"Authorization": f"Bearer {spec['token']}"} if spec.get("token") else {}
    # A short `read_timeout` (seconds between bytes) shows what keeps a waiting call's stream
    # alive; the SDK's default is 300 s.
    read = spec.get("read_timeout", 300)
    http = create_mcp_http_client(headers=headers, timeout=httpx2.Timeout(30, read=read))

    # The SDK reports a refusal without its status; the test reads it from here.
    async def seen(response):
        say(event="http", method=response.request.method, status=response.status_code)

    http.event_hooks = {"request": [], "response": [seen]}
    return streamable_http_client(spec["url"], http_client=http)


async def main(spec):
    try:
        async with Client(server_of(spec), mode=spec.get("mode", "auto")) as client:
            say(event="connected", protocolVersion=client.protocol_version)
            if spec["action"] == "connect":
                await client.list_tools()
                return
            await act(client, spec)
    except Exception as err:  # noqa: BLE001 - every failure is reported to the test
        say(event="error", error=describe(err))


def describe(err):
    """An exception as one line, with what a task group wrapped."""
    if isinstance(err, BaseExceptionGroup):
        return "; ".join(describe(inner) for inner in err.exceptions)
    return f"{type(err).__name__}: {err}"


async def act(client, spec):
    action = spec["action"]
    arguments = spec["arguments"]
    if action == "call":
        say(event="calling")
        result = await client.call_tool("submit_plan", arguments)
        say(event="result", result=result.model_dump(mode="json", by_alias=True, exclude_none=True))
    elif action == "progress":
        heard = []

        async def progress(value, total, message):
            heard.append({"progress": value, "message": message})

        say(event="calling")
        result = await client.call_tool("submit_plan", arguments, progress_callback=progress)
        say(
            event="result",
            result=result.model_dump(mode="json", by_alias=True, exclude_none=True),
            progress=heard,
        )
    elif action == "timeout":
        say(event="calling")
        try:
            await client.call_tool("submit_plan", arguments, read_timeout_seconds=spec["timeout"])
            say(event="error", error="the call was answered before its timeout")
        except Exception as err:  # noqa: BLE001 - the timeout is what is expected
            say(event="timed-out", error=describe(err))
        await read_line()
    elif action == "cancel":
        async with anyio.create_task_group() as group:
            scope = anyio.CancelScope()

            async def call():
                with scope:
                    say(event="calling")
                    await client.call_tool("submit_plan", arguments)
                    say(event="error", error="the call was answered before it was cancelled")

            group.start_soon(call)
            await read_line()
            scope.cancel()
        say(event="cancelled")
        await read_line()
    else:
        say(event="error", error=f"unknown action {action}")


if __name__ == "__main__":
    anyio.run(main, json.loads(sys.argv[1]))
