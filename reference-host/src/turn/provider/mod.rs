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
pub mod types;

use reqwest::Url;
use serde_json::Value;

use event_stream::SseDecoder;
pub use types::{
    AssistantBlock, Completion, HostTool, MAX_PROVIDER_BODY, ModelRequest, ModelResponse,
    ProviderError, ProviderSpec, ProviderTool, REQUEST_TIMEOUT, Round, StreamAssembler, StreamFlow,
    ToolEmission, Transcript, Wire,
};

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
