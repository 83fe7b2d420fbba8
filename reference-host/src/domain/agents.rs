//! The manifest-agent inventory, `GET /agents` and `GET /agents/{agentId}`
//! (RFC 0072 §A, scoped per tenant as RFC 0074 has it), and the A2A routing
//! value `a2aTenant` of each entry (RFC 0202 §B; A2A-8).
//!
//! The inventory is fixed. The reference host installs two conformance
//! agents so that a caller has an agent of its own and another tenant has
//! one the caller must not learn about:
//!
//! - `toolcert.conformance.auditor`, installed in [`SECOND_TENANT`] only;
//! - `toolcert.conformance.relay`, installed in [`SECOND_TENANT`] first and
//!   then in [`DEFAULT_TENANT`] (the tenant of every built-in principal but
//!   `erin`).
//!
//! `GET /agents` lists the caller's tenant's agents in agentId order; another
//! tenant's agent is absent, and `GET /agents/{agentId}` answers it with the
//! same 404 as an agent never installed (RFC 0074).
//!
//! The routing value `R` is `ag-` and 24 hex digits of an HMAC-SHA256 of the
//! agentId under a key derived from the host's version (RFC 0202's
//! implementation note): stable for the agent and the host version, across
//! restarts too; the same in every tenant that installed the agent; naming no
//! tenant, workspace or principal (§B.2). It is no secret and needs none:
//! [`route`] resolves it only within the caller's inventory, so knowing
//! another tenant's value grants nothing (§D.7, §D.9).

use std::sync::atomic::{AtomicU64, Ordering};

use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use crate::base::mac_key::hmac_sha256;
use crate::base::mutant::{Mutant, MutantInfo};
use crate::base::principals::{DEFAULT_TENANT, Principal, SECOND_TENANT};
use crate::domain::Domain;
use crate::domain::error::{ApiError, json_response};
use crate::domain::runs::authorize_reader;
use crate::domain::workflows::{IDEMPOTENT_WORKFLOW, NOOP_WORKFLOW};

/// One manifest agent the host installed, and where.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InstalledAgent {
    /// The manifest `agentId`.
    pub agent_id: &'static str,
    /// The manifest's human-readable name.
    pub persona: &'static str,
    /// The short UI label.
    pub label: &'static str,
    /// The one-line summary, when the manifest has one.
    pub description: Option<&'static str>,
    /// The manifest's `modelClass`.
    pub model_class: &'static str,
    /// The pack the agent came from.
    pub pack_name: &'static str,
    /// The installed pack version.
    pub pack_version: &'static str,
    /// The workflows the host routes to the agent: its A2A skills
    /// (RFC 0202 §C.4). Never empty: an agent with nothing to invoke would
    /// have no card and no routing value (§B.3).
    pub workflows: &'static [&'static str],
    /// The tenants that installed it, in install order.
    pub tenants: &'static [&'static str],
}

impl InstalledAgent {
    /// The tenant the agent was installed in first.
    pub fn install_tenant(&self) -> &'static str {
        self.tenants.first().copied().unwrap_or(DEFAULT_TENANT)
    }

    /// Whether `tenant` installed the agent.
    pub fn installed_in(&self, tenant: &str) -> bool {
        self.tenants.contains(&tenant)
    }

    /// The card's `description`: the entry's description, else its label
    /// (RFC 0202 §C.4).
    pub fn card_description(&self) -> &'static str {
        self.description.unwrap_or(self.label)
    }
}

/// Every installed agent, in agentId order.
pub const AGENTS: &[InstalledAgent] = &[
    InstalledAgent {
        agent_id: "toolcert.conformance.auditor",
        persona: "Auditor",
        label: "Auditor",
        description: None,
        model_class: "standard",
        pack_name: "toolcert-conformance-agents",
        pack_version: "0.9.1",
        workflows: &[IDEMPOTENT_WORKFLOW],
        tenants: &[SECOND_TENANT],
    },
    InstalledAgent {
        agent_id: "toolcert.conformance.relay",
        persona: "Relay",
        label: "Relay",
        description: Some("Relays an A2A message into a conformance-noop run."),
        model_class: "standard",
        pack_name: "toolcert-conformance-agents",
        pack_version: "1.2.0",
        workflows: &[NOOP_WORKFLOW],
        tenants: &[SECOND_TENANT, DEFAULT_TENANT],
    },
];

