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

use crate::base::args_schema::ArgsSchema;
use crate::domain::catalog::{
    Approval, FixtureTool, McpEndpoint, ReplayPolicy, SafetyTier, ToolEndpoint,
};
use crate::domain::error::ApiError;
use crate::domain::json_body::require_loopback_http;
use crate::domain::json_body::{Fields, kind, parse_object};
use crate::turn::channels::{OutputMode, OutputSpec};
use crate::turn::provider::{ProviderSpec, ProviderTool, Wire};

const FIELDS: &[&str] = &[
    "principal",
    "provider",
    "tools",
    "input",
    "output",
    "limits",
    "faults",
    "clarificationTool",
    "providerTools",
    "toolAllowlist",
    "memory",
    "inbound",
];
const PROVIDER_FIELDS: &[&str] = &["wire", "baseUrl", "model", "stream", "toolSupport"];
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
    "mcp",
];
const MCP_FIELDS: &[&str] = &["serverUrl", "name"];

/// Longest accepted `tools[i].mcp.name`, in characters.
pub const MAX_MCP_NAME_CHARS: usize = 128;
const OUTPUT_FIELDS: &[&str] = &["mode", "schema"];
const LIMITS_FIELDS: &[&str] = &[
    "modelRounds",
    "repeatedCall",
    "nodeAttempts",
    "clarificationRounds",
];
const PROVIDER_TOOL_FIELDS: &[&str] = &["name", "type"];
const MEMORY_FIELDS: &[&str] = &["storeTool", "recallTool", "namespace"];
const INBOUND_FIELDS: &[&str] = &["channel", "message", "transcript"];
const A2A_MESSAGE_FIELDS: &[&str] = &["messageId", "role", "parts"];
const A2A_PART_FIELDS: &[&str] = &["text"];

/// Longest accepted `memory.namespace`, in characters (TRUST-2).
pub const MAX_MEMORY_NAMESPACE_CHARS: usize = 64;

/// Most parts of an inbound A2A message (TRUST-6).
pub const MAX_A2A_PARTS: usize = 16;

/// Longest accepted `inbound.transcript`, in characters (TRUST-6).
pub const MAX_TRANSCRIPT_CHARS: usize = 4096;

/// The accepted `inbound.message.role` names: the A2A v1.0 enum names and
/// the 0.3 lowercase ones.
pub const A2A_ROLE_NAMES: &[&str] = &["ROLE_USER", "ROLE_AGENT", "user", "agent"];
const FAULTS_FIELDS: &[&str] = &["recordFailureAtOrdinal"];

/// Largest accepted `limits.nodeAttempts` (TURN-D9).
pub const MAX_NODE_ATTEMPTS: u32 = 3;

/// Largest accepted `faults.recordFailureAtOrdinal`.
pub const MAX_FAULT_ORDINAL: u64 = 1_000;

/// Largest accepted `limits.clarificationRounds` (TURN-E1).
pub const MAX_CLARIFICATION_ROUNDS: u32 = 8;

/// Clarification rounds when `limits.clarificationRounds` is absent.
pub const DEFAULT_CLARIFICATION_ROUNDS: u32 = 1;

/// Model rounds when `limits.modelRounds` is absent.
pub const DEFAULT_MODEL_ROUNDS: u32 = 8;

/// Largest accepted `limits.modelRounds`.
pub const MAX_MODEL_ROUNDS: u32 = 32;

/// Longest accepted tool id (provider function names are capped at 64).
pub const MAX_TOOL_ID_LEN: usize = 64;

/// Most entries of `toolAllowlist` (HOOKS-AUTH-7).
pub const MAX_ALLOWLIST_ENTRIES: usize = 64;

/// Longest `toolAllowlist` entry, in characters.
pub const MAX_ALLOWLIST_REF_CHARS: usize = 200;

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
    /// How many attempts the agent node gets (1..=3, default 1): a
    /// transient tool failure ends an attempt while attempts remain
    /// (TURN-D9).
    pub node_attempts: u32,
    /// How many clarification interrupts the run may raise through its
    /// clarification tool (0..=8, default 1); one more ask is refused with
    /// a typed error (TURN-E1).
    pub clarification_rounds: u32,
}

impl Default for TurnLimits {
    fn default() -> Self {
        Self {
            model_rounds: DEFAULT_MODEL_ROUNDS,
            repeated_call: RepeatedCall::Suppress,
            node_attempts: 1,
            clarification_rounds: DEFAULT_CLARIFICATION_ROUNDS,
        }
    }
}

/// Seam-only test knobs (`faults`); never set by a real caller.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TurnFaults {
    /// Writing the record of this tool emission ordinal fails (simulated),
    /// to witness TURN-D4.
    pub record_failure_at_ordinal: Option<u32>,
}

/// The run's knowledge store, as the request named it (`memory`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemorySpec {
    /// The store tool's name.
    pub store_tool: String,
    /// The recall tool's name.
    pub recall_tool: String,
    /// The namespace the run stores into and recalls from (1..=64 chars).
    pub namespace: String,
}

/// The role an inbound A2A message claims (`ROLE_USER`/`user`,
/// `ROLE_AGENT`/`agent`). A claim only: it never makes the content trusted
/// (TRUST-6).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum A2aRole {
    /// `ROLE_USER` (v1.0) or `user` (0.3).
    User,
    /// `ROLE_AGENT` (v1.0) or `agent` (0.3).
    Agent,
}

