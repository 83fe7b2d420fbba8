//! MCP tools of the turn seam (EFF-12, TRUST-3, TRUST-5, RPL-10, TURN-F4).
//!
//! A turn-seam tool with an `mcp` member is offered and admitted like any
//! other tool; only its dispatch differs: the host itself sends one
//! JSON-RPC `tools/call` per POST to the server (MCP revision
//! [`PROTOCOL_VERSION`], stateless, JSON only), with the same
//! `Idempotency-Key` a receiver would get. The wire is fixed in
//! `/tmp/notes/mcp-wire.md`; in short:
//!
//! - a `complete` result (or one without `resultType`) ends the call: `ok`
//!   with the tool's data (its `structuredContent` when present, else the
//!   text of its `text` content blocks joined with `\n`), or, with
//!   `isError: true`, `error` `refhost.mcp_tool_error`;
//! - a JSON-RPC error, a non-200 status, an unparseable body or a transport
//!   failure ends it `error` `mcp_error` (registered);
//! - an `input_required` result (MRTR) opens an `mcp-input` interrupt for
//!   the run's bound principal (the run waits in `waiting-input`), and the
//!   answers are sent back in a retry with a new JSON-RPC id, the same
//!   `Idempotency-Key`, the same name and arguments, `inputResponses` for
//!   every key of `inputRequests` and `requestState` echoed. At most
//!   [`MAX_MRTR_ROUNDS`] retries; one more `input_required` ends the call
//!   `mcp_mrtr_rounds_exceeded` without another request.
//!
//! The whole exchange is ONE tool emission (one call/return pair, one
//! record); interim `input_required` results are never recorded (MCP-9).
//! The record keeps the final retry's `inputResponses` and `requestState`
//! so a replay fork knows them without asking the human again (RPL-10).

use std::time::Instant;

use serde_json::{Map, Value, json};

use crate::base::args_hash::sha256_hex;
use crate::base::mutant::{Mutant, MutantInfo};
use crate::base::tool_events::{ToolErrorCode, ToolReturn, ToolStatus};
use crate::domain::Domain;
use crate::domain::catalog::{FixtureTool, McpEndpoint};
use crate::domain::interrupts::{HoldRequest, InputPrompt, InterruptKind, WaitEnd};
use crate::domain::invoker::{JsonExchange, millis};
use crate::turn::admission::error::AdmissionError;
use crate::turn::approval::AGENT_NODE_ID;
use crate::turn::feedback::{self, CallToolResult};
use crate::turn::trust::ContentTrust;

/// The MCP revision this host speaks (`MCP-Protocol-Version`).
pub const PROTOCOL_VERSION: &str = "2026-07-28";

/// Most MRTR retries of one call (discovery `mcp.mrtr.maxRounds`, EFF-12).
pub const MAX_MRTR_ROUNDS: u32 = 2;

/// `clientInfo.name` sent in every request's `_meta`.
pub const CLIENT_NAME: &str = "toolcert-reference-host";

/// The `mcp` discovery record (EFF-12): this host is an MCP client of
/// revision [`PROTOCOL_VERSION`] with MRTR, at most [`MAX_MRTR_ROUNDS`]
/// retries per call, and an MCP server of the same revision at `POST /mcp`
/// (`serverMount`, TURN-E4; its transport is the MCP server's own
/// `streamable-http`, DISC-5) that serves the MCP Tasks extension, listed
/// as the feature `extensions` (MCP-14; the mount's `server/discover` names
/// it). `refreshedAt` is the host's start day
/// ([`crate::base::clock::started_day_rfc3339`]), so the document (and its
/// ETag) stays the same while the host runs.
pub fn discovery_record() -> Value {
    json!({
        "status": "stable",
        "since": "2.0",
        "witness": "witnessable-gated",
        "revisions": [PROTOCOL_VERSION],
        "preferredVersion": PROTOCOL_VERSION,
        "minimumRevision": PROTOCOL_VERSION,
        "refreshedAt": crate::base::clock::started_day_rfc3339(),
        "client": true,
        "features": ["mrtr", "extensions"],
        "mrtr": {"maxRounds": MAX_MRTR_ROUNDS},
        "serverMount": {"transports": ["streamable-http"]},
    })
}

/// What an MRTR retry adds to `params`.
#[derive(Debug, Clone, PartialEq)]
pub struct Continuation {
    /// `inputResponses`: the answer for every key of `inputRequests`.
    pub input_responses: Map<String, Value>,
    /// `requestState` as the server sent it (`None` when it sent none).
    pub request_state: Option<Value>,
}

