//! The host as an MCP server (TURN-E4, MCP-9, MCP-10, MCP-11, MCP-12), end
//! to end: turn-seam templates registered with `exposeAsMcpTool`, the
//! stateless `POST /mcp` mount (JSON-RPC over HTTP POST), the in-test fake
//! provider (`common::FakeProvider`) whose first round asks the run's
//! clarification tool, and the run and event routes. Every wait is bounded.

use crate::common;

use std::time::Duration;

use common::{
    ALICE, BOB, Canned, ERIN, FakeProvider, OPERATOR, Reply, assert_valid, bounded, client,
    events_until, fed_back, get_json, of_type, openai_calls, openai_text, seam_host, send,
};
use reference_host::mutants::Mutant;
use reference_host::{HostConfig, RunningHost};
use serde_json::{Value, json};

const TEST_TIMEOUT: Duration = Duration::from_secs(60);
const CLIENT_TIMEOUT: Duration = Duration::from_secs(30);
/// The most long polls (each at most 5 s) spent waiting on one run.
const EVENT_POLLS: usize = 12;
const TURN_RUN: &str = "/conformance/seams/sample/turn/run";
const VERSION: &str = "2026-07-28";
/// The run's clarification tool (no name is reserved, TURN-E5).
const ASK: &str = "ask_user";
const QUESTION: &str = "Which account?";
const ANSWER_TEXT: &str = "Charged account 42.";

// ---------------------------------------------------------------------------
// Helpers.

async fn host(mutant: Option<Mutant>) -> RunningHost {
    seam_host(mutant, HostConfig::default()).await
}

/// A template body for `principal`: the run asks `ASK` and answers.
fn template(provider: &FakeProvider, model: &str, principal: &str, name: &str) -> Value {
    json!({
        "principal": principal,
        "provider": {"wire": "openai-chat", "baseUrl": provider.base, "model": model},
        "clarificationTool": ASK,
        "exposeAsMcpTool": name,
    })
}

/// A model that asks [`QUESTION`], then answers [`ANSWER_TEXT`].
fn asking_model(provider: &FakeProvider) -> String {
    provider.script(vec![
        openai_calls(
            &[("call_ask", ASK, &json!({"question": QUESTION}).to_string())],
            "tool_calls",
        ),
        openai_text(ANSWER_TEXT),
    ])
}

async fn register(client: &reqwest::Client, host: &RunningHost, body: &Value) -> Reply {
    let request = client
        .post(format!("{}{TURN_RUN}", host.base_url))
        .json(body);
    send(request, Some(OPERATOR)).await
}

async fn registered(client: &reqwest::Client, host: &RunningHost, body: &Value) {
    assert_valid("turn-run.request.schema.json", body);
    let answer = register(client, host, body).await;
    assert_eq!(answer.status, 201, "{}", answer.body);
    assert_valid("turn-run.response.schema.json", &answer.body);
}

/// `_meta` naming the served revision.
fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": VERSION,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "mcp-server-test", "version": "0"}
    })
}

