//! The pre-call freshness and drift gate (mcp-facts §4.4, §4.5), rule by rule and in the
//! seed's order:
//!
//! 1. hash the manifest and compare with the pinned digest, before any connection;
//! 2. refuse an expired snapshot, or one whose capture or review data is incomplete or whose
//!    review fails the assertions (§4.6, re-checked on every call) or is dated outside the
//!    snapshot's window (before `capturedAt`, at or after `expiresAt`, or in the future:
//!    `4.3.6 reviewedAt`); a window longer than the policy maximum or a `capturedAt` in the
//!    future (`4.3.5-window`); a durable invalidation recorded beside the snapshot
//!    (`4.5.2-invalidated`, see [`super::invalidation`]); an authorization context other than
//!    the capture's (`4.4.3-authorization`); a review the local policy does not accept
//!    (`4.4.6-policy`, see [`super::policy`]);
//! 3. initialize at the recorded revision (with the recorded client capabilities, since a
//!    catalog may depend on them) and compare the complete `serverInfo` canonically (and,
//!    pinned by the deployment, `instructions`);
//! 4. exhaust the live pagination and find the selected name exactly once;
//! 5. compare the complete live Tool object with the reviewed one by their RFC 8785 bytes
//!    (and, pinned by the deployment, every page of the catalog: any sibling's drift, a tool
//!    added or removed, a changed order, `4.4.5-catalog-drift`).
//!
//! The offline rules run on a [`Pinned`] snapshot, read, hashed and schema-checked once: the
//! guard keeps it for its lifetime (the bytes it hashed are the bytes it uses), and re-checks
//! only what time or another process can change (expiry, the invalidation record).
//!
//! `notifications/tools/list_changed` (§4.5): any one seen on the gate's connection before
//! the comparison refuses, whether or not the server declared `tools.listChanged` (§4.5.6;
//! an undeclared one is also reported). Right after `initialized` the gate makes one causal
//! barrier ([`Client::startup_barrier`]: a `ping` round trip; stdio keeps order, so everything
//! the server emitted while handling `initialized` has been read when the answer arrives),
//! and a ping after the last page is a second one, so a notification the server sent before
//! answering it is always seen. Re-listing never revives a review (§4.5.2), on this
//! connection or a later one: the refusal is recorded beside the snapshot.
//!
//! server-everything sends `list_changed` right after `initialized` as a side effect of
//! registering its tools (mcp-facts §5.3.4), so under the default [`ListChangedPolicy::Strict`]
//! every gate against it refuses: that is the correct strict outcome, and the default stays
//! strict because §4.5.1 reads "invalidated immediately" and the facts ask for any relaxation
//! to be explicit and recorded. The refusal of such a start-up notification names the fix.
//!
//! The explicit relaxation [`ListChangedPolicy::Settle`] waits for no quiet window: it ignores,
//! but counts in the verdict's evidence (`ignoredInSettleWindow`), the `list_changed` read
//! before the start-up barrier's answer. That is sound, not just lenient: each of those was
//! read before the first `tools/list` request was sent, so the server emitted it before it
//! received that request, and the listing then compared already reflects whatever it
//! announced; it cannot describe a list the gate has not read. Any `list_changed` read after
//! the first `tools/list` was sent still refuses, however soon it comes (a server that
//! announces on a timer is refused in both modes). Measured on server-everything 2026.8.31
//! over stdio: its start-up notifications (one with empty client capabilities; five with the
//! roots, sampling, elicitation and tasks capabilities tried) all arrived before the ping's
//! answer in 300 of 300 runs, whether `initialized` and `ping` came in one write or two, and
//! none came later; its source writes them from the `initialized` handler, before the ping is
//! handled. Over Streamable HTTP a notification on the GET stream has no order relative to
//! the POST that answers the ping: it may be counted after the listing began and refuse (fail
//! closed).
//!
//! A sampling or elicitation request from the server on the connection refuses
//! (`4.8.2-excluded-request`: excluded during discovery and invocation). Numbers outside
//! I-JSON and text that is not UTF-8 are refused by the transport, on every transport.
//!
//! Every refusal is a [`Refusal`]: the [`Rule`], a message, and a minimal diff (JSON pointer,
//! reviewed value, live value; for a catalog drift, the tool too). [`Mutant`]s weaken one rule
//! each; they exist only so tests can show each weakening is caught.

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::{Value, json};
use time::OffsetDateTime;

use super::client::{self, Client, ClientError, Initialized, Listen, Rpc, Timeouts};
use super::diff::{Change, catalog_drift, json_diff};
use super::invalidation::{self, Record};
use super::policy::{LocalPolicy, Pin};
use super::transport::{Endpoint, Limits, TransportError};
use super::{REVISION_2026_07_28, review, snapshot, time as mcp_time};
use toolcert_base::canonical::jcs_bytes;

