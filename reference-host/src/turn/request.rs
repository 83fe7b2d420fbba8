//! The request body of `POST /conformance/seams/sample/turn/run`
//! (schemas/seams/turn-run.request.schema.json).
//!
//! The shape is closed at every level: unknown members, `null` values and
//! wrong types are a 400 naming the member by its full path
//! (`tools[0].toolId`). Schemas are compiled and URLs checked here, so a
//! request that passes can no longer be refused and no half-made run is
//! ever left behind.

use std::collections::HashSet;
use std::sync::Arc;

use serde_json::{Map, Value};

use crate::args_schema::ArgsSchema;
use crate::catalog::{Approval, FixtureTool, ReplayPolicy, SafetyTier};
use crate::error::ApiError;
use crate::json_body::{Fields, kind, parse_object};
use crate::seams::request::require_loopback_http;
use crate::turn::channels::OutputMode;
use crate::turn::provider::{ProviderSpec, Wire};

const FIELDS: &[&str] = &[
    "principal",
    "provider",
    "tools",
    "input",
    "output",
    "limits",
];
const PROVIDER_FIELDS: &[&str] = &["wire", "baseUrl", "model", "stream"];
const TOOL_FIELDS: &[&str] = &[
    "toolId",
    "description",
    "inputSchema",
    "outputSchema",
    "replayPolicy",
    "safetyTier",
    "requiredScopes",
    "approval",
    "receiverUrl",
];
const OUTPUT_FIELDS: &[&str] = &["mode", "schema"];
const LIMITS_FIELDS: &[&str] = &["modelRounds", "repeatedCall"];

/// Model rounds when `limits.modelRounds` is absent.
pub const DEFAULT_MODEL_ROUNDS: u32 = 8;

/// Largest accepted `limits.modelRounds`.
pub const MAX_MODEL_ROUNDS: u32 = 32;

/// Longest accepted tool id (provider function names are capped at 64).
pub const MAX_TOOL_ID_LEN: usize = 64;

/// What to do with a call identical to one already executed in the run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum RepeatedCall {
    /// Do not dispatch it again; feed back the earlier result.
    #[default]
    Suppress,
    /// Dispatch it like any other call.
    Allow,
}

/// The run's loop limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TurnLimits {
    /// Most provider requests the run may make.
    pub model_rounds: u32,
    /// Repeated-call policy.
    pub repeated_call: RepeatedCall,
}

impl Default for TurnLimits {
    fn default() -> Self {
        Self {
            model_rounds: DEFAULT_MODEL_ROUNDS,
            repeated_call: RepeatedCall::Suppress,
        }
    }
}

/// The requested structured answer.
#[derive(Debug, Clone)]
pub struct OutputSpec {
    /// How the answer is requested.
    pub mode: OutputMode,
    /// The answer's JSON Schema as given.
    pub schema: Value,
    /// The compiled schema.
    pub validator: Arc<ArgsSchema>,
}

/// A parsed, fully checked turn request.
#[derive(Debug, Clone)]
pub struct TurnRunRequest {
    /// The principal the run (and every tool call) is attributed to.
    pub principal: String,
    /// The model provider.
    pub provider: ProviderSpec,
    /// The run-scoped fixture tools.
    pub tools: Vec<Arc<FixtureTool>>,
    /// The user's task text.
    pub input: String,
    /// The requested structured answer, if any.
    pub output: Option<OutputSpec>,
    /// Loop limits.
    pub limits: TurnLimits,
}

impl TurnRunRequest {
    /// Parses and checks the body; every problem is a 400 naming the field.
    pub fn parse(body: &[u8]) -> Result<Self, ApiError> {
        let mut fields = Fields::closed(parse_object(body)?, FIELDS)?;
        let principal = fields.required_string("principal")?;
        let provider = parse_provider(fields.required_object("provider")?)?;
        let tools = parse_tools(fields.optional_array("tools")?.unwrap_or_default())?;
        let input = fields.required_string("input")?;
        let output = fields
            .optional_object("output")?
            .map(parse_output)
            .transpose()?;
        let limits = fields
            .optional_object("limits")?
            .map(parse_limits)
            .transpose()?
            .unwrap_or_default();
        Ok(Self {
            principal,
            provider,
            tools,
            input,
            output,
            limits,
        })
    }
}

