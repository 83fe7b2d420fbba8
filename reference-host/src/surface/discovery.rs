//! `GET /.well-known/openwop`: the v2 discovery document.
//!
//! The document is fixed for a host's lifetime (it depends only on whether
//! seams are enabled and on the mutant), so it is rendered once with a strong
//! ETag (quoted hex SHA-256 of the body) and served with conditional-GET
//! support. This host only speaks v2, so the same closed root is served
//! whether or not the request carries `OpenWOP-Version`. (Upstream-only
//! mode serves its v1 document through the same handler instead,
//! [`crate::surface::upstream::discovery`].)

use std::sync::{Arc, OnceLock};

use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use crate::base::args_hash::sha256_hex;
use crate::base::mutant::{Mutant, MutantInfo};
use crate::domain::catalog::{SOURCE_HOST_EXTENSION, SOURCE_MCP};
use crate::domain::http_client;
use crate::domain::layer1::LAYER1_RETENTION_SECS;
use crate::surface::effect_seams::MANIFEST_PATH;
use crate::surface::seams::SEAMS_PROFILE;

/// The discovery handler's state: the host's document, rendered on first
/// use. Cheap to clone (one shared copy), so the handler extracts it alone
/// rather than the whole app state.
#[derive(Debug, Clone)]
pub struct DiscoveryState {
    inner: Arc<DiscoveryInner>,
}

/// How a host renders its document from whether seams are enabled and its
/// mutant: [`DiscoveryDoc::render`] (v2), or upstream-only mode's v1
/// renderer ([`crate::surface::upstream::discovery::render`]). The app picks
/// one, so this module does not depend on upstream-only mode.
pub type Render = fn(bool, Option<Mutant>) -> DiscoveryDoc;

#[derive(Debug)]
struct DiscoveryInner {
    /// Rendered on first use ([`DiscoveryState::doc`]).
    doc: OnceLock<DiscoveryDoc>,
    render: Render,
    seams_enabled: bool,
    /// The mutant the document is rendered (and served) with.
    mutant: Option<Mutant>,
}

impl DiscoveryState {
    /// The state of a host that renders with `render`; nothing is rendered
    /// yet.
    pub fn new(render: Render, seams_enabled: bool, mutant: Option<Mutant>) -> Self {
        Self {
            inner: Arc::new(DiscoveryInner {
                doc: OnceLock::new(),
                render,
                seams_enabled,
                mutant,
            }),
        }
    }

    /// The rendered discovery document. It is fixed for the host's lifetime
    /// and rendered on first use rather than at start, so a mutant of the
    /// document is seen where it acts, when discovery is served (the matrix's
    /// probe tells such sites from the ones a host reaches while starting).
    pub fn doc(&self) -> &DiscoveryDoc {
        let inner = &self.inner;
        inner
            .doc
            .get_or_init(|| (inner.render)(inner.seams_enabled, inner.mutant))
    }

    /// Whether `mutant` is the host's active one.
    pub fn mutant_is(&self, mutant: Mutant) -> bool {
        self.inner.mutant == Some(mutant)
    }
}

/// The rendered document and its ETag.
#[derive(Debug, Clone)]
pub struct DiscoveryDoc {
    body: Vec<u8>,
    etag: String,
}

impl DiscoveryDoc {
    /// Renders the document for this host's configuration.
    pub fn render(seams_enabled: bool, mutant: Option<Mutant>) -> Self {
        Self::from_document(&document(seams_enabled, mutant))
    }

    /// The served form of `document` (its bytes and their ETag); the
    /// upstream-only mode renders its v1 document through this.
    pub fn from_document(document: &Value) -> Self {
        let body = serde_json::to_vec(document).unwrap_or_default();
        let etag = format!("\"{}\"", sha256_hex(&body));
        Self { body, etag }
    }

    /// The body bytes.
    pub fn body(&self) -> &[u8] {
        &self.body
    }