/// Which gate rule refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Rule {
    /// 4.4.1: the manifest could not be read, or its digest is not the pinned one.
    #[serde(rename = "4.4.1-digest")]
    Digest,
    /// 4.4.2: `expiresAt` has passed.
    #[serde(rename = "4.4.2-expired")]
    Expired,
    /// 4.4.2: capture or review data incomplete (schema, server, tool, review missing).
    #[serde(rename = "4.4.2-incomplete")]
    Incomplete,
    /// 4.4.6 / 4.6: the review's assertions are not acceptable (or the tool is excluded, 4.8).
    #[serde(rename = "4.4.6-review")]
    Review,
    /// 4.4.3: the server could not be reached or initialized.
    #[serde(rename = "4.4.3-connect")]
    Connect,
    /// 4.4.3: the negotiated revision is not the recorded one.
    #[serde(rename = "4.4.3-version")]
    Version,
    /// 4.4.3: over Streamable HTTP the server answered 404 for the session it issued: it
    /// ended the session. Refused, never retried in a new session (see
    /// [`TransportError::SessionExpired`]).
    #[serde(rename = "4.4.3-session-expired")]
    SessionExpired,
    /// 4.4.3: the live `serverInfo` differs from the recorded one.
    #[serde(rename = "4.4.3-server-info")]
    ServerInfo,
    /// 4.4.4: the live listing failed (timeout, loop, page cap, protocol).
    #[serde(rename = "4.4.4-listing")]
    Listing,
    /// 4.4.4: the selected name is not in the live catalog.
    #[serde(rename = "4.4.4-missing")]
    Missing,
    /// 4.4.4: the selected name occurs more than once.
    #[serde(rename = "4.4.4-duplicate")]
    Duplicate,
    /// 4.4.5 / 4.4.7: the live Tool object differs from the reviewed one.
    #[serde(rename = "4.4.5-drift")]
    Drift,
    /// 4.5.1 / 4.5.2: `list_changed` arrived: the review is invalidated.
    #[serde(rename = "4.5.1-list-changed")]
    ListChanged,
    /// 4.5.2: an earlier connection recorded an invalidation of this snapshot beside it (a
    /// `list_changed`, or a drift): a new capture and review are required.
    #[serde(rename = "4.5.2-invalidated")]
    Invalidated,
    /// 4.8.2: the server sent a sampling or elicitation request on the connection.
    #[serde(rename = "4.8.2-excluded-request")]
    ExcludedRequest,
    /// 4.3.5: the snapshot's window exceeds the policy maximum, or an instant lies in the future.
    #[serde(rename = "4.3.5-window")]
    Window,
    /// 4.4.6: the local policy does not accept a reviewed assertion or value.
    #[serde(rename = "4.4.6-policy")]
    Policy,
    /// Pinned past the anchors (opt-in): the live `instructions` differ from the recorded ones.
    #[serde(rename = "4.4.3-instructions")]
    Instructions,
    /// Pinned past the anchors (opt-in): another tool of the catalog drifted, a tool was added
    /// or removed, or the tools' order changed.
    #[serde(rename = "4.4.5-catalog-drift")]
    CatalogDrift,
    /// 2026-07-28: the gate runs under another authorization context than the capture.
    #[serde(rename = "4.4.3-authorization")]
    Authorization,
}

impl Rule {
    /// Whether a refusal by this rule invalidates the snapshot durably (see
    /// [`super::invalidation`]): it says something about the server's catalog, not about one
    /// connection.
    pub fn durable(self) -> bool {
        matches!(
            self,
            Rule::ListChanged
                | Rule::Drift
                | Rule::CatalogDrift
                | Rule::Instructions
                | Rule::Missing
                | Rule::Duplicate
                | Rule::ServerInfo
                | Rule::Version
        )
    }

    /// The rule's id as the verdict and the messages print it.
    pub fn id(self) -> &'static str {
        match self {
            Rule::Digest => "4.4.1-digest",
            Rule::Expired => "4.4.2-expired",
            Rule::Incomplete => "4.4.2-incomplete",
            Rule::Review => "4.4.6-review",
            Rule::Connect => "4.4.3-connect",
            Rule::Version => "4.4.3-version",
            Rule::SessionExpired => "4.4.3-session-expired",
            Rule::ServerInfo => "4.4.3-server-info",
            Rule::Listing => "4.4.4-listing",
            Rule::Missing => "4.4.4-missing",
            Rule::Duplicate => "4.4.4-duplicate",
            Rule::Drift => "4.4.5-drift",
            Rule::ListChanged => "4.5.1-list-changed",
            Rule::Invalidated => "4.5.2-invalidated",
            Rule::ExcludedRequest => "4.8.2-excluded-request",
            Rule::Window => "4.3.5-window",
            Rule::Policy => "4.4.6-policy",
            Rule::Instructions => "4.4.3-instructions",
            Rule::CatalogDrift => "4.4.5-catalog-drift",
            Rule::Authorization => "4.4.3-authorization",
        }
    }
}

/// A gate refusal.
#[derive(Debug, Clone, PartialEq, Serialize, thiserror::Error)]
#[error("gate refused ({}): {message}", rule.id())]
pub struct Refusal {
    /// The rule.
    pub rule: Rule,
    /// What is wrong.
    pub message: String,
    /// Minimal differences, reviewed against live (empty when not a comparison).
    pub diff: Vec<Change>,
    /// A `list_changed` read before the connection's first `tools/list` was sent.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub startup: bool,
}

/// A refusal by `rule`, without a diff.
pub fn refuse(rule: Rule, message: impl Into<String>) -> Refusal {
    Refusal {
        rule,
        message: message.into(),
        diff: Vec::new(),
        startup: false,
    }
}

/// A client error at one stage: refused with that stage's rule, except an ended HTTP
/// session, which always refuses as [`Rule::SessionExpired`].
fn client_refusal(rule: Rule, e: ClientError) -> Refusal {
    if is_session_expired(&e) {
        return refuse(Rule::SessionExpired, e.to_string());
    }
    refuse(rule, e.to_string())
}

/// Whether `e` is the server ending its HTTP session (404 for the `Mcp-Session-Id`).
pub fn is_session_expired(e: &ClientError) -> bool {
    matches!(e, ClientError::Transport(TransportError::SessionExpired))
}

/// One weakened rule, for mutation tests of the gate. Never for real use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mutant {
    /// Read only the first `tools/list` page.
    FirstPageOnly,
    /// Compare only `name` and `inputSchema`.
    NameAndSchemaOnly,
    /// Do not compare `serverInfo`.
    ServerInfoIgnored,
    /// Do not check `expiresAt`.
    ExpiryIgnored,
    /// After a `list_changed`, re-list and accept an identical catalog.
    RevivedByRelist,
    /// Take the first of several tools with the selected name.
    DuplicatesTolerated,
    /// Do not read the invalidation record beside the snapshot.
    InvalidationForgotten,
    /// Let sampling and elicitation requests during discovery pass.
    ExcludedRequestsTolerated,
    /// Do not check the window against the policy maximum, nor instants in the future.
    WindowUnchecked,
}

