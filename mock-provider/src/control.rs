//! The control API for standalone use: load scripts and read recordings over HTTP.
//!
//! Hosts that toolcert does not start itself are pointed at a standalone mock-provider; the
//! harness then drives it through these routes instead of the in-process library API.

use loopback_http::{Request, Response, StatusCode, response};
use serde_json::{Value, json};

use crate::exchange::MAX_REQUEST_BYTES;
use crate::script::Script;
use crate::state::ProviderState;

/// Prefix of every control route; chosen so it cannot collide with a provider path.
pub const CONTROL_PREFIX: &str = "/_toolcert";

/// `POST /_toolcert/scripts`: load (or replace) the script in the body.
pub(crate) async fn load_script(state: ProviderState, request: Request) -> Response {
    let body = match request.body.read(MAX_REQUEST_BYTES).await {
        Ok(body) => body,
        Err(e) => {
            return response::text(
                StatusCode::PAYLOAD_TOO_LARGE,
                format!("Failed to buffer the request body: {e}"),
            );
        }
    };
    let document: Value = match serde_json::from_slice(&body) {
        Ok(value) => value,
        Err(e) => return bad_script(format!("the body is not valid JSON: {e}"), ""),
    };
    let script = match Script::from_json(&document) {
        Ok(script) => script,
        Err(e) => return bad_script(e.message, &e.pointer),
    };
    let model = script.model.clone();
    let rounds = script.rounds.len();
    match state.load(script) {
        Ok(()) => response::json(
            StatusCode::CREATED,
            &json!({"model": model, "rounds": rounds}),
        ),
        Err(e) => bad_script(e.message, &e.pointer),
    }
}

/// `GET /_toolcert/scripts/{model}/requests`: what was recorded for `model` (empty lists for
/// a key nothing was recorded for).
pub(crate) async fn recorded(state: ProviderState, request: Request) -> Response {
    let model = request.param("model").unwrap_or_default();
    response::json(
        StatusCode::OK,
        &json!({
            "model": model,
            "requests": state.requests(model),
            "problems": state.problems(model),
        }),
    )
}

/// `DELETE /_toolcert/scripts/{model}`: forget the script and its record (idempotent).
pub(crate) async fn forget(state: ProviderState, request: Request) -> Response {
    state.forget(request.param("model").unwrap_or_default());
    response::status(StatusCode::NO_CONTENT)
}

fn bad_script(message: String, pointer: &str) -> Response {
    response::json(
        StatusCode::BAD_REQUEST,
        &json!({"error": {"message": message, "pointer": pointer}}),
    )
}
