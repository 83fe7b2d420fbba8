//! The step kinds a scenario may use, one file each. A step drives the host (or sets up a
//! double) and records one observation under its name; it never judges.
//!
//! Each step builds its kind's typed observation ([`toolcert_core::observation`]); one that could not
//! be made is a [`NotObserved`](toolcert_core::observation::NotObserved): `blocked` (a fact about the host's setup: seam not wired,
//! role not configured) or `error` (transport or toolcert broke), rarely `fail`. Checks that
//! read through such an observation inherit its state.

mod burst;
mod catalog;
mod ctx;
mod discovery;
mod events;
mod fire_effect_seams;
mod foreach;
mod host;
mod http;
mod log_reads;
mod mcp_server;
mod provider;
mod receiver;
mod release;
mod repeat;
mod seam;
mod wait;

use serde_json::Value;

use ctx::{distinct_non_null, record};
use toolcert_core::observation::{Observation, ReceiverObservation, Unobserved};
use toolcert_core::suite::Step;

pub use ctx::{Flow, ScenarioCtx, error};
pub use log_reads::{LOG_CUTS_AFTER, LogReads};

// The step dispatcher and the doubles' observations: the part of the context that names the
// steps, kept here, above them.
impl ScenarioCtx<'_> {
    /// Run one step and record its observation.
    pub async fn run(&mut self, step: &Step) -> Flow {
        let go = Flow::Continue;
        let (obs, flow) = match step {
            // The doubles record their own observations (under `receivers`, `mcpServers`).
            Step::Receiver(spec) => {
                receiver::run(self, spec);
                return go;
            }
            Step::McpServer(spec) => {
                mcp_server::run(self, spec);
                return go;
            }
            Step::Provider(spec) => {
                let obs = provider::run(self, spec).to_value();
                self.doc["providers"][&spec.name] = obs;
                return go;
            }
            Step::Seam(call) => record(seam::run(self, call).await),
            Step::Http(call) => match &call.abandon {
                Some(point) => record(http::run_abandoning(self, call, point).await),
                None => record(http::run(self, call).await),
            },
            Step::Events(read) => record(events::run(self, read).await),
            Step::Discovery(_) => record(discovery::run(self, step.name()).await),
            Step::Repeat(spec) => record(repeat::run(self, spec).await),
            Step::Foreach(spec) => record(foreach::run(self, spec).await),
            Step::Burst(spec) => record(burst::run(self, spec).await),
            Step::Host(spec) => host::run(self, spec).await,
            Step::Release(spec) => record((release::run(self, spec), go)),
            Step::Wait(spec) => record((wait::run(self, spec).await, go)),
            Step::FireEffectSeams(spec) => record(fire_effect_seams::run(self, spec).await),
            Step::Catalog(spec) => record(catalog::run(self, spec).await),
        };
        if let Some((state @ (Unobserved::Blocked | Unobserved::Error), reason)) = &obs.not_made {
            self.taint_doubles_of(step, *state, reason);
        }
        let mut value = obs.value;
        // Judged as the report keeps it: no deeper than a report can be read back.
        toolcert_core::budget::bound_depth(&mut value, toolcert_core::budget::MAX_DEPTH);
        self.doc["steps"][step.name()] = value;
        flow
    }

    /// Refresh every MCP server double's observation (`/mcpServers/<name>`).
    pub fn observe_mcp_servers(&mut self) {
        for (name, id) in self.mcp_servers.clone() {
            let qualified = format!("mcpServers.{name}");
            let obs = match self.tainted.iter().find(|(n, _)| n == &qualified) {
                Some((_, state)) => state.to_value(),
                None => {
                    let url = self.doc["mcpServers"][&name]["url"].clone();
                    self.keep_double(
                        serde_json::to_value(mcp_server::observe(self.mcp, &id, url))
                            .unwrap_or(Value::Null),
                    )
                }
            };
            self.doc["mcpServers"][&name] = obs;
        }
    }

    /// Refresh every provider script's observation (`/providers/<name>`).
    pub fn observe_providers(&mut self) {
        for (name, model) in self.providers.clone() {
            let tainted = self
                .tainted
                .iter()
                .find(|(n, _)| n == &format!("providers.{name}"));
            let obs = match tainted {
                Some((_, state)) => state.to_value(),
                None => self.keep_double(provider::observe(self.provider, &model).to_value()),
            };
            self.doc["providers"][&name] = obs;
        }
    }

    /// Refresh every receiver's observation (`/receivers/<name>`: url, count, arrivals).
    pub fn observe_receivers(&mut self) {
        for (name, id) in self.receivers.clone() {
            if let Some((_, state)) = self
                .tainted
                .iter()
                .find(|(n, _)| n == &format!("receivers.{name}"))
            {
                self.doc["receivers"][&name] = state.to_value();
                continue;
            }
            let arrivals = self.receiver.arrivals(&id);
            let url = self.doc["receivers"][&name]["url"].clone();
            // The provider key per arrival (EFF-5), and how many distinct ones there were.
            let keys: Vec<Value> = arrivals
                .iter()
                .map(|a| {
                    a.headers
                        .get("idempotency-key")
                        .cloned()
                        .unwrap_or(Value::Null)
                })
                .collect();
            let distinct_count = distinct_non_null(&keys);
            let seen = ReceiverObservation {
                url_via_unspecified: receiver::via_unspecified(&url),
                url,
                count: self.receiver.count(&id),
                idempotency_keys: Some(keys),
                distinct_idempotency_keys: Some(distinct_count),
                arrivals,
            };
            let kept = self.keep_double(Observation::Made(seen).to_value());
            self.doc["receivers"][&name] = kept;
        }
    }
}
