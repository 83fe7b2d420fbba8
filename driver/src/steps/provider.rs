//! `provider`: load a script into toolcert's mock model provider for this scenario.
//!
//! The script's key is the model name `tc-<nonce>-<step name>`, so no two scenarios (or two
//! runs against a stateful host) ever share a script. The host is told the key through the
//! turn seam (`{{providers.<name>.model}}`, `{{provider.baseUrl}}`).

use serde_json::{Value, json};

use super::ctx::ScenarioCtx;
use toolcert_core::observation::{Context, NotObserved, Observation, ProviderObservation};
use toolcert_core::suite::ProviderScript;

pub(super) fn run(
    ctx: &mut ScenarioCtx<'_>,
    spec: &ProviderScript,
) -> Observation<ProviderObservation> {
    let model = format!("tc-{}-{}", ctx.nonce, spec.name);
    let rounds = match ctx.render(&Value::Array(spec.rounds.clone())) {
        Ok(r) => r,
        Err(e) => return ctx.template_failure(&e).into(),
    };
    let script = json!({"model": model, "rounds": rounds});
    let loaded = mock_provider::Script::from_json(&script).and_then(|s| ctx.provider.load(s));
    if let Err(e) = loaded {
        return NotObserved::error(format!("scenario data: provider script {}: {e}", spec.name))
            .into();
    }
    ctx.providers.push((spec.name.clone(), model.clone()));
    Observation::Made(ProviderObservation {
        model,
        count: 0,
        requests: Vec::new(),
        problems: Vec::new(),
    })
}

/// The observation of a provider script after the scenario ran: every request the host
/// sent for its key, normalized so checks read both wire formats the same way.
pub(super) fn observe(
    provider: &mock_provider::MockProvider,
    model: &str,
) -> Observation<ProviderObservation> {
    let requests: Vec<Value> = provider
        .requests(model)
        .into_iter()
        .map(|r| normalize(&serde_json::to_value(r).unwrap_or(Value::Null)))
        .collect();
    let seen = ProviderObservation {
        model: model.to_string(),
        count: requests.len(),
        requests,
        problems: provider.problems(model),
    };
    if seen.problems.is_empty() {
        return Observation::Made(seen);
    }
    // A malformed request, or one the script has no round for, is the host's doing: every
    // check that reads this provider fails with what the provider saw, kept beside the reason.
    NotObserved::fail(format!(
        "the mock provider recorded: {}",
        seen.problems.join("; ")
    ))
    .with(Context::Provider(Box::new(seen)))
    .into()
}

/// Add wire-independent views to a recorded request: `toolResults` (`{toolCallId, text,
/// isError}`), `toolNames` offered, `responseFormat`, and `text` (all system/user text).
pub fn normalize(recorded: &Value) -> Value {
    let mut out = recorded.clone();
    let body = &recorded["body"];
    let anthropic = recorded["endpoint"] == "anthropic-messages";
    let mut tool_results = Vec::new();
    let mut texts: Vec<String> = Vec::new();
    if let Some(system) = body.get("system") {
        texts.push(text_of(system));
    }
    for message in body["messages"].as_array().into_iter().flatten() {
        let role = message["role"].as_str().unwrap_or("");
        if !anthropic && role == "tool" {
            let text = text_of(&message["content"]);
            tool_results.push(json!({
                "toolCallId": message["tool_call_id"],
                "isError": parsed_flag(&text),
                "text": text,
            }));
            continue;
        }
        if anthropic {
            for block in message["content"].as_array().into_iter().flatten() {
                if block["type"] == "tool_result" {
                    let text = text_of(&block["content"]);
                    let flag = block
                        .get("is_error")
                        .cloned()
                        .unwrap_or_else(|| parsed_flag(&text));
                    tool_results.push(
                        json!({"toolCallId": block["tool_use_id"], "isError": flag, "text": text}),
                    );
                }
            }
        }
        if matches!(role, "system" | "developer" | "user") {
            texts.push(text_of(&message["content"]));
        }
    }
    let tool_names: Vec<Value> = body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|t| {
            t.pointer("/function/name")
                .or_else(|| t.get("name"))
                .cloned()
                .unwrap_or(Value::Null)
        })
        .collect();
    out["toolResults"] = Value::Array(tool_results);
    out["toolNames"] = Value::Array(tool_names);
    out["responseFormat"] = body
        .pointer("/response_format/type")
        .cloned()
        .unwrap_or(Value::Null);
    out["text"] = json!(texts.join("\n"));
    out
}

/// Text of a message `content`: a string, or the `text` of its text blocks.
fn text_of(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// `isError` of a tool result whose text is an MCP CallToolResult, else `null`.
fn parsed_flag(text: &str) -> Value {
    toolcert_base::canonical::parse_strict(text)
        .ok()
        .and_then(|v| v.get("isError").cloned())
        .unwrap_or(Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_malformed_request_from_the_host_fails_every_check_that_reads_the_provider() {
        let provider = mock_provider::MockProvider::start().await.unwrap();
        let script =
            mock_provider::Script::from_json(&json!({"model": "k", "rounds": [{"text": "hi"}]}))
                .unwrap();
        provider.load(script).unwrap();
        // The "host" forgets the required `messages`.
        let http = reqwest::Client::builder().no_proxy().build().unwrap();
        let answer = http
            .post(format!("{}/v1/chat/completions", provider.base_url()))
            .json(&json!({"model": "k"}))
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status().as_u16(), 400);
        let Observation::NotMade(not_made) = observe(&provider, "k") else {
            panic!("a malformed request is not an observation");
        };
        assert_eq!(not_made.state, toolcert_core::observation::Unobserved::Fail);
        assert!(not_made.reason.contains("messages"), "{}", not_made.reason);
    }

    #[test]
    fn tool_results_read_the_same_on_both_wires() {
        let openai = json!({"endpoint": "openai-chat", "body": {"messages": [
            {"role": "system", "content": "sys"},
            {"role": "user", "content": "do it"},
            {"role": "assistant", "tool_calls": [{"id": "c1"}]},
            {"role": "tool", "tool_call_id": "c1", "content": "{\"isError\": true, \"content\": []}"}
        ], "tools": [{"type": "function", "function": {"name": "t1"}}], "response_format": {"type": "json_schema"}}});
        let n = normalize(&openai);
        assert_eq!(n["toolResults"][0]["isError"], true);
        assert_eq!(n["toolResults"][0]["toolCallId"], "c1");
        assert_eq!(n["toolNames"], json!(["t1"]));
        assert_eq!(n["responseFormat"], "json_schema");
        assert_eq!(n["text"], "sys\ndo it");

        let anthropic = json!({"endpoint": "anthropic-messages", "body": {"system": "sys", "messages": [
            {"role": "user", "content": "do it"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t1"}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "is_error": true, "content": "{\"isError\": true}"}]}
        ], "tools": [{"name": "t1", "input_schema": {}}]}});
        let n = normalize(&anthropic);
        assert_eq!(n["toolResults"][0]["isError"], true);
        assert_eq!(n["toolResults"][0]["toolCallId"], "t1");
        assert_eq!(n["toolNames"], json!(["t1"]));
        assert_eq!(n["responseFormat"], Value::Null);
    }
}
