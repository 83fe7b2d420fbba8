//! Why admission could not record a call's events ([`AdmissionError`]).
//!
//! Its own module, below the MCP client ([`crate::turn::mcp`]) that
//! admission dispatches through and that fails the same way.

use crate::base::args_hash::ArgsHashError;
use crate::store::storage::StorageError;

/// Admission could not record its events.
#[derive(Debug, thiserror::Error)]
pub enum AdmissionError {
    /// The store failed.
    #[error("the run store failed: {0}")]
    Storage(#[from] StorageError),
    /// The arguments could not be hashed.
    #[error(transparent)]
    Hash(#[from] ArgsHashError),
    /// An event payload could not be serialized.
    #[error("an event payload could not be serialized: {0}")]
    Payload(#[from] serde_json::Error),
    /// A held call's resolution could not be recorded, so the host does not
    /// know whether it may run the call.
    #[error("the resolution of a held call was lost")]
    ApprovalLost,
}
