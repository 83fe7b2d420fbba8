//! The reference host's integration tests, one test binary: each file under `tests/` is a
//! module here (one binary links once; one per file linked the same dependencies some 18
//! times). Run one module with `cargo test -p reference-host --test integration <module>::`.

mod common;

mod binary;
mod divergence;
mod durable;
mod effect_fire;
mod human_input;
mod idempotency;
mod inbound;
mod mcp;
mod mcp_server;
mod memory;
mod packs;
mod refusals;
mod seam_toolhooks;
mod trust;
mod turn;
mod upstream_only;
mod upstream_only_v2;
mod webhooks;
