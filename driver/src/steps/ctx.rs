//! The scenario context every step runs in ([`ScenarioCtx`]) and what the steps share: how a
//! step's observation is recorded, the host requests they send, the failures they map to an
//! observation. Below the step dispatcher ([`super`]) and the steps, which all use it.

use serde::Serialize;
use serde_json::Value;

use super::log_reads::LogReads;
use crate::host::{Discovery, HostClient, HostRequest, HostResponse, TransportError};
use crate::witness::{McpServer, Receiver};
use toolcert_core::observation::{NotObserved, Observation, Unobserved};
use toolcert_core::suite::Step;
use toolcert_core::template::{self, TemplateError};
use toolcert_core::transcript::Transcript;

/// Everything a step may touch while a scenario runs.
pub struct ScenarioCtx<'a> {
    /// The host.
    pub client: &'a HostClient,
    /// The host surfaces of the suite (for blocked reasons that say how to provide one).
    pub surfaces: &'a toolcert_core::suite::Surfaces,
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
pub(super) struct Recorded {
    /// The observation as the scenario's document keeps it.
    pub(super) value: Value,
    /// Its state and reason when it was not made.
    pub(super) not_made: Option<(Unobserved, String)>,
}

/// Record a step's typed observation.
pub(super) fn record<T: Serialize>((obs, flow): (Observation<T>, Flow)) -> (Recorded, Flow) {
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
    /// What a double saw, as kept: bounded in depth and charged to the run's memory budget
    /// (an `error` observation naming the budget once it is spent).
    pub(super) fn keep_double(&self, mut seen: Value) -> Value {
        toolcert_core::budget::bound_depth(&mut seen, toolcert_core::budget::MAX_DEPTH);
        match self.client.charge(toolcert_core::budget::json_len(&seen)) {
            Ok(()) => seen,
            Err(e) => NotObserved::error(e.to_string()).to_value(),
        }
    }

    /// Mark every double the step refers to (`{{receivers.NAME.…}}`, `{{providers.NAME.…}}`)
    /// with the step's state: what a double saw cannot be judged when the step that should
    /// have driven the host to it was never made.
    pub(super) fn taint_doubles_of(&mut self, step: &Step, state: Unobserved, reason: &str) {
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

    /// Render a template against the observations so far.
    pub(super) fn render(&self, v: &Value) -> Result<Value, TemplateError> {
        template::render(v, &self.doc)
    }

    /// Send a request and record the exchange.
    pub(super) async fn send(
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
pub(super) fn distinct_non_null<'v>(values: impl IntoIterator<Item = &'v Value>) -> usize {
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
    pub(super) fn template_failure(&self, e: &TemplateError) -> NotObserved {
        let doc = &self.doc;
        match e.path() {
            Some(p) if p.starts_with("roles.") || p.starts_with("scopes.") => NotObserved::blocked(
                format!("the host profile does not configure {p} (add it to the profile file)"),
            ),
            Some(p) if p.starts_with("facts.") => {
                let name = p.split('.').nth(1).unwrap_or("");
                NotObserved::blocked(format!(
                    "the host cannot advertise {p} and the host profile does not state it: {}",
                    self.surfaces.reason(&toolcert_core::suite::fact_id(name))
                ))
            }
            Some(p) if p.starts_with("fixtures.") => {
                let id = p.split('.').nth(1).unwrap_or("");
                NotObserved::blocked(format!(
                    "fixture {id} is not advertised by the host (discovery fixtures[]) nor mapped in the host profile: {}",
                    self.surfaces.reason(&toolcert_core::suite::fixture_id(id))
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
pub(super) fn require_role(ctx: &ScenarioCtx<'_>, role: &str) -> Option<NotObserved> {
    (!ctx.client.has_role(role)).then(|| {
        NotObserved::blocked(format!(
            "no token for role \"{role}\": pass --token {role}=TOKEN or add it to the profile"
        ))
    })
}

/// The observation and flow of a transport failure.
pub(super) fn transport_failure(e: &TransportError) -> (NotObserved, Flow) {
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