    /// The strong ETag, quoted.
    pub fn etag(&self) -> &str {
        &self.etag
    }

    /// Whether an `If-None-Match` value matches this document (RFC 9110
    /// §13.1.2: weak comparison, `*` matches any current representation).
    pub fn matches(&self, if_none_match: &str) -> bool {
        if_none_match
            .split(',')
            .map(str::trim)
            .any(|tag| tag == "*" || tag.strip_prefix("W/").unwrap_or(tag) == self.etag)
    }
}

/// The document as JSON.
pub fn document(seams_enabled: bool, mutant: Option<Mutant>) -> Value {
    let preferred = if mutant == Some(Mutant::DiscoveryPreferredUnlisted) {
        // Bug: advertises a preferred version it does not list.
        "2.1"
    } else {
        "2.0"
    };
    let mut tool_hooks = json!({
        "status": "stable",
        "since": "2.0",
        "witness": "witnessable-gated",
        "prePostEvents": true,
        "perToolAuthorization": true,
        "perToolRateLimit": true,
        // TURN-D11: tool-turn recovery and replay (TTC §D) is served.
        "turnReplay": true,
    });
    if mutant == Some(Mutant::TurnReplayFacetString) {
        // Bug: the §D facet carried as a string (TURN-D11 defines a boolean).
        tool_hooks["turnReplay"] = json!("yes");
    }
    tool_hooks["perToolRateLimit"] = per_tool_rate_limit_facet(mutant);
    if mutant == Some(Mutant::DiscoveryRecordMissingWitness)
        && let Some(record) = tool_hooks.as_object_mut()
    {
        // Bug: every capability record must say how it is witnessed.
        record.remove("witness");
    }
    let fail_closed = fail_closed_facet(mutant);
    let mut root = json!({
        "protocolVersions": ["2.0"],
        "preferredVersion": preferred,
        "toolHooks": tool_hooks,
        "authorization": {
            "status": "stable",
            "since": "2.0",
            "witness": "witnessable-gated",
            "failClosed": fail_closed,
        },
        // `GET /tools`: the run-scoped fixture tools, filtered by scope.
        "toolCatalog": {
            "status": "stable",
            "since": "2.0",
            "witness": "witnessable-gated",
            "sources": [SOURCE_HOST_EXTENSION, SOURCE_MCP],
            // RFC 0112: `?view=compact` on the list and items.
            "compactView": true,
            // RFC 0078 §D: `tool.session-*` brackets (the session seam).
            "sessionLifecycle": true,
        },
    });
    if let Some(object) = root.as_object_mut() {
        object.insert("idempotency".to_owned(), idempotency_record(mutant));
        object.insert("replay".to_owned(), replay_record());
        object.insert("httpClient".to_owned(), http_client_record());
        // EFF-12: the host is an MCP client of its turn seam's MCP tools;
        // TURN-E4: and an MCP server at `POST /mcp`.
        object.insert("mcp".to_owned(), mcp_record(mutant));
        // A2A-1: the agent card facet (versions, floor, card URL).
        object.insert(
            "a2a".to_owned(),
            crate::domain::a2a::discovery_record(mutant),
        );
        // A2A-8: the per-tenant agent inventory that `a2a.agentCards` publishes.
        object.insert(
            "agents".to_owned(),
            crate::domain::agents::discovery_record(mutant),
        );
        // TRUST-2: the turn seam's knowledge store.
        object.insert("memory".to_owned(), memory_record());
    }
    shape_mutants(&mut root, mutant);
    if seams_enabled && let Some(object) = root.as_object_mut() {
        // The closed v2 root's metadata keys (capabilities.md §3.1): `conformance` says the
        // seams profile is mounted (`seamsProfile`, RFC 0168 §C.1) and `fixtures` lists the
        // fixture workflows a harness may start.
        object.insert(
            "conformance".to_owned(),
            json!({"seamsProfile": SEAMS_PROFILE}),
        );
        object.insert(
            "fixtures".to_owned(),
            json!(crate::domain::workflows::WORKFLOWS),
        );
    }
    root
}

