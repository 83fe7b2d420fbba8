//! The provider-neutral shapes both wires translate: the request a model round
//! sends, the answer it normalizes to, the error a request fails with, and the
//! stream assembler each wire implements. Below the client ([`super`]) and the
//! wires ([`super::openai`], [`super::anthropic`]), which all use them.

use std::sync::Arc;
use std::time::Duration;

use reqwest::Url;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::domain::catalog::FixtureTool;
use crate::turn::feedback::ToolResult;
use crate::turn::provider::event_stream::SseEvent;

/// How long one whole provider request (streamed body included) may take.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// At most this many bytes of a provider answer are read.
pub const MAX_PROVIDER_BODY: usize = 4 << 20;

/// Which wire format a provider speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wire {
    /// OpenAI Chat Completions (`POST /v1/chat/completions`).
    OpenAiChat,
    /// Anthropic Messages (`POST /v1/messages`).
    AnthropicMessages,
}

impl Wire {
    /// Every wire name, in documented order.
    pub const NAMES: &'static [&'static str] = &["openai-chat", "anthropic-messages"];

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::OpenAiChat => "openai-chat",
            Self::AnthropicMessages => "anthropic-messages",
        }
    }

    /// Parses a wire name.
    pub fn parse(value: &str) -> Option<Self> {
        match value {
            "openai-chat" => Some(Self::OpenAiChat),
            "anthropic-messages" => Some(Self::AnthropicMessages),
            _ => None,
        }
    }
}

/// Where and how to reach the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderSpec {
    /// Wire format.
    pub wire: Wire,
    /// Loopback base URL; the wire's path is appended.
    pub base_url: Url,
    /// Model name sent as `model`.
    pub model: String,
    /// Whether to ask for a streamed answer.
    pub stream: bool,
}

/// How a completion ended (TTC §B, the completion gate).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Completion {
    /// The model finished normally.
    Clean,
    /// The model hit its token limit: the output (arguments too) may be cut.
    Truncated,
    /// The model refused.
    Refused,
}

/// One provider-native tool call (channel `tool`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolEmission {
    /// The provider's call id (echoed back with the tool result).
    pub id: String,
    /// The tool name the model chose.
    pub name: String,
    /// The arguments as text: OpenAI's `arguments` string, Anthropic's
    /// `input` serialized or its concatenated `partial_json`.
    pub arguments_text: String,
}

/// One block of the assistant turn, in provider order, for the echo.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum AssistantBlock {
    /// Text.
    Text(String),
    /// The tool call at this index of [`ModelResponse::tool_calls`].
    ToolCall(usize),
    /// A block the provider produced or executed itself (Anthropic
    /// `server_tool_use`, `web_search_tool_result`, …): echoed verbatim,
    /// never dispatched by the host.
    ProviderExecuted(Value),
}

/// One model answer, normalized across wires.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelResponse {
    /// The assistant text, if any.
    pub text: Option<String>,
    /// The refusal text, if the provider gave one.
    pub refusal: Option<String>,
    /// Provider-native tool calls, in order.
    pub tool_calls: Vec<ToolEmission>,
    /// How the completion ended.
    pub completion: Completion,
    /// The assistant turn in provider order (what the next request echoes).
    pub blocks: Vec<AssistantBlock>,
}

/// One finished round: what the model said and what was fed back.
#[derive(Debug, Clone, PartialEq)]
pub struct Round {
    /// The model's answer.
    pub response: ModelResponse,
    /// One tool result per emission of that answer.
    pub results: Vec<ToolResult>,
}

/// The conversation so far, independent of the wire.
#[derive(Debug, Clone, PartialEq)]
pub struct Transcript {
    /// The host-authored system message.
    pub system: String,
    /// The user message (with the prompted-output instruction, if any).
    pub user: String,
    /// Completed tool rounds.
    pub rounds: Vec<Round>,
}

/// One provider-executed (server) tool of the request (TTC §F), sent as
/// `{type, name}` in the Messages request's `tools`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderTool {
    /// Its name (`web_search`); one of
    /// [`crate::turn::request::SUPPORTED_PROVIDER_TOOLS`].
    pub name: String,
    /// Its versioned type (`web_search_20250305`).
    pub tool_type: String,
}

/// A tool the host itself answers (the clarification tool, TURN-E1),
/// offered to the model like any function tool but never dispatched to a
/// receiver.
#[derive(Debug, Clone, PartialEq)]
pub struct HostTool {
    /// The name the request chose (no name is reserved, TURN-E5).
    pub name: String,
    /// Host-authored description.
    pub description: &'static str,
    /// Its input schema.
    pub input_schema: Value,
}

/// Everything one provider request is built from.
#[derive(Debug, Clone, Copy)]
pub struct ModelRequest<'a> {
    /// Provider.
    pub spec: &'a ProviderSpec,
    /// The run's tools (sent as the provider's tool list).
    pub tools: &'a [Arc<FixtureTool>],
    /// The host's own tools, sent after the run's tools.
    pub host_tools: &'a [HostTool],
    /// Provider-executed tools, sent as `{type, name}` (Anthropic Messages
    /// only; the request parser refuses them on other wires, TTC §F).
    pub server_tools: &'a [ProviderTool],
    /// The conversation.
    pub transcript: &'a Transcript,
    /// The schema to enforce with OpenAI `response_format`, if any.
    pub response_schema: Option<&'a Value>,
    /// Declare the run's MCP tools as Anthropic `mcp_servers` connectors:
    /// only the `mcp-delegated-to-provider` mutant sets it (TURN-F4 says
    /// the host calls MCP servers itself and never delegates them).
    pub delegate_mcp: bool,
}

/// Why a provider request failed. Display text is what `run.failed` says:
/// a status or a reason, never the provider's body.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProviderError {
    /// A non-2xx answer.
    #[error("provider answered HTTP {0}")]
    Status(u16),
    /// The request did not finish in time.
    #[error("provider did not answer within {} s", REQUEST_TIMEOUT.as_secs())]
    Timeout,
    /// No connection could be made.
    #[error("provider could not be reached (connection failed)")]
    Connect,
    /// The connection failed mid-answer.
    #[error("provider connection failed before a complete answer arrived")]
    Transport,
    /// The answer was larger than the cap.
    #[error("provider answer exceeds {} bytes", MAX_PROVIDER_BODY)]
    TooLarge,
    /// A stream ended before its end marker.
    #[error("provider stream was cut: {0}")]
    CutStream(&'static str),
    /// The stream reported an `error` event.
    #[error("provider stream reported an error event")]
    StreamErrorEvent,
    /// The answer did not have the wire's shape.
    #[error("provider answer is malformed: {0}")]
    Malformed(String),
    /// The request could not be built.
    #[error("provider request could not be built: {0}")]
    Request(&'static str),
}

/// What a wire's stream assembler says after an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamFlow {
    /// Keep reading.
    More,
    /// The end marker arrived (`[DONE]` / `message_stop`).
    Done,
}

/// A wire's incremental stream assembler.
pub trait StreamAssembler {
    /// Takes one decoded SSE event.
    fn push(&mut self, event: &SseEvent) -> Result<StreamFlow, ProviderError>;
    /// The assembled answer once the end marker arrived (cut stream otherwise).
    fn finish(self: Box<Self>) -> Result<ModelResponse, ProviderError>;
}

/// A string member of a JSON object, if present and a string.
pub(super) fn str_member<'v>(value: &'v Value, key: &str) -> Option<&'v str> {
    value.get(key).and_then(Value::as_str)
}