impl A2aRole {
    /// Parses one of [`A2A_ROLE_NAMES`].
    pub fn parse(value: &str) -> Option<Self> {
        match value {
            "ROLE_USER" | "user" => Some(Self::User),
            "ROLE_AGENT" | "agent" => Some(Self::Agent),
            _ => None,
        }
    }
}

/// Content that reaches the run from outside instead of the user's
/// `input` (`inbound`, TRUST-6). Its text becomes the first prompt's input,
/// and the run starts untrusted ([`crate::turn::trust::at_start`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Inbound {
    /// An A2A Message as the host's A2A server would hand it to a run.
    A2a {
        /// `message.messageId`.
        message_id: String,
        /// `message.role`, as claimed by the peer.
        role: A2aRole,
    },
    /// A voice transcript; the run writes `voice.transcript` before its
    /// first prompt.
    Voice {
        /// The transcript text (1..=4096 characters).
        transcript: String,
    },
}

/// A parsed, fully checked turn request.
#[derive(Debug, Clone)]
pub struct TurnRunRequest {
    /// The principal the run (and every tool call) is attributed to.
    pub principal: String,
    /// The model provider.
    pub provider: ProviderSpec,
    /// The run-scoped fixture tools the run offers (to the model, and in
    /// `GET /tools`): every tool of `tools`, or, with a `toolAllowlist`,
    /// only those an entry resolves to, in `tools` order (HOOKS-AUTH-7).
    /// A call to any other tool is an unknown tool.
    pub tools: Vec<Arc<FixtureTool>>,
    /// The `toolAllowlist` entries that resolve to no tool, in allowlist
    /// order: refused at loop start (forbidden-at-load, HOOKS-AUTH-7).
    pub unresolved_refs: Vec<String>,
    /// The first prompt's input: the user's task text (`input`), or the
    /// text of `inbound` (an A2A message's text parts joined by `\n`, a
    /// voice transcript).
    pub input: String,
    /// Inbound content the input came from, if it is not the user's own
    /// (TRUST-6); exactly one of `input` and `inbound` is given.
    pub inbound: Option<Inbound>,
    /// The run's knowledge store tools, if any (TRUST-2).
    pub memory: Option<MemorySpec>,
    /// The requested structured answer, if any.
    pub output: Option<OutputSpec>,
    /// Loop limits.
    pub limits: TurnLimits,
    /// Test knobs.
    pub faults: TurnFaults,
    /// The name of the host's clarification tool for this run, if any
    /// (TURN-E1). No name is reserved (TURN-E5): it comes from here.
    pub clarification_tool: Option<String>,
    /// Provider-executed (server) tools, `anthropic-messages` only (TTC §F).
    pub provider_tools: Vec<ProviderTool>,
    /// Whether the model supports native tool calls (`provider.toolSupport`,
    /// default true). False with any tool fails the run before any provider
    /// request (TURN-E3).
    pub tool_support: bool,
}

impl TurnRunRequest {
    /// Parses and checks the body; every problem is a 400 naming the field.
    pub fn parse(body: &[u8]) -> Result<Self, ApiError> {
        let mut fields = Fields::closed(parse_object(body)?, FIELDS)?;
        let principal = fields.required_string("principal")?;
        let (provider, tool_support) = parse_provider(fields.required_object("provider")?)?;
        let tools = parse_tools(fields.optional_array("tools")?.unwrap_or_default())?;
        let (input, inbound) = parse_input(&mut fields)?;
        let output = fields
            .optional_object("output")?
            .map(parse_output)
            .transpose()?;
        let limits = fields
            .optional_object("limits")?
            .map(parse_limits)
            .transpose()?
            .unwrap_or_default();
        let faults = fields
            .optional_object("faults")?
            .map(parse_faults)
            .transpose()?
            .unwrap_or_default();
        let clarification_tool = fields.optional_string("clarificationTool")?;
        if let Some(name) = &clarification_tool {
            if !is_provider_safe_name(name) {
                return Err(ApiError::validation(format!(
                    "field `clarificationTool` must match ^[A-Za-z0-9_-]{{1,{MAX_TOOL_ID_LEN}}}$ (a name every provider accepts)"
                )));
            }
            // One name, one tool: the model's call must be unambiguous.
            if tools.iter().any(|tool| &tool.tool_id == name) {
                return Err(ApiError::validation(
                    "field `clarificationTool` names one of `tools`; the clarification tool is the host's own and needs a name of its own",
                ));
            }
        }
        let provider_tools = fields
            .optional_array("providerTools")?
            .map(|items| parse_provider_tools(items, provider.wire))
            .transpose()?
            .unwrap_or_default();
        for (index, server) in provider_tools.iter().enumerate() {
            let clash = tools.iter().any(|tool| tool.tool_id == server.name)
                || clarification_tool.as_deref() == Some(server.name.as_str());
            if clash {
                return Err(ApiError::validation(format!(
                    "field `providerTools[{index}].name` is also the name of a host tool of the run; a provider-executed tool needs a name of its own"
                )));
            }
        }
        let memory = fields
            .optional_object("memory")?
            .map(|map| parse_memory(map, &tools, clarification_tool.as_deref(), &provider_tools))
            .transpose()?;
        // HOOKS-AUTH-7: an entry equal to a toolId resolves to that tool;
        // only resolved tools are offered, and the rest are refused at
        // loop start. No allowlist offers every tool.
        let allowlist = parse_allowlist(fields.optional_value("toolAllowlist"))?;
        let (tools, unresolved_refs) = match allowlist {
            None => (tools, Vec::new()),
            Some(refs) => {
                let offered = tools
                    .into_iter()
                    .filter(|tool| refs.contains(&tool.tool_id))
                    .collect::<Vec<_>>();
                let unresolved = refs
                    .into_iter()
                    .filter(|entry| !offered.iter().any(|tool| &tool.tool_id == entry))
                    .collect();
                (offered, unresolved)
            }
        };
        Ok(Self {
            principal,
            provider,
            tools,
            unresolved_refs,
            input,
            inbound,
            memory,
            output,
            limits,
            faults,
            clarification_tool,
            provider_tools,
            tool_support,
        })
    }
}

