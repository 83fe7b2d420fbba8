//! The scriptable mock model provider.
//!
//! This crate will serve OpenAI Chat Completions and Anthropic Messages from per-model
//! scripts so that toolcert can drive a host's real tool loop. The foundation slice only
//! reserves the crate in the workspace; no provider behaviour exists yet, and nothing in
//! toolcert claims otherwise (the TURN rows are listed as uncovered by `toolcert coverage`).

/// Wire formats the provider will speak, named as the providers name them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WireFormat {
    /// OpenAI Chat Completions (`POST /v1/chat/completions`).
    OpenAiChat,
    /// Anthropic Messages (`POST /v1/messages`).
    AnthropicMessages,
}
