//! The control API for standalone use: load scripts and read recordings over HTTP.
//!
//! Hosts that toolcert does not start itself are pointed at a standalone mock-provider; the
//! harness then drives it through these routes instead of the in-process library API.

use axum::Json;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use crate::script::Script;
use crate::state::ProviderState;

/// Prefix of every control route; chosen so it cannot collide with a provider path.
pub const CONTROL_PREFIX: &str = "/_toolcert";

/// `POST /_toolcert/scripts`: load (or replace) the script in the body.
pub(crate) async fn load_script(State(state): State<ProviderState>, body: Bytes) -> Response {
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
        Ok(()) => (
            StatusCode::CREATED,
            Json(json!({"model": model, "rounds": rounds})),
        )
            .into_response(),
        Err(e) => bad_script(e.message, &e.pointer),
    }
}

/// `GET /_toolcert/scripts/{model}/requests`: what was recorded for `model` (empty lists for
/// a key nothing was recorded for).
pub(crate) async fn recorded(
    State(state): State<ProviderState>,
    Path(model): Path<String>,
) -> Response {
    Json(json!({
        "model": model,
        "requests": state.requests(&model),
        "problems": state.problems(&model),
    }))
    .into_response()
}

/// `DELETE /_toolcert/scripts/{model}`: forget the script and its record (idempotent).
pub(crate) async fn forget(
    State(state): State<ProviderState>,
    Path(model): Path<String>,
) -> StatusCode {
    state.forget(&model);
    StatusCode::NO_CONTENT
}

fn bad_script(message: String, pointer: &str) -> Response {
    (
        StatusCode::BAD_REQUEST,
        Json(json!({"error": {"message": message, "pointer": pointer}})),
    )
        .into_response()
}