fn parse_provider(map: Map<String, Value>) -> Result<ProviderSpec, ApiError> {
    let mut fields = Fields::closed_at("provider", map, PROVIDER_FIELDS)?;
    let wire = fields.required_enum("wire", Wire::NAMES)?;
    let base_url = fields.required_string("baseUrl")?;
    let base_url = require_loopback_http(&fields.name("baseUrl"), &base_url)?;
    let model = fields.required_string("model")?;
    let stream = fields.optional_bool("stream")?.unwrap_or(false);
    Ok(ProviderSpec {
        // `required_enum` only returns listed names, which all parse.
        wire: Wire::parse(wire).unwrap_or(Wire::OpenAiChat),
        base_url,
        model,
        stream,
    })
}

fn parse_tools(items: Vec<Value>) -> Result<Vec<Arc<FixtureTool>>, ApiError> {
    let mut seen = HashSet::new();
    let mut tools = Vec::with_capacity(items.len());
    for (index, item) in items.into_iter().enumerate() {
        let path = format!("tools[{index}]");
        let Value::Object(map) = item else {
            return Err(ApiError::validation(format!(
                "field `{path}` must be an object, got {}",
                kind(&item)
            )));
        };
        let tool = parse_tool(&path, map)?;
        if !seen.insert(tool.tool_id.clone()) {
            return Err(ApiError::validation(format!(
                "field `{path}.toolId` repeats an earlier tool id; tool ids must be unique within a run"
            )));
        }
        tools.push(Arc::new(tool));
    }
    Ok(tools)
}

fn parse_tool(path: &str, map: Map<String, Value>) -> Result<FixtureTool, ApiError> {
    let mut fields = Fields::closed_at(path, map, TOOL_FIELDS)?;
    let tool_id = fields.required_string("toolId")?;
    if !is_provider_safe_name(&tool_id) {
        return Err(ApiError::validation(format!(
            "field `{}` must match ^[A-Za-z0-9_-]{{1,{MAX_TOOL_ID_LEN}}}$ (a name every provider accepts)",
            fields.name("toolId")
        )));
    }
    let description = fields.required_string("description")?;
    let input_schema = Value::Object(fields.required_object("inputSchema")?);
    let input_validator = compile(&fields.name("inputSchema"), &input_schema)?;
    let output_schema = fields.optional_object("outputSchema")?.map(Value::Object);
    if let Some(schema) = &output_schema {
        compile(&fields.name("outputSchema"), schema)?;
    }
    // The `*_enum` accessors only return listed names, which all parse.
    let replay_policy =
        ReplayPolicy::parse(fields.required_enum("replayPolicy", ReplayPolicy::NAMES)?)
            .unwrap_or(ReplayPolicy::NonDeterministic);
    let safety_tier = SafetyTier::parse(fields.required_enum("safetyTier", SafetyTier::NAMES)?)
        .unwrap_or(SafetyTier::Exec);
    let required_scopes = fields
        .optional_string_array("requiredScopes")?
        .unwrap_or_default();
    let approval = fields
        .optional_enum("approval", Approval::NAMES)?
        .and_then(Approval::parse)
        .unwrap_or_default();
    let receiver_url = fields.required_string("receiverUrl")?;
    let receiver_url = require_loopback_http(&fields.name("receiverUrl"), &receiver_url)?;
    Ok(FixtureTool {
        tool_id,
        description,
        input_schema,
        input_validator,
        output_schema,
        replay_policy,
        safety_tier,
        required_scopes,
        approval,
        receiver_url,
    })
}

