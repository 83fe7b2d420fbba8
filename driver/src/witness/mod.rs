//! Doubles toolcert owns. Effects are counted here, never taken from a host's self-report.

mod mcp;
mod receiver;

pub use mcp::{MCP_REVISION, McpRequest, McpServer};
pub use receiver::{Endpoint, Receiver};
pub use toolcert_core::observation::Arrival;
pub use toolcert_core::suite::McpAnswer;
