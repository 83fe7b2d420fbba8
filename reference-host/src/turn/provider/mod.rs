//! Model provider clients: one request per model round, OpenAI Chat
//! Completions or Anthropic Messages, non-streaming or streaming, normalized
//! into one [`ModelResponse`].
//!
//! Every request is bounded (connect 2 s, whole request 10 s, body 4 MiB)
//! and never retried: any non-2xx answer, transport failure, timeout or cut
//! stream fails the run with `provider_error`. Messages name the status or
//! the reason and never copy the provider's body.

pub mod anthropic;
pub mod event_stream;
pub mod openai;

use std::sync::Arc;
use std::time::Duration;

use reqwest::Url;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::domain::catalog::FixtureTool;
use crate::turn::feedback::ToolResult;
use event_stream::{SseDecoder, SseEvent};

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

/// The HTTP client for providers; one per host.
#[derive(Debug, Clone)]
pub struct ProviderClient {
    client: reqwest::Client,
}

impl ProviderClient {
    /// Builds the client: no proxy and no redirects (providers are loopback
    /// only here and must stay so), bounded connect and request time, and
    /// no TLS roots (see [`crate::domain::invoker::outbound_client_builder`]).
    pub fn new() -> Result<Self, reqwest::Error> {
        let client = crate::domain::invoker::outbound_client_builder()
            .timeout(REQUEST_TIMEOUT)
            .build()?;
        Ok(Self { client })
    }

    /// Sends one model request and normalizes the answer. Never retries.
    pub async fn complete(
        &self,
        request: &ModelRequest<'_>,
    ) -> Result<ModelResponse, ProviderError> {
        // The client's own timeout covers the whole request; the outer one
        // bounds the body reading loop too, whatever happens inside it.
        match tokio::time::timeout(REQUEST_TIMEOUT, self.exchange(request)).await {
            Ok(result) => result,
            Err(_) => Err(ProviderError::Timeout),
        }
    }

    /// POSTs an Anthropic Messages `body` to `url` itself (no wire path
    /// appended) and returns the 2xx answer's bytes unparsed: an effect-seam
    /// fire through a `provider` row, whose receiver plays the provider and
    /// may answer any 2xx body (RPL-11). Bounded like [`Self::complete`];
    /// never retried.
    pub async fn post_raw_messages(
        &self,
        url: &Url,
        body: &Value,
    ) -> Result<Vec<u8>, ProviderError> {
        let exchange = async {
            let mut response = self
                .client
                .post(url.clone())
                .json(body)
                .header("anthropic-version", anthropic::API_VERSION)
                .header("x-api-key", anthropic::API_KEY)
                .send()
                .await
                .map_err(|err| transport_error(&err))?;
            let status = response.status();
            if !status.is_success() {
                return Err(ProviderError::Status(status.as_u16()));
            }
            let mut bytes = Vec::new();
            while let Some(chunk) = response
                .chunk()
                .await
                .map_err(|err| transport_error(&err))?
            {
                if bytes.len().saturating_add(chunk.len()) > MAX_PROVIDER_BODY {
                    return Err(ProviderError::TooLarge);
                }
                bytes.extend_from_slice(&chunk);
            }
            Ok(bytes)
        };
        match tokio::time::timeout(REQUEST_TIMEOUT, exchange).await {
            Ok(result) => result,
            Err(_) => Err(ProviderError::Timeout),
        }
    }

