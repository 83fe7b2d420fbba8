#!/usr/bin/env python3
"""A real MCP client (the Python `mcp` SDK) against a host's MCP mount.

Usage: mcp-sdk-client.py URL TOKEN [TASK_TOOL]

Connects in the SDK's default `auto` mode (a `server/discover` probe, falling back to the
`initialize` handshake only for a legacy server), lists the tools, and calls a tool that does
not exist. Prints one JSON object saying what it saw; exits 0 when the SDK connected without
the handshake, 1 otherwise. tests/mcp_sdk_client.rs runs it.

With TASK_TOOL it instead calls that tool with the MCP Tasks extension (MCP-14) declared. The
SDK ships no Tasks extension of its own, only the extension hooks (SEP-2133): `Tasks` below is a
client extension written on them. It advertises `io.modelcontextprotocol/tasks` in each
request's client capabilities, claims the `resultType: "task"` result of `tools/call`, and
resolves it by polling `tasks/get` (routed with `Mcp-Name` = the taskId) until the task is
terminal, handing back the task's `CallToolResult`. It then also reads the task once more and
prints what it saw; exits 0 when the call came back as a task that completed.
"""

import asyncio
import json
import sys
from typing import Any, Literal

import httpx2
from mcp import Client
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_types import CallToolResult, GetTaskRequestParams, Request, Result
from pydantic import ConfigDict

TASKS = "io.modelcontextprotocol/tasks"
TERMINAL = ("completed", "failed", "cancelled")


class CreatedTask(Result):
    """`CreateTaskResult` of the 2026-07-28 extension: `resultType: "task"` and a Task."""

    model_config = ConfigDict(extra="allow")
    result_type: Literal["task"] = "task"
    task_id: str
    status: str


class TaskGet(Request[GetTaskRequestParams, Literal["tasks/get"]]):
    """`tasks/get {taskId}`, routed by its taskId (`Mcp-Name`)."""

    method: Literal["tasks/get"] = "tasks/get"
    params: GetTaskRequestParams
    name_param = "taskId"


class TaskState(Result):
    """A `tasks/get` answer: the Task, with `result` once completed."""

    model_config = ConfigDict(extra="allow")
    result_type: str | None = None
    task_id: str
    status: str
    result: dict[str, Any] | None = None


class Tasks(ClientExtension):
    """The Tasks extension on the SDK's claim hooks: poll until terminal."""

    identifier = TASKS

    def __init__(self, seen: dict) -> None:
        self.seen = seen

    def claims(self):
        return [ResultClaim(result_type="task", model=CreatedTask, resolve=self.resolve)]

    async def get(self, session, task_id: str) -> TaskState:
        request = TaskGet(params=GetTaskRequestParams(task_id=task_id))
        return await session.send_request(request, TaskState)

    async def resolve(self, created: CreatedTask, ctx: ClaimContext) -> CallToolResult:
        self.seen["created"] = {"resultType": created.result_type, "taskId": created.task_id, "status": created.status}
        state = None
        for polls in range(1, 151):
            state = await self.get(ctx.session, created.task_id)
            if state.status in TERMINAL:
                break
            await asyncio.sleep(0.2)
        self.seen["polls"] = polls
        self.seen["finalStatus"] = state.status
        return CallToolResult.model_validate(state.result or {"content": [], "isError": True})


async def tasks_leg(url: str, token: str, tool: str) -> dict:
    seen: dict = {}
    extension = Tasks(seen)
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=10.0) as http:
        async with Client(
            streamable_http_client(url, http_client=http, terminate_on_close=False), extensions=[extension]
        ) as client:
            seen["protocolVersion"] = client.protocol_version
            await client.list_tools()
            result = await client.call_tool(tool, {"input": "Do it."})
            seen["isError"] = bool(result.is_error)
            seen["text"] = " ".join(getattr(block, "text", "") for block in result.content)
            again = await extension.get(client.session, seen["created"]["taskId"])
            seen["reread"] = {"resultType": again.result_type, "status": again.status}
    return seen


async def main(url: str, token: str) -> dict:
    seen: dict = {}
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=10.0) as http:
        async with Client(streamable_http_client(url, http_client=http, terminate_on_close=False)) as client:
            session = client.session
            seen["protocolVersion"] = client.protocol_version
            seen["discovered"] = getattr(session, "discover_result", None) is not None
            seen["initialized"] = getattr(session, "initialize_result", None) is not None
            listed = await client.list_tools()
            seen["tools"] = [t.name for t in listed.tools]
            try:
                result = await client.call_tool("toolcert_no_such_tool", {"input": "hi"})
                seen["unknownCall"] = {"isError": bool(result.is_error)}
            except MCPError as e:
                seen["unknownCall"] = {"code": e.code, "message": str(e)}
    return seen


if __name__ == "__main__":
    if len(sys.argv) == 4:
        out = asyncio.run(asyncio.wait_for(tasks_leg(*sys.argv[1:4]), timeout=45))
        print(json.dumps(out))
        ok = out.get("created", {}).get("resultType") == "task" and out.get("finalStatus") == "completed"
        sys.exit(0 if ok else 1)
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    out = asyncio.run(asyncio.wait_for(main(sys.argv[1], sys.argv[2]), timeout=30))
    print(json.dumps(out))
    sys.exit(0 if out.get("discovered") and not out.get("initialized") else 1)
