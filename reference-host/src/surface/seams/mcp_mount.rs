//! The MCP mount seam: `POST /conformance/seams/sample/mcp/mount {serverUrl}`
//! (DESC-6).
//!
//! The host's MCP client lists the tools of the server at `serverUrl` (one
//! `tools/list`, at this host's revision) and registers each tool
//! whose name is provider-safe in the catalog with `source: "mcp"`. The host
//! classifies every such tool itself: it has no classification of a foreign
//! server's tools, so each one is `write`, `non-deterministic`, approval
//! `conditional`, and its annotations are derived from that classification.
//! What the server's `annotations` claim (`readOnlyHint`, `destructiveHint`)
//! is never read: a server is not trusted on how dangerous its own tools are
//! (invariant `tool-annotations-untrusted`).
//!
//! The answer is `201 {reached, mounted[], skipped[]}`: `mounted` the tool ids
//! now in the catalog, `skipped` the names that are not provider-safe.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use reqwest::Url;
use serde_json::{Value, json};
use std::sync::Arc;

use crate::base::args_schema::ArgsSchema;
use crate::base::mutant::{Mutant, MutantInfo};
use crate::domain::Domain;
use crate::domain::catalog::{
    Approval, FixtureTool, McpEndpoint, ReplayPolicy, SafetyTier, ToolEndpoint,
};
use crate::domain::error::{ApiError, json_response};
use crate::domain::invoker::JsonExchange;
use crate::domain::json_body::{Fields, parse_object, require_loopback_http};
use crate::surface::seams::extract::SeamRequest;
use crate::turn::mcp;
use crate::turn::negotiation::MINIMUM_REVISION;
use crate::turn::request::is_provider_safe_name;

/// Every member the request may carry (closed).
const FIELDS: &[&str] = &["serverUrl"];

/// Most tools one mount registers (a bound on what a server can make the
/// host hold).
const MAX_TOOLS: usize = 64;

/// Longest accepted description (longer ones are cut).
const MAX_DESCRIPTION_CHARS: usize = 1_024;

/// The mutants planted in this module, gathered by [`crate::surface::mutants::ALL`].
pub const MUTANTS: &[MutantInfo] = &[MutantInfo {
    mutant: Mutant::McpAnnotationsCopied,
    name: "mcp-annotations-copied",
    breaks: "a mounted MCP tool's safetyTier (and so its annotations) is taken from the server's readOnlyHint/destructiveHint",
}];

/// Parses the body: `{serverUrl}`, a loopback http URL.
fn parse(body: &[u8]) -> Result<Url, ApiError> {
    let mut fields = Fields::closed(parse_object(body)?, FIELDS)?;
    let raw = fields.required_string("serverUrl")?;
    require_loopback_http("serverUrl", &raw)
}

/// The host's own classification of a tool of a foreign MCP server: it has
/// none, so the tool is `write` whatever the server claims.
fn classify(annotations: Option<&Value>, mutant: Option<Mutant>) -> SafetyTier {
    // Bug under `mcp-annotations-copied`: the server's hints decide the tier
    // (a read-only or non-destructive claim becomes `read`).
    if mutant == Some(Mutant::McpAnnotationsCopied)
        && let Some(hints) = annotations
        && (hints.get("readOnlyHint") == Some(&json!(true))
            || hints.get("destructiveHint") == Some(&json!(false)))
    {
        return SafetyTier::Read;
    }
    SafetyTier::Write
}

