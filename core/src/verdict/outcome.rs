//! The terms of a verdict: a check's status and outcome, the evidence it rests on, and the
//! disposition of a row. Below the fold and the certification ([`super::fold`],
//! [`super::certify`]), which use them.

use serde::{Deserialize, Serialize};

use crate::suite::Evidence;

/// The disposition of one requirement row (see docs/guide/certification.md for the full definitions).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Disposition {
    /// Every check of the row was observed and held.
    Pass,
    /// A SHOULD-level check failed.
    Warn,
    /// The host does not advertise the capability that gates the row.
    Inapplicable,
    /// The host advertises the capability but the row could not be witnessed (seam missing,
    /// positive control never reached toolcert's double, role not configured).
    Blocked,
    /// Under `--repeat K`: the row passed in some trials and not in others (see
    /// [`crate::repeat`]). It never certifies, whatever its level's other trials were.
    Flaky,
    /// An observed answer contradicts a MUST-level rule.
    Fail,
    /// toolcert or the transport broke: no verdict on the host.
    Error,
}

impl Disposition {
    /// All dispositions, in report order.
    pub const ALL: [Disposition; 7] = [
        Disposition::Pass,
        Disposition::Warn,
        Disposition::Inapplicable,
        Disposition::Blocked,
        Disposition::Flaky,
        Disposition::Fail,
        Disposition::Error,
    ];

    /// The lowercase name used in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Disposition::Pass => "pass",
            Disposition::Warn => "warn",
            Disposition::Inapplicable => "inapplicable",
            Disposition::Blocked => "blocked",
            Disposition::Flaky => "flaky",
            Disposition::Fail => "fail",
            Disposition::Error => "error",
        }
    }

    /// Severity used by the fold: a worse outcome always wins.
    /// `inapplicable` ranks lowest so that any real observation outranks it. `flaky` (a
    /// violation observed in some trials, a pass in others) outranks `blocked` (nothing
    /// observed) and is milder than a `fail` seen in every trial.
    pub fn severity(self) -> u8 {
        match self {
            Disposition::Inapplicable => 0,
            Disposition::Pass => 1,
            Disposition::Warn => 2,
            Disposition::Blocked => 3,
            Disposition::Flaky => 4,
            Disposition::Fail => 5,
            Disposition::Error => 6,
        }
    }

    /// Whether this disposition makes a MUST row deny certification (exit status non-zero).
    /// Under `strict`, `warn` and `inapplicable` deny too; `flaky` always denies.
    pub fn denies(self, strict: bool) -> bool {
        match self {
            Disposition::Fail | Disposition::Blocked | Disposition::Error | Disposition::Flaky => {
                true
            }
            Disposition::Warn | Disposition::Inapplicable => strict,
            Disposition::Pass => false,
        }
    }
}

impl std::fmt::Display for Disposition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The outcome of one check inside one scenario, before folding into rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CheckStatus {
    /// The observation satisfied the expectation.
    Pass,
    /// The observation contradicted the expectation.
    Fail,
    /// The observation could not be made for a reason on the host's side of the line that is
    /// not a wrong answer (seam not wired, positive control failed, role not configured).
    Blocked,
    /// toolcert or the transport broke.
    Error,
    /// The scenario's gate is not advertised by the host.
    Inapplicable,
}

impl CheckStatus {
    /// The status as reports and the console write it (its serde name).
    pub fn as_str(self) -> &'static str {
        match self {
            CheckStatus::Pass => "pass",
            CheckStatus::Fail => "fail",
            CheckStatus::Blocked => "blocked",
            CheckStatus::Error => "error",
            CheckStatus::Inapplicable => "inapplicable",
        }
    }
}

impl CheckOutcome {
    /// The disposition this outcome contributes to its row: a failed SHOULD is `warn`, and so
    /// is a failed MUST whose row is `warnUnlessStrict` (a stance of the wire document, e.g.
    /// C-12) unless the run is `strict`.
    pub fn disposition(&self, registry: &crate::suite::Registry, strict: bool) -> Disposition {
        let row = registry.row(&self.row);
        let level = row.map_or(crate::suite::Level::Must, |r| r.level);
        let relaxed = !strict
            && (self.warn_unless_strict.is_some()
                || row.is_some_and(|r| r.warn_unless_strict.is_some()));
        match (self.status, level) {
            (CheckStatus::Pass, _) => Disposition::Pass,
            (CheckStatus::Fail, crate::suite::Level::Must) if relaxed => Disposition::Warn,
            (CheckStatus::Fail, crate::suite::Level::Must) => Disposition::Fail,
            (CheckStatus::Fail, crate::suite::Level::Should) => Disposition::Warn,
            (CheckStatus::Blocked, _) => Disposition::Blocked,
            (CheckStatus::Error, _) => Disposition::Error,
            (CheckStatus::Inapplicable, _) => Disposition::Inapplicable,
        }
    }
}

/// One judged check: what was checked, for which row, and what was seen.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CheckOutcome {
    /// The check's id, unique within its scenario.
    pub check_id: String,
    /// The requirement row the check witnesses.
    pub row: String,
    /// What the check asserts, in words.
    pub says: String,
    /// The outcome.
    pub status: CheckStatus,
    /// Why, when not a pass: expected versus actual, or the blocking reason.
    pub detail: String,
    /// What the check observes.
    pub evidence: Evidence,
    /// Whether the check is a positive control.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub control: bool,
    /// The stance under which this check's failure reads as `warn` unless strict.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warn_unless_strict: Option<String>,
}
