//! The step kinds a scenario may use, one file each. A step drives the host (or sets up a
//! double) and records one observation under its name; it never judges.
//!
//! Each step builds its kind's typed observation ([`crate::observation`]); one that could not
//! be made is a [`NotObserved`]: `blocked` (a fact about the host's setup: seam not wired,
//! role not configured) or `error` (transport or toolcert broke), rarely `fail`. Checks that
//! read through such an observation inherit its state.

mod burst;
mod catalog;
mod discovery;
mod events;
mod fire_effect_seams;
mod foreach;
mod host;
mod http;
mod mcp_server;
mod provider;
mod receiver;
mod release;
mod repeat;
mod seam;

use serde::Serialize;
use serde_json::Value;

use crate::host::{Discovery, HostClient, HostRequest, HostResponse, TransportError};
use crate::observation::{NotObserved, Observation, ReceiverObservation, Unobserved};
use crate::suite::Step;
use crate::template::{self, TemplateError};
use crate::transcript::Transcript;
use crate::witness::{McpServer, Receiver};

pub use events::{LOG_CUTS_AFTER, LogReads};

/// Everything a step may touch while a scenario runs.
pub struct ScenarioCtx<'a> {
    /// The host.
    pub client: &'a HostClient,
    /// The host surfaces of the suite (for blocked reasons that say how to provide one).
    pub surfaces: &'a crate::suite::Surfaces,
    /// toolcert's tool receiver.
    pub receiver: &'a Receiver,
    /// toolcert's mock model provider.
    pub provider: &'a mock_provider::MockProvider,
    /// toolcert's MCP server double.
    pub mcp: &'a McpServer,
    /// Registered MCP server endpoints: name ⇒ id.
    pub mcp_servers: Vec<(String, String)>,
    /// Loaded provider scripts: step name ⇒ model key.
    pub providers: Vec<(String, String)>,
    /// The captured discovery document.
    pub discovery: &'a Discovery,
    /// The observation document checks are judged over.
    pub doc: Value,
    /// Every exchange with the host.
    pub transcript: Transcript,
    /// This scenario's nonce: it prefixes its receiver ids and provider model keys, so
    /// scenarios never share doubles.
    pub nonce: String,
    /// Registered receivers: name ⇒ id.
    pub receivers: Vec<(String, String)>,
    /// Doubles (`receivers.NAME`, `providers.NAME`) whose driving step could not be made: what
    /// they saw witnesses nothing, so their observation carries that step's state instead.
    pub tainted: Vec<(String, NotObserved)>,
    /// The scenario's own host process, when it kills and restarts one (`host` steps).
    pub spawned: Option<crate::host::SpawnedHost>,
    /// Why there is no spawned host for a scenario that needs one.
    pub spawn_unavailable: Option<String>,
    /// The run's event reads: after several cut in a row, no more are made.
    pub log_reads: &'a LogReads,
}

/// Whether the scenario may go on after a step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Flow {
    /// Go on.
    Continue,
    /// The host stopped answering; later steps would only burn their timeouts.
    HostLost(String),
}

/// The JSON form of an `error` observation, for a value recorded outside a step (the
/// runner's `vars`).
pub fn error(reason: impl Into<String>) -> Value {
    NotObserved::error(reason).to_value()
}

/// A step's observation in its JSON form, with its state when it was not made.
struct Recorded {
    value: Value,
    not_made: Option<(Unobserved, String)>,
}

/// Record a step's typed observation.
fn record<T: Serialize>((obs, flow): (Observation<T>, Flow)) -> (Recorded, Flow) {
    let not_made = obs.not_made().map(|n| (n.state, n.reason.clone()));
    (
        Recorded {
            value: obs.to_value(),
            not_made,
        },
        flow,
    )
}

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
            Step::Wait(spec) => record((host::wait(self, spec).await, go)),
            Step::FireEffectSeams(spec) => record(fire_effect_seams::run(self, spec).await),
            Step::Catalog(spec) => record(catalog::run(self, spec).await),
        };
        if let Some((state @ (Unobserved::Blocked | Unobserved::Error), reason)) = &obs.not_made {
            self.taint_doubles_of(step, *state, reason);
        }
        let mut value = obs.value;
        // Judged as the report keeps it: no deeper than a report can be read back.
        crate::host::budget::bound_depth(&mut value, crate::host::budget::MAX_DEPTH);
        self.doc["steps"][step.name()] = value;
        flow
    }

    /// What a double saw, as kept: bounded in depth and charged to the run's memory budget
    /// (an `error` observation naming the budget once it is spent).
    fn keep_double(&self, mut seen: Value) -> Value {
        crate::host::budget::bound_depth(&mut seen, crate::host::budget::MAX_DEPTH);
        match self.client.charge(crate::host::budget::json_len(&seen)) {
            Ok(()) => seen,
            Err(e) => NotObserved::error(e.to_string()).to_value(),
        }
    }

    /// Mark every double the step refers to (`{{receivers.NAME.…}}`, `{{providers.NAME.…}}`)
    /// with the step's state: what a double saw cannot be judged when the step that should
    /// have driven the host to it was never made.
    fn taint_doubles_of(&mut self, step: &Step, state: Unobserved, reason: &str) {
        let text = serde_json::to_string(step).unwrap_or_default();
        let doubles: Vec<(String, String)> = self
            .receivers
            .iter()
            .map(|(n, _)| ("receivers", n))
            .chain(self.providers.iter().map(|(n, _)| ("providers", n)))
            .chain(self.mcp_servers.iter().map(|(n, _)| ("mcpServers", n)))
            .map(|(kind, n)| (kind.to_string(), n.clone()))
            .collect();
        for (kind, name) in doubles {
            let qualified = format!("{kind}.{name}");
            if text.contains(&format!("{qualified}."))
                && !self.tainted.iter().any(|(n, _)| n == &qualified)
            {
                let why = format!(
                    "{qualified} witnesses nothing: step {} was not made ({reason})",
                    step.name()
                );
                self.tainted.push((qualified, NotObserved::new(state, why)));
            }
        }
    }

    /// Record that a step was skipped because the host was lost earlier.
    pub fn skip(&mut self, step: &Step, reason: &str) {
        self.abandon(
            step,
            &format!("not run: an earlier step lost the host ({reason})"),
        );
    }

    /// Record that a step was not made (or not finished), with the reason: an `error`
    /// observation, and the doubles it would have driven witness nothing.
    pub fn abandon(&mut self, step: &Step, reason: &str) {
        if !matches!(step, Step::Receiver(_) | Step::McpServer(_)) {
            self.taint_doubles_of(step, Unobserved::Error, reason);
            self.doc["steps"][step.name()] = NotObserved::error(reason).to_value();
        }
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

    /// Render a template against the observations so far.
    fn render(&self, v: &Value) -> Result<Value, TemplateError> {
        template::render(v, &self.doc)
    }

    /// Send a request and record the exchange.
    async fn send(
        &mut self,
        step: &str,
        req: &HostRequest,
    ) -> Result<HostResponse, TransportError> {
        let (result, exchange) = self.client.send(step, req).await;
        self.transcript.push(exchange);
        result
    }
}

