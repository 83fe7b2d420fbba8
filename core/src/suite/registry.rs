//! The requirement registry (`scenarios/requirements.json`): the rows toolcert judges.

use serde::{Deserialize, Serialize};

/// RFC 2119 level of a row: a failed MUST is `fail`, a failed SHOULD is `warn`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Level {
    /// Mandatory.
    #[serde(rename = "MUST")]
    Must,
    /// Recommended.
    #[serde(rename = "SHOULD")]
    Should,
}

/// The normative basis of a row: accepted text binds hosts; a draft is only reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Basis {
    /// Accepted spec or RFC text (the row's `source` names it): the row is scored.
    Accepted,
    /// A draft (an RFC upstream has not accepted): the row is *tentative*, measured and shown
    /// in every output, but never denies certification unless the run asks for it
    /// (`--include-tentative`). Promoting the row when its RFC is accepted is this one field.
    Draft,
}

impl Basis {
    /// The name used in the registry and the reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Basis::Accepted => "accepted",
            Basis::Draft => "draft",
        }
    }
}

/// A certification profile: the unit a host is certified in, one per tool-related family
/// (in the spirit of the v2 bundle's `claimedProfiles[]`, conformance.md §Bundle v3). A host
/// claims a profile by advertising what gates its rows; its verdict is certified or not, the
/// evidence tier it reached and its witness count.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Profile {
    /// Stable id (`tool-hooks`, `idempotency-l1`, …).
    pub id: String,
    /// Human title.
    pub title: String,
    /// The families whose rows make up the profile (each family is in exactly one profile).
    pub families: Vec<String>,
    /// What a host advertises to claim it, in words (the rows' gates decide; this is shown).
    pub claimed_by: String,
}

/// A family of rows (DISC, HOOKS-AUTH, …) and the capability that makes it applicable.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Family {
    /// Family id, the row-id prefix.
    pub id: String,
    /// Human title.
    pub title: String,
    /// Dotted capability path that gates the family, or `None` when always applicable.
    pub gate: Option<String>,
}

/// One requirement row.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Row {
    /// Stable id, kept from the wire document so reports compare across hosts and versions.
    pub id: String,
    /// Family id.
    pub family: String,
    /// Source seed / RFC section.
    pub source: String,
    /// Whether `source` is accepted text or a draft (draft rows are tentative).
    pub basis: Basis,
    /// MUST or SHOULD.
    pub level: Level,
    /// The rule, in toolcert's words.
    pub rule: String,
    /// How a black-box harness witnesses it.
    pub witness: String,
    /// Upstream suite requirement ids for the same rule, where they exist.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub suite_ids: Vec<String>,
    /// Why no black-box observation can witness the row, when that is so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unwitnessable: Option<String>,
    /// The wire document's stance (e.g. `C-12`) under which a failure of this MUST row reads
    /// as `warn` unless the run is `--strict`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warn_unless_strict: Option<String>,
    /// Wire majors the rule belongs to (default: both). On another major its checks are
    /// `inapplicable`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub wire: Vec<u8>,
    /// Why the row's checks need no positive control (e.g. they read only the captured
    /// discovery document). Without it, every scenario must guard the row with a control.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_control: Option<String>,
}

impl Row {
    /// Whether the row comes from a draft, so it is measured and shown but not scored unless
    /// the run includes tentative rows.
    pub fn tentative(&self) -> bool {
        self.basis == Basis::Draft
    }

    /// Whether the rule applies on a wire major.
    pub fn applies_on(&self, major: u8) -> bool {
        self.wire.is_empty() || self.wire.contains(&major)
    }
}

/// The registry file.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Registry {
    /// `$schema` reference (for editors).
    #[serde(rename = "$schema", default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<String>,
    /// Registry format version.
    pub registry_version: u32,
    /// Families, in report order.
    pub families: Vec<Family>,
    /// Certification profiles, in report order; every family belongs to exactly one.
    pub profiles: Vec<Profile>,
    /// Rows, in report order.
    pub rows: Vec<Row>,
}

impl Registry {
    /// The row with this id.
    pub fn row(&self, id: &str) -> Option<&Row> {
        self.rows.iter().find(|r| r.id == id)
    }

    /// The family with this id.
    pub fn family(&self, id: &str) -> Option<&Family> {
        self.families.iter().find(|f| f.id == id)
    }

    /// The profile a family belongs to.
    pub fn profile_of(&self, family: &str) -> Option<&Profile> {
        self.profiles
            .iter()
            .find(|p| p.families.iter().any(|f| f == family))
    }
}
