//! A gated `tools/call` (mcp-facts §4.7, §4.5.3, §4.5.4).
//!
//! Order: the gate (§4.4) on one connection; the arguments (an absent body is `{}`) checked
//! against the reviewed `inputSchema` and the reviewed input channels, before anything is
//! sent; declared outputs require a reviewed `outputSchema`; a barrier (ping) then proves no
//! `list_changed` arrived since the comparison (one did: no dispatch); the call itself on the
//! same connection. A `list_changed` seen while the call was in flight, or a call that timed
//! out, makes the outcome `indeterminate`: the side effect may have happened, the result is
//! not exposed, and nothing is retried. A JSON-RPC error and an `isError: true` result both
//! fail. Only `structuredContent` that validates against the reviewed `outputSchema` becomes
//! the body; content blocks and `_meta` are diagnostics (their kinds only), and JSON-looking
//! text is never parsed.
//!
//! No atomicity between the gate's `tools/list` and the `tools/call` is claimed (§4.5.5): the
//! barrier only proves that nothing the server sent before answering it was missed. A server
//! that changes its catalog without notifying, after the barrier, is the residual race; the
//! report's gate evidence (pages read, notifications ignored in a settle window, server
//! requests) is what a later proposal can weigh.
//!
//! Schemas are compiled with format assertions on for every draft (set explicitly, §6.4):
//! a reviewed `format` is enforced, which is stricter than a 2020-12 server may be, and
//! fails closed. The crate's remote and file `$ref` resolvers are compiled out, so a schema
//! that needs one fails to compile and the call fails before dispatch.

use std::path::Path;

use serde::Serialize;
use serde_json::{Value, json};

use super::client::ClientError;
use super::gate::{self, Evidence, GateOptions, Refusal};
use super::transport::Endpoint;
use toolcert_base::redact::Redactor;

/// How a gated call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    /// The call succeeded; `body` holds the validated `structuredContent`, if any.
    Ok,
    /// The gate refused; nothing was dispatched.
    Refused,
    /// Refused before dispatch by a call rule (arguments, outputs, list_changed after the gate).
    NotDispatched,
    /// Dispatched and failed (protocol error, `isError`, output contract).
    Failed,
    /// Dispatched, but the binding was invalidated or the answer never came: the side effect
    /// may have happened; never retried.
    Indeterminate,
}

/// The report of one gated call.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CallReport {
    /// How it ended.
    pub outcome: Outcome,
    /// The rule that decided a non-`ok` outcome.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rule: Option<String>,
    /// Why.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The gate's refusal, when it refused.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refusal: Option<Refusal>,
    /// The validated `structuredContent` (only on `ok`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub body: Option<Value>,
    /// Diagnostics: the kinds of content blocks, whether `_meta` was present; never values.
    pub diagnostics: Value,
    /// Gate evidence.
    pub gate: Evidence,
    /// Microseconds from the gate's pass to dispatch (argument validation, the barrier).
    pub pre_dispatch_us: u64,
    /// The reviewed input channels and output value contracts (§4.9; value-free).
    #[serde(skip_serializing_if = "Value::is_null")]
    pub content_trust: Value,
}

/// What to call with.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CallOptions {
    /// The arguments (`None`: an absent body, sent as `{}`).
    pub arguments: Option<Value>,
    /// The operation declares outputs: an `outputSchema` and conforming
    /// `structuredContent` are required (§4.7.4).
    pub expect_output: bool,
    /// The secrets of this run (the server's `--env` values, the authorization credential):
    /// scrubbed from every server text shown (a JSON-RPC error message, `isError` text).
    pub secrets: Vec<String>,
}

fn report(outcome: Outcome, rule: &str, message: impl Into<String>, gate: Evidence) -> CallReport {
    CallReport {
        outcome,
        rule: Some(rule.to_string()),
        message: Some(message.into()),
        refusal: None,
        body: None,
        diagnostics: json!({}),
        gate,
        pre_dispatch_us: 0,
        content_trust: Value::Null,
    }
}

/// Compile a reviewed schema (formats asserted, no resolvers).
fn compile(schema: &Value) -> Result<jsonschema::Validator, String> {
    jsonschema::options()
        .should_validate_formats(true)
        .build(schema)
        .map_err(|e| e.to_string())
}

