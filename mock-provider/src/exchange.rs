//! One request/answer exchange, common to both endpoints: read and parse the body, check its
//! shape, record it, consume the key's next round, wait, answer.

use loopback_http::{HeaderMap, HeaderValue, RequestBody, Response, StatusCode, header, response};
use serde_json::{Value, json};

use crate::error::ApiError;
use crate::record::{Endpoint, recorded_headers};
use crate::reply::Reply;
use crate::sse::{event_body, json_body};
use crate::state::{Incoming, ProviderState};
use crate::{anthropic, openai};

/// Largest request body accepted. Agent conversations with tool results (and base64 images)
/// get big; this is far above what a conformance test sends yet still bounds memory.
pub(crate) const MAX_REQUEST_BYTES: usize = 64 * 1024 * 1024;

/// Handle one request to `endpoint`.
pub(crate) async fn handle(
    state: ProviderState,
    endpoint: Endpoint,
    headers: HeaderMap,
    body: RequestBody,
) -> Response {
    let (body, parse_error) = match body.read(MAX_REQUEST_BYTES).await {
        Ok(bytes) => match serde_json::from_slice::<Value>(&bytes) {
            Ok(value) => (value, None),
            Err(e) => (
                json!({"$nonJson": String::from_utf8_lossy(&bytes)}),
                Some(ApiError::invalid(
                    None,
                    format!("The request body is not valid JSON: {e}"),
                )),
            ),
        },
        Err(e) => (
            json!({"$nonJson": format!("<unreadable body: {e}>")}),
            Some(ApiError::status(
                413,
                format!(
                    "The request body could not be read (limit {MAX_REQUEST_BYTES} bytes): {e}"
                ),
            )),
        ),
    };

    // Malformed requests are still filed under their model key when it can be read, so a
    // test sees its own host's mistakes; otherwise under "".
    let model = body
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let stream = body.get("stream") == Some(&Value::Bool(true));
    let invalid = parse_error.or_else(|| {
        match endpoint {
            Endpoint::OpenAiChat => openai::validate(&body),
            Endpoint::AnthropicMessages => anthropic::validate(&headers, &body),
        }
        .err()
    });
    let incoming = Incoming {
        endpoint,
        headers: recorded_headers(&headers),
        body,
        stream,
    };

    let decision = state.exchange(&model, incoming, invalid, |round, context| match endpoint {
        Endpoint::OpenAiChat => openai::render(round, context, &model, stream),
        Endpoint::AnthropicMessages => anthropic::render(round, context, &model, stream),
    });
    if let Some(delay) = decision.delay {
        tokio::time::sleep(delay).await;
    }
    match decision.reply {
        Ok(reply) => reply_response(reply),
        Err(error) => match endpoint {
            Endpoint::OpenAiChat => openai::error_response(&error),
            Endpoint::AnthropicMessages => anthropic::error_response(&error),
        },
    }
}

fn reply_response(reply: Reply) -> Response {
    match reply {
        Reply::Json { body, cut } => {
            let bytes = body.to_string().into_bytes();
            let length = bytes.len();
            let mut response = Response::new(json_body(bytes, cut));
            let headers = response.headers_mut();
            headers.insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
            // The full length is declared even when the body is cut, so clients know the body
            // they got is short rather than merely over.
            headers.insert(header::CONTENT_LENGTH, HeaderValue::from(length));
            response
        }
        Reply::Events { events, cut } => {
            let mut response =
                response::with_type(StatusCode::OK, "text/event-stream", event_body(events, cut));
            response
                .headers_mut()
                .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
            response
        }
    }
}