/// The scope `GET /agents` needs (the inventory is behind `runs:read`, as
/// RFC 0202's alternatives section has it).
pub const AGENTS_READ_SCOPE: &str = crate::domain::runs::RUNS_READ_SCOPE;

/// The agents `tenant` installed, in agentId order.
pub fn inventory(tenant: &str) -> Vec<&'static InstalledAgent> {
    AGENTS.iter().filter(|a| a.installed_in(tenant)).collect()
}

/// The `agents` discovery record: the manifest-agent inventory, scoped per
/// tenant (RFC 0074 `installScope`), which `a2a.agentCards` requires
/// (RFC 0202 §A.1). Bug under `agent-cards-unbacked`: `manifestRuntime` is
/// missing (and so is the `a2a-1.0` profile, [`crate::domain::a2a::discovery_record`]).
pub fn discovery_record(mutant: Option<Mutant>) -> Value {
    let mut record = json!({
        "status": "stable",
        "since": "2.0",
        "witness": "witnessable-gated",
        "manifestRuntime": {"installScope": "tenant"},
    });
    if mutant == Some(Mutant::AgentCardsUnbacked)
        && let Some(object) = record.as_object_mut()
    {
        object.remove("manifestRuntime");
    }
    record
}

/// The routing value of `agent` (RFC 0202 §B.2): a keyed MAC of its agentId
/// under a key derived from the host version.
pub fn routing_value(agent: &InstalledAgent) -> String {
    let key = Sha256::new()
        .chain_update(b"toolcert reference host: A2A routing values\0")
        .chain_update(env!("CARGO_PKG_VERSION").as_bytes())
        .finalize();
    let mac = hmac_sha256(&key, agent.agent_id.as_bytes());
    format!("ag-{}", &hex::encode(mac)[..24])
}

/// Counts `GET /agents` answers under `agent-card-r-per-request`.
static LISTINGS: AtomicU64 = AtomicU64::new(0);

/// The routing value `caller` is shown for `agent`, as the mutants of
/// §B.2 mint it.
fn minted_for(
    agent: &InstalledAgent,
    caller: &Principal,
    listing: u64,
    mutant: Option<Mutant>,
) -> String {
    let value = routing_value(agent);
    // Bug under `agent-card-r-per-request`: every listing mints new values
    // (resolvable, but not stable).
    if mutant == Some(Mutant::AgentCardRPerRequest) {
        return format!("{value}.{listing}");
    }
    // Bug under `agent-card-r-names-principal`: the value encodes who asked.
    if mutant == Some(Mutant::AgentCardRNamesPrincipal) {
        return format!("{value}-{}", caller.id);
    }
    value
}

/// The clean routing value inside one the mutants of §B.2 minted.
fn unmutated<'r>(r: &'r str, caller: &Principal, mutant: Option<Mutant>) -> &'r str {
    if mutant == Some(Mutant::AgentCardRPerRequest) {
        return r.rsplit_once('.').map_or(r, |(value, _)| value);
    }
    if mutant == Some(Mutant::AgentCardRNamesPrincipal) {
        return r
            .strip_suffix(caller.id.as_str())
            .and_then(|r| r.strip_suffix('-'))
            .unwrap_or(r);
    }
    r
}

