//! The host's A2A facet and agent card (A2A-1, A2A-2, A2A-3, A2A-5).
//!
//! The host advertises `a2a` in discovery ([`discovery_record`]) with the
//! versions it serves its agent card in, the one served when a caller names
//! none (`preferredVersion`) and the floor (`minimumVersion`). The card at
//! [`AGENT_CARD_PATH`] is negotiated by the `A2A-Version` request header
//! ([`negotiate`]):
//!
//! - no header ⇒ the `preferredVersion` card (A2A-2);
//! - an offered version ⇒ that version's card;
//! - a version below `minimumVersion` ⇒ `400 interop_version_unsupported`
//!   with `details {protocol: "a2a", requested, supported[]}`, never a
//!   silent downgrade (A2A-3);
//! - a version above the floor that is not offered ⇒ the preferred card.
//!
//! Every card lists one `JSONRPC` interface per advertised version in
//! `supportedInterfaces[]`, so their `protocolVersion`s are exactly the
//! advertised versions (A2A-5). The served version is in the answer's
//! `A2A-Version` header and, for the 0.3 card, its `protocolVersion`.
//! The card advertises its interfaces at [`A2A_PATH`], the JSON-RPC
//! endpoint of [`crate::domain::a2a_tasks`].
//!
//! Per-agent cards (A2A-8, RFC 0202): the facet `agentCards` is advertised,
//! the 1.0 card declares `capabilities.extendedAgentCard: true` (§A.1), and
//! [`agent_card_of`] projects an inventory entry
//! ([`crate::domain::agents`]) onto the card `GetExtendedAgentCard` answers
//! for the entry's routing value (§C.4). The public card lists no routing
//! value (§D.8).

use serde_json::{Map, Value, json};

use crate::base::mutant::{Mutant, MutantInfo};
use crate::domain::agents::{self, InstalledAgent};

/// Where the agent card is served.
pub const AGENT_CARD_PATH: &str = "/.well-known/agent-card.json";

/// The path the card's interfaces name.
pub const A2A_PATH: &str = "/a2a";

/// The versions the card is served in (`a2a.versions`), oldest first.
pub const VERSIONS: &[&str] = &["0.3", "1.0"];

/// The version served when a caller names none (`a2a.preferredVersion`).
pub const PREFERRED_VERSION: &str = "1.0";

/// The floor (`a2a.minimumVersion`).
pub const MINIMUM_VERSION: &str = "0.3";

/// The `a2a` discovery record (A2A-1), with `agentCards` (A2A-8). Bug
/// under `a2a-facet-no-floor`: the required `minimumVersion` is missing.
pub fn discovery_record(mutant: Option<Mutant>) -> Value {
    let mut record = json!({
        "versions": VERSIONS,
        "preferredVersion": PREFERRED_VERSION,
        "minimumVersion": MINIMUM_VERSION,
        "refreshedAt": crate::base::clock::started_day_rfc3339(),
        "profiles": ["a2a-0.3", "a2a-1.0"],
        "agentCardUrl": AGENT_CARD_PATH,
        // RFC 0202: each inventory entry is published as an A2A card.
        "agentCards": true,
    });
    if mutant == Some(Mutant::A2aFacetNoFloor)
        && let Some(object) = record.as_object_mut()
    {
        object.remove("minimumVersion");
    }
    // Bug under `agent-cards-unbacked`: `agentCards` without the `a2a-1.0`
    // profile RFC 0202 §A.1 requires with it.
    if mutant == Some(Mutant::AgentCardsUnbacked) {
        record["profiles"] = json!(["a2a-0.3"]);
    }
    record
}

/// A `major.minor` version as numbers, or `None` when it is not one.
pub fn parse_version(value: &str) -> Option<(u32, u32)> {
    let (major, minor) = value.split_once('.')?;
    let digits = |s: &str| !s.is_empty() && s.len() <= 6 && s.bytes().all(|b| b.is_ascii_digit());
    if !digits(major) || !digits(minor) {
        return None;
    }
    Some((major.parse().ok()?, minor.parse().ok()?))
}