/// The `mcp` record ([`crate::turn::mcp::discovery_record`]), as the MCP-facet mutants
/// break it (MCP-2, MCP-3, MCP-4).
fn mcp_record(mutant: Option<Mutant>) -> Value {
    let mut record = crate::turn::mcp::discovery_record();
    if mutant == Some(Mutant::McpLegacyProfile) {
        // Bug: the retired legacy profile is still advertised.
        record["profiles"] = json!(["mcp-2026-07-28", "mcp-2025-06-18-legacy"]);
    }
    if mutant == Some(Mutant::McpRefreshedStale) {
        // Bug: an advertisement nobody re-evaluated for well over 90 days.
        record["refreshedAt"] = json!("2025-01-15T00:00:00Z");
    }
    if mutant == Some(Mutant::McpPreferredUnlisted) {
        // Bug: the preferred revision is not one of the advertised revisions.
        record["preferredVersion"] = json!("2025-11-25");
    }
    record
}

/// The shape mutants of the root and its records (DISC-3, DISC-5, DISC-8).
fn shape_mutants(root: &mut Value, mutant: Option<Mutant>) {
    if mutant == Some(Mutant::DiscoverySupportedTransports) {
        // Bug: REST is the wire; discovery lists no host transports.
        root["supportedTransports"] = json!(["http", "grpc"]);
    }
    if mutant == Some(Mutant::DiscoveryMetadataKey) {
        // Bug: the closed root has no `metadata` key (conformance metadata
        // has root keys of its own).
        root["metadata"] = json!({"conformance.seamsProfile": SEAMS_PROFILE});
    }
    if mutant == Some(Mutant::DiscoveryFacetFalse) {
        // Bug: a facet not offered is omitted, never advertised as `false`.
        root["toolCatalog"]["sessionLifecycle"] = json!(false);
    }
    if mutant == Some(Mutant::CatalogSourcesRepeated) {
        // Bug: `sources[]` holds distinct values.
        root["toolCatalog"]["sources"] = json!([SOURCE_HOST_EXTENSION, SOURCE_HOST_EXTENSION]);
    }
}

/// The `idempotency` capability record.
///
/// The closed v2 record's facets are `multiRegion` and `crossRegion`
/// (spec/v2/declaration.json), so neither retention (Layer-1 ≥ 24 h, effect
/// records ≥ 14 days) is advertised here: those are v1 keys
/// (`layer1RetentionSeconds`, `layer2RetentionSeconds`, the upstream-only v1
/// document's). `crossRegion:
/// "single-region"` is the honest answer for one in-memory store; the claim's
/// atomicity holds within it and nowhere else.
fn idempotency_record(mutant: Option<Mutant>) -> Value {
    json!({
        "status": "stable",
        "since": "2.0",
        "witness": "witnessable-gated",
        "crossRegion": cross_region_facet(mutant),
    })
}

// The facet values below are shared by the v2 document and the upstream-only
// mode's v1 document ([`crate::surface::upstream::discovery`]), so each discovery
// mutant alters both the same way from one place.

/// `toolHooks.perToolRateLimit`: `true` (a boolean facet).
pub fn per_tool_rate_limit_facet(mutant: Option<Mutant>) -> Value {
    if mutant == Some(Mutant::ToolhooksFacetNotBoolean) {
        // Bug: a boolean facet carried as a string.
        json!("yes")
    } else {
        json!(true)
    }
}

/// `authorization.failClosed`. RFC 0064 §C: this host denies whenever a
/// decision cannot be evaluated.
pub fn fail_closed_facet(mutant: Option<Mutant>) -> bool {
    mutant != Some(Mutant::AuthorizationFailclosedFalse)
}