fn parse_output(map: Map<String, Value>) -> Result<OutputSpec, ApiError> {
    let mut fields = Fields::closed_at("output", map, OUTPUT_FIELDS)?;
    let mode = OutputMode::parse(fields.required_enum("mode", OutputMode::NAMES)?)
        .unwrap_or(OutputMode::Prompted);
    let schema = Value::Object(fields.required_object("schema")?);
    let validator = Arc::new(compile(&fields.name("schema"), &schema)?);
    Ok(OutputSpec {
        mode,
        schema,
        validator,
    })
}

fn parse_limits(map: Map<String, Value>) -> Result<TurnLimits, ApiError> {
    let mut fields = Fields::closed_at("limits", map, LIMITS_FIELDS)?;
    let model_rounds = fields
        .optional_int_in("modelRounds", 1, u64::from(MAX_MODEL_ROUNDS))?
        .and_then(|n| u32::try_from(n).ok())
        .unwrap_or(DEFAULT_MODEL_ROUNDS);
    let repeated_call = match fields.optional_enum("repeatedCall", &["suppress", "allow"])? {
        Some("allow") => RepeatedCall::Allow,
        _ => RepeatedCall::Suppress,
    };
    Ok(TurnLimits {
        model_rounds,
        repeated_call,
    })
}

/// Compiles a schema; failure is a 400 naming `field`.
fn compile(field: &str, schema: &Value) -> Result<ArgsSchema, ApiError> {
    ArgsSchema::compile(schema).map_err(|_| {
        ApiError::validation(format!(
            "field `{field}` is not a valid JSON Schema; send a schema that compiles (remote $refs are not fetched)"
        ))
    })
}