/// What a card request negotiated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Negotiated {
    /// Serve the card of this version.
    Serve(&'static str),
    /// Refuse: the requested version is below the floor.
    BelowFloor,
    /// Refuse: the header is not a `major.minor` version.
    Malformed,
}

/// Picks the card version for an `A2A-Version` header value.
pub fn negotiate(requested: Option<&str>, mutant: Option<Mutant>) -> Negotiated {
    let Some(requested) = requested.map(str::trim) else {
        // A2A-2: no header is the preferred card. Bug under
        // `a2a-card-default-oldest`: the oldest one is served instead.
        if mutant == Some(Mutant::A2aCardDefaultOldest) {
            return Negotiated::Serve(MINIMUM_VERSION);
        }
        return Negotiated::Serve(PREFERRED_VERSION);
    };
    let Some(asked) = parse_version(requested) else {
        return Negotiated::Malformed;
    };
    if let Some(offered) = VERSIONS
        .iter()
        .copied()
        .find(|v| parse_version(v) == Some(asked))
    {
        return Negotiated::Serve(offered);
    }
    let floor = parse_version(MINIMUM_VERSION).unwrap_or((0, 0));
    if asked < floor {
        // A2A-3: fail closed. Bug under `a2a-below-floor-served`: the
        // oldest card is served (a silent downgrade).
        if mutant == Some(Mutant::A2aBelowFloorServed) {
            return Negotiated::Serve(MINIMUM_VERSION);
        }
        return Negotiated::BelowFloor;
    }
    Negotiated::Serve(PREFERRED_VERSION)
}

/// The `details` of a below-floor refusal.
pub fn refusal_details(requested: &str) -> Map<String, Value> {
    let mut details = Map::new();
    details.insert("protocol".to_owned(), json!("a2a"));
    details.insert("requested".to_owned(), json!(requested));
    details.insert("supported".to_owned(), json!(VERSIONS));
    details
}

/// The name of the card's one security scheme: the bearer token every
/// authenticated route takes.
const BEARER_SCHEME: &str = "bearer";

/// The agent card of `version`, its interfaces at `base` + [`A2A_PATH`]
/// (A2A-5). Bug under `a2a-card-interfaces-mismatch`: an interface for a
/// version the host does not advertise is listed too.
///
/// The 1.0 card declares the bearer scheme its JSON-RPC endpoint requires
/// and `capabilities.extendedAgentCard: true` (RFC 0202 §A.1: the
/// per-agent cards ride `GetExtendedAgentCard`). The 0.3 card, whose
/// shapes for both differ, claims neither: this host serves no 0.3
/// extended-card method.
pub fn agent_card(version: &str, base: &str, mutant: Option<Mutant>) -> Value {
    let url = format!("{base}{A2A_PATH}");
    let mut versions: Vec<&str> = VERSIONS.to_vec();
    if mutant == Some(Mutant::A2aCardInterfacesMismatch) {
        versions.push("0.2");
    }
    let interfaces: Vec<Value> = versions
        .iter()
        .map(|v| json!({"url": url, "protocolBinding": "JSONRPC", "protocolVersion": v}))
        .collect();
    let mut card = json!({
        "name": "toolcert reference host",
        "description": "The OpenWOP reference host of toolcert (conformance testing only).",
        "version": env!("CARGO_PKG_VERSION"),
        "supportedInterfaces": interfaces,
        "capabilities": {"streaming": false, "pushNotifications": false},
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["text/plain"],
        "skills": [],
    });
    let Some(object) = card.as_object_mut() else {
        return card;
    };
    if version == "0.3" {
        // The 0.3 card shape names its version and main transport.
        object.insert("protocolVersion".to_owned(), json!("0.3"));
        object.insert("url".to_owned(), json!(url));
        object.insert("preferredTransport".to_owned(), json!("JSONRPC"));
        return card;
    }
    // Bug under `agent-card-no-extended-flag`: the flag RFC 0202 §A.1
    // requires with `a2a.agentCards` is missing.
    if mutant != Some(Mutant::AgentCardNoExtendedFlag) {
        object.insert(
            "capabilities".to_owned(),
            json!({"streaming": false, "pushNotifications": false, "extendedAgentCard": true}),
        );
    }
    object.insert(
        "securitySchemes".to_owned(),
        json!({BEARER_SCHEME: {"httpAuthSecurityScheme": {"scheme": "Bearer"}}}),
    );
    object.insert(
        "securityRequirements".to_owned(),
        json!([{"schemes": {BEARER_SCHEME: {"list": []}}}]),
    );
    card
}