impl Mutant {
    /// Every mutant.
    pub const ALL: [Mutant; 9] = [
        Mutant::FirstPageOnly,
        Mutant::NameAndSchemaOnly,
        Mutant::ServerInfoIgnored,
        Mutant::ExpiryIgnored,
        Mutant::RevivedByRelist,
        Mutant::DuplicatesTolerated,
        Mutant::InvalidationForgotten,
        Mutant::ExcludedRequestsTolerated,
        Mutant::WindowUnchecked,
    ];

    /// Its kebab-case name.
    pub fn name(self) -> &'static str {
        match self {
            Mutant::FirstPageOnly => "first-page-only",
            Mutant::NameAndSchemaOnly => "name-and-schema-only",
            Mutant::ServerInfoIgnored => "server-info-ignored",
            Mutant::ExpiryIgnored => "expiry-ignored",
            Mutant::RevivedByRelist => "revived-by-relist",
            Mutant::DuplicatesTolerated => "duplicates-tolerated",
            Mutant::InvalidationForgotten => "invalidation-forgotten",
            Mutant::ExcludedRequestsTolerated => "excluded-requests-tolerated",
            Mutant::WindowUnchecked => "window-unchecked",
        }
    }

    /// What it breaks.
    pub fn breaks(self) -> &'static str {
        match self {
            Mutant::FirstPageOnly => "4.4.4: exhaust live pagination",
            Mutant::NameAndSchemaOnly => "4.4.5: compare the complete Tool object",
            Mutant::ServerInfoIgnored => "4.4.3: compare the complete serverInfo",
            Mutant::ExpiryIgnored => "4.4.2: reject an expired snapshot",
            Mutant::RevivedByRelist => "4.5.2: an identical re-list does not revive a review",
            Mutant::DuplicatesTolerated => "4.4.4: the name occurs exactly once",
            Mutant::InvalidationForgotten => {
                "4.5.2: an invalidation lasts until a new capture and review"
            }
            Mutant::ExcludedRequestsTolerated => {
                "4.8.2: no sampling or elicitation during discovery"
            }
            Mutant::WindowUnchecked => {
                "4.3.5: expiry under the policy maximum, no instant in the future"
            }
        }
    }
}

/// How a `list_changed` before the comparison is treated (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ListChangedPolicy {
    /// Any `list_changed` on the gate's connection refuses.
    #[default]
    Strict,
    /// `list_changed` read before the first `tools/list` is sent (up to a `ping` barrier
    /// right after `initialized`) are counted as evidence and ignored; later ones refuse.
    Settle,
}

impl ListChangedPolicy {
    /// Both policies.
    pub const ALL: [ListChangedPolicy; 2] = [ListChangedPolicy::Strict, ListChangedPolicy::Settle];

    /// `strict` or `settle`.
    pub fn name(self) -> &'static str {
        match self {
            ListChangedPolicy::Strict => "strict",
            ListChangedPolicy::Settle => "settle",
        }
    }
}

/// A name that is no policy or mutant of the gate; the message lists the names there are.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("\"{given}\" is not one of: {known}")]
pub struct UnknownName {
    /// What was given.
    pub given: String,
    /// The names there are, comma-separated.
    pub known: String,
}

impl std::str::FromStr for ListChangedPolicy {
    type Err = UnknownName;

    fn from_str(s: &str) -> Result<Self, UnknownName> {
        ListChangedPolicy::ALL
            .into_iter()
            .find(|p| p.name() == s)
            .ok_or_else(|| UnknownName {
                given: s.to_string(),
                known: ListChangedPolicy::ALL.map(|p| p.name()).join(", "),
            })
    }
}

impl std::str::FromStr for Mutant {
    type Err = UnknownName;

    fn from_str(s: &str) -> Result<Self, UnknownName> {
        Mutant::ALL
            .into_iter()
            .find(|m| m.name() == s)
            .ok_or_else(|| UnknownName {
                given: s.to_string(),
                known: Mutant::ALL.map(|m| m.name()).join(", "),
            })
    }
}

/// The authorization context of a catalog captured or gated without credentials.
pub const NO_AUTHORIZATION: &str = "none";

/// What the gate checks against.
#[derive(Debug, Clone, PartialEq)]
pub struct GateOptions {
    /// The pinned `manifestSha256`.
    pub sha256: String,
    /// The server key.
    pub server: String,
    /// The tool name (exact, case-sensitive).
    pub tool: String,
    /// The instant expiry is judged at (default: now).
    pub now: Option<OffsetDateTime>,
    /// `list_changed` policy.
    pub policy: ListChangedPolicy,
    /// The deployment's local policy (step 6), and its pins.
    pub local: LocalPolicy,
    /// What is pinned beyond the anchors (united with the local policy's `pin`).
    pub pin: Pin,
    /// The authorization context this gate runs under (the capture's must be the same).
    pub authorization: String,
    /// Record durable invalidations beside the snapshot (off only for read-only runs of the
    /// gate's own tests of what it would record).
    pub record: bool,
    /// A weakened rule (tests only).
    pub mutant: Option<Mutant>,
    /// Client timeouts.
    pub timeouts: Timeouts,
    /// Transport limits.
    pub limits: Limits,
    /// Page cap.
    pub max_pages: usize,
}

impl GateOptions {
    /// Defaults for one binding.
    pub fn new(sha256: &str, server: &str, tool: &str) -> GateOptions {
        GateOptions {
            sha256: sha256.to_string(),
            server: server.to_string(),
            tool: tool.to_string(),
            now: None,
            policy: ListChangedPolicy::Strict,
            local: LocalPolicy::default(),
            pin: Pin::default(),
            authorization: NO_AUTHORIZATION.into(),
            record: true,
            mutant: None,
            timeouts: Timeouts::default(),
            limits: Limits::default(),
            max_pages: super::client::MAX_PAGES,
        }
    }

