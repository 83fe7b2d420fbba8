#!/usr/bin/env python3
"""A real MCP client (the Python `mcp` SDK) in front of `toolcert mcp guard`.

Usage: mcp-guard-client.py PLAN.json

PLAN is a JSON object: the server, as the client would be configured for it, and the steps
of one session:

    {"stdio": ["toolcert", "mcp", "guard", "--manifest", "...", "--", "node", "..."],
     "url": "http://127.0.0.1:PORT/mcp",          (instead of "stdio")
     "steps": [{"list": true}, {"call": "echo", "arguments": {"message": "hi"}}]}

The client connects in the SDK's default `auto` mode (a `server/discover` probe, then the
`initialize` handshake for a 2025-11-25 server), runs the steps in order and prints one JSON
object saying what it saw: the negotiated revision, the server's name, and per step the tool
names listed, or a call's `isError`, `structuredContent` and text, or the JSON-RPC error it
got (code, message, data). Exits 0 when the session ran to its end (refusals included: they
are what some tests expect). tests/mcp_guard_real.rs runs it; it never prints a secret (it
is given none).
"""

import asyncio
import json
import sys

from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError


async def session(plan: dict) -> dict:
    if "stdio" in plan:
        command = plan["stdio"]
        server = StdioServerParameters(command=command[0], args=command[1:])
    else:
        server = plan["url"]
    seen: dict = {"steps": []}
    async with Client(server, read_timeout_seconds=30) as client:
        seen["protocolVersion"] = client.protocol_version
        info = client.server_info
        seen["serverName"] = info.name if info is not None else None
        for step in plan["steps"]:
            if step.get("list"):
                listed = await client.list_tools()
                seen["steps"].append({"tools": [t.name for t in listed.tools]})
                continue
            try:
                result = await client.call_tool(step["call"], step.get("arguments") or {})
                seen["steps"].append(
                    {
                        "isError": bool(result.is_error),
                        "structuredContent": result.structured_content,
                        "text": " ".join(getattr(b, "text", "") for b in result.content),
                    }
                )
            except MCPError as e:
                seen["steps"].append({"error": {"code": e.code, "message": e.message, "data": e.data}})
    return seen


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    with open(sys.argv[1], encoding="utf-8") as f:
        plan = json.load(f)
    out = asyncio.run(asyncio.wait_for(session(plan), timeout=120))
    print(json.dumps(out))