impl Continuation {
    /// The form kept in the call's record (RPL-10): the members as sent.
    pub fn to_record(&self) -> Value {
        let mut record = Map::new();
        record.insert(
            "inputResponses".to_owned(),
            Value::Object(self.input_responses.clone()),
        );
        if let Some(state) = &self.request_state {
            record.insert("requestState".to_owned(), state.clone());
        }
        Value::Object(record)
    }

    /// Reads the form [`Continuation::to_record`] wrote.
    pub fn from_record(record: &Value) -> Option<Self> {
        let input_responses = record.get("inputResponses")?.as_object()?.clone();
        Some(Self {
            input_responses,
            request_state: record.get("requestState").cloned(),
        })
    }
}

/// The body of one `tools/call` request (mcp-wire.md).
pub fn request_body(
    id: &str,
    name: &str,
    args: &Value,
    continuation: Option<&Continuation>,
) -> Value {
    let mut params = Map::new();
    params.insert("name".to_owned(), json!(name));
    params.insert("arguments".to_owned(), args.clone());
    if let Some(continuation) = continuation {
        params.insert(
            "inputResponses".to_owned(),
            Value::Object(continuation.input_responses.clone()),
        );
        // Echoed as received; absent when the server sent none (MCP-9).
        if let Some(state) = &continuation.request_state {
            params.insert("requestState".to_owned(), state.clone());
        }
    }
    params.insert(
        "_meta".to_owned(),
        json!({
            "io.modelcontextprotocol/protocolVersion": PROTOCOL_VERSION,
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {
                "name": CLIENT_NAME,
                "version": env!("CARGO_PKG_VERSION"),
            },
        }),
    );
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
}

/// A JSON-RPC id never used before in this host (so never within a run,
/// not even across a restart).
pub(crate) fn fresh_id() -> String {
    format!("rh-{}", uuid::Uuid::new_v4().simple())
}

/// What one `tools/call` answered.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// A complete result.
    Complete {
        /// `isError: true`.
        is_error: bool,
        /// The tool's data: `structuredContent`, else the joined text.
        data: Value,
        /// The joined text of its `text` content blocks.
        text: String,
        /// `_meta.scopes` (read only under `mcp-meta-grants-scopes`).
        meta_scopes: Vec<String>,
    },
    /// An MRTR `input_required` result.
    InputRequired {
        /// Its `inputRequests`, in key order.
        prompts: Vec<InputPrompt>,
        /// Its `requestState`, if any.
        request_state: Option<Value>,
    },
    /// A JSON-RPC error object, a non-200 status, an unparseable body or a
    /// transport failure: `mcp_error`, with a host-authored reason (no
    /// server text is copied into the message).
    Failed(String),
}

/// Reads one HTTP answer to the request with JSON-RPC id `id`.
pub fn parse_answer(id: &str, exchange: JsonExchange, mutant: Option<Mutant>) -> Answer {
    let body = match exchange {
        JsonExchange::Answered {
            status: 200,
            body,
            complete: true,
        } => body,
        JsonExchange::Answered {
            status: 200,
            complete: false,
            ..
        } => {
            return Answer::Failed(format!(
                "the MCP server's answer exceeds {} bytes",
                crate::domain::invoker::MAX_RECEIVER_BODY
            ));
        }
        JsonExchange::Answered { status, .. } => {
            return Answer::Failed(format!("the MCP server answered HTTP {status}"));
        }
        JsonExchange::TimedOut => {
            return Answer::Failed("the MCP server did not answer in time".to_owned());
        }
        JsonExchange::Unreachable => {
            return Answer::Failed(
                "the MCP server could not be reached (connection failed)".to_owned(),
            );
        }
    };
    let Ok(Value::Object(response)) = serde_json::from_slice::<Value>(&body) else {
        return Answer::Failed("the MCP server's answer is not a JSON-RPC response".to_owned());
    };
    if response.get("id").and_then(Value::as_str) != Some(id) {
        return Answer::Failed(
            "the MCP server's answer does not carry the request's JSON-RPC id".to_owned(),
        );
    }
    if let Some(error) = response.get("error") {
        let code = error.get("code").and_then(Value::as_i64).unwrap_or(0);
        return Answer::Failed(format!("the MCP server answered JSON-RPC error {code}"));
    }
    let Some(Value::Object(result)) = response.get("result") else {
        return Answer::Failed("the MCP server's answer has no result object".to_owned());
    };
    match result.get("resultType").and_then(Value::as_str) {
        // A missing resultType is a (legacy) complete result.
        None | Some("complete") => complete(result, mutant),
        Some("input_required") => input_required(result),
        Some(_) => Answer::Failed("the MCP server's result has an unknown resultType".to_owned()),
    }
}

