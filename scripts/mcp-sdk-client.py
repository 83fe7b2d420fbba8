#!/usr/bin/env python3
"""A real MCP client (the Python `mcp` SDK) against a host's MCP mount.

Usage: mcp-sdk-client.py URL TOKEN

Connects in the SDK's default `auto` mode (a `server/discover` probe, falling back to the
`initialize` handshake only for a legacy server), lists the tools, and calls a tool that does
not exist. Prints one JSON object saying what it saw; exits 0 when the SDK connected without
the handshake, 1 otherwise. tests/mcp_sdk_client.rs runs it.
"""

import asyncio
import json
import sys

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError


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
                seen["unknownCall"] = {"isError": bool(result.isError)}
            except MCPError as e:
                seen["unknownCall"] = {"code": e.code, "message": str(e)}
    return seen


if __name__ == "__main__":
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    out = asyncio.run(asyncio.wait_for(main(sys.argv[1], sys.argv[2]), timeout=30))
    print(json.dumps(out))
    sys.exit(0 if out.get("discovered") and not out.get("initialized") else 1)
