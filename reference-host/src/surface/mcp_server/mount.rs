//! The mount's state ([`McpServer`]) and what serving one request produces
//! ([`Reply`], and the run it owns, [`OwnedRun`]). Below the mount's handler
//! ([`super`]) and its methods, which all use them.

use std::sync::Arc;

use serde_json::Value;

use super::protocol::RpcError;
use super::request_state::StateKey;
use super::templates::Templates;
use crate::turn::ownership::RequestOwnedRun;

/// The mount's state: the templates and the request-state key. Cheap to
/// clone (one shared copy), so a handler extracts it on its own next to the
/// tool loop's state.
#[derive(Debug, Clone, Default)]
pub struct McpServer {
    inner: Arc<McpServerInner>,
}

#[derive(Debug, Default)]
struct McpServerInner {
    templates: Templates,
    state_key: StateKey,
}

impl McpServer {
    /// An empty mount with a fresh random request-state key.
    pub fn new() -> Self {
        Self::default()
    }

    /// The registered run templates (the tools).
    pub fn templates(&self) -> &Templates {
        &self.inner.templates
    }

    /// The per-process request-state key.
    pub fn state_key(&self) -> &StateKey {
        &self.inner.state_key
    }
}

/// A run the request being served owns until its answer is sent (MCP-14),
/// and whether it stays bound past that (only the
/// `mcp-disconnect-after-response-cancels` mutant).
#[derive(Debug)]
pub struct OwnedRun {
    /// Cancels the run when dropped armed.
    pub guard: RequestOwnedRun,
    /// Keep the guard armed after the answer is handed over, so the end of
    /// the exchange cancels the run (the mutant's bug).
    pub keep_bound: bool,
}

/// What serving one request produced: its result (or error), and the run it
/// owns until the answer is sent, if it started or continued one.
#[derive(Debug)]
pub struct Reply {
    /// The JSON-RPC result or error.
    pub result: Result<Value, RpcError>,
    /// The run the request owns (MCP-14).
    pub owned: Option<OwnedRun>,
}

impl Reply {
    /// A reply that owns no run.
    pub fn plain(result: Result<Value, RpcError>) -> Self {
        Self {
            result,
            owned: None,
        }
    }
}
