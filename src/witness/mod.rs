//! Doubles toolcert owns. Effects are counted here, never taken from a host's self-report.

mod mcp;
mod receiver;

pub use crate::observation::Arrival;
pub use crate::suite::McpAnswer;
pub use mcp::{MCP_REVISION, McpRequest, McpServer};
pub use receiver::{Endpoint, Receiver};