/// `^[A-Za-z0-9_-]{1,64}$`: the names OpenAI and Anthropic both accept.
pub fn is_provider_safe_name(name: &str) -> bool {
    (1..=MAX_TOOL_ID_LEN).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(id: &str) -> Value {
        json!({
            "toolId": id, "description": "writes", "inputSchema": {"type": "object"},
            "replayPolicy": "idempotent", "safetyTier": "write",
            "receiverUrl": "http://127.0.0.1:9/ok"
        })
    }

    fn minimal() -> Value {
        json!({
            "principal": "alice",
            "provider": {"wire": "openai-chat", "baseUrl": "http://127.0.0.1:9", "model": "tc-1"},
            "input": "do it"
        })
    }

    fn parse(value: &Value) -> Result<TurnRunRequest, ApiError> {
        TurnRunRequest::parse(value.to_string().as_bytes())
    }

    #[test]
    fn minimal_request_gets_defaults() {
        let request = parse(&minimal()).expect("valid");
        assert!(request.tools.is_empty());
        assert!(!request.provider.stream);
        assert!(request.output.is_none());
        assert_eq!(request.limits, TurnLimits::default());
        assert_eq!(request.limits.model_rounds, 8);
    }

    #[test]
    fn full_request_parses() {
        let mut body = minimal();
        body["provider"]["stream"] = json!(true);
        body["provider"]["wire"] = json!("anthropic-messages");
        let mut t = tool("fixture_write_ab12");
        t["requiredScopes"] = json!(["tools:write"]);
        t["approval"] = json!("always");
        t["outputSchema"] = json!({"type": "object"});
        body["tools"] = json!([t, tool("other-1")]);
        body["output"] = json!({"mode": "structured", "schema": {"type": "object"}});
        body["limits"] = json!({"modelRounds": 32, "repeatedCall": "allow"});
        let request = parse(&body).expect("valid");
        assert_eq!(request.provider.wire, Wire::AnthropicMessages);
        assert_eq!(request.tools.len(), 2);
        assert_eq!(request.tools[0].approval, Approval::Always);
        assert_eq!(request.tools[0].required_scopes, ["tools:write"]);
        assert_eq!(request.limits.repeated_call, RepeatedCall::Allow);
        assert_eq!(request.limits.model_rounds, 32);
        assert_eq!(
            request.output.as_ref().map(|o| o.mode),
            Some(OutputMode::Structured)
        );
    }

    #[test]
    fn problems_name_the_field_by_full_path() {
        /// An edit that breaks the minimal body in one place.
        type Edit = Box<dyn Fn(&mut Value)>;
        let cases: Vec<(Edit, &str)> = vec![
            (Box::new(|b| b["extra"] = json!(1)), "extra"),
            (
                Box::new(|b| b["provider"]["wire"] = json!("grpc")),
                "provider.wire",
            ),
            (
                Box::new(|b| b["provider"]["baseUrl"] = json!("http://example.com")),
                "provider.baseUrl",
            ),
            (
                Box::new(|b| b["provider"]["stream"] = json!("yes")),
                "provider.stream",
            ),
            (Box::new(|b| b["provider"]["x"] = json!(1)), "provider.x"),
            (Box::new(|b| b["tools"] = json!({})), "tools"),
            (Box::new(|b| b["tools"] = json!([1])), "tools[0]"),
            (
                Box::new(|b| b["tools"] = json!([tool("bad name")])),
                "tools[0].toolId",
            ),
            (
                Box::new(|b| b["tools"] = json!([tool(&"x".repeat(65))])),
                "tools[0].toolId",
            ),
            (
                Box::new(|b| b["tools"] = json!([tool("a"), tool("a")])),
                "tools[1].toolId",
            ),
            (
                Box::new(|b| {
                    let mut t = tool("a");
                    t["inputSchema"] = json!({"type": 7});
                    b["tools"] = json!([t]);
                }),
                "tools[0].inputSchema",
            ),
            (
                Box::new(|b| {
                    let mut t = tool("a");
                    t.as_object_mut().map(|o| o.remove("inputSchema"));
                    b["tools"] = json!([t]);
                }),
                "tools[0].inputSchema",
            ),
            (
                Box::new(|b| {
                    let mut t = tool("a");
                    t["receiverUrl"] = json!("http://10.0.0.1/x");
                    b["tools"] = json!([t]);
                }),
                "tools[0].receiverUrl",
            ),
            (
                Box::new(|b| {
                    let mut t = tool("a");
                    t["replayPolicy"] = json!("sometimes");
                    b["tools"] = json!([t]);
                }),
                "tools[0].replayPolicy",
            ),
            (
                Box::new(|b| {
                    let mut t = tool("a");
                    t["approval"] = json!(null);
                    b["tools"] = json!([t]);
                }),
                "tools[0].approval",
            ),
            (Box::new(|b| b["input"] = json!(3)), "input"),
            (
                Box::new(|b| b["output"] = json!({"mode": "free", "schema": {}})),
                "output.mode",
            ),
            (
                Box::new(|b| b["output"] = json!({"mode": "prompted", "schema": {"type": 1}})),
                "output.schema",
            ),
            (
                Box::new(|b| b["limits"] = json!({"modelRounds": 0})),
                "limits.modelRounds",
            ),
            (
                Box::new(|b| b["limits"] = json!({"modelRounds": 33})),
                "limits.modelRounds",
            ),
            (
                Box::new(|b| b["limits"] = json!({"repeatedCall": "never"})),
                "limits.repeatedCall",
            ),
        ];
        for (mutate, field) in cases {
            let mut body = minimal();
            mutate(&mut body);
            let err = parse(&body).unwrap_err();
            assert!(
                err.message.contains(&format!("`{field}`")),
                "{field}: {}",
                err.message
            );
        }
    }

    #[test]
    fn provider_safe_names() {
        assert!(is_provider_safe_name("fixture_write_ab12"));
        assert!(is_provider_safe_name("a-b"));
        assert!(is_provider_safe_name(&"x".repeat(64)));
        for bad in ["", "a b", "a.b", "ä", &"x".repeat(65)] {
            assert!(!is_provider_safe_name(bad), "{bad}");
        }
    }
}
