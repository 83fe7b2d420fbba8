//! toolcert-driver: the stages of toolcert's pipeline that drive a host.
//!
//! - [`host`] talks to a host: the HTTP client with its budgets, discovery and the wire major,
//!   paths per major, bearer tokens per role, spawned hosts and their process trees;
//! - [`witness`] holds the doubles toolcert owns (the tool receiver, the MCP server double):
//!   effects are counted there, never taken from a host's self-report;
//! - [`steps`] runs the typed steps a scenario is made of and records observations;
//! - [`runner`] runs scenarios against a target (with its scheduler) and concludes the run.
//!
//! What a run is made of (scenarios, profile) and what judges it (checks, verdicts, reports)
//! is `toolcert-core`'s, below this crate; the mock model provider (`mock-provider`) and the
//! doubles' HTTP server (`loopback-http`) are its tools. The `reference` feature (off here;
//! the `toolcert` binary turns it on by default) builds the reference host in as a target
//! (`runner::Target::embedded`).

// Every public item says what it is and why it exists (checked, not hoped for).
#![deny(missing_docs)]

pub mod host;
pub mod runner;
pub mod steps;
pub mod witness;