    /// The pins in force: the options' and the local policy's.
    pub fn pins(&self) -> Pin {
        self.pin.union(self.local.pin().unwrap_or_default())
    }
}

/// Evidence the gate records, pass or refuse.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Evidence {
    /// Whether a connection was opened.
    pub connected: bool,
    /// The `list_changed` policy in force.
    pub list_changed_policy: Option<ListChangedPolicy>,
    /// What is pinned beyond the anchors.
    pub pinned: Pin,
    /// `list_changed` notifications ignored because they were read before the first
    /// `tools/list` was sent (policy `settle`; the name is kept from the earlier quiet window).
    pub ignored_in_settle_window: u64,
    /// A `list_changed` arrived although the server did not declare `tools.listChanged`
    /// (a finding, §4.5.6).
    pub undeclared_list_changed: bool,
    /// Live pages read.
    pub live_pages: usize,
    /// Over HTTP, the server offered the GET stream for its own messages. Nothing orders a
    /// message on it against the answers to POSTs, so the barrier proves only that nothing
    /// sent on the POST streams was missed: the residual race of §4.5.5 is wider by whatever
    /// the GET stream still carries (a `list_changed` that arrives later, during the call,
    /// makes it `indeterminate`).
    pub server_stream: bool,
    /// 2026-07-28: what became of the `subscriptions/listen` stream.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub listen: Option<Listen>,
    /// 2026-07-28: the smallest `ttlMs` of the live pages (never used to skip a listing: the
    /// seed lists before every call, which no cache lifetime relaxes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<u64>,
    /// 2026-07-28: the live pages' `cacheScope`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_scope: Option<String>,
    /// Server → client requests answered on the connection.
    pub server_requests: Vec<String>,
    /// A durable invalidation could not be recorded beside the snapshot (why).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub record_error: Option<String>,
    /// Wall time, in microseconds, of each stage: the offline rules (read, hash, schema,
    /// review), connecting and initializing, and the live listing with its barrier and the
    /// comparison. The last is what the gate adds to a call on a connection that a call
    /// needs anyway.
    pub timings_us: Timings,
}

/// Stage wall times in microseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Timings {
    /// Rules 1 and 2.
    pub offline: u64,
    /// Spawning or connecting, and `initialize`.
    pub connect_initialize: u64,
    /// Every page, the barrier, the comparison.
    pub listing_compare: u64,
    /// Of `listing_compare`: the live listing alone (every `tools/list` page).
    pub live_listing: u64,
}

/// Microseconds since `since`.
pub fn micros(since: std::time::Instant) -> u64 {
    u64::try_from(since.elapsed().as_micros()).unwrap_or(u64::MAX)
}

/// A snapshot read, hashed and checked once (rule 1 and the parts of rule 2 that do not
/// depend on the time or the tool), for one server.
#[derive(Debug, Clone, PartialEq)]
pub struct Pinned {
    /// The manifest file (its invalidation record lives beside it).
    pub manifest: PathBuf,
    /// Its `manifestSha256`, equal to the pinned one.
    pub sha256: String,
    /// The server key.
    pub server: String,
    /// The document.
    pub doc: Value,
    /// The recorded revision.
    pub version: String,
    /// `capturedAt`.
    pub captured: OffsetDateTime,
    /// `expiresAt`.
    pub expires: OffsetDateTime,
}

/// The selected tool and its review, as checked for one call.
#[derive(Debug, Clone, PartialEq)]
pub struct Selected {
    /// The reviewed Tool object.
    pub tool: Value,
    /// Its review.
    pub review: Value,
}

