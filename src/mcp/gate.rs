//! The pre-call freshness and drift gate (mcp-facts §4.4, §4.5), rule by rule and in the
//! seed's order:
//!
//! 1. hash the manifest and compare with the pinned digest, before any connection;
//! 2. refuse an expired snapshot, or one whose capture or review data is incomplete or whose
//!    review fails the assertions (§4.6, re-checked on every call) or is dated outside the
//!    snapshot's window (before `capturedAt`, or at or after `expiresAt`: `4.3.6 reviewedAt`);
//! 3. initialize at the recorded revision (with the recorded client capabilities, since a
//!    catalog may depend on them) and compare the complete `serverInfo` canonically;
//! 4. exhaust the live pagination and find the selected name exactly once;
//! 5. compare the complete live Tool object with the reviewed one by their RFC 8785 bytes.
//!
//! `notifications/tools/list_changed` (§4.5): any one seen on the gate's connection before
//! the comparison refuses, whether or not the server declared `tools.listChanged` (§4.5.6;
//! an undeclared one is also reported). A ping after the last page is a barrier, so a
//! notification the server sent before answering it is always seen. Re-listing never revives
//! a review (§4.5.2). server-everything sends one right after `initialized` as a side effect
//! of registering its tools (mcp-facts §5.3.4), so under the default [`ListChangedPolicy::Strict`]
//! every gate against it refuses: that is the correct strict outcome, and the default stays
//! strict because §4.5.1 reads "invalidated immediately" and the facts ask for any relaxation
//! to be explicit and recorded.
//!
//! The explicit relaxation [`ListChangedPolicy::Settle`] waits for no quiet window. Right
//! after `initialized` it makes one causal barrier ([`Client::startup_barrier`]: a `ping`
//! round trip; stdio keeps order, so everything the server emitted while handling
//! `initialized` has been read when the answer arrives) and ignores, but counts in the
//! verdict's evidence (`ignoredInSettleWindow`), the `list_changed` seen up to then. That is
//! sound, not just lenient: each of those was read before the first `tools/list` request was
//! sent, so the server emitted it before it received that request, and the listing then
//! compared already reflects whatever it announced; it cannot describe a list the gate has not
//! read. Any `list_changed` read after the first `tools/list` was sent still refuses, however
//! soon it comes (a server that announces on a timer is refused in both modes). Measured on
//! server-everything 2026.8.31 over stdio: its start-up notifications (one with empty client
//! capabilities; five with the roots, sampling, elicitation and tasks capabilities tried)
//! all arrived before the ping's answer in 300 of 300 runs, whether `initialized` and `ping`
//! came in one write or two, and none came later; its source writes them from the
//! `initialized` handler, before the ping is handled. Over Streamable HTTP a notification on
//! the GET stream has no order relative to the POST that answers the ping: it may be counted
//! after the listing began and refuse (fail closed).
//!
//! Every refusal is a [`Refusal`]: the [`Rule`], a message, and a minimal diff (JSON pointer,
//! reviewed value, live value). [`Mutant`]s weaken one rule each; they exist only so tests
//! can show each weakening is caught.

use std::path::Path;

use serde::Serialize;
use serde_json::{Value, json};
use time::OffsetDateTime;

use super::client::{Client, ClientError, Timeouts};
use super::diff::{Change, json_diff};
use super::transport::{Endpoint, Limits, TransportError};
use super::{review, snapshot, time as mcp_time};
use crate::canonical::jcs_bytes;

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
}

impl Rule {
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
}

fn refuse(rule: Rule, message: impl Into<String>) -> Refusal {
    Refusal {
        rule,
        message: message.into(),
        diff: Vec::new(),
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, clap::ValueEnum)]
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
}

impl Mutant {
    /// Every mutant.
    pub const ALL: [Mutant; 6] = [
        Mutant::FirstPageOnly,
        Mutant::NameAndSchemaOnly,
        Mutant::ServerInfoIgnored,
        Mutant::ExpiryIgnored,
        Mutant::RevivedByRelist,
        Mutant::DuplicatesTolerated,
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
        }
    }
}

/// How a `list_changed` before the comparison is treated (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum ListChangedPolicy {
    /// Any `list_changed` on the gate's connection refuses.
    #[default]
    Strict,
    /// `list_changed` read before the first `tools/list` is sent (up to a `ping` barrier
    /// right after `initialized`) are counted as evidence and ignored; later ones refuse.
    Settle,
}

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
            mutant: None,
            timeouts: Timeouts::default(),
            limits: Limits::default(),
            max_pages: super::client::MAX_PAGES,
        }
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
    /// Server → client requests answered on the connection.
    pub server_requests: Vec<String>,
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
    /// Settle (if any), every page, the barrier, the comparison.
    pub listing_compare: u64,
}

fn micros(since: std::time::Instant) -> u64 {
    u64::try_from(since.elapsed().as_micros()).unwrap_or(u64::MAX)
}