    async fn exchange(&self, request: &ModelRequest<'_>) -> Result<ModelResponse, ProviderError> {
        let spec = request.spec;
        let (path, body) = match spec.wire {
            Wire::OpenAiChat => (openai::PATH, openai::request_body(request)),
            Wire::AnthropicMessages => (anthropic::PATH, anthropic::request_body(request)),
        };
        let url = endpoint(&spec.base_url, path)?;
        let mut builder = self.client.post(url).json(&body);
        if spec.wire == Wire::AnthropicMessages {
            builder = builder
                .header("anthropic-version", anthropic::API_VERSION)
                .header("x-api-key", anthropic::API_KEY);
        }
        let mut response = builder.send().await.map_err(|err| transport_error(&err))?;
        let status = response.status();
        if !status.is_success() {
            // The body may echo anything; it is never read into a message.
            return Err(ProviderError::Status(status.as_u16()));
        }
        if spec.stream {
            let mut assembler: Box<dyn StreamAssembler + Send> = match spec.wire {
                Wire::OpenAiChat => Box::new(openai::OpenAiStream::default()),
                Wire::AnthropicMessages => Box::new(anthropic::AnthropicStream::default()),
            };
            let mut decoder = SseDecoder::new();
            let mut read = 0usize;
            loop {
                let chunk = response
                    .chunk()
                    .await
                    .map_err(|err| transport_error(&err))?;
                let Some(chunk) = chunk else { break };
                read = read.saturating_add(chunk.len());
                if read > MAX_PROVIDER_BODY {
                    return Err(ProviderError::TooLarge);
                }
                for event in decoder.push(&chunk) {
                    if assembler.push(&event)? == StreamFlow::Done {
                        return assembler.finish();
                    }
                }
            }
            assembler.finish()
        } else {
            let mut bytes = Vec::new();
            while let Some(chunk) = response
                .chunk()
                .await
                .map_err(|err| transport_error(&err))?
            {
                if bytes.len().saturating_add(chunk.len()) > MAX_PROVIDER_BODY {
                    return Err(ProviderError::TooLarge);
                }
                bytes.extend_from_slice(&chunk);
            }
            // serde_json's syntax errors name a position, never content.
            let value: Value = serde_json::from_slice(&bytes)
                .map_err(|err| ProviderError::Malformed(format!("not JSON ({err})")))?;
            match spec.wire {
                Wire::OpenAiChat => openai::parse_response(&value),
                Wire::AnthropicMessages => anthropic::parse_response(&value),
            }
        }
    }
}

/// `{baseUrl}{path}`: the path is appended to whatever path the base has.
fn endpoint(base: &Url, path: &str) -> Result<Url, ProviderError> {
    let joined = format!("{}{path}", base.as_str().trim_end_matches('/'));
    Url::parse(&joined).map_err(|_| ProviderError::Request("the endpoint URL is invalid"))
}

/// Maps a client error to a reason, without its text (which can carry the
/// URL or fragments of the answer).
fn transport_error(err: &reqwest::Error) -> ProviderError {
    if err.is_timeout() {
        ProviderError::Timeout
    } else if err.is_connect() {
        ProviderError::Connect
    } else {
        ProviderError::Transport
    }
}

/// A string member of a JSON object, if present and a string.
fn str_member<'v>(value: &'v Value, key: &str) -> Option<&'v str> {
    value.get(key).and_then(Value::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_names_round_trip() {
        for name in Wire::NAMES {
            assert_eq!(Wire::parse(name).map(Wire::as_str), Some(*name));
        }
        assert_eq!(Wire::parse("gemini"), None);
    }

    #[test]
    fn endpoints_append_the_wire_path() {
        let base = Url::parse("http://127.0.0.1:9").expect("url");
        assert_eq!(
            endpoint(&base, openai::PATH).expect("url").as_str(),
            "http://127.0.0.1:9/v1/chat/completions"
        );
        let prefixed = Url::parse("http://127.0.0.1:9/mock/").expect("url");
        assert_eq!(
            endpoint(&prefixed, anthropic::PATH).expect("url").as_str(),
            "http://127.0.0.1:9/mock/v1/messages"
        );
    }

    #[test]
    fn error_messages_name_the_reason_only() {
        assert_eq!(
            ProviderError::Status(503).to_string(),
            "provider answered HTTP 503"
        );
        assert!(
            ProviderError::CutStream("no [DONE]")
                .to_string()
                .contains("cut")
        );
    }
}
