//! Scenario files: rows, gate, mutants killed, typed steps, and checks.
//!
//! A scenario drives the host with [`Step`]s that record observations into one JSON document,
//! then judges [`Check`]s over that document (drive, then judge). The shapes here mirror
//! `schemas/scenario.schema.json`; the schema gives the precise error first, serde second.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::matcher::{Condition, Matcher};

/// The tag of a scenario whose gate the reference host never meets: it exists to make a row
/// `blocked`, with its reason, on a host where the row cannot be witnessed (DISC-4 on a host that
/// advertises every family it could be probed on). The mutation matrix does not require the
/// clean reference host to pass it; its checks are positive controls only, so it cannot convict.
pub const ONLY_WHERE_UNWITNESSABLE: &str = "only-where-unwitnessable";

/// One scenario file.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Scenario {
    /// `$schema` reference (for editors).
    #[serde(rename = "$schema", default, skip_serializing)]
    pub schema: Option<String>,
    /// Stable id, `family.slug` style; also the test name in the console.
    pub id: String,
    /// One line saying what the scenario shows.
    pub title: String,
    /// The requirement rows it witnesses.
    pub rows: Vec<String>,
    /// Dotted capability path that must be advertised for the scenario to apply.
    pub gate: Option<String>,
    /// Reference-host mutants this scenario must fail against.
    pub kills: Vec<String>,
    /// Wire majors the scenario's rows belong to (default: both); on another major it is
    /// `inapplicable`.
    #[serde(default)]
    pub wire: Vec<u8>,
    /// The model-provider wire format the scenario's runs use (`openai-chat` or
    /// `anthropic-messages`), exposed as `{{provider.wire}}`; a host whose profile says it does
    /// not speak it gets `inapplicable`.
    #[serde(default)]
    pub provider_wire: Option<String>,
    /// Tags: `serial` keeps the scenario out of parallel execution;
    /// `only-where-unwitnessable` marks a leg the reference host never runs
    /// ([`ONLY_WHERE_UNWITNESSABLE`]).
    #[serde(default)]
    pub tags: Vec<String>,
    /// The host surfaces the scenario needs beyond the OpenWOP API (ids from
    /// `scenarios/surfaces.json`): seams, toolcert's extension fields, fixtures, profile facts,
    /// `spawn`. The loader checks this against what the steps really use.
    #[serde(default)]
    pub surfaces: Vec<String>,
    /// Scenario variables (templated in order; `nonce` and `canary` are provided).
    #[serde(default)]
    pub vars: Map<String, Value>,
    /// What to do.
    pub steps: Vec<Step>,
    /// What must hold afterwards.
    pub checks: Vec<Check>,
    /// The file it came from (set by the loader).
    #[serde(skip)]
    pub file: String,
}

impl Check {
    /// Whether this check is a control that guards the checks of `row`.
    pub fn guards_row(&self, row: &str) -> bool {
        self.control
            && match &self.guards {
                None => self.row == row,
                Some(rows) => rows.iter().any(|g| g == row),
            }
    }
}

impl Scenario {
    /// Whether the scenario kills or restarts the host, and so needs a host process of its own.
    pub fn needs_spawned_host(&self) -> bool {
        self.steps.iter().any(|s| matches!(s, Step::Host(_)))
    }
}

/// A step kind. Each kind is implemented in its own file under `src/steps/`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "step", rename_all = "camelCase")]
pub enum Step {
    /// Register a tool receiver (toolcert's double that plays the tool and counts calls).
    Receiver(ReceiverSpec),
    /// Call a sample test seam of the host.
    Seam(SeamCall),
    /// Send one HTTP request to the host.
    Http(HttpCall),
    /// Read a run's events from the host's durable log.
    Events(EventsRead),
    /// Re-fetch discovery conditionally (`If-None-Match`) and record what came back.
    Discovery(DiscoveryProbe),
    /// Repeat a seam call until a condition holds (bounded).
    Repeat(RepeatSpec),
    /// Load a script into toolcert's mock model provider.
    Provider(ProviderScript),
    /// Make the same seam call `count` times in a row, `{{loop.index}}` counting from 0.
    Foreach(ForeachSpec),
    /// Send `count` identical requests to the host at the same instant.
    Burst(BurstSpec),
    /// Kill (SIGKILL) or restart the scenario's spawned host.
    Host(HostAction),
    /// Let a holding receiver answer the calls it holds.
    Release(ReleaseSpec),
    /// Wait (bounded) until a double has seen a number of requests.
    Wait(WaitSpec),
    /// Register an endpoint of toolcert's MCP server double with scripted answers.
    McpServer(McpServerSpec),
    /// Fire every effect-seam manifest row, fork each fired run, and count re-fires (RPL-11).
    FireEffectSeams(FireEffectSeamsSpec),
    /// List the host's tool catalog as a role, whichever shape the list has (CAT, DESC).
    Catalog(CatalogSpec),
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
}