/// The inventory entry of `agent` (RFC 0072 §A: no system prompt, no
/// handoff schema, no credential), with its routing value.
fn entry(agent: &InstalledAgent, a2a_tenant: String) -> Value {
    let mut entry = Map::new();
    entry.insert("agentId".to_owned(), json!(agent.agent_id));
    entry.insert("persona".to_owned(), json!(agent.persona));
    entry.insert("label".to_owned(), json!(agent.label));
    if let Some(description) = agent.description {
        entry.insert("description".to_owned(), json!(description));
    }
    entry.insert("modelClass".to_owned(), json!(agent.model_class));
    entry.insert("packName".to_owned(), json!(agent.pack_name));
    entry.insert("packVersion".to_owned(), json!(agent.pack_version));
    entry.insert("toolAllowlist".to_owned(), json!([]));
    entry.insert("hasHandoffSchemas".to_owned(), json!(false));
    entry.insert("a2aTenant".to_owned(), json!(a2a_tenant));
    Value::Object(entry)
}

/// Handler for `GET /agents`: the caller's tenant's inventory.
pub async fn list_agents(
    State(state): State<Domain>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let caller = authorize_reader(&state, &headers)?;
    let mutant = state.mutant();
    let listing = LISTINGS.fetch_add(1, Ordering::Relaxed);
    let agents: Vec<Value> = inventory(&caller.tenant)
        .into_iter()
        .map(|agent| entry(agent, minted_for(agent, caller, listing, mutant)))
        .collect();
    let total = agents.len();
    Ok(json_response(
        axum::http::StatusCode::OK,
        &json!({"agents": agents, "total": total}),
    ))
}

/// Handler for `GET /agents/{agentId}`: one entry of the caller's
/// inventory; another tenant's agent is the 404 of one never installed.
pub async fn get_agent(
    State(state): State<Domain>,
    Path(agent_id): Path<String>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let caller = authorize_reader(&state, &headers)?;
    let mutant = state.mutant();
    let listing = LISTINGS.fetch_add(1, Ordering::Relaxed);
    match inventory(&caller.tenant)
        .into_iter()
        .find(|agent| agent.agent_id == agent_id)
    {
        Some(agent) => Ok(
            axum::Json(entry(agent, minted_for(agent, caller, listing, mutant))).into_response(),
        ),
        None => Err(ApiError::not_found(format!(
            "agent `{agent_id}` is not installed here; list GET /agents for the agents you can use"
        ))),
    }
}

/// Where an A2A request's `tenant` routes it (RFC 0202 §C, §D).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// No `tenant`: the host's own endpoint.
    Host,
    /// The routing value of an agent of the caller's inventory.
    Agent(&'static InstalledAgent),
    /// A value that routes to nothing the caller may address: never minted,
    /// or another tenant's (`foreign`). The two are answered alike
    /// (§D.7); `foreign` exists only for the mutant that tells them apart.
    Unrouted {
        /// The value names an agent installed outside the caller's tenant.
        foreign: bool,
    },
}

/// Resolves a request's `tenant` within the caller's inventory (RFC 0202
/// §D.9: the caller's tenant of record, never the value's).
pub fn route(caller: &Principal, tenant: Option<&str>, mutant: Option<Mutant>) -> Route {
    let Some(given) = tenant.filter(|t| !t.is_empty()) else {
        return Route::Host;
    };
    let value = unmutated(given, caller, mutant);
    let named = AGENTS.iter().find(|agent| routing_value(agent) == value);
    match named {
        Some(agent) if agent.installed_in(&caller.tenant) => Route::Agent(agent),
        Some(_) => Route::Unrouted { foreign: true },
        None => Route::Unrouted { foreign: false },
    }
}

/// Whether `value` is the routing value of some agent in any tenant: what
/// only the `agent-card-resolve-before-auth` mutant asks, before it knows
/// who is asking.
pub fn minted_anywhere(value: &str) -> bool {
    AGENTS.iter().any(|agent| routing_value(agent) == value)
}