/// The card served at [`AGENT_CARD_PATH`] to anyone: [`agent_card`],
/// listing no routing value (RFC 0202 §D.8). Bug under
/// `agent-card-public-lists-r`: it also lists every installed agent's
/// interfaces, each with the agent's routing value.
pub fn public_card(version: &str, base: &str, mutant: Option<Mutant>) -> Value {
    let mut card = agent_card(version, base, mutant);
    if mutant == Some(Mutant::AgentCardPublicListsR)
        && let Some(interfaces) = card["supportedInterfaces"].as_array_mut()
    {
        let hosts: Vec<Value> = interfaces.clone();
        for agent in agents::AGENTS {
            let tenant = agents::routing_value(agent);
            interfaces.extend(hosts.iter().cloned().map(|mut interface| {
                interface["tenant"] = json!(tenant);
                interface
            }));
        }
    }
    card
}

/// One A2A skill per workflow the host routes to `agent` (the v1 §C skill
/// rule: a skill is a workflow).
fn skills_of(agent: &InstalledAgent) -> Vec<Value> {
    agent
        .workflows
        .iter()
        .map(|workflow| {
            json!({
                "id": workflow,
                "name": workflow,
                "description": format!("Runs the {workflow} workflow."),
                "tags": ["openwop-workflow"],
            })
        })
        .collect()
}

/// The card `GetExtendedAgentCard` answers for `agent`'s routing value
/// `tenant` (RFC 0202 §C.4): the 1.0 host card with the entry's persona,
/// description (else label) and pack version, every interface carrying
/// `tenant`, and one skill per routed workflow; capabilities and security
/// stay the host card's. It carries nothing the inventory entry may not
/// (§C.5): no prompt, schema or credential is ever in it. Bug under
/// `agent-card-host-card`: the host card is answered unchanged.
pub fn agent_card_of(
    agent: &InstalledAgent,
    tenant: &str,
    base: &str,
    mutant: Option<Mutant>,
) -> Value {
    let mut card = agent_card(PREFERRED_VERSION, base, mutant);
    if mutant == Some(Mutant::AgentCardHostCard) {
        return card;
    }
    // Bug under `agent-card-own-capabilities`: the agent claims capabilities
    // of its own and drops the host's security (§C.4 keeps both the host's).
    if mutant == Some(Mutant::AgentCardOwnCapabilities)
        && let Some(object) = card.as_object_mut()
    {
        object.insert("capabilities".to_owned(), json!({"streaming": true}));
        object.remove("securitySchemes");
        object.remove("securityRequirements");
    }
    card["name"] = json!(agent.persona);
    card["description"] = json!(agent.card_description());
    card["version"] = json!(agent.pack_version);
    card["skills"] = json!(skills_of(agent));
    if let Some(interfaces) = card["supportedInterfaces"].as_array_mut() {
        for interface in interfaces {
            interface["tenant"] = json!(tenant);
        }
    }
    card
}

