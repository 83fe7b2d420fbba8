//! Step kinds: one module per kind, each holding the step's specification (how a scenario writes
//! it), the observation it records and any load-time check that concerns that kind alone. This
//! module holds what spans them: the [`Step`] enum a scenario's `steps` are, the name a step
//! records under, and the dispatch to each kind's load check. Which fields each kind's observation
//! has is read off those structs by `crate::observation::fields`.
//!
//! A kind's driver is the module of the same name under `driver/src/steps/`; its schema is
//! `schemas/scenario.schema.json`; its reference is its section of `docs/authoring/steps.md`. A new
//! step kind is one module here, one driver module, the schema and a section there.

use serde::{Deserialize, Serialize};

pub mod burst;
pub mod catalog;
pub mod discovery;
pub mod events;
pub mod fire_effect_seams;
pub mod foreach;
pub mod host;
pub mod http;
pub mod mcp_server;
pub mod provider;
pub mod receiver;
pub mod release;
pub mod repeat;
pub mod seam;
pub mod wait;

/// A step kind. Each kind is specified in its own module here and driven by its own module of
/// the driver (`driver/src/steps/`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "step", rename_all = "camelCase")]
pub enum Step {
    /// Register a tool receiver (toolcert's double that plays the tool and counts calls).
    Receiver(receiver::ReceiverSpec),
    /// Call a sample test seam of the host.
    Seam(seam::SeamCall),
    /// Send one HTTP request to the host.
    Http(http::HttpCall),
    /// Read a run's events from the host's durable log.
    Events(events::EventsRead),
    /// Re-fetch discovery conditionally (`If-None-Match`) and record what came back.
    Discovery(discovery::DiscoveryProbe),
    /// Repeat a seam call until a condition holds (bounded).
    Repeat(repeat::RepeatSpec),
    /// Load a script into toolcert's mock model provider.
    Provider(provider::ProviderScript),
    /// Make the same seam call `count` times in a row, `{{loop.index}}` counting from 0.
    Foreach(foreach::ForeachSpec),
    /// Send `count` identical requests to the host at the same instant.
    Burst(burst::BurstSpec),
    /// Kill (SIGKILL) or restart the scenario's spawned host.
    Host(host::HostAction),
    /// Let a holding receiver answer the calls it holds.
    Release(release::ReleaseSpec),
    /// Wait (bounded) until a double has seen a number of requests.
    Wait(wait::WaitSpec),
    /// Register an endpoint of toolcert's MCP server double with scripted answers.
    McpServer(mcp_server::McpServerSpec),
    /// Fire every effect-seam manifest row, fork each fired run, and count re-fires (RPL-11).
    FireEffectSeams(fire_effect_seams::FireEffectSeamsSpec),
    /// List the host's tool catalog as a role, whichever shape the list has (CAT, DESC).
    Catalog(catalog::CatalogSpec),
}

impl Step {
    /// The name under which the step records its observation.
    pub fn name(&self) -> &str {
        match self {
            Step::Receiver(s) => &s.name,
            Step::Seam(s) => &s.name,
            Step::Http(s) => &s.name,
            Step::Events(s) => &s.name,
            Step::Discovery(s) => &s.name,
            Step::Repeat(s) => &s.name,
            Step::Provider(s) => &s.name,
            Step::Foreach(s) => &s.name,
            Step::Burst(s) => &s.name,
            Step::Host(s) => &s.name,
            Step::Release(s) => &s.name,
            Step::Wait(s) => &s.name,
            Step::McpServer(s) => &s.name,
            Step::FireEffectSeams(s) => &s.name,
            Step::Catalog(s) => &s.name,
        }
    }

    /// The load-time checks that concern this step's kind alone (a bound, a provider script's
    /// rounds); `Err` holds the pointer below the step and the message. Checks across steps
    /// (a name used twice, a double named before a step makes it) stay in the loader.
    pub(crate) fn check(&self) -> Result<(), (String, String)> {
        match self {
            Step::Provider(p) => p.check(),
            Step::Foreach(f) => f.check(),
            Step::Burst(b) => b.check(),
            Step::Repeat(r) => r.check(),
            _ => Ok(()),
        }
    }
}