/// `{"step": "fireEffectSeams"}`: fire each row of the host's effect-seam manifest (one receiver
/// per row), fork each fired run in replay mode, and count re-fires at the receivers and in the
/// fork's effect ledger.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FireEffectSeamsSpec {
    /// Name of the observation.
    pub name: String,
    /// The role that fires, forks and reads.
    pub role: String,
}

/// `{"step": "catalog"}`: `GET /tools` (with `query`) as `role`, the items read from a bare
/// array or from `{tools: [...]}`; with `probeHiddenFrom`, the first listed tool that role
/// does not list is fetched as that role (CAT-3).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CatalogSpec {
    /// Name of the observation.
    pub name: String,
    /// The role that lists.
    pub role: String,
    /// The query string after `?` (templated), e.g. `view=compact`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query: Option<String>,
    /// A second role, whose view of a tool it does not list is probed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub probe_hidden_from: Option<String>,
}

/// `{"step": "mcpServer"}`: an MCP server double endpoint and its scripted `tools/call`
/// answers, consumed in order.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct McpServerSpec {
    /// Name (observation at `/mcpServers/<name>`, URL at `{{mcpServers.<name>.url}}`).
    pub name: String,
    /// One answer per `tools/call`, in order; a call past the end gets a JSON-RPC error and
    /// is recorded as a problem.
    #[serde(default)]
    pub answers: Vec<McpAnswer>,
    /// The tools `tools/list` serves, verbatim (templated; e.g. a tool whose annotations
    /// lie about what it does, DESC-6).
    #[serde(default)]
    pub tools: Vec<Value>,
}

/// `{"step": "receiver"}`: a receiver endpoint and how it answers.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReceiverSpec {
    /// Name (observation at `/receivers/<name>`, URL at `{{receivers.<name>.url}}`).
    pub name: String,
    /// HTTP status the receiver answers with (default 200).
    #[serde(default = "default_status")]
    pub status: u16,
    /// JSON body it answers with (templated; default `{"ok": true}`).
    #[serde(default)]
    pub body: Option<Value>,
    /// Delay before answering, in milliseconds (bounded to 30 000; a "hang" is a long delay).
    #[serde(default)]
    pub delay_ms: u64,
    /// Answer the first `count` calls with `status` instead (a transient provider failure).
    #[serde(default)]
    pub fail_first: Option<FailFirst>,
    /// Hold every call open (its arrival recorded at once) until a `release` step, at most
    /// 30 s: the window in which a recovery scenario kills the host (TURN-D8).
    #[serde(default)]
    pub hold: bool,
    /// Apply `delayMs` to the first call only: a re-execution answers at once, so its
    /// measured duration differs from the recorded one (HOOKS-AUDIT-4).
    #[serde(default)]
    pub delay_first_only: bool,
    /// Add a `pad` string of this many bytes to the body (a number, or a template such as
    /// `{{facts.recordLimitBytes}}`): an answer over a host's record size limit (TURN-D10).
    #[serde(default)]
    pub pad_bytes: Option<Value>,
}

/// `{"step": "host"}`: what to do to the scenario's spawned host. A scenario with such a step
/// gets a host process of its own (see `toolcert run --spawn`); against a host toolcert did not
/// start, its rows are `blocked`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HostAction {
    /// Name of the observation (`/steps/<name>`).
    pub name: String,
    /// `kill` (SIGKILL, no goodbye) or `restart` (start it again on the same data directory).
    /// A `wait` step before a kill chooses the point.
    pub action: HostActionKind,
}

/// What a `host` step does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum HostActionKind {
    /// SIGKILL the process.
    Kill,
    /// Start it again on the same data directory and port.
    Restart,
}

