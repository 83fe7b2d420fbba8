//! A minimal in-memory OpenWOP v2 host.
//!
//! It is the known-good target of toolcert's conformance checks and also
//! carries deliberately broken variants ("mutants", see [`mutants`]), each
//! one known bug at one named place. Embed it with [`start`] or run the
//! `reference-host` binary. See `docs/reference/reference-host/README.md`.

// Every public item says what it is and why it exists (checked, not hoped for).
#![deny(missing_docs)]

// One folder per layer (reference-host/layers.txt); a module imports its own
// layer and those below.
pub mod base;
pub mod domain;
pub mod store;
pub mod surface;
pub mod turn;

// The paths the harness and the binary use.
pub use surface::{cli, mutants};

pub use base::config::{HostConfig, RateLimitConfig, UpstreamMajor};
pub use domain::error::{ApiError, ErrorCode, HostError};
pub use surface::app::{AppState, RunningHost, router, start};