/// A complete result.
fn complete(result: &Map<String, Value>, mutant: Option<Mutant>) -> Answer {
    let text = result
        .get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|block| block.get("type").and_then(Value::as_str) == Some("text"))
        .filter_map(|block| block.get("text").and_then(Value::as_str))
        .collect::<Vec<_>>()
        .join("\n");
    let data = result
        .get("structuredContent")
        .cloned()
        .unwrap_or_else(|| Value::String(text.clone()));
    // TRUST-5 (`mcp-peer-no-authority-escalation`): the result's `_meta` is
    // the peer's content, never authority. It is not read: it never widens
    // the run's allowlist, the principal's scopes, or approval state.
    // Bug under `mcp-meta-grants-scopes`: its `scopes` are taken as granted.
    let meta_scopes = if mutant == Some(Mutant::McpMetaGrantsScopes) {
        result
            .get("_meta")
            .and_then(|meta| meta.get("scopes"))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect()
    } else {
        Vec::new()
    };
    Answer::Complete {
        is_error: result.get("isError") == Some(&Value::Bool(true)),
        data,
        text,
        meta_scopes,
    }
}

/// An `input_required` result: a non-empty `inputRequests` object.
fn input_required(result: &Map<String, Value>) -> Answer {
    let Some(Value::Object(requests)) = result.get("inputRequests") else {
        return Answer::Failed(
            "the MCP server's input_required result has no inputRequests object".to_owned(),
        );
    };
    if requests.is_empty() {
        return Answer::Failed(
            "the MCP server's input_required result asks for no input".to_owned(),
        );
    }
    let prompts = requests
        .iter()
        .map(|(key, request)| InputPrompt {
            key: key.clone(),
            message: request
                .pointer("/params/message")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
        })
        .collect();
    Answer::InputRequired {
        prompts,
        request_state: result.get("requestState").cloned(),
    }
}

/// One MCP tool call of the loop: who calls, under which identity.
#[derive(Debug, Clone, Copy)]
pub struct McpCall<'a> {
    /// Host state.
    pub state: &'a Domain,
    /// The run.
    pub run_id: &'a str,
    /// The run's acting principal (the one who answers input requests).
    pub principal: &'a str,
    /// The call id fed back to the model.
    pub call_id: &'a str,
    /// The `agent.tool-called` event (an input request is caused by it).
    pub call_event_id: &'a str,
    /// The trust of the turn that emitted the call.
    pub content_trust: ContentTrust,
    /// The tool.
    pub tool: &'a FixtureTool,
    /// Its MCP server tool.
    pub endpoint: &'a McpEndpoint,
    /// The parsed arguments.
    pub args: &'a Value,
    /// The tool identity (TURN-D2), sent as `Idempotency-Key`.
    pub idempotency_key: &'a str,
}

/// How an MCP call ended.
#[derive(Debug, Clone, PartialEq)]
pub struct McpOutcome {
    /// The return to write (every arm has a duration).
    pub ret: ToolReturn,
    /// The result to feed back.
    pub result: CallToolResult,
    /// The final retry's continuation, when the call went through MRTR
    /// (kept in the record, RPL-10).
    pub continuation: Option<Continuation>,
    /// `_meta.scopes` of the result: only the `mcp-meta-grants-scopes`
    /// mutant fills it.
    pub meta_scopes: Vec<String>,
}

