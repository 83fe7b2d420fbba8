//! toolcert-mcp: pinning MCP tools. Capture a server's complete tool catalog into a reviewed snapshot, and
//! gate every `tools/call` on an exact match with it.
//!
//! The snapshot profile is `openudon.mcp-tool-manifest.0.1`; its rules are those of the
//! OpenUdon "MCP tool calls" experiment (capture and hashing, the freshness and drift gate,
//! `list_changed`, reviewer assertions, invocation and output). Everything here works on
//! [`serde_json::Value`] end to end: no typed Tool model sits between the wire and the
//! snapshot, so no member of a Tool object is ever dropped or reordered.
//!
//! - [`client`] is an MCP client of toolcert's own (2025-11-25 with `initialize`, and the
//!   stateless 2026-07-28 revision) over [`transport`]s: a spawned command's stdio, Streamable
//!   HTTP on loopback, or an in-process pipe. Every wait and every size is bounded.
//! - [`snapshot`] is the document: load (strict JSON, schema, digest), capture, write.
//! - [`review`] records a reviewer's assertions and input-channel classification.
//! - [`gate`] is the pre-call gate, rule by rule, with typed refusals and minimal diffs.
//! - [`call`] gates, validates the arguments, calls, and judges the result.
//! - [`diff`] compares JSON values and snapshots in words a reviewer can approve.
//! - [`double`] is toolcert's scriptable MCP server double (stdio, HTTP, in-process);
//!   [`drifter`] is its drifting copy of a real server.
//! - [`trust`] derives the content-trust contracts of a reviewed tool (value-free).
//! - [`cases`] are the gate-rule cases against the double, and the gate's mutation matrix.
//! - [`guard`] puts the gate in front of an MCP client (stdio or Streamable HTTP), over one
//!   [`upstream`] connection shared by the client's traffic and the gate.
//! - [`invalidation`] makes a `list_changed` (or a drift) outlive the connection that saw it.
//! - [`policy`] is a deployment's local policy (step 6) and its pins past the anchors.
//!
//! This crate stands beside the conformance pipeline, not in it: it imports only
//! `toolcert-base` (canonical JSON, the redactor) and `loopback-http` from the workspace, and
//! the `toolcert` binary drives it (`toolcert mcp …`).

// Every public item says what it is and why it exists (checked, not hoped for).
#![deny(missing_docs)]

pub mod call;
pub mod cases;
pub mod client;
pub mod diff;
pub mod double;
pub mod drifter;
pub mod gate;
pub mod guard;
pub mod invalidation;
pub mod policy;
pub mod review;
pub mod snapshot;
pub mod sse;
pub mod time;
pub mod transport;
pub mod trust;
pub mod upstream;

/// toolcert's version, which its MCP client announces in `clientInfo`: the workspace's crates
/// share one version, so it is the suite version toolcert's reports carry.
pub const TOOLCERT_VERSION: &str = env!("CARGO_PKG_VERSION");

/// The snapshot profile toolcert writes and reads.
pub const PROFILE: &str = "openudon.mcp-tool-manifest.0.1";

/// The last MCP revision with an `initialize` handshake; toolcert captures at it by default.
pub const REVISION_2025_11_25: &str = "2025-11-25";

/// The stateless MCP revision (`server/discover`, per-request `_meta`, no sessions).
pub const REVISION_2026_07_28: &str = "2026-07-28";

/// The revisions toolcert's client speaks.
pub const REVISIONS: &[&str] = &[REVISION_2025_11_25, REVISION_2026_07_28];