/// The first few violations of `value` against `validator`, as `pointer: message`.
fn violations(validator: &jsonschema::Validator, value: &Value) -> Vec<String> {
    validator
        .iter_errors(value)
        .take(5)
        .map(|e| {
            format!(
                "{}: {}",
                e.instance_path(),
                e.to_string().chars().take(200).collect::<String>()
            )
        })
        .collect()
}

/// Every argument must fall under a classified input channel (§4.9.1: an unclassified
/// bound path fails closed).
fn unclassified(arguments: &Value, review: &Value) -> Option<String> {
    let channels = review.get("inputChannels").and_then(Value::as_object)?;
    arguments.as_object()?.keys().find_map(|k| {
        let p = format!("/{}", toolcert_base::canonical::pointer_token(k));
        let covered = channels
            .keys()
            .any(|c| c == &p || c.starts_with(&format!("{p}/")));
        (!covered).then_some(p)
    })
}

/// The most characters of a server's error text a diagnostic shows.
pub const MAX_DIAGNOSTIC_TEXT: usize = 500;

/// A result's diagnostics (§4.7.6): the kinds of its content blocks, whether `_meta` was
/// present, and, for an `isError` result, the text of its text blocks (cut, and scrubbed of
/// the run's secrets): the error content is diagnostic only, so it is shown, never used.
pub fn diagnostics(result: &Value, redactor: &Redactor) -> Value {
    let blocks = result
        .get("content")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    let kinds: Vec<Value> = blocks
        .iter()
        .map(|b| b.get("type").cloned().unwrap_or(json!("?")))
        .collect();
    let mut d = json!({"contentBlocks": kinds, "meta": result.get("_meta").is_some()});
    if result.get("isError") == Some(&Value::Bool(true)) {
        let text: String = blocks
            .iter()
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join(" ")
            .chars()
            .take(MAX_DIAGNOSTIC_TEXT)
            .collect();
        d["errorText"] = json!(redactor.text(&text));
    }
    d
}

