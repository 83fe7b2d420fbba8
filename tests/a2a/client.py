"""The real A2A client (a2a-sdk, pinned by scripts/install-mcp-peers.sh) against a host.

Usage: client.py BASE_URL. Resolves the agent card at BASE_URL/.well-known/agent-card.json
with the SDK's own resolver and parser, builds a client from it (the SDK picks the
interface), and sends one text message. Prints one JSON object: what the card parsed to, and
what sending gave (`sent` with the response kind, or `sendError` with the SDK's exception).
A card the SDK cannot resolve or parse exits 1 with `cardError`.
"""

import asyncio
import json
import sys
import uuid

import httpx
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.types.a2a_pb2 import Message, Part, Role, SendMessageRequest


async def main(base: str) -> int:
    out: dict = {}
    async with httpx.AsyncClient(timeout=10.0, trust_env=False) as http:
        try:
            card = await A2ACardResolver(http, base).get_agent_card()
        except Exception as e:  # the SDK's own refusal is the finding
            print(json.dumps({"cardError": f"{type(e).__name__}: {e}"}))
            return 1
        out["card"] = {
            "name": card.name,
            "interfaces": [
                {"url": i.url, "binding": i.protocol_binding, "version": i.protocol_version}
                for i in card.supported_interfaces
            ],
        }
        try:
            client = ClientFactory(ClientConfig(httpx_client=http, streaming=False)).create(card)
            message = Message(
                message_id=uuid.uuid4().hex,
                role=Role.ROLE_USER,
                parts=[Part(text="hello from the a2a-sdk client")],
            )
            kinds = []
            async for response in client.send_message(SendMessageRequest(message=message)):
                kinds.append(response.WhichOneof("payload") if hasattr(response, "WhichOneof") else type(response).__name__)
            out["sent"] = kinds
        except Exception as e:
            out["sendError"] = f"{type(e).__name__}: {e}"[:500]
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1])))