/// `input` or `inbound`: exactly one is required (TRUST-6). Returns the
/// first prompt's input text and the inbound content it came from.
fn parse_input(fields: &mut Fields) -> Result<(String, Option<Inbound>), ApiError> {
    let input = fields.optional_string("input")?;
    let inbound = fields.optional_object("inbound")?;
    match (input, inbound) {
        (Some(input), None) => {
            if input.is_empty() {
                return Err(ApiError::validation("field `input` must not be empty"));
            }
            Ok((input, None))
        }
        (None, Some(map)) => {
            let (text, inbound) = parse_inbound(map)?;
            Ok((text, Some(inbound)))
        }
        _ => Err(ApiError::validation(
            "exactly one of field `input` (the user's task text) or field `inbound` (content from an A2A peer or a voice transcript) is required",
        )),
    }
}

/// `inbound`: `{channel: "a2a", message}` or `{channel: "voice",
/// transcript}` (closed; the other channel's member is refused).
fn parse_inbound(map: Map<String, Value>) -> Result<(String, Inbound), ApiError> {
    let mut fields = Fields::closed_at("inbound", map, INBOUND_FIELDS)?;
    let channel = fields.required_enum("channel", &["a2a", "voice"])?;
    let (own, other) = if channel == "a2a" {
        ("message", "transcript")
    } else {
        ("transcript", "message")
    };
    if fields.optional_value(other).is_some() {
        return Err(ApiError::validation(format!(
            "field `{}` is not allowed with `inbound.channel` `{channel}`; send `{}` instead",
            fields.name(other),
            fields.name(own)
        )));
    }
    if channel == "voice" {
        let transcript = fields.required_string("transcript")?;
        if transcript.chars().count() > MAX_TRANSCRIPT_CHARS {
            return Err(ApiError::validation(format!(
                "field `{}` must be 1 to {MAX_TRANSCRIPT_CHARS} characters long",
                fields.name("transcript")
            )));
        }
        return Ok((transcript.clone(), Inbound::Voice { transcript }));
    }
    let message = fields.required_object("message")?;
    let mut message = Fields::closed_at("inbound.message", message, A2A_MESSAGE_FIELDS)?;
    let message_id = message.required_string("messageId")?;
    let role =
        A2aRole::parse(message.required_enum("role", A2A_ROLE_NAMES)?).unwrap_or(A2aRole::Agent);
    let parts = message.optional_array("parts")?.ok_or_else(|| {
        ApiError::validation(format!(
            "field `inbound.message.parts` is required (an array of 1 to {MAX_A2A_PARTS} text parts)"
        ))
    })?;
    if !(1..=MAX_A2A_PARTS).contains(&parts.len()) {
        return Err(ApiError::validation(format!(
            "field `inbound.message.parts` must hold 1 to {MAX_A2A_PARTS} text parts"
        )));
    }
    let mut texts = Vec::with_capacity(parts.len());
    for (index, part) in parts.into_iter().enumerate() {
        let path = format!("inbound.message.parts[{index}]");
        let Value::Object(map) = part else {
            return Err(ApiError::validation(format!(
                "field `{path}` must be an object ({{\"text\": ...}}), got {}",
                kind(&part)
            )));
        };
        let mut part = Fields::closed_at(&path, map, A2A_PART_FIELDS)?;
        texts.push(part.required_string("text")?);
    }
    Ok((texts.join("\n"), Inbound::A2a { message_id, role }))
}