/// A rule and why a call was not dispatched or failed.
pub type Verdict = (&'static str, String);

/// A reviewed Tool's schemas, compiled once (the guard keeps them per tool).
#[derive(Debug)]
pub struct Contract {
    /// The reviewed `inputSchema`.
    pub input: jsonschema::Validator,
    /// The reviewed `outputSchema`, when there is one.
    pub output: Option<jsonschema::Validator>,
}

/// Compile a reviewed Tool's schemas (§4.7.1, §4.7.4); declared outputs need an
/// `outputSchema`.
pub fn contract(tool: &Value, expect_output: bool) -> Result<Contract, Verdict> {
    let input = compile(tool.get("inputSchema").unwrap_or(&Value::Null)).map_err(|e| {
        (
            "4.7.1-input-schema",
            format!("the reviewed inputSchema cannot be used to validate: {e}"),
        )
    })?;
    let output = match tool.get("outputSchema") {
        None if expect_output => {
            return Err((
                "4.7.4-output-schema",
                "the operation declares outputs but the reviewed Tool has no outputSchema".into(),
            ));
        }
        None => None,
        Some(s) => Some(compile(s).map_err(|e| {
            (
                "4.7.4-output-schema",
                format!("the reviewed outputSchema cannot be used to validate: {e}"),
            )
        })?),
    };
    Ok(Contract { input, output })
}

/// The call rules before dispatch (§4.7.1, §4.9.1, §4.7.4): the arguments are an object that
/// conforms to the reviewed `inputSchema` and falls under the reviewed channels; declared
/// outputs need a reviewed `outputSchema`. The compiled `outputSchema` when there is one.
pub fn before_dispatch(
    tool: &Value,
    review: &Value,
    arguments: &Value,
    expect_output: bool,
) -> Result<Option<jsonschema::Validator>, Verdict> {
    if !arguments.is_object() {
        return Err((
            "4.7.1-arguments",
            "the arguments must be a JSON object".into(),
        ));
    }
    let c = contract(tool, expect_output)?;
    check_arguments(&c, review, arguments)?;
    Ok(c.output)
}

/// The arguments against a compiled [`Contract`] and the reviewed channels (§4.7.1, §4.9.1).
pub fn check_arguments(c: &Contract, review: &Value, arguments: &Value) -> Result<(), Verdict> {
    if !arguments.is_object() {
        return Err((
            "4.7.1-arguments",
            "the arguments must be a JSON object".into(),
        ));
    }
    let bad = violations(&c.input, arguments);
    if !bad.is_empty() {
        return Err((
            "4.7.1-arguments",
            format!(
                "the arguments do not conform to the reviewed inputSchema: {}",
                bad.join("; ")
            ),
        ));
    }
    if let Some(p) = unclassified(arguments, review) {
        return Err((
            "4.9.1-input-channels",
            format!("argument {p} is not a reviewed input channel"),
        ));
    }
    Ok(())
}

/// The result rules (§4.7.3 to §4.7.5): `isError` fails; with a reviewed `outputSchema`,
/// `structuredContent` must be present and conform; the body is that `structuredContent`
/// (without an `outputSchema` nothing crosses the boundary).
pub fn judge_result(
    result: &Value,
    output: Option<&jsonschema::Validator>,
) -> Result<Option<Value>, Verdict> {
    if result.get("isError") == Some(&Value::Bool(true)) {
        return Err((
            "4.7.3-is-error",
            "the tool answered isError: true (its content is diagnostic only)".into(),
        ));
    }
    let Some(v) = output else {
        return Ok(None);
    };
    let Some(s) = result.get("structuredContent") else {
        return Err((
            "4.7.4-structured-content",
            "the reviewed Tool has an outputSchema but the result has no structuredContent (text blocks are never parsed instead)".into(),
        ));
    };
    let bad = violations(v, s);
    if !s.is_object() || !bad.is_empty() {
        return Err((
            "4.7.4-structured-content",
            format!(
                "structuredContent does not conform to the reviewed outputSchema: {}",
                if bad.is_empty() {
                    "not an object".to_string()
                } else {
                    bad.join("; ")
                }
            ),
        ));
    }
    Ok(Some(s.clone()))
}

/// Gate, validate, call, judge.
pub async fn call(
    manifest: &Path,
    endpoint: &Endpoint,
    gopts: &GateOptions,
    copts: &CallOptions,
) -> CallReport {
    let redactor = Redactor::new(copts.secrets.clone(), Vec::new());
    let passed = match gate::gate(manifest, endpoint, gopts).await {
        Ok(p) => p,
        Err(r) => {
            let mut refusal = r.refusal;
            refusal.message = redactor.text(&refusal.message).into_owned();
            return CallReport {
                outcome: Outcome::Refused,
                rule: Some(refusal.rule.id().to_string()),
                message: Some(refusal.message.clone()),
                refusal: Some(refusal),
                body: None,
                diagnostics: json!({}),
                gate: r.evidence,
                pre_dispatch_us: 0,
                content_trust: Value::Null,
            };
        }
    };
    let gate::Passed {
        mut client,
        pinned,
        tool,
        review,
        list_changed_mark,
        evidence,
    } = passed;
    let (mut out, invalidated) = dispatch(
        &mut client,
        &tool,
        &review,
        list_changed_mark,
        evidence,
        gopts,
        copts,
        &redactor,
    )
    .await;
    client.close().await;
    // A list_changed after the comparison invalidates the binding (§4.5.3, §4.5.4), for every
    // later call too.
    if invalidated && gopts.record {
        let rule = out.rule.clone().unwrap_or_default();
        out.gate.record_error = pinned.record(&rule, false, out.message.as_deref().unwrap_or(""));
    }
    out.content_trust = super::trust::contracts(&tool, &review);
    out
}

#[allow(clippy::too_many_arguments)]
async fn dispatch(
    client: &mut super::client::Client,
    tool: &Value,
    review: &Value,
    mark: u64,
    evidence: Evidence,
    gopts: &GateOptions,
    copts: &CallOptions,
    redactor: &Redactor,
) -> (CallReport, bool) {
    let started = std::time::Instant::now();
    let arguments = copts.arguments.clone().unwrap_or_else(|| json!({}));
    let output = match before_dispatch(tool, review, &arguments, copts.expect_output) {
        Ok(o) => o,
        Err((rule, message)) => {
            return (
                report(Outcome::NotDispatched, rule, message, evidence),
                false,
            );
        }
    };
    // The barrier makes any list_changed the server sent after the comparison visible now.
    if let Err(e) = client.barrier().await {
        let rule = if gate::is_session_expired(&e) {
            "4.4.3-session-expired"
        } else {
            "4.4.3-connect"
        };
        return (
            report(
                Outcome::NotDispatched,
                rule,
                redactor.text(&e.to_string()),
                evidence,
            ),
            false,
        );
    }
    if client.list_changed_seq() > mark {
        return (
            report(
                Outcome::NotDispatched,
                "4.5.3-list-changed-before-dispatch",
                "notifications/tools/list_changed arrived after the gate's comparison: the binding is invalidated and the call was not dispatched",
                evidence,
            ),
            true,
        );
    }
    let pre_dispatch_us = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
    let before_requests = client.server_requests().len();
    let name = gopts.tool.as_str();
    let result = client.call_tool(name, &arguments).await;
    let in_flight_change = client.list_changed_seq() > mark;
    let excluded: Vec<String> = client.server_requests()
        [before_requests.min(client.server_requests().len())..]
        .iter()
        .filter(|r| r.excluded)
        .map(|r| r.method.clone())
        .collect();
    // Server text (a JSON-RPC error message) is shown scrubbed of the run's secrets.
    let said = |e: &ClientError| redactor.text(&e.to_string()).into_owned();
    let result = match result {
        Err(ClientError::Timeout { after, .. }) => {
            return (
                report(
                    Outcome::Indeterminate,
                    "4.5.4-indeterminate",
                    format!(
                        "no answer to tools/call within {after:?}: the side effect may have happened; not retried"
                    ),
                    evidence,
                ),
                in_flight_change,
            );
        }
        // HTTP 404 for the session: MCP has the server answer 404, without processing it,
        // to every request in a session it ended. Failed, with its own rule; not retried in
        // a new session (that would start without this session's list_changed record).
        Err(e) if gate::is_session_expired(&e) => {
            return (
                report(
                    Outcome::Failed,
                    "4.4.3-session-expired",
                    format!(
                        "the server answered tools/call with HTTP 404 for its session ({}); per MCP the request was not processed; not retried",
                        said(&e)
                    ),
                    evidence,
                ),
                false,
            );
        }
        Err(e @ ClientError::Transport(_)) => {
            return (
                report(
                    Outcome::Indeterminate,
                    "4.5.4-indeterminate",
                    format!(
                        "the connection failed during the call ({}): the side effect may have happened; not retried",
                        said(&e)
                    ),
                    evidence,
                ),
                in_flight_change,
            );
        }
        Err(e) if in_flight_change => {
            return (
                report(
                    Outcome::Indeterminate,
                    "4.5.4-indeterminate",
                    format!("list_changed during the call, then: {}", said(&e)),
                    evidence,
                ),
                true,
            );
        }
        Err(e) => {
            return (
                report(Outcome::Failed, "4.7.3-protocol-error", said(&e), evidence),
                false,
            );
        }
        Ok(r) => r,
    };
    let diag = diagnostics(&result, redactor);
    let with_diag = |mut r: CallReport| {
        r.diagnostics = diag.clone();
        r
    };
    if in_flight_change {
        return (
            with_diag(report(
                Outcome::Indeterminate,
                "4.5.4-indeterminate",
                "notifications/tools/list_changed arrived during the call: the binding is invalidated, the result is not exposed, the side effect may have happened; not retried",
                evidence,
            )),
            true,
        );
    }
    if !excluded.is_empty() {
        return (
            with_diag(report(
                Outcome::Failed,
                "4.8.2-excluded-request",
                format!(
                    "the server sent excluded requests during the call ({}); they were refused",
                    excluded.join(", ")
                ),
                evidence,
            )),
            false,
        );
    }
    let body = match judge_result(&result, output.as_ref()) {
        Ok(b) => b,
        Err((rule, message)) => {
            return (
                with_diag(report(Outcome::Failed, rule, message, evidence)),
                false,
            );
        }
    };
    (
        CallReport {
            outcome: Outcome::Ok,
            rule: None,
            message: None,
            refusal: None,
            body,
            diagnostics: diag,
            gate: evidence,
            pre_dispatch_us,
            content_trust: Value::Null,
        },
        false,
    )
}