impl McpCall<'_> {
    /// POSTs one `tools/call` and reads the answer.
    async fn send(&self, key: &str, continuation: Option<&Continuation>) -> Answer {
        let id = fresh_id();
        let body = request_body(&id, &self.endpoint.name, self.args, continuation);
        send_body(self.state, &self.endpoint.server_url, key, &id, &body).await
    }

    /// Runs the whole exchange (see the module docs).
    pub async fn run(&self) -> Result<McpOutcome, AdmissionError> {
        let state = self.state;
        let mutant = state.mutant();
        let tool_id = self.tool.tool_id.as_str();
        let started = Instant::now();
        let mut continuation: Option<Continuation> = None;
        let mut retries = 0u32;
        loop {
            // EFF-12: every retry is the same logical invocation, so it
            // carries the same Idempotency-Key. Bug under
            // `mrtr-retry-new-identity`: each retry gets an identity of its own.
            let key = if retries > 0 && mutant == Some(Mutant::MrtrRetryNewIdentity) {
                sha256_hex(format!("{}/mrtr/{retries}", self.idempotency_key).as_bytes())
            } else {
                self.idempotency_key.to_owned()
            };
            let answer = self.send(&key, continuation.as_ref()).await;
            let failed = |code: ToolErrorCode, message: String| McpOutcome {
                ret: ToolReturn::failed(
                    ToolStatus::Error,
                    code,
                    message.clone(),
                    Some(millis(started.elapsed())),
                ),
                result: CallToolResult::failure(feedback::failed_text(tool_id, &message), mutant),
                continuation: None,
                meta_scopes: Vec::new(),
            };
            let (prompts, request_state) = match answer {
                Answer::Complete {
                    is_error,
                    data,
                    text,
                    meta_scopes,
                } => {
                    let duration = millis(started.elapsed());
                    let (ret, result) = if is_error {
                        let message = "the MCP tool reported an error (isError: true)";
                        let fed = if text.is_empty() {
                            feedback::failed_text(tool_id, message)
                        } else {
                            text
                        };
                        (
                            ToolReturn::failed(
                                ToolStatus::Error,
                                ToolErrorCode::McpToolError,
                                message,
                                Some(duration),
                            ),
                            CallToolResult::failure(fed, mutant),
                        )
                    } else {
                        (ToolReturn::ok(duration), CallToolResult::success(&data))
                    };
                    // TRUST-3: what the server returned is untrusted content,
                    // fed back inside an UNTRUSTED marker. Bug under
                    // `mcp-result-unwrapped`: it goes back bare.
                    let result = if mutant == Some(Mutant::McpResultUnwrapped) {
                        result
                    } else {
                        result.from_mcp_tool(tool_id)
                    };
                    return Ok(McpOutcome {
                        ret,
                        result,
                        continuation,
                        meta_scopes,
                    });
                }
                Answer::Failed(message) => return Ok(failed(ToolErrorCode::McpError, message)),
                Answer::InputRequired {
                    prompts,
                    request_state,
                } => (prompts, request_state),
            };
            // EFF-12: bounded by mcp.mrtr.maxRounds; the server never sees
            // the retry past it.
            if retries >= MAX_MRTR_ROUNDS {
                // Bug under `mrtr-extra-round`: the retry past the ceiling
                // is sent anyway (its answer ignored) before giving up.
                if mutant == Some(Mutant::MrtrExtraRound) {
                    let _ = self.send(&key, continuation.as_ref()).await;
                }
                return Ok(failed(
                    ToolErrorCode::McpMrtrRoundsExceeded,
                    format!(
                        "the MCP tool asked for input again after {MAX_MRTR_ROUNDS} MRTR retries (mcp.mrtr.maxRounds); it was not retried again (EFF-12)"
                    ),
                ));
            }
            let pending = state.interrupts().open(
                state.storage(),
                HoldRequest {
                    kind: InterruptKind::McpInput,
                    question: None,
                    run_id: self.run_id,
                    node_id: AGENT_NODE_ID,
                    call_id: self.call_id,
                    tool_name: tool_id,
                    bound_principal: self.principal,
                    content_trust: self.content_trust,
                    causation: self.call_event_id,
                    inputs: &prompts,
                },
            )?;
            let answers = match pending.wait(state.approval_timeout()).await {
                WaitEnd::Resolved(resolution) => resolution.answers.unwrap_or_default(),
                WaitEnd::Expired => {
                    return Ok(failed(
                        ToolErrorCode::McpInputExpired,
                        format!(
                            "the MCP tool's request for input was not answered within {} s; it was not retried",
                            state.approval_timeout().as_secs_f64()
                        ),
                    ));
                }
                WaitEnd::Lost => return Err(AdmissionError::ApprovalLost),
            };
            // Every key of inputRequests (the resolve route refused answers
            // missing one; extra answers are not passed on).
            let input_responses = prompts
                .iter()
                .map(|prompt| {
                    let answer = answers.get(&prompt.key).cloned().unwrap_or(Value::Null);
                    (prompt.key.clone(), answer)
                })
                .collect();
            // MCP-9: requestState goes back as it came. Bug under
            // `mrtr-state-dropped`: it is left out.
            let request_state = request_state.filter(|_| mutant != Some(Mutant::MrtrStateDropped));
            continuation = Some(Continuation {
                input_responses,
                request_state,
            });
            retries += 1;
        }
    }
}