/// One JSON-RPC request as `token`, with the version in the header and in
/// `params._meta`.
async fn rpc(
    client: &reqwest::Client,
    host: &RunningHost,
    token: &str,
    id: &str,
    method: &str,
    mut params: Value,
) -> Reply {
    params["_meta"] = meta();
    let request = client
        .post(format!("{}/mcp", host.base_url))
        .header("MCP-Protocol-Version", VERSION)
        .json(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
    let reply = send(request, Some(token)).await;
    if reply.status == 200 {
        assert_eq!(reply.body["jsonrpc"], "2.0", "{}", reply.body);
        assert_eq!(reply.body["id"], id, "{}", reply.body);
    }
    reply
}

async fn call(
    client: &reqwest::Client,
    host: &RunningHost,
    token: &str,
    id: &str,
    params: Value,
) -> Reply {
    rpc(client, host, token, id, "tools/call", params).await
}

/// The MRTR retry of `first` (an input_required reply) with `responses`.
fn retry_params(name: &str, first: &Reply, responses: Value) -> Value {
    json!({
        "name": name,
        "arguments": {"input": "Charge my account."},
        "inputResponses": responses,
        "requestState": first.body["result"]["requestState"],
    })
}

fn accept(content: Value) -> Value {
    json!({"agent": {"action": "accept", "content": content}})
}

fn run_id_of(reply: &Reply) -> String {
    reply.body["result"]["_meta"]["org.openwop/runId"]
        .as_str()
        .unwrap_or_else(|| panic!("no runId in {}", reply.body))
        .to_owned()
}

async fn run_status(client: &reqwest::Client, host: &RunningHost, run_id: &str) -> Value {
    let (status, run) = get_json(client, &format!("{}/runs/{run_id}", host.base_url), ALICE).await;
    assert_eq!(status, 200, "{run}");
    run["status"].clone()
}

fn error_code(reply: &Reply) -> i64 {
    reply.body["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("not a JSON-RPC error: {}", reply.body))
}

fn error_says(reply: &Reply, text: &str) -> bool {
    reply.body["error"]["message"]
        .as_str()
        .is_some_and(|message| message.contains(text))
}

/// Registers an asking template `name` for alice and makes the first call.
async fn asked(
    client: &reqwest::Client,
    host: &RunningHost,
    provider: &FakeProvider,
    name: &str,
) -> (String, Reply) {
    let model = asking_model(provider);
    registered(client, host, &template(provider, &model, "alice", name)).await;
    let first = call(
        client,
        host,
        ALICE,
        "call-1",
        json!({"name": name, "arguments": {"input": "Charge my account."}}),
    )
    .await;
    assert_eq!(first.status, 200, "{}", first.body);
    (model, first)
}

// ---------------------------------------------------------------------------
// Registration (the turn seam).

#[tokio::test]
async fn a_template_is_registered_without_a_run() {
    bounded(TEST_TIMEOUT, async {
        let provider = FakeProvider::start().await;
        let host = host(None).await;
        let client = client(CLIENT_TIMEOUT);
        let model = asking_model(&provider);
        let body = template(&provider, &model, "alice", "helper");
        assert_valid("turn-run.request.schema.json", &body);
        let answer = register(&client, &host, &body).await;
        assert_eq!(answer.status, 201, "{}", answer.body);
        assert_eq!(answer.body, json!({"mcpTool": "helper", "mcpPath": "/mcp"}));
        assert_valid("turn-run.response.schema.json", &answer.body);
        // No run was started: the provider was never asked.
        assert!(provider.requests(&model).is_empty());

        // `input` is the MCP call's; the rest is checked as for a run.
        let mut with_input = body.clone();
        with_input["input"] = json!("hi");
        assert!(!common::schema("turn-run.request.schema.json").is_valid(&with_input));
        for (edit, field) in [
            (json!({"input": "hi"}), "`input`"),
            (json!({"exposeAsMcpTool": "a b"}), "`exposeAsMcpTool`"),
            (json!({"exposeAsMcpTool": 3}), "`exposeAsMcpTool`"),
            (json!({"clarificationTool": "a b"}), "`clarificationTool`"),
            (
                json!({"limits": {"modelRounds": 0}}),
                "`limits.modelRounds`",
            ),
            (json!({"extra": 1}), "`extra`"),
        ] {
            let mut bad = body.clone();
            for (key, value) in edit.as_object().expect("object") {
                bad[key] = value.clone();
            }
            let answer = register(&client, &host, &bad).await;
            assert_eq!(answer.status, 400, "{field}: {}", answer.body);
            assert_eq!(answer.body["error"], "validation_error");
            assert!(
                answer.body["message"]
                    .as_str()
                    .is_some_and(|m| m.contains(field)),
                "{field}: {}",
                answer.body
            );
            assert_valid("turn-run.response.schema.json", &answer.body);
        }
        // The seam still needs its scope.
        let denied = send(
            client
                .post(format!("{}{TURN_RUN}", host.base_url))
                .json(&body),
            Some(ALICE),
        )
        .await;
        assert_eq!(denied.status, 403, "{}", denied.body);
        // Without exposeAsMcpTool, input is still required.
        let mut plain = body.clone();
        plain.as_object_mut().map(|o| o.remove("exposeAsMcpTool"));
        assert!(!common::schema("turn-run.request.schema.json").is_valid(&plain));
        let answer = register(&client, &host, &plain).await;
        assert_eq!(answer.status, 400, "{}", answer.body);
        assert!(
            answer.body["message"]
                .as_str()
                .is_some_and(|m| m.contains("`input`"))
        );
        host.shutdown().await;
    })
    .await;
}

// ---------------------------------------------------------------------------
// The mount: discovery, listing, authentication, versions, methods.

#[tokio::test]
async fn discover_and_list_are_private_sorted_and_shaped() {
    bounded(TEST_TIMEOUT, async {
        let provider = FakeProvider::start().await;
        let host = host(None).await;
        let client = client(CLIENT_TIMEOUT);
        for (principal, name) in [("alice", "zeta"), ("alice", "alpha"), ("bob", "bobs")] {
            registered(&client, &host, &template(&provider, "m", principal, name)).await;
        }
        // Re-registering replaces, never duplicates.
        registered(&client, &host, &template(&provider, "m2", "alice", "zeta")).await;

        let discovered = rpc(&client, &host, ALICE, "d", "server/discover", json!({})).await;
        assert_eq!(discovered.status, 200, "{}", discovered.body);
        assert_eq!(
            discovered.body["result"],
            json!({"resultType": "complete", "supportedVersions": ["2026-07-28"],
                   "capabilities": {"tools": {},
                                    "extensions": {"io.modelcontextprotocol/tasks": {}}},
                   "serverInfo": {"name": "toolcert-reference-host",
                                  "version": env!("CARGO_PKG_VERSION")}})
        );

        let schema = json!({"type": "object", "properties": {"input": {"type": "string"}},
                            "required": ["input"], "additionalProperties": false});
        let listed = rpc(&client, &host, ALICE, "l1", "tools/list", json!({})).await;
        assert_eq!(listed.status, 200, "{}", listed.body);
        let result = &listed.body["result"];
        assert_eq!(result["resultType"], "complete");
        assert_eq!(result["ttlMs"], 0);
        assert_eq!(result["cacheScope"], "private");
        let tools = result["tools"].as_array().expect("tools");
        let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
        assert_eq!(names, ["alpha", "zeta"]);
        for tool in tools {
            assert_eq!(
                tool.as_object()
                    .map(|o| o.keys().cloned().collect::<Vec<_>>()),
                Some(vec![
                    "description".into(),
                    "inputSchema".into(),
                    "name".into()
                ])
            );
            assert!(tool["description"].as_str().is_some_and(|d| !d.is_empty()));
            assert_eq!(tool["inputSchema"], schema);
        }
        // MCP-12: each principal sees only its own templates.
        let bobs = rpc(&client, &host, BOB, "l2", "tools/list", json!({})).await;
        assert_eq!(bobs.body["result"]["tools"][0]["name"], "bobs");
        assert_eq!(
            bobs.body["result"]["tools"].as_array().map(Vec::len),
            Some(1)
        );
        let erins = rpc(&client, &host, ERIN, "l3", "tools/list", json!({})).await;
        assert_eq!(erins.body["result"]["tools"], json!([]));
        // Bob cannot call alice's tool: it is unknown to him.
        let foreign = call(
            &client,
            &host,
            BOB,
            "c",
            json!({"name": "alpha", "arguments": {"input": "x"}}),
        )
        .await;
        assert_eq!(foreign.status, 200, "{}", foreign.body);
        assert_eq!(error_code(&foreign), -32602);
        assert!(
            error_says(&foreign, "Unknown tool: alpha"),
            "{}",
            foreign.body
        );
        // No cursors are issued.
        let cursor = rpc(
            &client,
            &host,
            ALICE,
            "l4",
            "tools/list",
            json!({"cursor": "x"}),
        )
        .await;
        assert_eq!(error_code(&cursor), -32602);

        // Discovery advertises the mount.
        let doc = common::discovery(&client, &host.base_url).await;
        assert_eq!(
            doc["mcp"]["serverMount"],
            json!({"transports": ["streamable-http"]})
        );
        // MCP-14: the Tasks extension is listed as the feature `extensions`.
        assert_eq!(doc["mcp"]["features"], json!(["mrtr", "extensions"]));
        host.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn the_mount_authenticates_every_request_first() {
    bounded(TEST_TIMEOUT, async {
        let host = host(None).await;
        let client = client(CLIENT_TIMEOUT);
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                          "params": {"name": "x", "arguments": {"input": "y"}, "_meta": meta()}});
        for token in [None, Some("not-a-token")] {
            let request = client
                .post(format!("{}/mcp", host.base_url))
                .header("MCP-Protocol-Version", VERSION)
                .json(&body);
            let reply = send(request, token).await;
            assert_eq!(reply.status, 401, "{}", reply.body);
            assert_eq!(reply.body["error"], "unauthenticated", "{}", reply.body);
            assert!(reply.body["message"].is_string());
        }
        // Not even a malformed body gets past authentication.
        let reply = send(
            client.post(format!("{}/mcp", host.base_url)).body("nope"),
            None,
        )
        .await;
        assert_eq!(reply.status, 401, "{}", reply.body);
        // DNS-rebinding guard: a foreign Origin is refused.
        let reply = send(
            client
                .post(format!("{}/mcp", host.base_url))
                .header("Origin", "http://evil.example")
                .header("MCP-Protocol-Version", VERSION)
                .json(&body),
            Some(ALICE),
        )
        .await;
        assert_eq!(reply.status, 403, "{}", reply.body);
        assert_eq!(reply.body["error"], "forbidden");
        host.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn versions_framing_and_methods_are_checked() {
    bounded(TEST_TIMEOUT, async {
        let host = host(None).await;
        let client = client(CLIENT_TIMEOUT);
        let post = |header: Option<&str>, body: Value| {
            let mut request = client.post(format!("{}/mcp", host.base_url)).json(&body);
            if let Some(version) = header {
                request = request.header("MCP-Protocol-Version", version);
            }
            request
        };
        let discover = |meta: Option<&str>| {
            let mut params = json!({});
            if let Some(version) = meta {
                params["_meta"] = json!({"io.modelcontextprotocol/protocolVersion": version});
            }
            json!({"jsonrpc": "2.0", "id": 7, "method": "server/discover", "params": params})
        };
        // Either place alone is enough.
        for (header, meta) in [(Some(VERSION), None), (None, Some(VERSION))] {
            let reply = send(post(header, discover(meta)), Some(ALICE)).await;
            assert_eq!(reply.status, 200, "{}", reply.body);
            assert_eq!(reply.body["id"], 7);
        }
        // Both absent, or unsupported: 400 -32022 with the supported list.
        for (header, meta, requested) in [
            (None, None, Value::Null),
            (Some("2025-11-25"), None, json!("2025-11-25")),
            (None, Some("2025-06-18"), json!("2025-06-18")),
            (Some("2025-11-25"), Some("2025-11-25"), json!("2025-11-25")),
        ] {
            let reply = send(post(header, discover(meta)), Some(ALICE)).await;
            assert_eq!(reply.status, 400, "{}", reply.body);
            assert_eq!(error_code(&reply), -32022, "{}", reply.body);
            assert_eq!(
                reply.body["error"]["data"],
                json!({"supported": ["2026-07-28"], "requested": requested})
            );
            assert_eq!(reply.body["id"], 7);
        }
        // Header and _meta disagree: 400 -32020.
        let reply = send(
            post(Some(VERSION), discover(Some("2025-11-25"))),
            Some(ALICE),
        )
        .await;
        assert_eq!(reply.status, 400, "{}", reply.body);
        assert_eq!(error_code(&reply), -32020);
        let reply = send(
            post(Some(VERSION), discover(None)).header("Mcp-Method", "tools/list"),
            Some(ALICE),
        )
        .await;
        assert_eq!(reply.status, 400, "{}", reply.body);
        assert_eq!(error_code(&reply), -32020);
        // Unknown method: 404 -32601 (initialize is gone in 2026-07-28).
        for method in ["initialize", "ping", "tools/frobnicate"] {
            let reply = send(
                post(
                    Some(VERSION),
                    json!({"jsonrpc": "2.0", "id": "m", "method": method}),
                ),
                Some(ALICE),
            )
            .await;
            assert_eq!(reply.status, 404, "{method}: {}", reply.body);
            assert_eq!(error_code(&reply), -32601);
            assert_eq!(reply.body["id"], "m");
        }
        // Not JSON: 400 -32700; not one request object: 400 -32600.
        let reply = send(
            client
                .post(format!("{}/mcp", host.base_url))
                .header("MCP-Protocol-Version", VERSION)
                .header("Content-Type", "application/json")
                .body("{nope"),
            Some(ALICE),
        )
        .await;
        assert_eq!(reply.status, 400, "{}", reply.body);
        assert_eq!(error_code(&reply), -32700);
        assert_eq!(reply.body["id"], Value::Null);
        for body in [
            json!([discover(Some(VERSION))]),
            json!({"jsonrpc": "1.0", "id": 1, "method": "server/discover"}),
            json!({"jsonrpc": "2.0", "id": {"x": 1}, "method": "server/discover"}),
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": [1]}),
        ] {
            let reply = send(post(Some(VERSION), body.clone()), Some(ALICE)).await;
            assert_eq!(reply.status, 400, "{body}: {}", reply.body);
            assert_eq!(error_code(&reply), -32600, "{body}");
        }
        // A notification is accepted with 202 and no body.
        let response = post(
            Some(VERSION),
            json!({"jsonrpc": "2.0", "method": "notifications/cancelled"}),
        )
        .bearer_auth(ALICE)
        .send()
        .await
        .expect("answers");
        assert_eq!(response.status(), 202);
        assert!(response.bytes().await.expect("body").is_empty());
        // Every answer is uncacheable.
        let response = post(Some(VERSION), discover(None))
            .bearer_auth(ALICE)
            .send()
            .await
            .expect("answers");
        assert_eq!(
            response
                .headers()
                .get("cache-control")
                .and_then(|v| v.to_str().ok()),
            Some("no-store")
        );
        host.shutdown().await;
    })
    .await;
}

// ---------------------------------------------------------------------------
// tools/call: TURN-E4 and MCP-9.

#[tokio::test]
async fn a_clarification_is_input_required_and_the_retry_completes() {
    bounded(TEST_TIMEOUT, async {
        let provider = FakeProvider::start().await;
        let host = host(None).await;
        let client = client(CLIENT_TIMEOUT);
        let (model, first) = asked(&client, &host, &provider, "helper").await;
        let run_id = run_id_of(&first);
        let result = &first.body["result"];
        let request_state = result["requestState"].as_str().expect("requestState");
        assert!(!request_state.is_empty());
        assert_eq!(
            *result,
            json!({
                "resultType": "input_required",
                "inputRequests": {"agent": {"method": "elicitation/create", "params": {
                    "mode": "form", "message": QUESTION, "requestedSchema": {"type": "object"}}}},
                "requestState": request_state,
                "_meta": {"org.openwop/runId": run_id},
            })
        );
        assert_eq!(run_status(&client, &host, &run_id).await, "waiting-input");
        // The run is the caller's, started from the template with the input.
        let events = events_until(&client, &host, &run_id, EVENT_POLLS, |events| {
            !of_type(events, "interrupt.requested").is_empty()
        })
        .await;
        assert_eq!(
            of_type(&events, "run.started")[0]["payload"]["principal"],
            "alice"
        );
        let user = &provider.requests(&model)[0].body["messages"][1];
        assert_eq!(user["role"], "user");
        assert!(
            user["content"]
                .as_str()
                .is_some_and(|c| c.contains("Charge my account.")),
            "{user}"
        );

        // The retry: a new id, every key answered, the state echoed.
        let retried = call(
            &client,
            &host,
            ALICE,
            "call-2",
            retry_params("helper", &first, accept(json!({"account": "42"}))),
        )
        .await;
        assert_eq!(retried.status, 200, "{}", retried.body);
        assert_eq!(
            retried.body["result"],
            json!({"resultType": "complete",
                   "content": [{"type": "text", "text": ANSWER_TEXT}],
                   "isError": false,
                   "_meta": {"org.openwop/runId": run_id}})
        );
        // The provider's next request carries the answer.
        let requests = provider.requests(&model);
        assert_eq!(requests.len(), 2);
        let fed = fed_back(&requests[1].body);
        assert_eq!(fed[0].0, "call_ask");
        assert_eq!(fed[0].1["structuredContent"], json!({"account": "42"}));
        // Resolved exactly like the interrupt route, by the bound principal.
        let events = events_until(&client, &host, &run_id, EVENT_POLLS, |_| false).await;
        let resolved = of_type(&events, "interrupt.resolved");
        assert_eq!(resolved.len(), 1);
        assert_eq!(
            resolved[0]["payload"],
            json!({"kind": "clarification", "nodeId": "agent", "callId": "call_ask",
                   "by": "alice", "via": "principal"})
        );
        assert_eq!(run_status(&client, &host, &run_id).await, "completed");

        // A spent state names an interrupt that is no longer open.
        let again = call(
            &client,
            &host,
            ALICE,
            "call-3",
            retry_params("helper", &first, accept(json!({"account": "43"}))),
        )
        .await;
        assert_eq!(again.status, 200, "{}", again.body);
        assert_eq!(error_code(&again), -32602);
        assert!(error_says(&again, "no longer open"), "{}", again.body);
        assert_eq!(provider.requests(&model).len(), 2);
        host.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn refused_retries_change_nothing() {
    bounded(TEST_TIMEOUT, async {
        let provider = FakeProvider::start().await;
        let host = host(None).await;
        let client = client(CLIENT_TIMEOUT);
        let (model, first) = asked(&client, &host, &provider, "helper").await;
        let run_id = run_id_of(&first);
        let state = first.body["result"]["requestState"]
            .as_str()
            .expect("requestState")
            .to_owned();
        let mut tampered = state.clone();
        let last = tampered.pop().expect("non-empty");
        tampered.push(if last == '0' { '1' } else { '0' });
        let good = accept(json!({"account": "42"}));
        let with_state = |state: &str, responses: Value| {
            json!({"name": "helper", "arguments": {"input": "Charge my account."},
                   "requestState": state, "inputResponses": responses})
        };
        let cases: Vec<(&str, &str, Value, &str)> = vec![
            (
                ALICE,
                "tampered",
                with_state(&tampered, good.clone()),
                "failed authentication",
            ),
            (
                ALICE,
                "malformed",
                with_state("rs1.nope", good.clone()),
                "malformed",
            ),
            (
                BOB,
                "other principal",
                with_state(&state, good.clone()),
                "another principal",
            ),
            (
                ERIN,
                "other tenant",
                with_state(&state, good.clone()),
                "another",
            ),
            (
                ALICE,
                "missing key",
                with_state(&state, json!({})),
                "missing key `agent`",
            ),
            (
                ALICE,
                "no responses",
                json!({"name": "helper", "arguments": {"input": "x"}, "requestState": state}),
                "missing key `agent`",
            ),
            (
                ALICE,
                "no state",
                json!({"name": "helper", "arguments": {"input": "x"}, "inputResponses": good}),
                "`params.requestState` is required",
            ),
            (
                ALICE,
                "bad action",
                with_state(&state, json!({"agent": {"action": "maybe"}})),
                "`params.inputResponses.agent.action`",
            ),
            (
                ALICE,
                "bad content",
                with_state(&state, json!({"agent": {"action": "accept", "content": 3}})),
                "`params.inputResponses.agent.content`",
            ),
            (
                ALICE,
                "other tool",
                json!({"name": "other", "arguments": {"input": "x"},
                       "requestState": state, "inputResponses": good}),
                "belongs to a call of tool `helper`",
            ),
        ];
        for (i, (token, case, params, says)) in cases.into_iter().enumerate() {
            let reply = call(&client, &host, token, &format!("bad-{i}"), params).await;
            assert_eq!(reply.status, 200, "{case}: {}", reply.body);
            assert_eq!(error_code(&reply), -32602, "{case}: {}", reply.body);
            assert!(error_says(&reply, says), "{case}: {}", reply.body);
            // Nothing changed: the run still waits on the same interrupt.
            assert_eq!(
                run_status(&client, &host, &run_id).await,
                "waiting-input",
                "{case}"
            );
        }
        assert_eq!(provider.requests(&model).len(), 1);
        let events = events_until(&client, &host, &run_id, 1, |_| true).await;
        assert!(of_type(&events, "interrupt.resolved").is_empty());
        // The correct retry still completes.
        let retried = call(
            &client,
            &host,
            ALICE,
            "good",
            retry_params("helper", &first, accept(json!({"account": "42"}))),
        )
        .await;
        assert_eq!(retried.body["result"]["isError"], false, "{}", retried.body);
        assert_eq!(retried.body["result"]["content"][0]["text"], ANSWER_TEXT);
        host.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn a_declined_elicitation_answers_declined() {
    bounded(TEST_TIMEOUT, async {
        let provider = FakeProvider::start().await;
        let host = host(None).await;
        let client = client(CLIENT_TIMEOUT);
        let (model, first) = asked(&client, &host, &provider, "helper").await;
        let retried = call(
            &client,
            &host,
            ALICE,
            "call-2",
            retry_params("helper", &first, json!({"agent": {"action": "decline"}})),
        )
        .await;
        assert_eq!(retried.body["result"]["isError"], false, "{}", retried.body);
        let fed = fed_back(&provider.requests(&model)[1].body);
        assert_eq!(fed[0].1["structuredContent"], json!({"declined": true}));
        host.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn other_outcomes_are_complete_results() {
    bounded(TEST_TIMEOUT, async {
        let provider = FakeProvider::start().await;
        let host = host(None).await;
        let client = client(CLIENT_TIMEOUT);

        // A run that answers at once.
        let model = provider.script(vec![openai_text("Nothing to ask.")]);
        registered(
            &client,
            &host,
            &template(&provider, &model, "alice", "direct"),
        )
        .await;
        let reply = call(
            &client,
            &host,
            ALICE,
            "a",
            json!({"name": "direct", "arguments": {"input": "hi"}}),
        )
        .await;
        let run_id = run_id_of(&reply);
        assert_eq!(
            reply.body["result"],
            json!({"resultType": "complete",
                   "content": [{"type": "text", "text": "Nothing to ask."}],
                   "isError": false, "_meta": {"org.openwop/runId": run_id}})
        );

        // A failed run: isError, "<code>: <message>".
        let broken = provider.script(vec![]);
        registered(
            &client,
            &host,
            &template(&provider, &broken, "alice", "broken"),
        )
        .await;
        let reply = call(
            &client,
            &host,
            ALICE,
            "b",
            json!({"name": "broken", "arguments": {"input": "hi"}}),
        )
        .await;
        assert_eq!(
            reply.body["result"]["resultType"], "complete",
            "{}",
            reply.body
        );
        assert_eq!(reply.body["result"]["isError"], true);
        assert!(
            reply.body["result"]["content"][0]["text"]
                .as_str()
                .is_some_and(|t| t.starts_with("refhost.provider_error: ")),
            "{}",
            reply.body
        );

        // A call held for approval: isError, never resolved over MCP.
        let held_model = provider.script(vec![openai_calls(
            &[("call_w", "fixture_write", r#"{"path": "a"}"#)],
            "tool_calls",
        )]);
        let mut held = template(&provider, &held_model, "alice", "held");
        held["tools"] = json!([{
            "toolId": "fixture_write", "description": "Writes.",
            "inputSchema": {"type": "object"}, "replayPolicy": "idempotent",
            "safetyTier": "write", "requiredScopes": ["tools:write"], "approval": "always",
            "receiverUrl": "http://127.0.0.1:9/never"
        }]);
        registered(&client, &host, &held).await;
        let reply = call(
            &client,
            &host,
            ALICE,
            "c",
            json!({"name": "held", "arguments": {"input": "write it"}}),
        )
        .await;
        assert_eq!(
            reply.body["result"]["resultType"], "complete",
            "{}",
            reply.body
        );
        assert_eq!(reply.body["result"]["isError"], true);
        assert!(
            reply.body["result"]["content"][0]["text"]
                .as_str()
                .is_some_and(|t| t.contains("held for approval")),
            "{}",
            reply.body
        );
        let held_run = run_id_of(&reply);
        assert_eq!(
            run_status(&client, &host, &held_run).await,
            "waiting-approval"
        );

        // Invalid arguments: a tool execution error naming the member; no run.
        let quiet = provider.script(vec![]);
        registered(
            &client,
            &host,
            &template(&provider, &quiet, "alice", "quiet"),
        )
        .await;
        for (arguments, says) in [
            (json!({}), "`arguments.input`"),
            (json!({"input": ""}), "`arguments.input`"),
            (json!({"input": "x", "more": 1}), "`arguments.more`"),
        ] {
            let reply = call(
                &client,
                &host,
                ALICE,
                "d",
                json!({"name": "quiet", "arguments": arguments}),
            )
            .await;
            assert_eq!(reply.body["result"]["isError"], true, "{}", reply.body);
            assert!(
                reply.body["result"]["content"][0]["text"]
                    .as_str()
                    .is_some_and(|t| t.contains(says)),
                "{}",
                reply.body
            );
            assert!(reply.body["result"].get("_meta").is_none());
        }
        assert!(provider.requests(&quiet).is_empty());
        // Malformed params are protocol errors.
        let reply = call(&client, &host, ALICE, "e", json!({"arguments": {}})).await;
        assert_eq!(error_code(&reply), -32602);
        assert!(error_says(&reply, "`params.name`"), "{}", reply.body);
        host.shutdown().await;
    })
    .await;
}

// ---------------------------------------------------------------------------
// The mutants.

// ---------------------------------------------------------------------------
// The Tasks extension and request ownership (MCP-14).

/// `_meta` declaring the Tasks extension.
fn task_meta() -> Value {
    let mut meta = meta();
    meta["io.modelcontextprotocol/clientCapabilities"] =
        json!({"extensions": {"io.modelcontextprotocol/tasks": {}}});
    meta
}

/// One JSON-RPC request declaring the Tasks extension, as `token`.
async fn task_rpc(
    client: &reqwest::Client,
    host: &RunningHost,
    token: &str,
    id: &str,
    method: &str,
    mut params: Value,
) -> Reply {
    params["_meta"] = task_meta();
    let request = client
        .post(format!("{}/mcp", host.base_url))
        .header("MCP-Protocol-Version", VERSION)
        .json(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
    send(request, Some(token)).await
}

/// How many events the run's log holds.
async fn event_count(client: &reqwest::Client, host: &RunningHost, run_id: &str) -> usize {
    let page = common::poll(client, host, run_id, "streamMode=debug&timeout=1").await;
    page["events"].as_array().map_or(0, Vec::len)
}

/// Polls `tasks/get` until the task's status is `wanted` (bounded).
async fn task_until(
    client: &reqwest::Client,
    host: &RunningHost,
    task_id: &str,
    wanted: &str,
) -> Value {
    for i in 0..100 {
        let got = task_rpc(
            client,
            host,
            ALICE,
            &format!("poll-{i}"),
            "tasks/get",
            json!({"taskId": task_id}),
        )
        .await;
        if got.body["result"]["status"] == wanted {
            return got.body["result"].clone();
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("task {task_id} never became {wanted}");
}

/// The run's `run.cancelled.reason`, once it is cancelled (bounded).
async fn cancel_reason(client: &reqwest::Client, host: &RunningHost, run_id: &str) -> Value {
    let events = events_until(client, host, run_id, EVENT_POLLS, |events| {
        !of_type(events, "run.cancelled").is_empty()
    })
    .await;
    let cancelled = of_type(&events, "run.cancelled");
    assert_eq!(cancelled.len(), 1, "{events:#?}");
    cancelled[0]["payload"]["reason"].clone()
}

#[tokio::test]
async fn a_task_declaring_call_is_a_task_of_the_run() {
    bounded(TEST_TIMEOUT, async {
        let provider = FakeProvider::start().await;
        let host = host(None).await;
        let client = client(CLIENT_TIMEOUT);
        let model = asking_model(&provider);
        registered(
            &client,
            &host,
            &template(&provider, &model, "alice", "helper"),
        )
        .await;
        let created = task_rpc(
            &client,
            &host,
            ALICE,
            "c1",
            "tools/call",
            json!({"name": "helper", "arguments": {"input": "Charge my account."}}),
        )
        .await;
        assert_eq!(created.status, 200, "{}", created.body);
        let result = &created.body["result"];
        // Never InputRequiredResult: a task waiting for input.
        assert_eq!(result["resultType"], "task", "{result}");
        assert_eq!(result["status"], "input_required", "{result}");
        assert!(result.get("inputRequests").is_none(), "{result}");
        assert!(result.get("requestState").is_none(), "{result}");
        let task_id = result["taskId"].as_str().expect("taskId").to_owned();
        // The taskId is the run's id: `run_` and 128 random bits.
        assert_eq!(task_id.len(), 4 + 32, "{task_id}");
        assert!(task_id.starts_with("run_"), "{task_id}");
        assert!(task_id[4..].chars().all(|c| c.is_ascii_hexdigit()));
        assert_eq!(run_status(&client, &host, &task_id).await, "waiting-input");
        assert_eq!(result["_meta"]["org.openwop/runId"], task_id.as_str());

        // tasks/get appends nothing to the log.
        let before = event_count(&client, &host, &task_id).await;
        for id in ["g1", "g2"] {
            let got = task_rpc(
                &client,
                &host,
                ALICE,
                id,
                "tasks/get",
                json!({"taskId": task_id}),
            )
            .await;
            let got = &got.body["result"];
            assert_eq!(got["resultType"], "complete", "{got}");
            assert_eq!(got["status"], "input_required", "{got}");
            assert_eq!(
                got["inputRequests"]["agent"]["params"]["message"], QUESTION,
                "{got}"
            );
        }
        assert_eq!(event_count(&client, &host, &task_id).await, before);

        // The id is no credential: another tenant's read is an unknown
        // task's, and an undeclared request is -32021.
        let foreign = task_rpc(
            &client,
            &host,
            ERIN,
            "f",
            "tasks/get",
            json!({"taskId": task_id}),
        )
        .await;
        let unknown = task_rpc(
            &client,
            &host,
            ALICE,
            "u",
            "tasks/get",
            json!({"taskId": "run_nope"}),
        )
        .await;
        assert_eq!(error_code(&foreign), -32602, "{}", foreign.body);
        assert_eq!(foreign.body["error"], unknown.body["error"]);
        let undeclared = rpc(
            &client,
            &host,
            ALICE,
            "n",
            "tasks/get",
            json!({"taskId": task_id}),
        )
        .await;
        assert_eq!(error_code(&undeclared), -32021, "{}", undeclared.body);
        // Only the run's principal answers.
        let answers = json!({"agent": {"action": "accept", "content": {"account": "42"}}});
        let stranger = task_rpc(
            &client,
            &host,
            BOB,
            "b",
            "tasks/update",
            json!({"taskId": task_id, "inputResponses": answers}),
        )
        .await;
        assert_eq!(error_code(&stranger), -32602, "{}", stranger.body);

        let updated = task_rpc(
            &client,
            &host,
            ALICE,
            "up",
            "tasks/update",
            json!({"taskId": task_id, "inputResponses": answers}),
        )
        .await;
        assert_eq!(updated.body["result"], json!({"resultType": "complete"}));
        let done = task_until(&client, &host, &task_id, "completed").await;
        assert_eq!(done["result"]["content"][0]["text"], ANSWER_TEXT, "{done}");
        assert_eq!(done["result"]["isError"], false);
        assert_eq!(provider.requests(&model).len(), 2);
        // A terminal task cannot be cancelled.
        let late = task_rpc(
            &client,
            &host,
            ALICE,
            "x",
            "tasks/cancel",
            json!({"taskId": task_id}),
        )
        .await;
        assert_eq!(error_code(&late), -32602, "{}", late.body);
        host.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn tasks_cancel_cancels_the_run() {
    bounded(TEST_TIMEOUT, async {
        let provider = FakeProvider::start().await;
        let host = host(None).await;
        let client = client(CLIENT_TIMEOUT);
        let slow = provider.script(vec![Canned::Delayed(
            Duration::from_secs(5),
            Box::new(openai_text("late")),
        )]);
        registered(&client, &host, &template(&provider, &slow, "alice", "slow")).await;
        let created = task_rpc(
            &client,
            &host,
            ALICE,
            "c",
            "tools/call",
            json!({"name": "slow", "arguments": {"input": "go"}}),
        )
        .await;
        assert_eq!(
            created.body["result"]["resultType"], "task",
            "{}",
            created.body
        );
        assert_eq!(created.body["result"]["status"], "working");
        let task_id = created.body["result"]["taskId"]
            .as_str()
            .expect("id")
            .to_owned();
        let cancelled = task_rpc(
            &client,
            &host,
            ALICE,
            "k",
            "tasks/cancel",
            json!({"taskId": task_id}),
        )
        .await;
        assert_eq!(cancelled.body["result"], json!({"resultType": "complete"}));
        assert_eq!(run_status(&client, &host, &task_id).await, "cancelled");
        assert_eq!(
            cancel_reason(&client, &host, &task_id).await,
            "cancelled by alice"
        );
        let got = task_until(&client, &host, &task_id, "cancelled").await;
        assert_eq!(got["statusMessage"], "cancelled by alice");
        host.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn a_disconnect_before_the_answer_cancels_and_after_it_does_not() {
    bounded(TEST_TIMEOUT, async {
        let provider = FakeProvider::start().await;
        let host = host(None).await;
        let client = client(CLIENT_TIMEOUT);
        // The run asks, then (after the retry) thinks for 5 s.
        let model = provider.script(vec![
            openai_calls(
                &[("call_ask", ASK, &json!({"question": QUESTION}).to_string())],
                "tool_calls",
            ),
            Canned::Delayed(Duration::from_secs(5), Box::new(openai_text(ANSWER_TEXT))),
        ]);
        registered(
            &client,
            &host,
            &template(&provider, &model, "alice", "held"),
        )
        .await;
        let first = call(
            &client,
            &host,
            ALICE,
            "c1",
            json!({"name": "held", "arguments": {"input": "Charge my account."}}),
        )
        .await;
        let run_id = run_id_of(&first);
        // The retry continues the run; the client goes away before the answer.
        let retry = {
            let request = client
                .post(format!("{}/mcp", host.base_url))
                .header("MCP-Protocol-Version", VERSION)
                .bearer_auth(ALICE)
                .json(
                    &json!({"jsonrpc": "2.0", "id": "c2", "method": "tools/call",
                    "params": {"_meta": meta(), "name": "held",
                        "arguments": {"input": "Charge my account."},
                        "inputResponses": accept(json!({"account": "42"})),
                        "requestState": first.body["result"]["requestState"]}}),
                );
            tokio::spawn(async move { request.send().await })
        };
        for _ in 0..200 {
            if provider.requests(&model).len() == 2 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(provider.requests(&model).len(), 2, "the retry went through");
        retry.abort();
        assert_eq!(
            cancel_reason(&client, &host, &run_id).await,
            "mcp-request-cancelled"
        );

        // A task's answer was sent: a disconnect afterwards leaves the run.
        let slow = provider.script(vec![Canned::Delayed(
            Duration::from_millis(1500),
            Box::new(openai_text("done")),
        )]);
        registered(&client, &host, &template(&provider, &slow, "alice", "slow")).await;
        let closing = common::client(CLIENT_TIMEOUT);
        let created = send(
            closing
                .post(format!("{}/mcp", host.base_url))
                .header("MCP-Protocol-Version", VERSION)
                .header("Connection", "close")
                .json(&json!({"jsonrpc": "2.0", "id": "t", "method": "tools/call",
                    "params": {"_meta": task_meta(), "name": "slow",
                               "arguments": {"input": "go"}}})),
            Some(ALICE),
        )
        .await;
        drop(closing);
        assert_eq!(
            created.body["result"]["resultType"], "task",
            "{}",
            created.body
        );
        let task_id = created.body["result"]["taskId"]
            .as_str()
            .expect("id")
            .to_owned();
        let done = task_until(&client, &host, &task_id, "completed").await;
        assert_eq!(done["result"]["content"][0]["text"], "done");
        host.shutdown().await;
    })
    .await;
}
