//! toolcert-base: what every toolcert crate shares, and nothing else.
//!
//! - [`canonical`]: RFC 8785 canonical JSON (digests such as `argsHash` and a report's
//!   `digest` are SHA-256 over it), the strict I-JSON parser every loaded document goes
//!   through, and the RFC 6901 escape of a pointer token;
//! - [`redact`]: the one redactor every string leaving toolcert passes (reports, console,
//!   transcripts, MCP snapshots and audit logs).
//!
//! Both are needed by the offline core (reports, re-check, bundles) and by the MCP pinning
//! crate, which share nothing else; so they sit below both, and this crate imports no other
//! crate of the workspace.

// Every public item says what it is and why it exists (checked, not hoped for).
#![deny(missing_docs)]

pub mod canonical;
pub mod redact;