/// The mutants planted in this module, gathered by [`crate::surface::mutants::ALL`].
pub const MUTANTS: &[MutantInfo] = &[
    MutantInfo {
        mutant: Mutant::AgentCardRPerRequest,
        name: "agent-card-r-per-request",
        breaks: "every GET /agents mints a new a2aTenant per entry, so the routing value is not stable (A2A-8, RFC 0202 §B.2)",
    },
    MutantInfo {
        mutant: Mutant::AgentCardsUnbacked,
        name: "agent-cards-unbacked",
        breaks: "a2a.agentCards is advertised without the a2a-1.0 profile and without agents.manifestRuntime (A2A-8, RFC 0202 §A.1)",
    },
    MutantInfo {
        mutant: Mutant::AgentCardRNamesPrincipal,
        name: "agent-card-r-names-principal",
        breaks: "the a2aTenant routing value encodes the caller's principal id (A2A-8, RFC 0202 §B.2)",
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    fn alice() -> Principal {
        Principal::new("alice", Some("t"), &["runs:read"])
    }

    fn erin() -> Principal {
        Principal::new("erin", Some("u"), &["runs:read"]).in_tenant(SECOND_TENANT)
    }

    #[test]
    fn inventories_are_per_tenant_and_sorted() {
        let ids =
            |tenant: &str| -> Vec<&str> { inventory(tenant).iter().map(|a| a.agent_id).collect() };
        assert_eq!(ids(DEFAULT_TENANT), ["toolcert.conformance.relay"]);
        assert_eq!(
            ids(SECOND_TENANT),
            ["toolcert.conformance.auditor", "toolcert.conformance.relay"]
        );
        assert!(AGENTS.iter().all(|a| !a.workflows.is_empty()));
    }

    #[test]
    fn routing_values_are_stable_opaque_and_path_safe() {
        for agent in AGENTS {
            let r = routing_value(agent);
            assert_eq!(r, routing_value(agent));
            assert!(r.len() <= 128);
            assert!(
                r.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"._~-".contains(&b))
            );
            for named in [
                DEFAULT_TENANT,
                SECOND_TENANT,
                "alice",
                "erin",
                agent.agent_id,
            ] {
                assert!(!r.contains(named), "{r} encodes {named}");
            }
        }
        assert_ne!(routing_value(&AGENTS[0]), routing_value(&AGENTS[1]));
    }

    #[test]
    fn routes_resolve_within_the_callers_inventory_only() {
        let relay = routing_value(&AGENTS[1]);
        let auditor = routing_value(&AGENTS[0]);
        assert_eq!(route(&alice(), None, None), Route::Host);
        assert_eq!(route(&alice(), Some(""), None), Route::Host);
        assert_eq!(
            route(&alice(), Some(&relay), None),
            Route::Agent(&AGENTS[1])
        );
        assert_eq!(route(&erin(), Some(&relay), None), Route::Agent(&AGENTS[1]));
        assert_eq!(
            route(&erin(), Some(&auditor), None),
            Route::Agent(&AGENTS[0])
        );
        assert_eq!(
            route(&alice(), Some(&auditor), None),
            Route::Unrouted { foreign: true }
        );
        assert_eq!(
            route(&alice(), Some("ag-000000000000000000000000"), None),
            Route::Unrouted { foreign: false }
        );
    }

    #[test]
    fn the_minting_mutants_still_resolve() {
        let alice = alice();
        for mutant in [
            Mutant::AgentCardRPerRequest,
            Mutant::AgentCardRNamesPrincipal,
        ] {
            let minted = minted_for(&AGENTS[1], &alice, 7, Some(mutant));
            assert_ne!(minted, routing_value(&AGENTS[1]));
            assert_eq!(
                route(&alice, Some(&minted), Some(mutant)),
                Route::Agent(&AGENTS[1])
            );
        }
    }

    #[test]
    fn entries_carry_no_prompt_or_schema_and_fall_back_to_the_label() {
        let e = entry(&AGENTS[0], routing_value(&AGENTS[0]));
        assert!(e.get("description").is_none());
        assert_eq!(AGENTS[0].card_description(), "Auditor");
        for banned in ["systemPrompt", "systemPromptRef", "handoff", "credentials"] {
            assert!(e.get(banned).is_none());
        }
    }
}