/// `idempotency.layer1RetentionSeconds`: 24 h (a v1 key: only the
/// upstream-only v1 document carries it).
pub fn layer1_retention_facet(mutant: Option<Mutant>) -> u64 {
    if mutant == Some(Mutant::L1RetentionShort) {
        // Bug: advertises a retention below the 24 h Layer-1 floor.
        3_600
    } else {
        LAYER1_RETENTION_SECS
    }
}

/// `idempotency.crossRegion`.
pub fn cross_region_facet(mutant: Option<Mutant>) -> &'static str {
    if mutant == Some(Mutant::CrossRegionUnknown) {
        // Bug: claims a topology this single in-memory store cannot back.
        "multi-master"
    } else {
        "single-region"
    }
}

/// The `replay` capability record (RPL-1): `replay` forks of turn and
/// effect-seam fire runs, `branch` forks of `tool-receiver` fire runs
/// (EFF-10), records kept 14 days, and the effect-seam manifest at
/// `/host/effect-seams`.
fn replay_record() -> Value {
    json!({
        "status": "stable",
        "since": "2.0",
        "witness": "witnessable-gated",
        "modes": ["replay", "branch"],
        "retention": {"days": 14},
        "effectSeamsManifest": MANIFEST_PATH,
    })
}

/// The `memory` capability record (TRUST-2): the knowledge store the turn
/// seam's `memory` member offers, witnessed through that seam only. Its
/// `recallTrust` names the recall tool's per-tool trust decision: a recall
/// result is as trusted as the segment was when stored.
fn memory_record() -> Value {
    json!({
        "status": "stable",
        "since": "2.0",
        "witness": "seam-gated",
        "recallTrust": crate::turn::trust::RECALL_TRUST_DECISION,
    })
}

/// The `httpClient` capability record (RFC 0076): `ctx.http.safeFetch` with
/// its SSRF guard and limits. With `toolHooks.prePostEvents`, every fetch,
/// blocked or not, writes a call/return pair (HOOKS-EVT-5).
fn http_client_record() -> Value {
    json!({
        "status": "stable",
        "since": "2.0",
        "witness": "witnessable-gated",
        "ssrfGuard": true,
        "maxResponseBodyBytes": http_client::MAX_RESPONSE_BODY_BYTES,
        "requestTimeoutMs": http_client::REQUEST_TIMEOUT_MS,
        "methods": http_client::METHODS,
        "safeFetch": {},
    })
}

/// Handler for `GET /.well-known/openwop`.
pub async fn get_discovery(State(state): State<DiscoveryState>, headers: HeaderMap) -> Response {
    let doc = state.doc();
    let etag =
        HeaderValue::from_str(doc.etag()).unwrap_or_else(|_| HeaderValue::from_static("\"\""));
    let if_none_match = headers
        .get(header::IF_NONE_MATCH)
        .and_then(|value| value.to_str().ok());
    // RFC 9110 §13.1.2: a matching If-None-Match on GET answers 304.
    let not_modified = if_none_match.is_some_and(|value| doc.matches(value))
        && !state.mutant_is(Mutant::DiscoveryEtagIgnored);
    if not_modified {
        return (StatusCode::NOT_MODIFIED, [(header::ETAG, etag)]).into_response();
    }
    (
        StatusCode::OK,
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            ),
            (header::ETAG, etag),
        ],
        doc.body().to_vec(),
    )
        .into_response()
}