/// `memory`: `{storeTool, recallTool, namespace}` (closed). Both names are
/// provider-safe, differ from each other and from every other name of the
/// run (its tools, its clarification tool, its provider tools), so a call
/// is never ambiguous (TRUST-2).
fn parse_memory(
    map: Map<String, Value>,
    tools: &[Arc<FixtureTool>],
    clarification_tool: Option<&str>,
    provider_tools: &[ProviderTool],
) -> Result<MemorySpec, ApiError> {
    let mut fields = Fields::closed_at("memory", map, MEMORY_FIELDS)?;
    let mut names = Vec::with_capacity(2);
    for member in ["storeTool", "recallTool"] {
        let name = fields.required_string(member)?;
        let path = fields.name(member);
        if !is_provider_safe_name(&name) {
            return Err(ApiError::validation(format!(
                "field `{path}` must match ^[A-Za-z0-9_-]{{1,{MAX_TOOL_ID_LEN}}}$ (a name every provider accepts)"
            )));
        }
        if names.contains(&name) {
            return Err(ApiError::validation(format!(
                "field `{path}` repeats `memory.storeTool`; the store and recall tools need names of their own"
            )));
        }
        let clash = tools.iter().any(|tool| tool.tool_id == name)
            || clarification_tool == Some(name.as_str())
            || provider_tools.iter().any(|tool| tool.name == name);
        if clash {
            return Err(ApiError::validation(format!(
                "field `{path}` is also the name of another tool of the run (in `tools`, `clarificationTool` or `providerTools`); the knowledge store's tools are the host's own and need names of their own"
            )));
        }
        names.push(name);
    }
    let namespace = fields.required_string("namespace")?;
    if namespace.chars().count() > MAX_MEMORY_NAMESPACE_CHARS {
        return Err(ApiError::validation(format!(
            "field `{}` must be 1 to {MAX_MEMORY_NAMESPACE_CHARS} characters long",
            fields.name("namespace")
        )));
    }
    let recall_tool = names.pop().unwrap_or_default();
    let store_tool = names.pop().unwrap_or_default();
    Ok(MemorySpec {
        store_tool,
        recall_tool,
        namespace,
    })
}

/// The provider-executed tools this host supports: each one has a row in
/// the effect-seam manifest (TURN-F1), so a run can use no other.
pub const SUPPORTED_PROVIDER_TOOLS: &[&str] = &["web_search"];

fn parse_provider_tools(items: Vec<Value>, wire: Wire) -> Result<Vec<ProviderTool>, ApiError> {
    if !items.is_empty() && wire != Wire::AnthropicMessages {
        return Err(ApiError::validation(format!(
            "field `providerTools` is served only with `provider.wire` `anthropic-messages` (server tools are an Anthropic Messages feature), not `{}`",
            wire.as_str()
        )));
    }
    let mut seen = HashSet::new();
    let mut parsed = Vec::with_capacity(items.len());
    for (index, item) in items.into_iter().enumerate() {
        let path = format!("providerTools[{index}]");
        let Value::Object(map) = item else {
            return Err(ApiError::validation(format!(
                "field `{path}` must be an object, got {}",
                kind(&item)
            )));
        };
        let mut fields = Fields::closed_at(&path, map, PROVIDER_TOOL_FIELDS)?;
        let name = fields.required_string("name")?;
        if !is_provider_safe_name(&name) {
            return Err(ApiError::validation(format!(
                "field `{}` must match ^[A-Za-z0-9_-]{{1,{MAX_TOOL_ID_LEN}}}$",
                fields.name("name")
            )));
        }
        if !SUPPORTED_PROVIDER_TOOLS.contains(&name.as_str()) {
            return Err(ApiError::validation(format!(
                "field `{}` names a provider-executed tool this host does not list in its effect-seam manifest (TURN-F1); supported: {}",
                fields.name("name"),
                SUPPORTED_PROVIDER_TOOLS.join(", ")
            )));
        }
        if !seen.insert(name.clone()) {
            return Err(ApiError::validation(format!(
                "field `{}` repeats an earlier provider tool name; names must be unique",
                fields.name("name")
            )));
        }
        let tool_type = fields.required_string("type")?;
        if !is_versioned_type(&tool_type) {
            return Err(ApiError::validation(format!(
                "field `{}` must match ^[a-z_]+_[0-9]{{8}}$ (a versioned server tool type such as web_search_20250305)",
                fields.name("type")
            )));
        }
        parsed.push(ProviderTool { name, tool_type });
    }
    Ok(parsed)
}

/// `^[a-z_]+_[0-9]{8}$`: a dated server tool type.
fn is_versioned_type(value: &str) -> bool {
    let Some((stem, date)) = value.rsplit_once('_') else {
        return false;
    };
    date.len() == 8
        && date.bytes().all(|b| b.is_ascii_digit())
        && !stem.is_empty()
        && stem.bytes().all(|b| b.is_ascii_lowercase() || b == b'_')
}

fn parse_provider(map: Map<String, Value>) -> Result<(ProviderSpec, bool), ApiError> {
    let mut fields = Fields::closed_at("provider", map, PROVIDER_FIELDS)?;
    let wire = fields.required_enum("wire", Wire::NAMES)?;
    let base_url = fields.required_string("baseUrl")?;
    let base_url = require_loopback_http(&fields.name("baseUrl"), &base_url)?;
    let model = fields.required_string("model")?;
    let stream = fields.optional_bool("stream")?.unwrap_or(false);
    let tool_support = fields.optional_bool("toolSupport")?.unwrap_or(true);
    let spec = ProviderSpec {
        // `required_enum` only returns listed names, which all parse.
        wire: Wire::parse(wire).unwrap_or(Wire::OpenAiChat),
        base_url,
        model,
        stream,
    };
    Ok((spec, tool_support))
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
    let receiver_url = fields.optional_string("receiverUrl")?;
    let mcp = fields.optional_object("mcp")?;
    // EFF-12: a tool is played by exactly one of a receiver or an MCP
    // server tool.
    let endpoint = match (receiver_url, mcp) {
        (Some(url), None) => {
            ToolEndpoint::Receiver(require_loopback_http(&fields.name("receiverUrl"), &url)?)
        }
        (None, Some(map)) => ToolEndpoint::Mcp(parse_mcp(&fields.name("mcp"), map)?),
        _ => {
            return Err(ApiError::validation(format!(
                "field `{path}` must have exactly one of receiverUrl or mcp (the tool is played by a receiver or by an MCP server tool)"
            )));
        }
    };
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
        endpoint,
    })
}

