"""The real A2A client (a2a-sdk, pinned by scripts/install-mcp-peers.sh) against a host.

Usage: client.py BASE_URL [TOKEN]. Resolves the agent card at
BASE_URL/.well-known/agent-card.json with the SDK's own resolver and parser, builds a client
from it (the SDK picks the interface), sends one text message twice with the same messageId
(with `Authorization: Bearer TOKEN` when a token is given), then reads the task back with
GetTask and ListTasks. Prints one JSON object: what the card parsed to, what each send gave
(`sent`: per send, the response kind, task id and state), what GetTask and ListTasks gave
(`got`, `listed`), or the first SDK exception (`sendError`). A card the SDK cannot resolve or
parse exits 1 with `cardError`.

Then the per-agent card (RFC 0202, A2A-8): it reads GET BASE_URL/agents, asks the SDK for the
extended card with the first entry's `a2aTenant` as `tenant`, builds a client from that card
(the SDK then puts the interface's `tenant` on every request), sends one message and lists
tasks through it. Prints `agentEntry`, `agentCard` (name, version, description, each
interface's tenant, skill ids), `agentSent` and `agentListed`, or `agentError`.
"""

import asyncio
import json
import sys
import uuid

import httpx
from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.types.a2a_pb2 import (
    GetExtendedAgentCardRequest,
    GetTaskRequest,
    ListTasksRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    TaskState,
)


def describe(response) -> dict:
    """The kind of a send's response and, for a task, its id and state name."""
    kind = response.WhichOneof("payload") if hasattr(response, "WhichOneof") else type(response).__name__
    out = {"kind": kind}
    task = getattr(response, "task", None)
    if kind == "task" and task is not None:
        out["taskId"] = task.id
        out["state"] = TaskState.Name(task.status.state)
    return out


async def agent_leg(http: httpx.AsyncClient, base: str, client, out: dict) -> None:
    """The per-agent card through the first a2aTenant the caller's inventory lists."""
    listing = await http.get(f"{base}/agents")
    listing.raise_for_status()
    entry = listing.json()["agents"][0]
    out["agentEntry"] = {k: entry.get(k) for k in ("agentId", "persona", "packVersion", "a2aTenant")}
    card = await client.get_extended_agent_card(
        GetExtendedAgentCardRequest(tenant=entry["a2aTenant"])
    )
    out["agentCard"] = {
        "name": card.name,
        "version": card.version,
        "description": card.description,
        "tenants": [i.tenant for i in card.supported_interfaces],
        "skills": [s.id for s in card.skills],
    }
    agent = ClientFactory(ClientConfig(httpx_client=http, streaming=False)).create(card)
    message = Message(
        message_id=uuid.uuid4().hex,
        role=Role.ROLE_USER,
        parts=[Part(text="hello to one agent from the a2a-sdk client")],
    )
    out["agentSent"] = [
        describe(r) async for r in agent.send_message(SendMessageRequest(message=message))
    ]
    listed = await agent.list_tasks(ListTasksRequest())
    out["agentListed"] = [t.id for t in listed.tasks]


async def main(base: str, token: str | None) -> int:
    out: dict = {}
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with httpx.AsyncClient(timeout=10.0, trust_env=False, headers=headers) as http:
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
            message_id = uuid.uuid4().hex
            sends = []
            for _ in range(2):
                message = Message(
                    message_id=message_id,
                    role=Role.ROLE_USER,
                    parts=[Part(text="hello from the a2a-sdk client")],
                )
                responses = []
                async for response in client.send_message(SendMessageRequest(message=message)):
                    responses.append(describe(response))
                sends.append(responses)
            out["sent"] = sends
            task_id = next((r.get("taskId") for r in sends[0] if r.get("taskId")), None)
            if task_id:
                task = await client.get_task(GetTaskRequest(id=task_id))
                out["got"] = {"taskId": task.id, "state": TaskState.Name(task.status.state)}
            listed = await client.list_tasks(ListTasksRequest())
            out["listed"] = [
                {"taskId": t.id, "state": TaskState.Name(t.status.state)} for t in listed.tasks
            ]
        except Exception as e:
            out["sendError"] = f"{type(e).__name__}: {e}"[:500]
        try:
            await agent_leg(http, base, client, out)
        except Exception as e:
            out["agentError"] = f"{type(e).__name__}: {e}"[:500]
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None)))