/// A passed gate: the open connection (the call must use it, so a later `list_changed` is
/// seen), the reviewed Tool and review, and the `list_changed` count at the comparison.
#[derive(Debug)]
pub struct Passed {
    /// The connection the comparison ran on.
    pub client: Client,
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
    let mut evidence = Evidence::default();
    let started = std::time::Instant::now();
    let offline = offline_checks(manifest, opts).map_err(|refusal| Refused {
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
    let result = online_checks(&mut client, &offline, opts, &mut evidence, started).await;
    evidence.server_requests = client
        .server_requests()
        .iter()
        .map(|r| r.method.clone())
        .collect();
    match result {
        Ok(mark) => Ok(Passed {
            client,
            tool: offline.tool,
            review: offline.review,
            list_changed_mark: mark,
            evidence,
        }),
        Err(refusal) => {
            client.close().await;
            Err(Refused { refusal, evidence })
        }
    }
}

/// What the offline rules established.
#[derive(Debug, Clone, PartialEq)]
struct Offline {
    version: String,
    server_info: Value,
    client_capabilities: Value,
    tool: Value,
    review: Value,
}

/// Rules 1 and 2: nothing here touches the network or spawns anything.
fn offline_checks(manifest: &Path, opts: &GateOptions) -> Result<Offline, Refusal> {
    let pinned = &opts.sha256;
    if pinned.len() != 64
        || !pinned
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    {
        return Err(refuse(
            Rule::Digest,
            format!("the pinned digest `{pinned}` is not 64 lowercase hex characters"),
        ));
    }
    let loaded =
        snapshot::read_strict(manifest).map_err(|e| refuse(Rule::Digest, e.to_string()))?;
    if &loaded.sha256 != pinned {
        return Err(Refusal {
            rule: Rule::Digest,
            message: format!(
                "{} hashes to {}, not the pinned {pinned}: the snapshot changed since it was pinned",
                manifest.display(),
                loaded.sha256
            ),
            diff: vec![Change {
                pointer: String::new(),
                reviewed: Some(json!(pinned)),
                live: Some(json!(loaded.sha256)),
            }],
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
    let now = opts.now.unwrap_or_else(mcp_time::now);
    if expires < captured {
        return Err(refuse(Rule::Incomplete, "expiresAt is before capturedAt"));
    }
    if now >= expires && opts.mutant != Some(Mutant::ExpiryIgnored) {
        return Err(refuse(
            Rule::Expired,
            format!(
                "the snapshot expired at {} (now {}): capture and review again",
                mcp_time::format(expires),
                mcp_time::format(now)
            ),
        ));
    }
    let server = snapshot::server(&doc, &opts.server)
        .map_err(|e| refuse(Rule::Incomplete, e.to_string()))?;
    let found = snapshot::tools_named(server, &opts.tool);
    let tool = match found.as_slice() {
        [(_, t)] => (*t).clone(),
        [] => {
            return Err(refuse(
                Rule::Incomplete,
                format!(
                    "the snapshot has no tool `{}` in server `{}`",
                    opts.tool, opts.server
                ),
            ));
        }
        _ => {
            return Err(refuse(
                Rule::Incomplete,
                format!(
                    "the snapshot lists `{}` {} times: a selected name occurs exactly once (4.3.4)",
                    opts.tool,
                    found.len()
                ),
            ));
        }
    };
    let review = server
        .get("reviews")
        .and_then(|r| r.get(&opts.tool))
        .cloned()
        .ok_or_else(|| {
            refuse(
                Rule::Incomplete,
                format!(
                    "`{}` has no review in the snapshot (toolcert mcp review)",
                    opts.tool
                ),
            )
        })?;
    review::check(&review, &tool).map_err(|e| refuse(Rule::Review, e.to_string()))?;
    review::check_window(&review, captured, expires)
        .map_err(|e| refuse(Rule::Review, e.to_string()))?;
    Ok(Offline {
        version: doc["protocolVersion"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
        server_info: server["serverInfo"].clone(),
        client_capabilities: server["clientCapabilities"].clone(),
        tool,
        review,
    })
}

/// Rules 3 to 5 on an open connection; the `list_changed` mark on success.
async fn online_checks(
    client: &mut Client,
    offline: &Offline,
    opts: &GateOptions,
    evidence: &mut Evidence,
    started: std::time::Instant,
) -> Result<u64, Refusal> {
    let init = client
        .initialize(&offline.version, &offline.client_capabilities)
        .await
        .map_err(|e| match e {
            ClientError::Version { .. } => Refusal {
                rule: Rule::Version,
                message: e.to_string(),
                diff: match &e {
                    ClientError::Version { asked, got } => vec![Change {
                        pointer: "/protocolVersion".into(),
                        reviewed: Some(json!(asked)),
                        live: Some(json!(got)),
                    }],
                    _ => vec![],
                },
            },
            e => client_refusal(Rule::Connect, e),
        })?;
    evidence.timings_us.connect_initialize = micros(started);
    evidence.server_stream = client.has_server_stream();
    let started = std::time::Instant::now();
    if opts.mutant != Some(Mutant::ServerInfoIgnored)
        && jcs_bytes(&init.server_info) != jcs_bytes(&offline.server_info)
    {
        let diff = json_diff(&offline.server_info, &init.server_info, 20)
            .into_iter()
            .map(|c| Change {
                pointer: format!("/serverInfo{}", c.pointer),
                ..c
            })
            .collect();
        return Err(Refusal {
            rule: Rule::ServerInfo,
            message: "the live serverInfo differs from the recorded one".into(),
            diff,
        });
    }
    let mut mark = 0;
    if opts.policy == ListChangedPolicy::Settle {
        // The causal start-up barrier (one ping), not a quiet window: what it lets through
        // was read before the first tools/list is sent (see `Client::startup_barrier`).
        let ignored = client
            .startup_barrier()
            .await
            .map_err(|e| client_refusal(Rule::Connect, e))?;
        evidence.ignored_in_settle_window = ignored;
        mark = client.list_changed_seq();
    }
    let list_err = |e: ClientError| client_refusal(Rule::Listing, e);
    let first_only = opts.mutant == Some(Mutant::FirstPageOnly);
    let mut listing = client
        .list_tools(opts.max_pages, first_only)
        .await
        .map_err(list_err)?;
    evidence.live_pages = listing.pages.len();
    client.barrier().await.map_err(list_err)?;
    if client.list_changed_seq() > mark {
        if !init.declares_list_changed() {
            evidence.undeclared_list_changed = true;
        }
        if opts.mutant == Some(Mutant::RevivedByRelist) {
            listing = client
                .list_tools(opts.max_pages, false)
                .await
                .map_err(list_err)?;
            mark = client.list_changed_seq();
        } else {
            return Err(refuse(
                Rule::ListChanged,
                format!(
                    "the server sent notifications/tools/list_changed on the gate's connection{}: the review is invalidated; a new capture and review are required (re-listing does not revive it)",
                    if init.declares_list_changed() {
                        ""
                    } else {
                        " (without declaring tools.listChanged)"
                    }
                ),
            ));
        }
    }
    evidence.live_pages = listing.pages.len();
    let live: Vec<(usize, &Value)> = listing
        .pages
        .iter()
        .enumerate()
        .flat_map(|(p, page)| {
            page.get("tools")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(move |t| (p, t))
        })
        .filter(|(_, t)| t.get("name").and_then(Value::as_str) == Some(opts.tool.as_str()))
        .collect();
    let live_tool = match live.as_slice() {
        [] => {
            return Err(Refusal {
                rule: Rule::Missing,
                message: format!(
                    "the live catalog ({} pages) has no tool `{}`",
                    listing.pages.len(),
                    opts.tool
                ),
                diff: vec![Change {
                    pointer: format!("/tools[name={}]", opts.tool),
                    reviewed: Some(offline.tool.clone()),
                    live: None,
                }],
            });
        }
        [(_, t)] => *t,
        [(_, t), ..] if opts.mutant == Some(Mutant::DuplicatesTolerated) => *t,
        many => {
            let pages: Vec<String> = many.iter().map(|(p, _)| p.to_string()).collect();
            return Err(refuse(
                Rule::Duplicate,
                format!(
                    "the live catalog lists `{}` {} times (on pages {}): the name must occur exactly once",
                    opts.tool,
                    many.len(),
                    pages.join(", ")
                ),
            ));
        }
    };
    let (reviewed_cmp, live_cmp) = if opts.mutant == Some(Mutant::NameAndSchemaOnly) {
        let pick = |t: &Value| json!({"name": t.get("name"), "inputSchema": t.get("inputSchema")});
        (pick(&offline.tool), pick(live_tool))
    } else {
        (offline.tool.clone(), live_tool.clone())
    };
    if jcs_bytes(&reviewed_cmp) != jcs_bytes(&live_cmp) {
        return Err(Refusal {
            rule: Rule::Drift,
            message: format!(
                "the live Tool object `{}` differs from the reviewed one",
                opts.tool
            ),
            diff: json_diff(&offline.tool, live_tool, 20),
        });
    }
    evidence.timings_us.listing_compare = micros(started);
    Ok(mark)
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

/// The refusal in words, with its diff (one line per pointer).
pub fn describe(r: &Refusal) -> String {
    let mut out = r.to_string();
    for c in &r.diff {
        out.push_str(&format!(
            "\n  at {}: reviewed {}, live {}",
            if c.pointer.is_empty() {
                "(document)"
            } else {
                &c.pointer
            },
            super::diff::show(&c.reviewed, 120),
            super::diff::show(&c.live, 120)
        ));
    }
    out
}
