//! toolcert: a conformance harness for OpenWOP hosts.
//!
//! toolcert checks that a host treats a tool call as a durable, authorized, idempotent effect
//! on a run's event log. It drives the host through its test seams (and a scripted model
//! provider), witnesses effects at doubles it owns (the tool [`witness`] receiver), and gives
//! every requirement row exactly one [`verdict::Disposition`].
//!
//! This package is the binary (`src/main.rs`, with the command line in `src/cli/`, a module of
//! the binary, not of this library) and the mutation matrix (`matrix`, feature `reference`). The pipeline lives in crates by stage, each
//! importing only the ones below it (docs/design/architecture.md):
//!
//! - `toolcert-base`: [`canonical`] JSON and the [`redact`]or, shared by all;
//! - `toolcert-core`, offline: [`suite`] (registry, scenarios and their steps), [`profile`],
//!   [`observation`], [`expect`], [`verdict`], [`result`], [`report`], [`recheck`],
//!   [`baseline`], [`bundle`], and the utilities [`budget`], [`input`], [`output`],
//!   [`partition`], [`repeat`], [`template`], [`transcript`];
//! - `toolcert-driver`, against a host: [`host`], [`witness`], [`steps`], [`runner`];
//! - `toolcert-mcp`, beside the pipeline: [`mcp`] tool pinning (capture, review, gate, call,
//!   guard).
//!
//! The library target is a thin facade: it re-exports those crates' modules under the names
//! they had when toolcert was one crate (`toolcert::suite::Suite`, `toolcert::mcp::gate`), so
//! the integration tests, the benches and the docs read one set of paths. New code may import
//! the stage crates directly.
//!
//! The `reference` feature (default) builds the reference host in: the embedded target
//! (`runner::Target::embedded`), its mutants and the matrix. Without it
//! (`--no-default-features`) toolcert certifies hosts at a URL or started with `--spawn`, and
//! neither axum nor SQLite is in its dependency tree.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let suite = toolcert::suite::Suite::embedded()?;
//! let target = toolcert::runner::Target::embedded(None).await?;
//! let run = toolcert::runner::run_all(&suite, &target, &toolcert::runner::RunOptions::default()).await?;
//! println!("{} rows judged", run.rows.len());
//! # Ok(()) }
//! ```

// Every public item says what it is and why it exists (checked, not hoped for).
#![deny(missing_docs)]

#[cfg(feature = "reference")]
pub mod matrix;

pub use toolcert_base::{canonical, redact};
pub use toolcert_core::{
    SUITE_VERSION, baseline, budget, bundle, expect, input, observation, output, partition,
    profile, recheck, repeat, report, result, suite, template, transcript, verdict,
};
pub use toolcert_driver::{host, runner, steps, witness};
pub use toolcert_mcp as mcp;