/// The mutants planted in this module, gathered by [`crate::surface::mutants::ALL`].
pub const MUTANTS: &[MutantInfo] = &[
    MutantInfo {
        mutant: Mutant::A2aFacetNoFloor,
        name: "a2a-facet-no-floor",
        breaks: "the a2a discovery facet lacks the required minimumVersion (A2A-1)",
    },
    MutantInfo {
        mutant: Mutant::A2aCardDefaultOldest,
        name: "a2a-card-default-oldest",
        breaks: "a card request without A2A-Version gets the minimumVersion card, not the preferredVersion one (A2A-2)",
    },
    MutantInfo {
        mutant: Mutant::A2aBelowFloorServed,
        name: "a2a-below-floor-served",
        breaks: "an A2A-Version below minimumVersion is served the oldest card instead of refused (A2A-3)",
    },
    MutantInfo {
        mutant: Mutant::A2aCardInterfacesMismatch,
        name: "a2a-card-interfaces-mismatch",
        breaks: "the agent card lists a supportedInterfaces[].protocolVersion the host does not advertise (A2A-5)",
    },
    MutantInfo {
        mutant: Mutant::AgentCardNoExtendedFlag,
        name: "agent-card-no-extended-flag",
        breaks: "the 1.0 agent card lacks capabilities.extendedAgentCard although a2a.agentCards is advertised (A2A-8, RFC 0202 §A.1)",
    },
    MutantInfo {
        mutant: Mutant::AgentCardHostCard,
        name: "agent-card-host-card",
        breaks: "GetExtendedAgentCard with an agent's routing value answers the host card unchanged (A2A-8, RFC 0202 §C.4)",
    },
    MutantInfo {
        mutant: Mutant::AgentCardOwnCapabilities,
        name: "agent-card-own-capabilities",
        breaks: "a per-agent card declares capabilities of its own and no security schemes instead of the host card's (A2A-8, RFC 0202 §C.4)",
    },
    MutantInfo {
        mutant: Mutant::AgentCardPublicListsR,
        name: "agent-card-public-lists-r",
        breaks: "the public agent card lists every agent's interfaces with its routing value (A2A-8, RFC 0202 §D.8)",
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negotiation_follows_the_floor() {
        assert_eq!(negotiate(None, None), Negotiated::Serve(PREFERRED_VERSION));
        assert_eq!(negotiate(Some("0.3"), None), Negotiated::Serve("0.3"));
        assert_eq!(negotiate(Some("0.2"), None), Negotiated::BelowFloor);
        assert_eq!(
            negotiate(Some("9.9"), None),
            Negotiated::Serve(PREFERRED_VERSION)
        );
        assert_eq!(negotiate(Some("latest"), None), Negotiated::Malformed);
    }

    #[test]
    fn card_interfaces_are_the_advertised_versions() {
        let card = agent_card("1.0", "http://127.0.0.1:1", None);
        let listed: Vec<&str> = card["supportedInterfaces"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|i| i["protocolVersion"].as_str())
            .collect();
        assert_eq!(listed, VERSIONS);
        assert!(discovery_record(None)["minimumVersion"].is_string());
        assert_eq!(discovery_record(None)["agentCards"], true);
        assert_eq!(card["capabilities"]["extendedAgentCard"], true);
        assert!(
            agent_card("0.3", "http://127.0.0.1:1", None)["capabilities"]
                .get("extendedAgentCard")
                .is_none()
        );
    }

    #[test]
    fn an_agent_card_projects_its_entry_onto_the_host_card() {
        let base = "http://127.0.0.1:1";
        let host = public_card("1.0", base, None);
        let relay = &agents::AGENTS[1];
        let r = agents::routing_value(relay);
        let card = agent_card_of(relay, &r, base, None);
        assert_eq!(card["name"], relay.persona);
        assert_eq!(card["version"], relay.pack_version);
        assert_eq!(card["description"], relay.card_description());
        assert_eq!(card["capabilities"], host["capabilities"]);
        assert_eq!(card["securitySchemes"], host["securitySchemes"]);
        assert_eq!(card["securityRequirements"], host["securityRequirements"]);
        let interfaces = card["supportedInterfaces"].as_array().unwrap();
        assert_eq!(
            interfaces.len(),
            host["supportedInterfaces"].as_array().unwrap().len()
        );
        assert!(interfaces.iter().all(|i| i["tenant"] == r.as_str()));
        assert_eq!(card["skills"][0]["id"], relay.workflows[0]);
        // The public card names no routing value (§D.8).
        assert!(!host.to_string().contains(&r));
    }
}