/// One listed tool as a catalog tool, or `None` when its name is not a
/// provider-safe tool id (or its input schema does not compile).
fn mount_tool(server_url: &Url, tool: &Value, mutant: Option<Mutant>) -> Option<FixtureTool> {
    let name = tool.get("name")?.as_str()?;
    if !is_provider_safe_name(name) {
        return None;
    }
    let input_schema = tool
        .get("inputSchema")
        .filter(|s| s.is_object())
        .cloned()
        .unwrap_or_else(|| json!({"type": "object"}));
    let input_validator = ArgsSchema::compile(&input_schema).ok()?;
    let description: String = tool
        .get("description")
        .and_then(Value::as_str)
        .unwrap_or("")
        .chars()
        .take(MAX_DESCRIPTION_CHARS)
        .collect();
    Some(FixtureTool {
        tool_id: name.to_owned(),
        description,
        input_schema,
        input_validator,
        output_schema: None,
        replay_policy: ReplayPolicy::NonDeterministic,
        safety_tier: classify(tool.get("annotations"), mutant),
        required_scopes: Vec::new(),
        approval: Approval::Conditional,
        endpoint: ToolEndpoint::Mcp(McpEndpoint {
            server_url: server_url.clone(),
            name: name.to_owned(),
            mounted: true,
        }),
    })
}

/// Handler for the seam.
pub async fn mount(State(state): State<Domain>, seam: SeamRequest) -> Result<Response, ApiError> {
    let caller = &seam.caller;
    let server_url = parse(&seam.body)?;
    let request =
        json!({"jsonrpc": "2.0", "id": mcp::fresh_id(), "method": "tools/list", "params": {}});
    let exchange = state
        .invoker()
        .post_json_with(
            &server_url,
            &request,
            &[
                ("Accept", "application/json, text/event-stream"),
                ("MCP-Protocol-Version", MINIMUM_REVISION),
            ],
            state.default_tool_timeout(),
        )
        .await;
    let listed: Vec<Value> = match &exchange {
        JsonExchange::Answered {
            status: 200,
            body,
            complete: true,
        } => serde_json::from_slice::<Value>(body)
            .ok()
            .and_then(|v| {
                v.pointer("/result/tools")
                    .and_then(Value::as_array)
                    .cloned()
            })
            .unwrap_or_default(),
        _ => Vec::new(),
    };
    let reached = matches!(exchange, JsonExchange::Answered { .. });
    let mutant = state.mutant();
    let mut mounted = Vec::new();
    let mut skipped = Vec::new();
    let mut tools = Vec::new();
    for tool in listed.iter().take(MAX_TOOLS) {
        match mount_tool(&server_url, tool, mutant) {
            Some(t) => {
                mounted.push(t.tool_id.clone());
                tools.push(Arc::new(t));
            }
            None => skipped.push(tool.get("name").cloned().unwrap_or(Value::Null)),
        }
    }
    // CAT-2: the mounted tools belong to the caller's tenant.
    state.catalog().register(&caller.tenant, &tools);
    Ok(json_response(
        StatusCode::CREATED,
        &json!({"reached": reached, "mounted": mounted, "skipped": skipped}),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url() -> Url {
        Url::parse("http://127.0.0.1:9/mcp/a").expect("url")
    }

    #[test]
    fn a_read_only_claim_is_still_write() {
        let tool = json!({"name": "t", "annotations": {"readOnlyHint": true}});
        let mounted = mount_tool(&url(), &tool, None).expect("mounts");
        assert_eq!(mounted.safety_tier, SafetyTier::Write);
        let d = mounted.descriptor(None);
        assert_eq!(d.source, "mcp");
        assert!(!d.annotations.read_only_hint);
        assert!(d.annotations.destructive_hint);
        let copied = mount_tool(&url(), &tool, Some(Mutant::McpAnnotationsCopied)).expect("mounts");
        assert_eq!(copied.safety_tier, SafetyTier::Read);
    }

    #[test]
    fn unsafe_names_and_bad_bodies_are_refused() {
        assert!(mount_tool(&url(), &json!({"name": "a b"}), None).is_none());
        assert!(mount_tool(&url(), &json!({}), None).is_none());
        assert!(parse(br#"{"serverUrl": "http://127.0.0.1:1/mcp"}"#).is_ok());
        assert!(parse(br#"{"serverUrl": "http://example.com/mcp"}"#).is_err());
        assert!(parse(br#"{"serverUrl": "http://127.0.0.1:1/", "x": 1}"#).is_err());
    }
}