/// `tools[i].mcp`: `{serverUrl: loopback http URL, name: 1..=128 chars}`,
/// closed (EFF-12).
fn parse_mcp(path: &str, map: Map<String, Value>) -> Result<McpEndpoint, ApiError> {
    let mut fields = Fields::closed_at(path, map, MCP_FIELDS)?;
    let server_url = fields.required_string("serverUrl")?;
    let server_url = require_loopback_http(&fields.name("serverUrl"), &server_url)?;
    let name = fields.required_string("name")?;
    if name.chars().count() > MAX_MCP_NAME_CHARS {
        return Err(ApiError::validation(format!(
            "field `{}` must be 1 to {MAX_MCP_NAME_CHARS} characters long",
            fields.name("name")
        )));
    }
    Ok(McpEndpoint {
        server_url,
        name,
        mounted: false,
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
    let node_attempts = fields
        .optional_int_in("nodeAttempts", 1, u64::from(MAX_NODE_ATTEMPTS))?
        .and_then(|n| u32::try_from(n).ok())
        .unwrap_or(1);
    let clarification_rounds = fields
        .optional_int_in(
            "clarificationRounds",
            0,
            u64::from(MAX_CLARIFICATION_ROUNDS),
        )?
        .and_then(|n| u32::try_from(n).ok())
        .unwrap_or(DEFAULT_CLARIFICATION_ROUNDS);
    Ok(TurnLimits {
        model_rounds,
        repeated_call,
        node_attempts,
        clarification_rounds,
    })
}

fn parse_faults(map: Map<String, Value>) -> Result<TurnFaults, ApiError> {
    let mut fields = Fields::closed_at("faults", map, FAULTS_FIELDS)?;
    let record_failure_at_ordinal = fields
        .optional_int_in("recordFailureAtOrdinal", 1, MAX_FAULT_ORDINAL)?
        .and_then(|n| u32::try_from(n).ok());
    Ok(TurnFaults {
        record_failure_at_ordinal,
    })
}

/// `toolAllowlist`: absent, or 1..=64 unique strings of 1..=200
/// characters. Each problem is a 400 naming the entry both as
/// `toolAllowlist[i]` (the style of every other message) and as the JSON
/// pointer `/toolAllowlist/i`, and saying what would fix it.
fn parse_allowlist(value: Option<Value>) -> Result<Option<Vec<String>>, ApiError> {
    let Some(value) = value else {
        return Ok(None);
    };
    let Value::Array(items) = value else {
        return Err(ApiError::validation(format!(
            "field `toolAllowlist` (/toolAllowlist) must be an array of 1 to {MAX_ALLOWLIST_ENTRIES} unique tool refs, got {}; leave it out to offer every tool",
            kind(&value)
        )));
    };
    if items.is_empty() {
        return Err(ApiError::validation(
            "field `toolAllowlist` (/toolAllowlist) must not be empty; list at least one ref, or leave it out to offer every tool",
        ));
    }
    if items.len() > MAX_ALLOWLIST_ENTRIES {
        return Err(ApiError::validation(format!(
            "field `toolAllowlist[{MAX_ALLOWLIST_ENTRIES}]` (/toolAllowlist/{MAX_ALLOWLIST_ENTRIES}) is one entry too many; send at most {MAX_ALLOWLIST_ENTRIES} refs"
        )));
    }
    let mut refs: Vec<String> = Vec::with_capacity(items.len());
    for (index, item) in items.into_iter().enumerate() {
        let at = format!("field `toolAllowlist[{index}]` (/toolAllowlist/{index})");
        let Value::String(entry) = item else {
            return Err(ApiError::validation(format!(
                "{at} must be a string (a tool ref), got {}",
                kind(&item)
            )));
        };
        if !(1..=MAX_ALLOWLIST_REF_CHARS).contains(&entry.chars().count()) {
            return Err(ApiError::validation(format!(
                "{at} must be 1 to {MAX_ALLOWLIST_REF_CHARS} characters long; send a non-empty ref no longer than that"
            )));
        }
        if refs.contains(&entry) {
            return Err(ApiError::validation(format!(
                "{at} repeats an earlier entry; list each ref once"
            )));
        }
        refs.push(entry);
    }
    Ok(Some(refs))
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
        assert_eq!(request.limits.clarification_rounds, 1);
        assert_eq!(request.clarification_tool, None);
        assert!(request.provider_tools.is_empty());
        assert!(request.tool_support);
    }

    #[test]
    fn human_input_and_provider_tool_fields_parse() {
        let mut body = minimal();
        body["provider"]["wire"] = json!("anthropic-messages");
        body["provider"]["toolSupport"] = json!(false);
        body["clarificationTool"] = json!("ask-user");
        body["limits"] = json!({"clarificationRounds": 0});
        body["providerTools"] = json!([{"name": "web_search", "type": "web_search_20250305"}]);
        let request = parse(&body).expect("valid");
        assert_eq!(request.clarification_tool.as_deref(), Some("ask-user"));
        assert_eq!(request.limits.clarification_rounds, 0);
        assert!(!request.tool_support);
        assert_eq!(
            request.provider_tools,
            [ProviderTool {
                name: "web_search".into(),
                tool_type: "web_search_20250305".into()
            }]
        );
        for (tools, field) in [
            (
                json!([{"name": "web_search", "type": "web_search"}]),
                "providerTools[0].type",
            ),
            (
                json!([{"name": "web_search", "type": "Web_20250305"}]),
                "providerTools[0].type",
            ),
            (
                json!([{"name": "code_execution", "type": "code_execution_20250522"}]),
                "providerTools[0].name",
            ),
            (
                json!([{"name": "web_search", "type": "web_search_20250305"},
                       {"name": "web_search", "type": "web_search_20250305"}]),
                "providerTools[1].name",
            ),
            (json!([{"name": "web_search"}]), "providerTools[0].type"),
            (
                json!([{"name": "web_search", "type": "web_search_20250305", "x": 1}]),
                "providerTools[0].x",
            ),
            (
                json!([{"name": "ask-user", "type": "web_search_20250305"}]),
                "providerTools[0].name",
            ),
        ] {
            let mut bad = body.clone();
            bad["providerTools"] = tools;
            let err = parse(&bad).unwrap_err();
            assert!(
                err.message.contains(&format!("`{field}`")),
                "{field}: {}",
                err.message
            );
        }
        let mut openai = minimal();
        openai["providerTools"] = json!([{"name": "web_search", "type": "web_search_20250305"}]);
        assert!(
            parse(&openai)
                .unwrap_err()
                .message
                .contains("`providerTools`")
        );
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
            (
                Box::new(|b| b["limits"] = json!({"clarificationRounds": 9})),
                "limits.clarificationRounds",
            ),
            (
                Box::new(|b| b["clarificationTool"] = json!("a b")),
                "clarificationTool",
            ),
            (
                Box::new(|b| b["provider"]["toolSupport"] = json!("no")),
                "provider.toolSupport",
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
    fn mcp_tools_have_exactly_one_endpoint() {
        let mut body = minimal();
        let mut t = tool("weather");
        t.as_object_mut().map(|o| o.remove("receiverUrl"));
        t["mcp"] = json!({"serverUrl": "http://127.0.0.1:9/mcp/a", "name": "get_weather"});
        body["tools"] = json!([t.clone()]);
        let request = parse(&body).expect("valid");
        let mcp = request.tools[0].mcp().expect("an MCP tool");
        assert_eq!(mcp.name, "get_weather");
        assert_eq!(mcp.server_url.as_str(), "http://127.0.0.1:9/mcp/a");
        t["mcp"]["name"] = json!("ä".repeat(128));
        body["tools"] = json!([t.clone()]);
        assert!(parse(&body).is_ok(), "128 characters, not bytes");
        let cases = [
            (
                json!({"serverUrl": "http://10.0.0.1/mcp", "name": "x"}),
                "`tools[0].mcp.serverUrl`",
            ),
            (
                json!({"serverUrl": "https://127.0.0.1/mcp", "name": "x"}),
                "`tools[0].mcp.serverUrl`",
            ),
            (json!({"name": "x"}), "`tools[0].mcp.serverUrl`"),
            (
                json!({"serverUrl": "http://127.0.0.1:9/mcp"}),
                "`tools[0].mcp.name`",
            ),
            (
                json!({"serverUrl": "http://127.0.0.1:9/mcp", "name": ""}),
                "`tools[0].mcp.name`",
            ),
            (
                json!({"serverUrl": "http://127.0.0.1:9/mcp", "name": "x".repeat(129)}),
                "`tools[0].mcp.name`",
            ),
            (
                json!({"serverUrl": "http://127.0.0.1:9/mcp", "name": "x", "extra": 1}),
                "`tools[0].mcp.extra`",
            ),
            (json!("http://127.0.0.1:9/mcp"), "`tools[0].mcp`"),
        ];
        for (mcp, field) in cases {
            t["mcp"] = mcp.clone();
            body["tools"] = json!([t.clone()]);
            let err = parse(&body).unwrap_err();
            assert!(err.message.contains(field), "{mcp}: {}", err.message);
        }
        // Both, or neither.
        let mut both = tool("weather");
        both["mcp"] = json!({"serverUrl": "http://127.0.0.1:9/mcp", "name": "x"});
        let mut neither = tool("weather");
        neither.as_object_mut().map(|o| o.remove("receiverUrl"));
        for t in [both, neither] {
            body["tools"] = json!([t]);
            let err = parse(&body).unwrap_err();
            assert!(
                err.message.contains("exactly one of receiverUrl or mcp")
                    && err.message.contains("`tools[0]`"),
                "{}",
                err.message
            );
        }
    }

    #[test]
    fn an_allowlist_offers_only_the_tools_it_resolves() {
        let mut body = minimal();
        body["tools"] = json!([tool("a"), tool("b"), tool("c")]);
        let all = parse(&body).expect("valid");
        let ids = |request: &TurnRunRequest| -> Vec<String> {
            request.tools.iter().map(|t| t.tool_id.clone()).collect()
        };
        assert_eq!(ids(&all), ["a", "b", "c"]);
        assert!(all.unresolved_refs.is_empty());
        // Offered in `tools` order; unresolved refs in allowlist order.
        body["toolAllowlist"] = json!(["zeta", "c", "pack/x", "a"]);
        let narrowed = parse(&body).expect("valid");
        assert_eq!(ids(&narrowed), ["a", "c"]);
        assert_eq!(narrowed.unresolved_refs, ["zeta", "pack/x"]);
        // Refs are compared exactly (no case folding).
        body["toolAllowlist"] = json!(["A"]);
        let none = parse(&body).expect("valid");
        assert!(none.tools.is_empty());
        assert_eq!(none.unresolved_refs, ["A"]);
        body["toolAllowlist"] = json!(["ä".repeat(200)]);
        assert!(parse(&body).is_ok(), "200 characters, not bytes");
    }

    #[test]
    fn allowlist_problems_name_the_entry_and_the_fix() {
        let too_many: Vec<String> = (0..=MAX_ALLOWLIST_ENTRIES)
            .map(|i| format!("r{i}"))
            .collect();
        let cases = [
            (json!("a"), "/toolAllowlist", "must be an array"),
            (json!(null), "/toolAllowlist", "must be an array"),
            (json!([]), "/toolAllowlist", "must not be empty"),
            (json!(too_many), "/toolAllowlist/64", "at most 64"),
            (json!(["a", 3]), "/toolAllowlist/1", "must be a string"),
            (json!(["a", ""]), "/toolAllowlist/1", "1 to 200 characters"),
            (
                json!(["x".repeat(201)]),
                "/toolAllowlist/0",
                "1 to 200 characters",
            ),
            (
                json!(["a", "b", "a"]),
                "/toolAllowlist/2",
                "list each ref once",
            ),
        ];
        for (allowlist, pointer, fix) in cases {
            let mut body = minimal();
            body["toolAllowlist"] = allowlist.clone();
            let err = parse(&body).expect_err("rejected");
            assert_eq!(err.code, crate::domain::error::ErrorCode::ValidationError);
            assert!(
                err.message.contains(&format!("({pointer})")) && err.message.contains(fix),
                "{allowlist}: {}",
                err.message
            );
        }
    }

    #[test]
    fn memory_names_two_host_tools_of_their_own() {
        let mut body = minimal();
        body["tools"] = json!([tool("fixture_read")]);
        body["clarificationTool"] = json!("ask");
        body["memory"] =
            json!({"storeTool": "remember", "recallTool": "recall", "namespace": "ns-1"});
        let request = parse(&body).expect("valid");
        assert_eq!(
            request.memory,
            Some(MemorySpec {
                store_tool: "remember".into(),
                recall_tool: "recall".into(),
                namespace: "ns-1".into()
            })
        );
        // The request's tools stay the fixture tools (the catalog's).
        assert_eq!(request.tools.len(), 1);
        body["memory"]["namespace"] = json!("ä".repeat(64));
        assert!(parse(&body).is_ok(), "64 characters, not bytes");
        for (memory, field) in [
            (
                json!({"storeTool": "a b", "recallTool": "r", "namespace": "n"}),
                "memory.storeTool",
            ),
            (
                json!({"storeTool": "s", "recallTool": "", "namespace": "n"}),
                "memory.recallTool",
            ),
            (
                json!({"storeTool": "s", "recallTool": "s", "namespace": "n"}),
                "memory.recallTool",
            ),
            (
                json!({"storeTool": "fixture_read", "recallTool": "r", "namespace": "n"}),
                "memory.storeTool",
            ),
            (
                json!({"storeTool": "s", "recallTool": "ask", "namespace": "n"}),
                "memory.recallTool",
            ),
            (
                json!({"storeTool": "s", "recallTool": "r", "namespace": ""}),
                "memory.namespace",
            ),
            (
                json!({"storeTool": "s", "recallTool": "r", "namespace": "n".repeat(65)}),
                "memory.namespace",
            ),
            (
                json!({"storeTool": "s", "namespace": "n"}),
                "memory.recallTool",
            ),
            (
                json!({"storeTool": "s", "recallTool": "r"}),
                "memory.namespace",
            ),
            (
                json!({"storeTool": "s", "recallTool": "r", "namespace": "n", "x": 1}),
                "memory.x",
            ),
            (json!("remember"), "memory"),
        ] {
            let mut bad = body.clone();
            bad["memory"] = memory.clone();
            let err = parse(&bad).expect_err("rejected");
            assert_eq!(err.code, crate::domain::error::ErrorCode::ValidationError);
            assert!(
                err.message.contains(&format!("`{field}`")),
                "{memory}: {}",
                err.message
            );
        }
        // A provider tool's name is taken too.
        let mut anthropic = body.clone();
        anthropic["provider"]["wire"] = json!("anthropic-messages");
        anthropic["providerTools"] = json!([{"name": "web_search", "type": "web_search_20250305"}]);
        anthropic["memory"]["recallTool"] = json!("web_search");
        let err = parse(&anthropic).expect_err("rejected");
        assert!(
            err.message.contains("`memory.recallTool`"),
            "{}",
            err.message
        );
    }

    #[test]
    fn inbound_replaces_input_and_carries_its_text() {
        let mut body = minimal();
        body.as_object_mut().map(|o| o.remove("input"));
        for role in A2A_ROLE_NAMES {
            body["inbound"] = json!({"channel": "a2a", "message": {
                "messageId": "m-1", "role": role,
                "parts": [{"text": "first"}, {"text": "second"}]}});
            let request = parse(&body).expect("valid");
            assert_eq!(request.input, "first\nsecond");
            let expected = if role.to_lowercase().ends_with("user") {
                A2aRole::User
            } else {
                A2aRole::Agent
            };
            assert_eq!(
                request.inbound,
                Some(Inbound::A2a {
                    message_id: "m-1".into(),
                    role: expected
                })
            );
        }
        body["inbound"] = json!({"channel": "voice", "transcript": "ö".repeat(4096)});
        let request = parse(&body).expect("valid");
        assert_eq!(request.input, "ö".repeat(4096));
        assert_eq!(
            request.inbound,
            Some(Inbound::Voice {
                transcript: "ö".repeat(4096)
            })
        );
        assert_eq!(parse(&minimal()).expect("valid").inbound, None);
    }

    #[test]
    fn inbound_problems_name_the_member() {
        let a2a = |message: Value| json!({"channel": "a2a", "message": message});
        let good = json!({"messageId": "m", "role": "user", "parts": [{"text": "t"}]});
        let with = |edit: &dyn Fn(&mut Value)| {
            let mut message = good.clone();
            edit(&mut message);
            a2a(message)
        };
        let cases: Vec<(Value, &str)> = vec![
            (json!("voice"), "`inbound`"),
            (
                json!({"channel": "sms", "transcript": "t"}),
                "`inbound.channel`",
            ),
            (json!({"transcript": "t"}), "`inbound.channel`"),
            (json!({"channel": "voice"}), "`inbound.transcript`"),
            (
                json!({"channel": "voice", "transcript": ""}),
                "`inbound.transcript`",
            ),
            (
                json!({"channel": "voice", "transcript": "t".repeat(4097)}),
                "`inbound.transcript`",
            ),
            (
                json!({"channel": "voice", "transcript": "t", "message": good}),
                "`inbound.message`",
            ),
            (
                json!({"channel": "a2a", "message": good, "transcript": "t"}),
                "`inbound.transcript`",
            ),
            (json!({"channel": "a2a"}), "`inbound.message`"),
            (
                json!({"channel": "voice", "transcript": "t", "x": 1}),
                "`inbound.x`",
            ),
            (
                with(&|m| m["role"] = json!("ROLE_SYSTEM")),
                "`inbound.message.role`",
            ),
            (
                with(&|m| m["role"] = json!("User")),
                "`inbound.message.role`",
            ),
            (
                with(&|m| m["messageId"] = json!(7)),
                "`inbound.message.messageId`",
            ),
            (
                with(&|m| {
                    m.as_object_mut().map(|o| o.remove("messageId"));
                }),
                "`inbound.message.messageId`",
            ),
            (with(&|m| m["parts"] = json!([])), "`inbound.message.parts`"),
            (
                with(&|m| m["parts"] = json!(vec![json!({"text": "t"}); 17])),
                "`inbound.message.parts`",
            ),
            (
                with(&|m| {
                    m.as_object_mut().map(|o| o.remove("parts"));
                }),
                "`inbound.message.parts`",
            ),
            (
                with(&|m| m["parts"] = json!(["t"])),
                "`inbound.message.parts[0]`",
            ),
            (
                with(&|m| m["parts"] = json!([{"text": "a"}, {"kind": "text", "text": "b"}])),
                "`inbound.message.parts[1].kind`",
            ),
            (
                with(&|m| m["parts"] = json!([{"text": ""}])),
                "`inbound.message.parts[0].text`",
            ),
            (
                with(&|m| m["contextId"] = json!("c")),
                "`inbound.message.contextId`",
            ),
        ];
        for (inbound, field) in cases {
            let mut body = minimal();
            body.as_object_mut().map(|o| o.remove("input"));
            body["inbound"] = inbound.clone();
            let err = parse(&body).expect_err("rejected");
            assert_eq!(err.code, crate::domain::error::ErrorCode::ValidationError);
            assert!(err.message.contains(field), "{inbound}: {}", err.message);
        }
        // Exactly one of `input` and `inbound`: both, or neither, names both.
        let mut both = minimal();
        both["inbound"] = json!({"channel": "voice", "transcript": "t"});
        let mut neither = minimal();
        neither.as_object_mut().map(|o| o.remove("input"));
        for body in [both, neither] {
            let err = parse(&body).expect_err("rejected");
            assert!(
                err.message.contains("`input`") && err.message.contains("`inbound`"),
                "{}",
                err.message
            );
        }
        let mut empty = minimal();
        empty["input"] = json!("");
        assert!(
            parse(&empty)
                .expect_err("rejected")
                .message
                .contains("`input`")
        );
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
