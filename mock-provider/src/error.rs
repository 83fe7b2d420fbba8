//! Error types: what is wrong with a script, and the provider-shaped errors the mock answers with.

#[cfg(feature = "server")]
use std::fmt;

/// A script that does not have the documented shape.
///
/// `pointer` is an RFC 6901 JSON pointer into the script document (`""` is the whole
/// document, `/rounds/2/toolCalls/0/name` a tool call's name), so a harness can show the
/// scenario author exactly which value to fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("at \"{pointer}\": {message}")]
pub struct ScriptError {
    /// RFC 6901 JSON pointer to the offending (or missing) value.
    pub pointer: String,
    /// What was expected there.
    pub message: String,
}

impl ScriptError {
    /// A script error at `pointer`.
    pub(crate) fn new(pointer: impl Into<String>, message: impl Into<String>) -> Self {
        ScriptError {
            pointer: pointer.into(),
            message: message.into(),
        }
    }
}

/// An error answer: the HTTP status plus what each wire format needs to shape its error body.
///
/// The endpoint modules turn this into the provider's own error JSON; it is never sent as-is.
#[cfg(feature = "server")]
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ApiError {
    /// HTTP status code (400..=599).
    pub status: u16,
    /// Human-readable message, naming the field where one is at fault.
    pub message: String,
    /// The request field at fault (OpenAI's `param`; Anthropic puts it in the message).
    pub param: Option<String>,
    /// A machine-readable code overriding the status-derived one (OpenAI's `code`).
    pub code: Option<&'static str>,
}

#[cfg(feature = "server")]
impl ApiError {
    /// A 400 `invalid_request_error` about `param`.
    pub(crate) fn invalid(param: Option<&str>, message: impl Into<String>) -> Self {
        ApiError {
            status: 400,
            message: message.into(),
            param: param.map(str::to_string),
            code: None,
        }
    }

    /// An error with an explicit status and no field at fault.
    pub(crate) fn status(status: u16, message: impl Into<String>) -> Self {
        ApiError {
            status,
            message: message.into(),
            param: None,
            code: None,
        }
    }
}

#[cfg(feature = "server")]
impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.param {
            Some(param) => write!(f, "{} (param {param}): {}", self.status, self.message),
            None => write!(f, "{}: {}", self.status, self.message),
        }
    }
}

/// The body error used to drop a connection on purpose (`cutAfterChunks`).
///
/// Returning an error from the response body makes hyper abort the connection without the
/// terminating chunk, which is exactly what a provider connection dying mid-answer looks like.
#[cfg(feature = "server")]
#[derive(Debug, Clone, Copy, thiserror::Error)]
#[error("connection cut by the script (cutAfterChunks)")]
pub(crate) struct ScriptedCut;