/// A point in a run, seen at toolcert's doubles: a receiver or a provider script has seen at
/// least `count` requests.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct KillPoint {
    /// A receiver's name.
    #[serde(default)]
    pub receiver: Option<String>,
    /// A provider script's name.
    #[serde(default)]
    pub provider: Option<String>,
    /// Requests seen.
    pub count: usize,
    /// The run whose tool loop makes those requests (a template, e.g.
    /// `{{steps.run.runId}}`): once it is terminal the point will never come, so the wait
    /// ends then instead of waiting out its budget. Leave it out for a double fed after a run
    /// ends (a webhook receiver, a sweeper's redispatch).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<String>,
}

/// `{"step": "wait"}`: wait until a point in the run is reached (bounded; unmet ⇒ `blocked`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WaitSpec {
    /// Name of the observation (`/steps/<name>`).
    pub name: String,
    /// The point.
    pub until: KillPoint,
}

/// `{"step": "release"}`: a holding receiver answers what it holds.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReleaseSpec {
    /// Name of the observation (`/steps/<name>`).
    pub name: String,
    /// The receiver.
    pub receiver: String,
}

/// `failFirst` of a receiver.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FailFirst {
    /// How many calls fail.
    pub count: u32,
    /// The status they get.
    pub status: u16,
}

fn default_status() -> u16 {
    200
}

/// `{"step": "seam"}`: a call to `/conformance/seams/sample/<seam>` (v1: `/v1/host/sample/<seam>`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SeamCall {
    /// Name of the observation (`/steps/<name>`).
    pub name: String,
    /// Seam path below the sample prefix, e.g. `toolhooks/invoke`.
    pub seam: String,
    /// Role whose bearer token authenticates the call.
    pub role: String,
    /// `POST` (the default) or `GET`, for a seam that reads (RFC 0034's
    /// `GET …/test/otel/spans?runId=`).
    #[serde(default, skip_serializing_if = "SeamMethod::is_post")]
    pub method: SeamMethod,
    /// Request body (templated); for a `GET`, its members are sent as the query instead.
    pub body: Value,
}

/// How a seam is called.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum SeamMethod {
    /// A JSON body (every seam that acts).
    #[default]
    Post,
    /// The body's members as query parameters (a seam that reads).
    Get,
}

impl SeamMethod {
    /// Whether this is the default, `POST`.
    pub fn is_post(&self) -> bool {
        *self == SeamMethod::Post
    }
}

/// `{"step": "http"}`: one request to the host.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HttpCall {
    /// Name of the observation.
    pub name: String,
    /// HTTP method.
    pub method: String,
    /// API path (templated); v1 hosts get the `/v1` prefix unless `raw` is set.
    pub path: String,
    /// Send the path as written, without the wire-major prefix.
    #[serde(default)]
    pub raw: bool,
    /// Role whose token is sent; none sends no `Authorization`.
    #[serde(default)]
    pub role: Option<String>,
    /// Extra headers (templated values).
    #[serde(default)]
    pub headers: Map<String, Value>,
    /// JSON body (templated).
    #[serde(default)]
    pub body: Option<Value>,
    /// Drop the connection before the answer, as soon as a double has seen this many
    /// requests (MCP-14: a client that goes away while the host still owes the answer). The
    /// step then records an abandon observation instead of the answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub abandon: Option<AbandonPoint>,
}

/// When an `http` step drops its request: a receiver or a provider script has seen at least
/// `count` requests (so the host is demonstrably working on it).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AbandonPoint {
    /// A receiver's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub receiver: Option<String>,
    /// A provider script's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// Requests seen.
    pub count: usize,
}

/// `{"step": "events"}`: read a run's events (debug stream mode) until the run is terminal.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EventsRead {
    /// Name of the observation.
    pub name: String,
    /// Run id (templated, usually `{{steps.<seam step>.runId}}`).
    pub run: String,
    /// Role whose token reads the log.
    pub role: String,
}

/// `{"step": "discovery"}`: conditional re-fetch of the discovery document.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DiscoveryProbe {
    /// Name of the observation.
    pub name: String,
}

/// `{"step": "provider"}`: the model rounds the mock provider answers, in order, for the
/// model key `tc-<nonce>-<name>` (exposed as `{{providers.<name>.model}}`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ProviderScript {
    /// Name (observation at `/providers/<name>`).
    pub name: String,
    /// The rounds (mock-provider script format; templated).
    pub rounds: Vec<Value>,
}

/// `{"step": "foreach"}`: a seam call made `count` times (observation `items`, in order).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ForeachSpec {
    /// Name of the observation.
    pub name: String,
    /// How many calls (1..=200).
    pub count: u32,
    /// The call; `{{loop.index}}` is its 0-based index (its `name` is ignored).
    pub call: SeamCall,
}

