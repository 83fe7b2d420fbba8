//! toolcert-core: the offline stages of toolcert's pipeline, with no network and no async
//! runtime.
//!
//! What a run is made of and what it produced, and everything that judges or re-judges it:
//!
//! - [`suite`] is the requirement registry and the scenario files (with their typed steps),
//!   loaded and validated (by the private `loader`, which sits above [`expect`] and
//!   [`observation`]), and embedded at build time;
//! - [`profile`] is the host profile a user gives (base URL, a token per role);
//! - [`observation`] types what each step kind observes, and "not observed";
//! - [`expect`] judges checks over those observations (drive, then judge);
//! - [`verdict`] folds check outcomes into one disposition per requirement row, and certifies;
//! - [`result`] holds what a run produced (each scenario's result, the run's outcome);
//! - [`report`] writes the JSON, JUnit XML, Markdown and HTML reports;
//! - [`recheck`] seals reports with a digest and re-judges them offline;
//! - [`baseline`] judges a run against the rows a user expects not to pass;
//! - [`bundle`] writes and verifies signed certification bundles;
//! - [`repeat`] folds K trials per scenario (pass^k, `flaky`);
//! - [`partition`] splits the scenarios into stable shards;
//! - [`budget`] bounds what a run keeps of what hosts send (memory, depth, JSON values);
//! - [`template`] fills a scenario's `{{…}}` values;
//! - [`transcript`] records redacted exchanges with the host;
//! - [`input`] reads every file toolcert is given, bounded and only if it is a regular file;
//! - [`output`] is the last step of everything written: made safe, redacted, written whole.
//!
//! It imports `toolcert-base` (canonical JSON, the redactor) and `mock-provider`'s script
//! model (without its server) from the workspace; the driver that runs scenarios against a
//! host (`toolcert-driver`) sits above it, so `toolcert recheck` and `bundle verify` need
//! nothing that talks to a network.

// Every public item says what it is and why it exists (checked, not hoped for).
#![deny(missing_docs)]

pub mod baseline;
pub mod budget;
pub mod bundle;
pub mod expect;
pub mod input;
mod loader;
pub mod observation;
pub mod output;
pub mod partition;
pub mod profile;
pub mod recheck;
pub mod repeat;
pub mod report;
pub mod result;
pub mod suite;
pub mod template;
pub mod transcript;
pub mod verdict;

/// The suite version reports carry, so results compare across toolcert releases.
pub const SUITE_VERSION: &str = env!("CARGO_PKG_VERSION");
