//! toolcert: a conformance harness for OpenWOP hosts.
//!
//! toolcert checks that a host treats a tool call as a durable, authorized, idempotent effect
//! on a run's event log. It drives the host through its test seams (and, in later slices, a
//! scripted model provider), witnesses effects at doubles it owns (the tool [`witness`]
//! receiver), and gives every requirement row exactly one [`verdict::Disposition`].
//!
//! The crate is a library with a thin binary on top:
//!
//! - [`suite`] is the requirement registry and the scenario files, loaded and validated (by
//!   the private `loader`, which sits above [`expect`] and [`observation`]);
//! - [`host`] talks to a host: discovery, wire major, paths, bearer tokens per role (the
//!   [`profile`] a user gives of it is read offline too, by bundles);
//! - [`budget`] bounds what a run keeps of what hosts send (memory, depth, JSON values);
//! - [`witness`] holds the doubles toolcert owns (the tool receiver);
//! - [`steps`] runs the typed steps a scenario is made of and records observations;
//! - [`observation`] types what each step kind observes, and "not observed";
//! - [`expect`] judges checks over those observations (drive, then judge);
//! - [`verdict`] folds check outcomes into one disposition per requirement row;
//! - [`runner`] runs scenarios against a target and collects results ([`result`]);
//! - [`report`] writes the JSON, JUnit XML and Markdown reports;
//! - [`mcp`] pins MCP tool catalogs: capture, review, gate and call;
//! - `matrix` runs the mutation matrix against the reference host's mutants (feature
//!   `reference`, on by default, like the embedded reference host itself);
//! - [`baseline`] judges a run against the rows a user expects not to pass;
//! - [`recheck`] seals reports with a digest and re-judges them offline;
//! - [`bundle`] writes and verifies signed certification bundles;
//! - [`partition`] splits the scenarios into stable shards;
//! - [`repeat`] runs every scenario K times and folds the trials (pass^k, `flaky`);
//! - [`redact`] scrubs every token and canary from whatever leaves toolcert;
//! - [`input`] reads every file toolcert is given, bounded and only if it is a regular file;
//! - [`output`] is the last step of everything written: made safe, redacted, written whole.
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

pub use toolcert_base::canonical;
pub use toolcert_core::baseline;
pub use toolcert_core::budget;
pub use toolcert_core::bundle;
pub mod cli;
pub use toolcert_core::expect;
pub mod host;
pub use toolcert_core::input;
#[cfg(feature = "reference")]
pub mod matrix;
pub use toolcert_base::redact;
pub use toolcert_core::observation;
pub use toolcert_core::output;
pub use toolcert_core::partition;
pub use toolcert_core::profile;
pub use toolcert_core::recheck;
pub use toolcert_core::repeat;
pub use toolcert_core::report;
pub use toolcert_core::result;
pub use toolcert_mcp as mcp;
pub mod runner;
pub mod steps;
pub use toolcert_core::suite;
pub use toolcert_core::template;
pub use toolcert_core::transcript;
pub use toolcert_core::verdict;
pub mod witness;

pub use toolcert_core::SUITE_VERSION;