/// `{"step": "burst"}`: `count` identical requests sent concurrently (observation `items`,
/// `statuses`), for races on the host's side such as concurrent Idempotency-Key duplicates.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BurstSpec {
    /// Name of the observation.
    pub name: String,
    /// How many requests (2..=64).
    pub count: u32,
    /// The request (its `name` is ignored).
    pub request: HttpCall,
}

/// `{"step": "repeat"}`: call a seam up to `max` times until `until` holds for one answer.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RepeatSpec {
    /// Name of the observation (`first`, `last`, `iterations`, `statuses`, `okCount`).
    pub name: String,
    /// Upper bound on calls (at most 200).
    pub max: u32,
    /// Stop when this holds for an answer (pointer relative to that answer's observation).
    pub until: Condition,
    /// The call to repeat (its `name` is ignored).
    pub call: SeamCall,
}

/// One check: an expectation at a JSON pointer into the scenario's observations.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Check {
    /// Unique within the scenario.
    pub id: String,
    /// The row it witnesses (must be one of the scenario's rows).
    pub row: String,
    /// What it asserts, in words (printed on failure).
    pub says: String,
    /// JSON pointer into the observation document.
    pub at: String,
    /// The expectation.
    pub expect: Matcher,
    /// A positive control: when it fails the row is `blocked` (the double was not reached,
    /// so zero-against-zero proves nothing), and checks that `require` it are `blocked` too.
    #[serde(default)]
    pub control: bool,
    /// Checks (ids) that must pass for this one to be judged; otherwise it is `blocked`.
    #[serde(default)]
    pub requires: Vec<String>,
    /// For a control: the rows of the scenario whose checks it guards (a check is `blocked`,
    /// never `fail`, while a control guarding its row has not held). Absent: its own row.
    /// A control whose failure says nothing about some check of its own row (a setup only
    /// some legs need) lists the rows it does guard; those other checks then `require` it.
    /// An empty list guards no row: only the checks that `require` the control wait on it
    /// (a double reached through a fixture the host may map to one that reaches none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guards: Option<Vec<String>>,
    /// What the check observes; inferred from its pointers when absent (a toolcert double ⇒
    /// `double`, anything else ⇒ `wire`). A seam's account of what happened elsewhere must say
    /// `self-report`: it can prove a violation, never compliance.
    #[serde(default)]
    pub evidence: Option<Evidence>,
    /// Wire majors the check applies to (default: those of its row); on another major it is
    /// `inapplicable`, so a v1 rule and its v2 twin can sit side by side.
    #[serde(default)]
    pub wire: Vec<u8>,
    /// The wire document's stance (e.g. `C-21`) under which this check's failure reads as
    /// `warn` unless the run is `--strict`.
    #[serde(default)]
    pub warn_unless_strict: Option<String>,
}

/// One scripted answer to a `tools/call`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct McpAnswer {
    /// A complete result with one text block.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// `structuredContent` of a complete result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
    /// `isError` of a complete result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub is_error: Option<bool>,
    /// `_meta` of a complete result (e.g. a peer claiming scopes it cannot grant, TRUST-5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Value>,
    /// An MRTR `input_required` result: `{inputRequests, requestState?}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_required: Option<Value>,
    /// A JSON-RPC error `{code, message}` instead of a result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rpc_error: Option<Value>,
}

/// What a check observes, strongest first. A row passes at the strongest level its
/// observations reached; a self-report can prove a violation and never compliance.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Evidence {
    /// A seam's account of what happened elsewhere (`delivered: 1`, a ledger saying "no
    /// re-fire"): the host's word about itself.
    SelfReport,
    /// The host's answer to toolcert's own request, judged by toolcert (a recomputed
    /// argsHash, a 409 code, a replay header, an event in its durable log).
    Wire,
    /// Counted at a double toolcert owns (receiver, mock provider, MCP server).
    Double,
}

impl Evidence {
    /// The name used in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Evidence::SelfReport => "self-report",
            Evidence::Wire => "wire",
            Evidence::Double => "double",
        }
    }
}

impl std::fmt::Display for Evidence {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Evidence {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "double" => Ok(Evidence::Double),
            "wire" => Ok(Evidence::Wire),
            "self-report" => Ok(Evidence::SelfReport),
            other => Err(format!(
                "unknown evidence level {other:?}; expected double, wire or self-report"
            )),
        }
    }
}