/// The mutants planted in this module, gathered by [`crate::surface::mutants::ALL`].
pub const MUTANTS: &[MutantInfo] = &[
    MutantInfo {
        mutant: Mutant::DiscoverySupportedTransports,
        name: "discovery-supported-transports",
        breaks: "discovery carries a root `supportedTransports` list naming grpc",
    },
    MutantInfo {
        mutant: Mutant::DiscoveryMetadataKey,
        name: "discovery-metadata-key",
        breaks: "the closed v2 root carries a `metadata` object (the seams profile as a dotted key)",
    },
    MutantInfo {
        mutant: Mutant::DiscoveryFacetFalse,
        name: "discovery-facet-false",
        breaks: "toolCatalog advertises `sessionLifecycle: false` instead of omitting the facet",
    },
    MutantInfo {
        mutant: Mutant::CatalogSourcesRepeated,
        name: "catalog-sources-repeated",
        breaks: "toolCatalog.sources[] lists host-extension twice",
    },
    MutantInfo {
        mutant: Mutant::McpLegacyProfile,
        name: "mcp-legacy-profile",
        breaks: "the mcp record lists the retired mcp-2025-06-18-legacy profile",
    },
    MutantInfo {
        mutant: Mutant::McpRefreshedStale,
        name: "mcp-refreshed-stale",
        breaks: "the mcp record's refreshedAt is 2025-01-15, far beyond the 90-day window",
    },
    MutantInfo {
        mutant: Mutant::McpPreferredUnlisted,
        name: "mcp-preferred-unlisted",
        breaks: "the mcp record's preferredVersion 2025-11-25 is not among its revisions",
    },
    MutantInfo {
        mutant: Mutant::DiscoveryEtagIgnored,
        name: "discovery-etag-ignored",
        breaks: "discovery never answers 304 to a matching If-None-Match",
    },
    MutantInfo {
        mutant: Mutant::ToolhooksFacetNotBoolean,
        name: "toolhooks-facet-not-boolean",
        breaks: "the toolHooks record carries \"perToolRateLimit\": \"yes\"",
    },
    MutantInfo {
        mutant: Mutant::DiscoveryPreferredUnlisted,
        name: "discovery-preferred-unlisted",
        breaks: "preferredVersion is \"2.1\", not in protocolVersions",
    },
    MutantInfo {
        mutant: Mutant::DiscoveryRecordMissingWitness,
        name: "discovery-record-missing-witness",
        breaks: "the toolHooks record has no witness key",
    },
    MutantInfo {
        mutant: Mutant::AuthorizationFailclosedFalse,
        name: "authorization-failclosed-false",
        breaks: "the authorization record advertises failClosed: false",
    },
    MutantInfo {
        mutant: Mutant::L1RetentionShort,
        name: "l1-retention-short",
        breaks: "the v1 discovery advertises idempotency.layer1RetentionSeconds 3600 (below 24 h)",
    },
    MutantInfo {
        mutant: Mutant::CrossRegionUnknown,
        name: "cross-region-unknown",
        breaks: "discovery advertises idempotency.crossRegion \"multi-master\"",
    },
    MutantInfo {
        mutant: Mutant::TurnReplayFacetString,
        name: "turn-replay-facet-string",
        breaks: "discovery carries toolHooks.turnReplay as the string \"yes\" instead of a boolean (TURN-D11)",
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(doc: &DiscoveryDoc) -> Value {
        serde_json::from_slice(doc.body()).expect("json")
    }

    #[test]
    fn correct_document_has_the_v2_root() {
        let doc = DiscoveryDoc::render(false, None);
        let value = parsed(&doc);
        assert_eq!(value["protocolVersions"], json!(["2.0"]));
        assert_eq!(value["preferredVersion"], "2.0");
        assert_eq!(value["toolHooks"]["perToolRateLimit"], true);
        assert_eq!(value["toolHooks"]["witness"], "witnessable-gated");
        assert_eq!(value["authorization"]["failClosed"], true);
        assert_eq!(
            value["toolCatalog"],
            json!({"status": "stable", "since": "2.0", "witness": "witnessable-gated",
                   "sources": ["host-extension", "mcp"], "compactView": true, "sessionLifecycle": true})
        );
        assert!(value.get("metadata").is_none());
        assert_eq!(
            value["idempotency"],
            json!({"status": "stable", "since": "2.0", "witness": "witnessable-gated",
                   "crossRegion": "single-region"})
        );
        assert_eq!(
            value["httpClient"],
            json!({"status": "stable", "since": "2.0", "witness": "witnessable-gated",
                   "ssrfGuard": true, "maxResponseBodyBytes": 1048576,
                   "requestTimeoutMs": 5000, "methods": ["GET", "POST"], "safeFetch": {}})
        );
        assert_eq!(
            value["mcp"],
            json!({"status": "stable", "since": "2.0", "witness": "witnessable-gated",
                   "revisions": ["2026-07-28"], "preferredVersion": "2026-07-28",
                   "minimumRevision": "2026-07-28",
                   "refreshedAt": crate::base::clock::started_day_rfc3339(),
                   "client": true, "features": ["mrtr", "extensions"], "mrtr": {"maxRounds": 2},
                   "serverMount": {"transports": ["streamable-http"]}})
        );
        assert_eq!(
            value["memory"],
            json!({"status": "stable", "since": "2.0", "witness": "seam-gated",
                   "recallTrust": "stored-segment"})
        );
        assert_eq!(
            value["agents"],
            json!({"status": "stable", "since": "2.0", "witness": "witnessable-gated",
                   "manifestRuntime": {"installScope": "tenant"}})
        );
        assert_eq!(value["a2a"]["agentCards"], true);
        // DISC-4 is witnessed on `prompts`, a family this host does not advertise.
        assert!(value.get("prompts").is_none());
        assert!(value.get("conformance").is_none() && value.get("fixtures").is_none());
        let with_seams = parsed(&DiscoveryDoc::render(true, None));
        assert_eq!(
            with_seams["conformance"],
            json!({"seamsProfile": "openwop-conformance-seams-v2"})
        );
        assert!(
            with_seams["fixtures"]
                .as_array()
                .is_some_and(|f| !f.is_empty())
        );
        assert!(with_seams.get("metadata").is_none());
    }

    #[test]
    fn etag_is_quoted_sha256_of_body() {
        let doc = DiscoveryDoc::render(false, None);
        assert_eq!(doc.etag(), format!("\"{}\"", sha256_hex(doc.body())));
        assert!(doc.matches(doc.etag()));
        assert!(doc.matches(&format!("\"nope\", W/{}", doc.etag())));
        assert!(doc.matches("*"));
        assert!(!doc.matches("\"nope\""));
    }

    #[test]
    fn document_mutants_change_exactly_their_field() {
        let value = parsed(&DiscoveryDoc::render(
            false,
            Some(Mutant::ToolhooksFacetNotBoolean),
        ));
        assert_eq!(value["toolHooks"]["perToolRateLimit"], "yes");
        let value = parsed(&DiscoveryDoc::render(
            false,
            Some(Mutant::DiscoveryPreferredUnlisted),
        ));
        assert_eq!(value["preferredVersion"], "2.1");
        let value = parsed(&DiscoveryDoc::render(
            false,
            Some(Mutant::DiscoveryRecordMissingWitness),
        ));
        assert!(value["toolHooks"].get("witness").is_none());
        assert_eq!(value["authorization"]["witness"], "witnessable-gated");
        let value = parsed(&DiscoveryDoc::render(
            false,
            Some(Mutant::AuthorizationFailclosedFalse),
        ));
        assert_eq!(value["authorization"]["failClosed"], false);
        // The v2 record carries no retention: that mutant acts on the v1
        // document only (crate::surface::upstream::discovery).
        let value = parsed(&DiscoveryDoc::render(false, Some(Mutant::L1RetentionShort)));
        assert!(value["idempotency"].get("layer1RetentionSeconds").is_none());
        assert_eq!(value["idempotency"]["crossRegion"], "single-region");
        let value = parsed(&DiscoveryDoc::render(
            false,
            Some(Mutant::CrossRegionUnknown),
        ));
        assert_eq!(value["idempotency"]["crossRegion"], "multi-master");
    }
}
