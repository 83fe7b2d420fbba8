//! Scenario files: rows, gate, mutants killed, typed steps, and checks.
//!
//! A scenario drives the host with [`Step`]s that record observations into one JSON document,
//! then judges [`Check`]s over that document (drive, then judge). The shapes here mirror
//! `schemas/scenario.schema.json`; the schema gives the precise error first, serde second.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::matcher::Matcher;
use super::step::Step;

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