/// POSTs one prepared `tools/call` body with the wire's headers.
async fn send_body(
    state: &Domain,
    url: &reqwest::Url,
    key: &str,
    id: &str,
    body: &Value,
) -> Answer {
    let headers = [
        ("Accept", "application/json, text/event-stream"),
        ("MCP-Protocol-Version", PROTOCOL_VERSION),
        ("Idempotency-Key", key),
    ];
    let exchange = state
        .invoker()
        .post_json_with(url, body, &headers, state.default_tool_timeout())
        .await;
    parse_answer(id, exchange, state.mutant())
}

/// Only under `replay-reissues-mrtr`: a replay fork sends the recorded
/// final MRTR retry (its `inputResponses` and `requestState`) to the server
/// again; the answer is ignored and the record is served anyway. RPL-10
/// says a replay sends nothing.
pub async fn reissue_recorded_retry(
    state: &Domain,
    tool: &FixtureTool,
    args: &Value,
    idempotency_key: &str,
    recorded: &Value,
) {
    let (Some(endpoint), Some(continuation)) = (tool.mcp(), Continuation::from_record(recorded))
    else {
        return;
    };
    let id = fresh_id();
    let body = request_body(&id, &endpoint.name, args, Some(&continuation));
    let _ = send_body(state, &endpoint.server_url, idempotency_key, &id, &body).await;
}