/// How many distinct non-null values there are (Idempotency-Keys, JSON-RPC ids).
fn distinct_non_null<'v>(values: impl IntoIterator<Item = &'v Value>) -> usize {
    let mut seen: Vec<&Value> = values.into_iter().filter(|v| !v.is_null()).collect();
    seen.sort_by_key(|v| v.to_string());
    seen.dedup();
    seen.len()
}

impl ScenarioCtx<'_> {
    /// A double named by a point (a receiver's or a provider script's name, the receiver's
    /// first), and how many requests it has seen so far: what an `abandon` or a kill point
    /// waits for.
    pub(super) fn seen_by(
        &self,
        receiver: Option<&str>,
        provider: Option<&str>,
    ) -> (String, usize) {
        if let Some(name) = receiver {
            let seen = self
                .receivers
                .iter()
                .find(|(n, _)| n == name)
                .map_or(0, |(_, id)| self.receiver.count(id));
            return (format!("receiver {name}"), seen);
        }
        if let Some(name) = provider {
            let seen = self
                .providers
                .iter()
                .find(|(n, _)| n == name)
                .map_or(0, |(_, model)| self.provider.requests(model).len());
            return (format!("provider script {name}"), seen);
        }
        ("nothing".into(), 0)
    }
}

impl ScenarioCtx<'_> {
    /// Map a template failure to an observation: a missing role or scope is the profile's gap
    /// and a missing fact or fixture a surface the host (or its profile) does not provide
    /// (`blocked`, saying how to provide it); a value missing because an earlier step was not
    /// made inherits that step's state and reason; anything else is a bug in the scenario
    /// data (`error`).
    fn template_failure(&self, e: &TemplateError) -> NotObserved {
        let doc = &self.doc;
        match e.path() {
            Some(p) if p.starts_with("roles.") || p.starts_with("scopes.") => NotObserved::blocked(
                format!("the host profile does not configure {p} (add it to the profile file)"),
            ),
            Some(p) if p.starts_with("facts.") => {
                let name = p.split('.').nth(1).unwrap_or("");
                NotObserved::blocked(format!(
                    "the host cannot advertise {p} and the host profile does not state it: {}",
                    self.surfaces.reason(&crate::suite::fact_id(name))
                ))
            }
            Some(p) if p.starts_with("fixtures.") => {
                let id = p.split('.').nth(1).unwrap_or("");
                NotObserved::blocked(format!(
                    "fixture {id} is not advertised by the host (discovery fixtures[]) nor mapped in the host profile: {}",
                    self.surfaces.reason(&crate::suite::fixture_id(id))
                ))
            }
            Some(p)
                if p.starts_with("steps.")
                    || p.starts_with("receivers.")
                    || p.starts_with("mcpServers.") =>
            {
                let mut parts = p.splitn(3, '.');
                let (kind, name) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
                // An earlier step that was blocked or broke passes its state on; one that the
                // host failed (`fail`) leaves a value missing, which blocks this step.
                if let Some((state @ (Unobserved::Blocked | Unobserved::Error), reason)) =
                    NotObserved::state_of(&doc[kind][name])
                {
                    return NotObserved::new(
                        state,
                        format!("{kind}.{name} was not made: {reason}"),
                    );
                }
                NotObserved::blocked(format!(
                    "an earlier observation has no {p}, so this step cannot be made"
                ))
            }
            _ => NotObserved::error(format!("scenario data: {e}")),
        }
    }
}

/// Check a role has a token, else the `blocked` observation to record.
fn require_role(ctx: &ScenarioCtx<'_>, role: &str) -> Option<NotObserved> {
    (!ctx.client.has_role(role)).then(|| {
        NotObserved::blocked(format!(
            "no token for role \"{role}\": pass --token {role}=TOKEN or add it to the profile"
        ))
    })
}

/// The observation and flow of a transport failure.
fn transport_failure(e: &TransportError) -> (NotObserved, Flow) {
    let flow = match e {
        TransportError::Connect { .. } | TransportError::Timeout { .. } => {
            Flow::HostLost(e.to_string())
        }
        // Nothing more is kept once the budget is spent: the scenario's other steps are not
        // made either.
        TransportError::OverBudget(_) => Flow::HostLost(e.to_string()),
        _ => Flow::Continue,
    };
    (
        NotObserved::error(format!("could not observe the host: {e}")),
        flow,
    )
}
