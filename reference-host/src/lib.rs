//! A minimal in-memory OpenWOP v2 host.
//!
//! It is the known-good target of toolcert's conformance checks and also
//! carries deliberately broken variants ("mutants", see [`mutants`]), each
//! one known bug at one named place. Embed it with [`start`] or run the
//! `reference-host` binary. See `docs/reference-host.md`.

pub mod app;
pub mod args_hash;
pub mod args_schema;
pub mod auth;
pub mod authz;
pub mod catalog;
pub mod cli;
pub mod clock;
pub mod config;
pub mod content_trust;
pub mod discovery;
pub mod domain;
pub mod effect_seams;
pub mod effects;
pub mod error;
pub mod event_codes;
pub mod events;
pub mod http_client;
pub mod interrupts;
pub mod invoker;
pub mod json_body;
pub mod layer1;
pub mod mac_key;
pub mod mcp_server;
pub mod mutant;
pub mod mutants;
pub mod principals;
pub mod rate_limit;
pub mod redaction;
pub mod runs;
pub mod seams;
pub mod sse;
pub mod storage;
pub mod tool_events;
pub mod turn;
pub mod upstream;
pub mod webhooks;
pub mod workflows;

pub use app::{AppState, RunningHost, router, start};
pub use config::{HostConfig, RateLimitConfig};
pub use error::{ApiError, ErrorCode, HostError};
