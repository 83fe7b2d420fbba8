//! Talking to a host: the HTTP client with its budgets, discovery and the wire major,
//! paths per major, and bearer tokens per role.

mod client;
mod discovery;
pub mod loopback;
mod paths;
pub mod reap;
mod spawn;
mod sse;
mod tls;

pub use client::{Budgets, HostClient, HostRequest, HostResponse, Sent, TransportError};
pub use discovery::{Advertised, Discovery, DiscoveryError, discover};
pub use paths::WireMajor;
pub use spawn::{
    DataDir, STARTUP_BUDGET, SpawnCommand, SpawnError, SpawnedHost, reference_host_exe,
};
pub use sse::{
    DEFAULT_MAX_EVENT_BYTES, SseCap, SseEnd, SseEvent, SseLimits, SseParser, SseRead, resumable_id,
};
pub use tls::{CaCertError, CaCerts};
pub use toolcert_core::profile::{HostProfile, ProfileError, RoleProfile};

/// Parse a body a double received, with the same leniency as host responses.
pub fn parse_body_for_witness(bytes: &[u8]) -> serde_json::Value {
    client::parse_body(bytes)
}
