//! A scriptable mock model provider for toolcert.
//!
//! A host under test is configured to call this provider instead of a real one. The provider
//! answers from a [`Script`] keyed by the request's `model` value (each test run uses its own
//! key, so there is no global state to reset), speaks two real wire formats, and records every
//! request so the harness can assert what the host sent: tool results fed back, repair
//! messages, or no request at all during a replay.
//!
//! Everything binds loopback only, and every wait is bounded (scripted delays are at most
//! 30 s; shutdown waits at most 2 s).
//!
//! # Endpoints
//!
//! * `POST /v1/chat/completions`: OpenAI Chat Completions, JSON or SSE (`"stream": true`,
//!   honouring `stream_options.include_usage`).
//! * `POST /v1/messages`: Anthropic Messages, JSON or SSE; requires `anthropic-version`.
//!
//! Requests are checked against each API's request shape (required fields, types, roles,
//! tool definitions, and that every tool call is answered by a tool result). A violation is
//! a 400 in the provider's own error shape naming the field, consumes no round, and is
//! recorded as a problem under the request's model key (or `""` when the model is unreadable).
//! A key with no script gets a 404 (`model_not_found` / `not_found_error`); a request past a
//! script's last round gets a 400 naming the key and its round count. Both are problems too.
//!
//! # Scripts
//!
//! ```json
//! {"model": "tc-abc123-turn", "rounds": [
//!   {"toolCalls": [{"name": "get_weather", "arguments": {"city": "Oslo"}}], "text": "Checking."},
//!   {"text": "It is cold.", "delayMs": 50}
//! ]}
//! ```
//!
//! Each request for a key consumes its next round. A round has exactly one kind key —
//! `toolCalls`, `text`, `structured`, `truncated`, `refusal`, `contentFilter`, `error`,
//! `providerTool` — plus the optional modifiers `delayMs` (0..=30000) and `cutAfterChunks`
//! (not on `error` rounds). [`script_schema`] (also `schemas/script.schema.json`) is the
//! JSON Schema; [`Script::from_json`] validates with JSON-pointer errors.
//!
//! Choices where the real APIs leave room:
//!
//! * Generated tool-call ids are `call_<n>` (OpenAI) / `toolu_<n>` (Anthropic) and
//!   provider-tool ids `srvtoolu_<n>`, with `n` counting from 1 across the whole script, so
//!   ids are deterministic and never repeat between rounds.
//! * `cutAfterChunks: n` when streaming sends the first `n` SSE events and drops the
//!   connection; the terminator (`data: [DONE]` / `message_stop`) is never sent, even when
//!   `n` is larger than the answer. Not streaming, the value only marks the round as cut: the
//!   first half of the JSON body is sent (with the full `content-length`) and the connection
//!   is dropped.
//! * Anthropic streams begin `message_start`, `ping`, as the real API does; the ping counts
//!   as an event for `cutAfterChunks`.
//! * `contentFilter` on Chat Completions is `finish_reason: "content_filter"` with `content:
//!   null`; the scripted text is only used by Anthropic (a text block, `stop_reason:
//!   "refusal"`).
//! * `argumentsText` is streamed verbatim on both endpoints. A non-streamed Anthropic
//!   `tool_use` carries `input` as JSON, so there an empty text becomes `{}`, text that parses
//!   becomes that value, and invalid JSON is answered with a 500 `api_error` explaining that
//!   the script cannot express it (recorded as a problem). Script `arguments` that are not an
//!   object are sent as they are (real Anthropic inputs are objects).
//! * `providerTool` answers on Anthropic with `server_tool_use` then a `<name>_tool_result`
//!   block (`web_search_tool_result` for `web_search`); on Chat Completions it is a 400 and a
//!   problem, since provider-executed tools are scripted only for Anthropic Messages.
//! * `usage` numbers are estimates (about four characters per token), deterministic per
//!   request and answer.
//! * Scripted `error` rounds use the provider's error shape for the status (Anthropic:
//!   `rate_limit_error` for 429, `overloaded_error` for 529, `api_error` for other 5xx;
//!   OpenAI: `requests`/`rate_limit_exceeded` for 429, `server_error` for 5xx); 429 adds
//!   `retry-after: 1`. They are answers the test asked for, so they are not problems.
//!
//! # Library use
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use mock_provider::{MockProvider, Script};
//! let provider = MockProvider::start().await?;
//! provider.load(Script::from_json(&serde_json::json!({
//!     "model": "tc-run-1", "rounds": [{"text": "hello"}]
//! }))?)?;
//! // Point the host at provider.base_url(), run it, then:
//! let sent = provider.requests("tc-run-1");
//! assert!(provider.problems("tc-run-1").is_empty());
//! # drop(sent);
//! provider.shutdown().await;
//! # Ok(()) }
//! ```
//!
//! # Standalone server and control API
//!
//! `mock-provider [127.0.0.1:PORT]` (or [`serve_standalone`]) prints
//! `mock-provider listening on http://127.0.0.1:PORT` and serves until ctrl-c. Loopback
//! clients then manage scripts over HTTP:
//!
//! ```text
//! # load (or replace) a script: 201 {"model": "tc-abc123-turn", "rounds": 1}
//! # or 400 {"error": {"message": "...", "pointer": "/rounds/0/text"}}
//! curl -s -X POST http://127.0.0.1:PORT/_toolcert/scripts \
//!      -H 'content-type: application/json' \
//!      -d '{"model": "tc-abc123-turn", "rounds": [{"text": "hi"}]}'
//!
//! # what the host sent: {"model": ..., "requests": [...], "problems": [...]}
//! # (percent-encode a model key containing `/`)
//! curl -s http://127.0.0.1:PORT/_toolcert/scripts/tc-abc123-turn/requests
//!
//! # forget the script and its record: 204
//! curl -s -X DELETE http://127.0.0.1:PORT/_toolcert/scripts/tc-abc123-turn
//! ```

#![deny(missing_docs)]

// Without the default `server` feature only the script model is built (the script, its
// schema, its errors): toolcert's scenario loader checks scripts offline with it and so
// needs no async runtime and no HTTP server.
#[cfg(feature = "server")]
mod anthropic;
#[cfg(feature = "server")]
mod control;
mod error;
#[cfg(feature = "server")]
mod exchange;
#[cfg(feature = "server")]
mod openai;
#[cfg(feature = "server")]
mod record;
#[cfg(feature = "server")]
mod reply;
mod script;
#[cfg(feature = "server")]
mod server;
#[cfg(feature = "server")]
mod shape;
#[cfg(feature = "server")]
mod sse;
#[cfg(feature = "server")]
mod state;

#[cfg(feature = "server")]
pub use control::CONTROL_PREFIX;
pub use error::ScriptError;
#[cfg(feature = "server")]
pub use record::{Endpoint, REDACTED, RecordedRequest};
pub use script::{
    Arguments, ERROR_STATUS_RANGE, MAX_CUT_AFTER_CHUNKS, MAX_DELAY_MS, ProviderTool, Round,
    RoundKind, Script, ToolCall, script_schema,
};
#[cfg(feature = "server")]
pub use server::{MockProvider, router, serve_standalone};
#[cfg(feature = "server")]
pub use state::ProviderState;
