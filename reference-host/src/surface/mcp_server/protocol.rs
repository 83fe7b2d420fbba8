//! The protocol vocabulary of the mount: its path, revision, meta keys and
//! JSON-RPC codes, the error answer ([`RpcError`]) and the readers of
//! `params` every method uses. Below the mount ([`super`]) and its methods
//! ([`super::call`], [`super::tasks`], [`super::results`]), which all use it.

use axum::http::StatusCode;
use serde_json::{Map, Value, json};

use crate::domain::error::ApiError;

/// Path of the mount.
pub const MCP_PATH: &str = "/mcp";

/// The one MCP revision the mount serves.
pub const PROTOCOL_VERSION: &str = crate::turn::mcp::PROTOCOL_VERSION;

/// `server/discover.supportedVersions` (= the discovery record's
/// `revisions`, MCP-10).
pub const SUPPORTED_VERSIONS: &[&str] = &[PROTOCOL_VERSION];

/// `serverInfo.name`.
pub const SERVER_NAME: &str = "toolcert-reference-host";

/// The `_meta` key carrying the request's protocol version.
pub const VERSION_META_KEY: &str = "io.modelcontextprotocol/protocolVersion";

/// The `_meta` key of every `tools/call` result naming the run it started
/// (or continued).
pub const RUN_ID_META_KEY: &str = "org.openwop/runId";

/// The version header.
pub const VERSION_HEADER: &str = "mcp-protocol-version";

/// The `_meta` key of a request's per-request client capabilities.
pub const CLIENT_CAPABILITIES_META_KEY: &str = "io.modelcontextprotocol/clientCapabilities";

/// The MCP Tasks extension the mount serves (revision 2026-07-28, MCP-14).
pub const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// JSON-RPC: the body is not JSON.
pub const PARSE_ERROR: i64 = -32700;
/// JSON-RPC: not a valid request object.
pub const INVALID_REQUEST: i64 = -32600;
/// JSON-RPC: unknown method.
pub const METHOD_NOT_FOUND: i64 = -32601;
/// JSON-RPC: invalid params (also an unknown tool and a refused retry).
pub const INVALID_PARAMS: i64 = -32602;
/// JSON-RPC: internal error (also a run that did not settle in time).
pub const INTERNAL_ERROR: i64 = -32603;
/// MCP `HeaderMismatchError`.
pub const HEADER_MISMATCH: i64 = -32020;
/// MCP `UnsupportedProtocolVersionError`.
pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;
/// MCP `MissingRequiredClientCapabilityError` (a `tasks/*` request that did
/// not declare [`TASKS_EXTENSION`]).
pub const MISSING_REQUIRED_CLIENT_CAPABILITY: i64 = -32021;

/// A JSON-RPC error answer and its HTTP status.
#[derive(Debug, Clone, PartialEq)]
pub struct RpcError {
    /// The HTTP status it travels with.
    pub status: StatusCode,
    /// The JSON-RPC code.
    pub code: i64,
    /// What is wrong and what would fix it.
    pub message: String,
    /// `error.data`, if any.
    pub data: Option<Value>,
}

/// `params.<name>` when the request carries it: `Ok(Some(_))` when `pick` takes it, a
/// `-32602` saying what it must be (`what`) and what it was otherwise. Every typed member the
/// mount reads (`tools/call`, `tasks/*`) comes through here or [`required_member`].
pub fn optional_member<'p, T>(
    params: &'p Map<String, Value>,
    name: &str,
    what: &str,
    pick: impl Fn(&'p Value) -> Option<T>,
) -> Result<Option<T>, RpcError> {
    match params.get(name) {
        None => Ok(None),
        Some(value) => pick(value).map(Some).ok_or_else(|| {
            RpcError::invalid_params(format!(
                "`params.{name}` must be {what} (got {})",
                crate::domain::json_body::kind(value)
            ))
        }),
    }
}

/// [`optional_member`] for a member the request must carry.
pub fn required_member<'p, T>(
    params: &'p Map<String, Value>,
    name: &str,
    what: &str,
    pick: impl Fn(&'p Value) -> Option<T>,
) -> Result<T, RpcError> {
    optional_member(params, name, what, pick)?
        .ok_or_else(|| RpcError::invalid_params(format!("`params.{name}` is required: {what}")))
}

impl RpcError {
    /// An error with no data.
    pub fn new(status: StatusCode, code: i64, message: impl Into<String>) -> Self {
        Self {
            status,
            code,
            message: message.into(),
            data: None,
        }
    }

    /// HTTP 200 `-32602`.
    pub fn invalid_params(message: impl Into<String>) -> Self {
        Self::new(StatusCode::OK, INVALID_PARAMS, message)
    }

    /// HTTP 200 `-32603`.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(StatusCode::OK, INTERNAL_ERROR, message)
    }

    /// HTTP 400 `-32600`.
    pub(super) fn invalid_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, INVALID_REQUEST, message)
    }

    /// Attaches `error.data`.
    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }

    pub(super) fn to_json(&self) -> Value {
        let mut error = json!({"code": self.code, "message": self.message});
        if let (Some(data), Some(object)) = (&self.data, error.as_object_mut()) {
            object.insert("data".to_owned(), data.clone());
        }
        error
    }
}

impl From<ApiError> for RpcError {
    fn from(err: ApiError) -> Self {
        Self::internal(format!("{}: {}", err.code, err.message))
    }
}

impl From<crate::store::storage::StorageError> for RpcError {
    fn from(_: crate::store::storage::StorageError) -> Self {
        Self::internal("the host's run store failed; retry the request")
    }
}

/// Whether a request declared the Tasks extension in its per-request client
/// capabilities (`_meta["io.modelcontextprotocol/clientCapabilities"]
/// .extensions["io.modelcontextprotocol/tasks"]`, an object).
pub fn declares_tasks(params: &Map<String, Value>) -> bool {
    params
        .get("_meta")
        .and_then(|meta| meta.get(CLIENT_CAPABILITIES_META_KEY))
        .and_then(|caps| caps.get("extensions"))
        .and_then(|extensions| extensions.get(TASKS_EXTENSION))
        .is_some_and(Value::is_object)
}