impl Pinned {
    /// Rule 1 (the pinned digest is 64 lowercase hex characters and the manifest hashes to
    /// it), then completeness: the schema, the instants, the server entry.
    pub fn load(manifest: &Path, sha256: &str, server: &str) -> Result<Pinned, Refusal> {
        if sha256.len() != 64
            || !sha256
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        {
            return Err(refuse(
                Rule::Digest,
                format!("the pinned digest `{sha256}` is not 64 lowercase hex characters"),
            ));
        }
        let loaded =
            snapshot::read_strict(manifest).map_err(|e| refuse(Rule::Digest, e.to_string()))?;
        if loaded.sha256 != sha256 {
            return Err(Refusal {
                diff: vec![Change::at(
                    "",
                    Some(json!(sha256)),
                    Some(json!(loaded.sha256)),
                )],
                ..refuse(
                    Rule::Digest,
                    format!(
                        "{} hashes to {}, not the pinned {sha256}: the snapshot changed since it was pinned",
                        manifest.display(),
                        loaded.sha256
                    ),
                )
            });
        }
        let doc = loaded.doc;
        snapshot::check_schema(&manifest.display().to_string(), &doc)
            .map_err(|e| refuse(Rule::Incomplete, e.to_string()))?;
        let instant = |key: &str| {
            doc.get(key)
                .and_then(Value::as_str)
                .map(mcp_time::parse)
                .transpose()
                .map_err(|e| refuse(Rule::Incomplete, format!("{key}: {e}")))?
                .ok_or_else(|| refuse(Rule::Incomplete, format!("no {key}")))
        };
        let (captured, expires) = (instant("capturedAt")?, instant("expiresAt")?);
        if expires < captured {
            return Err(refuse(Rule::Incomplete, "expiresAt is before capturedAt"));
        }
        snapshot::server(&doc, server).map_err(|e| refuse(Rule::Incomplete, e.to_string()))?;
        Ok(Pinned {
            manifest: manifest.to_path_buf(),
            sha256: sha256.to_string(),
            server: server.to_string(),
            version: doc["protocolVersion"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
            doc,
            captured,
            expires,
        })
    }

    /// The server entry.
    pub fn entry(&self) -> &Value {
        &self.doc["servers"][&self.server]
    }

    /// The authorization context the catalog was captured under.
    pub fn authorization(&self) -> &str {
        self.entry()
            .pointer("/authorization/context")
            .and_then(Value::as_str)
            .unwrap_or(NO_AUTHORIZATION)
    }

    /// What time, another process and the deployment can change: expiry, the window, the
    /// authorization context, the invalidation record.
    pub fn check_fresh(&self, now: OffsetDateTime, opts: &GateOptions) -> Result<(), Refusal> {
        if now >= self.expires && opts.mutant != Some(Mutant::ExpiryIgnored) {
            return Err(refuse(
                Rule::Expired,
                format!(
                    "the snapshot expired at {} (now {}): capture and review again",
                    mcp_time::format(self.expires),
                    mcp_time::format(now)
                ),
            ));
        }
        if opts.mutant != Some(Mutant::WindowUnchecked) {
            let max = opts
                .local
                .max_expires_in()
                .map_err(|e| refuse(Rule::Policy, e.to_string()))?;
            review::check_snapshot_window(self.captured, self.expires, now, max)
                .map_err(|e| refuse(Rule::Window, e.to_string()))?;
        }
        if self.authorization() != opts.authorization {
            return Err(refuse(
                Rule::Authorization,
                format!(
                    "the catalog was captured under authorization context `{}` and this gate runs under `{}`: a server may list other tools for other credentials (MCP 2026-07-28: tools/list MAY vary by the authorization presented); capture and review under this context",
                    self.authorization(),
                    opts.authorization
                ),
            ));
        }
        if opts.mutant != Some(Mutant::InvalidationForgotten) {
            let settle = opts.policy == ListChangedPolicy::Settle;
            let records =
                invalidation::applicable(&self.manifest, &self.sha256, &self.server, settle)
                    .map_err(|e| refuse(Rule::Invalidated, e.to_string()))?;
            if let Some(r) = records.first() {
                return Err(Refusal {
                    // Only start-up records left: `settle` would not refuse them.
                    startup: records.iter().all(|r| r.startup),
                    ..refuse(
                        Rule::Invalidated,
                        format!(
                            "this snapshot was invalidated at {} ({}: {}); re-listing does not revive a review: a new capture and review are required (record: {})",
                            r.at,
                            r.rule,
                            r.reason,
                            invalidation::record_path(&self.manifest).display()
                        ),
                    )
                });
            }
        }
        Ok(())
    }

    /// The selected tool, exactly once, with a review that passes the seed's assertions, is
    /// dated inside the window (and not in the future), and the local policy accepts.
    pub fn select(
        &self,
        tool: &str,
        now: OffsetDateTime,
        opts: &GateOptions,
    ) -> Result<Selected, Refusal> {
        let selected = self.select_static(tool, opts)?;
        self.check_review_date(&selected, now, opts)?;
        Ok(selected)
    }

    /// The review's date against the window and `now` (what time changes of [`Self::select`]).
    pub fn check_review_date(
        &self,
        selected: &Selected,
        now: OffsetDateTime,
        opts: &GateOptions,
    ) -> Result<(), Refusal> {
        let now_for_window = if opts.mutant == Some(Mutant::WindowUnchecked) {
            self.expires
        } else {
            now
        };
        review::check_window(
            &selected.review,
            self.captured,
            self.expires,
            now_for_window,
        )
        .map_err(|e| refuse(Rule::Review, e.to_string()))
    }

    /// What of [`Self::select`] does not change with time: the tool exactly once, its review
    /// present and passing the seed's assertions and the local policy (the guard keeps it
    /// per tool; the snapshot it reads does not change for the guard's lifetime).
    pub fn select_static(&self, tool: &str, opts: &GateOptions) -> Result<Selected, Refusal> {
        let server = self.entry();
        let found = snapshot::tools_named(server, tool);
        let reviewed = match found.as_slice() {
            [(_, t)] => (*t).clone(),
            [] => {
                return Err(refuse(
                    Rule::Incomplete,
                    format!(
                        "the snapshot has no tool `{tool}` in server `{}`",
                        self.server
                    ),
                ));
            }
            _ => {
                return Err(refuse(
                    Rule::Incomplete,
                    format!(
                        "the snapshot lists `{tool}` {} times: a selected name occurs exactly once (4.3.4)",
                        found.len()
                    ),
                ));
            }
        };
        let review = server
            .get("reviews")
            .and_then(|r| r.get(tool))
            .cloned()
            .ok_or_else(|| {
                refuse(
                    Rule::Incomplete,
                    format!("`{tool}` has no review in the snapshot (toolcert mcp review)"),
                )
            })?;
        review::check(&review, &reviewed).map_err(|e| refuse(Rule::Review, e.to_string()))?;
        opts.local.accepts(&review).map_err(|e| {
            refuse(
                Rule::Policy,
                format!("the local policy does not accept the review of `{tool}`: {e}"),
            )
        })?;
        Ok(Selected {
            tool: reviewed,
            review,
        })
    }

    /// Record a refusal beside the snapshot when its rule invalidates durably; the error,
    /// if the record could not be written (the refusal stands either way).
    pub fn record_refusal(&self, r: &Refusal, opts: &GateOptions) -> Option<String> {
        if !r.rule.durable() || !opts.record {
            return None;
        }
        self.record(r.rule.id(), r.startup, &r.message)
    }

    /// Append one invalidation record; the error if it could not be written.
    pub fn record(&self, rule: &str, startup: bool, reason: &str) -> Option<String> {
        let record = Record {
            manifest_sha256: self.sha256.clone(),
            server: self.server.clone(),
            at: mcp_time::format(mcp_time::now()),
            rule: rule.to_string(),
            startup,
            reason: reason.chars().take(300).collect(),
        };
        invalidation::append(&self.manifest, &record)
            .err()
            .map(|e| e.to_string())
    }
}

/// A passed gate: the open connection (the call must use it, so a later `list_changed` is
/// seen), the reviewed Tool and review, and the `list_changed` count at the comparison.
#[derive(Debug)]
pub struct Passed {
    /// The connection the comparison ran on.
    pub client: Client,
    /// The snapshot it passed.
    pub pinned: Pinned,
    /// The reviewed (and, byte for byte, live) Tool object.
    pub tool: Value,
    /// The review.
    pub review: Value,
    /// `list_changed` count when the comparison passed.
    pub list_changed_mark: u64,
    /// Evidence.
    pub evidence: Evidence,
}

/// A refused gate with its evidence.
#[derive(Debug, Clone, PartialEq)]
pub struct Refused {
    /// The refusal.
    pub refusal: Refusal,
    /// Evidence up to the refusal.
    pub evidence: Evidence,
}

/// Run the gate.
pub async fn gate(
    manifest: &Path,
    endpoint: &Endpoint,
    opts: &GateOptions,
) -> Result<Passed, Refused> {
    let mut evidence = Evidence {
        pinned: opts.pins(),
        ..Evidence::default()
    };
    let started = std::time::Instant::now();
    let now = opts.now.unwrap_or_else(mcp_time::now);
    let offline = Pinned::load(manifest, &opts.sha256, &opts.server).and_then(|p| {
        p.check_fresh(now, opts)?;
        let selected = p.select(&opts.tool, now, opts)?;
        Ok((p, selected))
    });
    let (pinned, selected) = offline.map_err(|refusal| Refused {
        refusal,
        evidence: evidence.clone(),
    })?;
    evidence.timings_us.offline = micros(started);
    let started = std::time::Instant::now();
    evidence.connected = true;
    evidence.list_changed_policy = Some(opts.policy);
    let mut client = match Client::connect(endpoint, opts.limits, opts.timeouts).await {
        Ok(c) => c,
        Err(e) => {
            return Err(Refused {
                refusal: refuse(Rule::Connect, e.to_string()),
                evidence,
            });
        }
    };
    let result = async {
        let hs = handshake(&mut client, &pinned, opts, &mut evidence).await?;
        evidence.timings_us.connect_initialize = micros(started);
        let declares = hs.init.declares_list_changed();
        compare(
            &mut client,
            &pinned,
            &selected,
            hs.mark,
            declares,
            opts,
            &mut evidence,
        )
        .await
    }
    .await;
    evidence.server_requests = client
        .server_requests()
        .iter()
        .map(|r| r.method.clone())
        .collect();
    match result {
        Ok(mark) => Ok(Passed {
            client,
            pinned,
            tool: selected.tool,
            review: selected.review,
            list_changed_mark: mark,
            evidence,
        }),
        Err(refusal) => {
            evidence.record_error = pinned.record_refusal(&refusal, opts);
            client.close().await;
            Err(Refused { refusal, evidence })
        }
    }
}

/// What the handshake established.
#[derive(Debug, Clone, PartialEq)]
pub struct Handshake {
    /// What `initialize` (or `server/discover`) said.
    pub init: Initialized,
    /// The `list_changed` count from which a notification refuses.
    pub mark: u64,
}

/// Rule 3 on a new connection: initialize at the recorded revision with the recorded client
/// capabilities, compare `serverInfo` (and pinned `instructions`), then the start-up barrier
/// (a `list_changed` read before it refuses under `strict`, is counted under `settle`).
pub async fn handshake(
    client: &mut Client,
    pinned: &Pinned,
    opts: &GateOptions,
    evidence: &mut Evidence,
) -> Result<Handshake, Refusal> {
    let init = initialize_pinned(client, pinned).await?;
    let mark = check_handshake(client, &init, pinned, opts, evidence).await?;
    Ok(Handshake { init, mark })
}

/// Initialize at the recorded revision with the recorded client capabilities (a catalog may
/// depend on them, mcp-facts §2.3).
pub async fn initialize_pinned(
    client: &mut Client,
    pinned: &Pinned,
) -> Result<Initialized, Refusal> {
    client
        .initialize(&pinned.version, &pinned.entry()["clientCapabilities"])
        .await
        .map_err(|e| match e {
            ClientError::Version { asked, got } => Refusal {
                diff: vec![Change::at(
                    "/protocolVersion",
                    Some(json!(asked)),
                    Some(json!(got)),
                )],
                ..refuse(
                    Rule::Version,
                    format!("asked for MCP revision {asked}, the server negotiated {got}"),
                )
            },
            e => client_refusal(Rule::Connect, e),
        })
}

/// The rest of rule 3 on an initialized connection: `serverInfo` (and pinned
/// `instructions`), the 2026-07-28 listen stream, the start-up barrier (a `list_changed` read
/// before it refuses under `strict`, is counted under `settle`), no excluded request. The
/// `list_changed` count from which a notification refuses.
pub async fn check_handshake(
    client: &mut Client,
    init: &Initialized,
    pinned: &Pinned,
    opts: &GateOptions,
    evidence: &mut Evidence,
) -> Result<u64, Refusal> {
    let entry = pinned.entry();
    evidence.server_stream = client.has_server_stream();
    if pinned.version == REVISION_2026_07_28 {
        let listen = client.listen_state().clone();
        evidence.listen = Some(listen.clone());
        // On 2026-07-28 a list_changed exists only on an acknowledged listen stream: a
        // server that declares tools.listChanged but does not deliver it there would leave
        // rules 4.5.1 and 4.5.3 blind. Fail closed.
        // Not a durable invalidation: it says nothing about the catalog, only that this
        // connection cannot watch it.
        if init.declares_list_changed() && listen != Listen::Acknowledged {
            return Err(refuse(
                Rule::Listing,
                format!(
                    "the server declares tools.listChanged but its subscriptions/listen stream does not deliver it ({}): on 2026-07-28 a list_changed arrives only there, so a change could not be seen",
                    serde_json::to_string(&listen).unwrap_or_default()
                ),
            ));
        }
    }
    let recorded = &entry["serverInfo"];
    if opts.mutant != Some(Mutant::ServerInfoIgnored)
        && jcs_bytes(&init.server_info) != jcs_bytes(recorded)
    {
        let diff = json_diff(recorded, &init.server_info, 20)
            .into_iter()
            .map(|c| Change {
                pointer: format!("/serverInfo{}", c.pointer),
                ..c
            })
            .collect();
        return Err(Refusal {
            diff,
            ..refuse(
                Rule::ServerInfo,
                "the live serverInfo differs from the recorded one",
            )
        });
    }
    if opts.pins().instructions {
        let recorded = entry.get("instructions").cloned();
        let live = init.instructions.clone();
        if recorded.as_ref().map(jcs_bytes) != live.as_ref().map(jcs_bytes) {
            return Err(Refusal {
                diff: vec![Change::at("/instructions", recorded, live)],
                ..refuse(
                    Rule::Instructions,
                    "the live instructions differ from the recorded ones (pinned by this deployment: they steer the model like a tool description does)",
                )
            });
        }
    }
    // The causal start-up barrier (one round trip), not a quiet window: what it lets through
    // was read before the first tools/list is sent (see `Client::startup_barrier`).
    let at_start = client
        .startup_barrier()
        .await
        .map_err(|e| client_refusal(Rule::Connect, e))?;
    if at_start > 0 {
        if !init.declares_list_changed() {
            evidence.undeclared_list_changed = true;
        }
        if opts.policy == ListChangedPolicy::Strict {
            return Err(Refusal {
                startup: true,
                ..refuse(
                    Rule::ListChanged,
                    format!(
                        "the server sent notifications/tools/list_changed while starting, before the listing began ({at_start} of them{}): under --list-changed strict that invalidates the review. If this server announces list_changed on every start (server-everything does, as it registers its tools), run with --list-changed settle: it accepts exactly the notifications read before the first tools/list was sent (the listing then already reflects them) and still refuses any later one",
                        if init.declares_list_changed() {
                            ""
                        } else {
                            ", without declaring tools.listChanged"
                        }
                    ),
                )
            });
        }
        evidence.ignored_in_settle_window = at_start;
    }
    refuse_excluded(client, opts)?;
    Ok(at_start)
}

/// Refuse when the server asked for sampling or elicitation on the connection (§4.8.2).
fn refuse_excluded<R: Rpc>(rpc: &R, opts: &GateOptions) -> Result<(), Refusal> {
    let excluded = rpc.excluded_requests();
    if excluded.is_empty() || opts.mutant == Some(Mutant::ExcludedRequestsTolerated) {
        return Ok(());
    }
    Err(refuse(
        Rule::ExcludedRequest,
        format!(
            "the server sent {} on the connection (refused): sampling and elicitation are excluded from pinned calls, during discovery and invocation (4.8.2)",
            excluded.join(", ")
        ),
    ))
}

/// Rules 4 and 5 on an open, initialized connection: the live listing, a barrier, no
/// `list_changed` since `mark`, no excluded request, then [`judge`]. The `list_changed` count
/// on success.
pub async fn compare<R: Rpc>(
    rpc: &mut R,
    pinned: &Pinned,
    selected: &Selected,
    mark: u64,
    declares_list_changed: bool,
    opts: &GateOptions,
    evidence: &mut Evidence,
) -> Result<u64, Refusal> {
    compare_keeping(
        rpc,
        pinned,
        selected,
        mark,
        declares_list_changed,
        opts,
        evidence,
    )
    .await
    .map(|(mark, _)| mark)
    .map_err(|(r, _)| r)
}

/// [`compare`], handing back the live listing: a catalog of thousands of tools takes
/// milliseconds to free, which a caller that answers a client (the guard) does after the
/// answer, not before.
#[allow(clippy::too_many_arguments)]
pub async fn compare_keeping<R: Rpc>(
    rpc: &mut R,
    pinned: &Pinned,
    selected: &Selected,
    mut mark: u64,
    declares_list_changed: bool,
    opts: &GateOptions,
    evidence: &mut Evidence,
) -> Result<(u64, client::Listing), (Refusal, Option<client::Listing>)> {
    let started = std::time::Instant::now();
    let list_err = |e: ClientError| (client_refusal(Rule::Listing, e), None);
    let first_only = opts.mutant == Some(Mutant::FirstPageOnly);
    let mut listing = client::list_tools(rpc, opts.max_pages, first_only)
        .await
        .map_err(list_err)?;
    evidence.timings_us.live_listing = micros(started);
    evidence.live_pages = listing.pages.len();
    if let Err(e) = client::barrier(rpc).await {
        return Err((client_refusal(Rule::Listing, e), Some(listing)));
    }
    if rpc.list_changed_seq() > mark {
        if !declares_list_changed {
            evidence.undeclared_list_changed = true;
        }
        if opts.mutant == Some(Mutant::RevivedByRelist) {
            listing = client::list_tools(rpc, opts.max_pages, false)
                .await
                .map_err(list_err)?;
            mark = rpc.list_changed_seq();
        } else {
            return Err((
                refuse(
                    Rule::ListChanged,
                    format!(
                        "the server sent notifications/tools/list_changed on the gate's connection after the listing began{}: the review is invalidated; a new capture and review are required (re-listing does not revive it)",
                        if declares_list_changed {
                            ""
                        } else {
                            " (without declaring tools.listChanged)"
                        }
                    ),
                ),
                Some(listing),
            ));
        }
    }
    if let Err(r) = refuse_excluded(rpc, opts) {
        return Err((r, Some(listing)));
    }
    evidence.live_pages = listing.pages.len();
    if let Err(r) = judge(pinned, selected, &listing.pages, opts, evidence) {
        return Err((r, Some(listing)));
    }
    evidence.timings_us.listing_compare = micros(started);
    Ok((mark, listing))
}

/// Canonical equality, with the cheap structural comparison first: two values serde_json
/// holds equal are canonically equal; only values that differ structurally (a number written
/// `1.0` against `1`) need their RFC 8785 bytes.
fn same(a: &Value, b: &Value) -> bool {
    a == b || jcs_bytes(a) == jcs_bytes(b)
}

/// Rules 4 and 5 on a live listing: the selected name exactly once, its Tool object
/// canonically equal to the reviewed one, and, pinned, every page of the catalog; on
/// 2026-07-28, `ttlMs` and `cacheScope` on every page and the scope unchanged.
pub fn judge(
    pinned: &Pinned,
    selected: &Selected,
    pages: &[Value],
    opts: &GateOptions,
    evidence: &mut Evidence,
) -> Result<(), Refusal> {
    if pinned.version == REVISION_2026_07_28 {
        cache_fields(pinned, pages, evidence)?;
    }
    let name = opts.tool.as_str();
    let live: Vec<(usize, &Value)> = pages
        .iter()
        .enumerate()
        .flat_map(|(p, page)| {
            page.get("tools")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(move |t| (p, t))
        })
        .filter(|(_, t)| t.get("name").and_then(Value::as_str) == Some(name))
        .collect();
    let live_tool = match live.as_slice() {
        [] => {
            return Err(Refusal {
                diff: vec![Change::at(
                    format!("/tools[name={name}]"),
                    Some(selected.tool.clone()),
                    None,
                )],
                ..refuse(
                    Rule::Missing,
                    format!(
                        "the live catalog ({} pages) has no tool `{name}`",
                        pages.len()
                    ),
                )
            });
        }
        [(_, t)] => *t,
        [(_, t), ..] if opts.mutant == Some(Mutant::DuplicatesTolerated) => *t,
        many => {
            let at: Vec<String> = many.iter().map(|(p, _)| p.to_string()).collect();
            return Err(refuse(
                Rule::Duplicate,
                format!(
                    "the live catalog lists `{name}` {} times (on pages {}): the name must occur exactly once",
                    many.len(),
                    at.join(", ")
                ),
            ));
        }
    };
    let equal = if opts.mutant == Some(Mutant::NameAndSchemaOnly) {
        let pick = |t: &Value| json!({"name": t.get("name"), "inputSchema": t.get("inputSchema")});
        same(&pick(&selected.tool), &pick(live_tool))
    } else {
        same(&selected.tool, live_tool)
    };
    if !equal {
        return Err(Refusal {
            diff: json_diff(&selected.tool, live_tool, 20),
            ..refuse(
                Rule::Drift,
                format!("the live Tool object `{name}` differs from the reviewed one"),
            )
        });
    }
    if opts.pins().catalog {
        let reviewed = snapshot::pages(pinned.entry());
        let unchanged = reviewed.len() == pages.len()
            && reviewed
                .iter()
                .zip(pages)
                .all(|(r, l)| same(&r["tools"], l.get("tools").unwrap_or(&Value::Null)));
        if !unchanged {
            let diff = catalog_drift(reviewed, pages, 40);
            let summary: Vec<String> = diff.iter().take(5).map(super::diff::words).collect();
            return Err(Refusal {
                diff,
                ..refuse(
                    Rule::CatalogDrift,
                    format!(
                        "the catalog is pinned whole and the live one differs from the reviewed one (`{name}` itself is unchanged): {}",
                        if summary.is_empty() {
                            "the pages differ".to_string()
                        } else {
                            summary.join("; ")
                        }
                    ),
                )
            });
        }
    }
    Ok(())
}

/// 2026-07-28 (mcp-facts §3): every `tools/list` result carries `ttlMs` (≥ 0) and
/// `cacheScope` (`public` or `private`); a scope other than the capture's means the catalog
/// now depends (or no longer depends) on the authorization presented.
fn cache_fields(pinned: &Pinned, pages: &[Value], evidence: &mut Evidence) -> Result<(), Refusal> {
    let (ttl, scope) = snapshot::cache_fields(pages).map_err(|e| refuse(Rule::Listing, e))?;
    evidence.ttl_ms = Some(ttl);
    evidence.cache_scope = Some(scope.clone());
    let scope = Some(scope.as_str());
    let recorded = snapshot::pages(pinned.entry())
        .first()
        .and_then(|p| p.get("cacheScope"))
        .and_then(Value::as_str);
    if let (Some(r), Some(l)) = (recorded, scope)
        && r != l
    {
        return Err(Refusal {
            diff: vec![Change::at(
                "/toolPages/0/cacheScope",
                Some(json!(r)),
                Some(json!(l)),
            )],
            ..refuse(
                Rule::Authorization,
                format!(
                    "the catalog's cacheScope was {r} at capture and is {l} now: whether it varies by the authorization presented changed"
                ),
            )
        });
    }
    Ok(())
}

/// The machine-readable gate verdict (`toolcert mcp gate --json`).
pub fn verdict_json(opts: &GateOptions, result: &Result<&Passed, &Refused>) -> Value {
    let mut v = json!({
        "server": opts.server,
        "tool": opts.tool,
        "manifestSha256": opts.sha256,
    });
    match result {
        Ok(p) => {
            v["verdict"] = json!("pass");
            v["evidence"] = json!(p.evidence);
        }
        Err(r) => {
            v["verdict"] = json!("refused");
            v["rule"] = json!(r.refusal.rule.id());
            v["message"] = json!(r.refusal.message);
            v["diff"] = json!(r.refusal.diff);
            v["evidence"] = json!(r.evidence);
        }
    }
    if let Some(m) = opts.mutant {
        v["mutant"] = json!(m.name());
    }
    v
}

/// The refusal in words, with its diff (one line per change: the pointer, both values around
/// the changed region of a long string, and a note naming a normalization-only difference).
pub fn describe(r: &Refusal) -> String {
    let mut out = r.to_string();
    for c in &r.diff {
        if c.tool.is_some() {
            out.push_str(&format!("\n  {}", super::diff::words(c)));
            continue;
        }
        let (reviewed, live, note) = super::diff::show_change(c, 120);
        out.push_str(&format!(
            "\n  at {}: reviewed {reviewed}, live {live}",
            if c.pointer.is_empty() {
                "(document)"
            } else {
                &c.pointer
            },
        ));
        if let Some(n) = note {
            out.push_str(&format!(" ({n})"));
        }
    }
    out
}