/// The mutants planted in this module, gathered by [`crate::surface::mutants::ALL`].
pub const MUTANTS: &[MutantInfo] = &[
    MutantInfo {
        mutant: Mutant::McpResultUnwrapped,
        name: "mcp-result-unwrapped",
        breaks: "an MCP tool result is fed back without the UNTRUSTED marker (TRUST-3)",
    },
    MutantInfo {
        mutant: Mutant::McpMetaGrantsScopes,
        name: "mcp-meta-grants-scopes",
        breaks: "an MCP result's _meta.scopes are added to the principal's scopes for the rest of the run (TRUST-5)",
    },
    MutantInfo {
        mutant: Mutant::MrtrRetryNewIdentity,
        name: "mrtr-retry-new-identity",
        breaks: "an MRTR retry carries a different Idempotency-Key than the request it continues (EFF-12)",
    },
    MutantInfo {
        mutant: Mutant::MrtrStateDropped,
        name: "mrtr-state-dropped",
        breaks: "an MRTR retry omits requestState (MCP-9)",
    },
    MutantInfo {
        mutant: Mutant::MrtrExtraRound,
        name: "mrtr-extra-round",
        breaks: "an input_required answer past mcp.mrtr.maxRounds is retried once more before the call fails mcp_mrtr_rounds_exceeded (MCP-8)",
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    fn answered(body: Value) -> JsonExchange {
        JsonExchange::Answered {
            status: 200,
            body: body.to_string().into_bytes(),
            complete: true,
        }
    }

    #[test]
    fn requests_follow_the_wire() {
        let first = request_body("rh-1", "get_weather", &json!({"city": "Oslo"}), None);
        assert_eq!(
            first,
            json!({"jsonrpc": "2.0", "id": "rh-1", "method": "tools/call", "params": {
                "name": "get_weather", "arguments": {"city": "Oslo"},
                "_meta": {
                    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                    "io.modelcontextprotocol/clientCapabilities": {},
                    "io.modelcontextprotocol/clientInfo": {
                        "name": "toolcert-reference-host", "version": env!("CARGO_PKG_VERSION")
                    }
                }
            }})
        );
        let mut responses = Map::new();
        responses.insert("units".into(), json!("metric"));
        let with_state = Continuation {
            input_responses: responses.clone(),
            request_state: Some(json!("opaque-1")),
        };
        let retry = request_body("rh-2", "get_weather", &json!({}), Some(&with_state));
        assert_eq!(
            retry["params"]["inputResponses"],
            json!({"units": "metric"})
        );
        assert_eq!(retry["params"]["requestState"], "opaque-1");
        let stateless = Continuation {
            input_responses: responses,
            request_state: None,
        };
        let retry = request_body("rh-3", "get_weather", &json!({}), Some(&stateless));
        assert!(retry["params"].get("requestState").is_none());
        assert_eq!(
            Continuation::from_record(&with_state.to_record()),
            Some(with_state)
        );
    }

    #[test]
    fn complete_results_prefer_structured_content_and_ignore_meta() {
        let answer = parse_answer(
            "a",
            answered(json!({"jsonrpc": "2.0", "id": "a", "result": {
                "content": [{"type": "text", "text": "one"}, {"type": "image", "data": "x"},
                            {"type": "text", "text": "two"}],
                "_meta": {"scopes": ["admin"], "approved": true}
            }})),
            None,
        );
        assert_eq!(
            answer,
            Answer::Complete {
                is_error: false,
                data: json!("one\ntwo"),
                text: "one\ntwo".into(),
                meta_scopes: Vec::new(),
            }
        );
        let body = json!({"jsonrpc": "2.0", "id": "a", "result": {"resultType": "complete",
            "content": [], "structuredContent": {"t": 1}, "isError": true,
            "_meta": {"scopes": ["admin"]}}});
        let Answer::Complete {
            is_error,
            data,
            meta_scopes,
            ..
        } = parse_answer("a", answered(body.clone()), None)
        else {
            panic!("complete");
        };
        assert!(is_error);
        assert_eq!(data, json!({"t": 1}));
        assert!(meta_scopes.is_empty());
        let Answer::Complete { meta_scopes, .. } =
            parse_answer("a", answered(body), Some(Mutant::McpMetaGrantsScopes))
        else {
            panic!("complete");
        };
        assert_eq!(meta_scopes, ["admin"]);
    }

    #[test]
    fn input_required_lists_the_requests_and_keeps_the_state() {
        let answer = parse_answer(
            "a",
            answered(json!({"jsonrpc": "2.0", "id": "a", "result": {
                "resultType": "input_required",
                "inputRequests": {
                    "units": {"method": "elicitation/create", "params": {"message": "Which units?"}},
                    "city": {"method": "elicitation/create", "params": {}}
                },
                "requestState": "s1"
            }})),
            None,
        );
        assert_eq!(
            answer,
            Answer::InputRequired {
                prompts: vec![
                    InputPrompt {
                        key: "city".into(),
                        message: String::new()
                    },
                    InputPrompt {
                        key: "units".into(),
                        message: "Which units?".into()
                    },
                ],
                request_state: Some(json!("s1")),
            }
        );
    }

    #[test]
    fn everything_else_is_an_mcp_error_without_server_text() {
        let cases = [
            answered(json!({"jsonrpc": "2.0", "id": "a",
                "error": {"code": -32602, "message": "SERVER-SECRET"}})),
            answered(json!({"jsonrpc": "2.0", "id": "other", "result": {}})),
            answered(json!({"jsonrpc": "2.0", "id": "a"})),
            answered(json!({"jsonrpc": "2.0", "id": "a", "result": {"resultType": "later"}})),
            answered(json!({"jsonrpc": "2.0", "id": "a",
                "result": {"resultType": "input_required", "inputRequests": {}}})),
            JsonExchange::Answered {
                status: 200,
                body: b"SERVER-SECRET".to_vec(),
                complete: true,
            },
            JsonExchange::Answered {
                status: 500,
                body: b"SERVER-SECRET".to_vec(),
                complete: true,
            },
            JsonExchange::TimedOut,
            JsonExchange::Unreachable,
        ];
        for exchange in cases {
            let Answer::Failed(message) = parse_answer("a", exchange.clone(), None) else {
                panic!("{exchange:?} is an mcp_error");
            };
            assert!(!message.contains("SERVER-SECRET"), "{message}");
        }
    }

    #[test]
    fn the_discovery_record_advertises_two_rounds() {
        let record = discovery_record();
        assert_eq!(record["mrtr"]["maxRounds"], 2);
        assert_eq!(record["preferredVersion"], "2026-07-28");
        assert_eq!(record["features"], json!(["mrtr", "extensions"]));
        assert_eq!(
            record["serverMount"],
            json!({"transports": ["streamable-http"]})
        );
        assert!(
            time::OffsetDateTime::parse(
                record["refreshedAt"].as_str().unwrap_or_default(),
                &time::format_description::well_known::Rfc3339
            )
            .is_ok()
        );
    }
}
