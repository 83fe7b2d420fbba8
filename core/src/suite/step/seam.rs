//! `seam`: a call to a sample test seam of the host (`/conformance/seams/sample/<seam>`; v1:
//! `/v1/host/sample/<seam>`) and its answer. The call is also what `repeat` and `foreach` make.
//!
//! Its specification (the step as a scenario writes it), its observation; its driver is
//! `driver/src/steps/seam.rs`. Documented in `docs/authoring/steps.md`, section `seam`.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;

/// `{"step": "seam"}`: a call to `/conformance/seams/sample/<seam>` (v1: `/v1/host/sample/<seam>`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SeamCall {
    /// Name of the observation (`/steps/<name>`).
    pub name: String,
    /// Seam path below the sample prefix, e.g. `toolhooks/invoke`.
    pub seam: String,
    /// Role whose bearer token authenticates the call.
    pub role: String,
    /// `POST` (the default) or `GET`, for a seam that reads (RFC 0034's
    /// `GET …/test/otel/spans?runId=`).
    #[serde(default, skip_serializing_if = "SeamMethod::is_post")]
    pub method: SeamMethod,
    /// Request body (templated); for a `GET`, its members are sent as the query instead.
    pub body: Value,
}

/// How a seam is called.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum SeamMethod {
    /// A JSON body (every seam that acts).
    #[default]
    Post,
    /// The body's members as query parameters (a seam that reads).
    Get,
}

impl SeamMethod {
    /// Whether this is the default, `POST`.
    pub fn is_post(&self) -> bool {
        *self == SeamMethod::Post
    }
}

/// `seam`: a test seam's answer, with `runId`, `toolCalled`, `toolReturned` lifted from the
/// body or its `details`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SeamObservation {
    /// Status and headers.
    pub http: HttpHead,
    /// The body.
    pub body: Value,
    /// The run the seam started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<Value>,
    /// The host's report of the call it made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_called: Option<Value>,
    /// The host's report of what the tool returned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_returned: Option<Value>,
}

/// A seam answer's status line and headers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HttpHead {
    /// Status code.
    pub status: u16,
    /// Headers, lowercase names.
    pub headers: BTreeMap<String, String>,
}
