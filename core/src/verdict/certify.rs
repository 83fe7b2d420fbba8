//! Certification: the one verdict of a run, computed once from its row verdicts, and read by
//! the console, every report, the bundle and the exit status.
//!
//! The unit of certification is a *profile* (`scenarios/requirements.json` `profiles`): one
//! per tool-related family, in the spirit of the v2 certification bundle's
//! `claimedProfiles[]` (conformance.md §Bundle v3). A host claims a profile by advertising
//! what gates its rows, so a profile is claimed when some row of it is applicable here. A
//! claimed profile is certified when no row of it denies, at least one of its rows was
//! measured, and the weakest evidence its rows passed at (its *tier*: `double` > `wire` >
//! `self-report`) is at least the tier the run requires (`--require-evidence`). A run is
//! certified when it claimed at least one profile and every claimed profile is certified.
//!
//! How each judged row stands ([`Standing`]):
//!
//! - a row of a draft ([`crate::suite::Basis::Draft`]) is *tentative*: measured and shown, never
//!   denying, unless the run includes tentative rows;
//! - a `blocked` row that only toolcert's extensions could witness on this host
//!   ([`RowVerdict::needs`]) is reported with what it needs and never denies: the upstream
//!   contract gives no way to observe it here;
//! - a row some of whose scenarios did not run (a filter, or another `--partition` shard) is
//!   *incomplete*: only a verdict no other leg could soften (`fail`, `error`, `flaky`, and
//!   under `--strict` `warn`) denies; the rest is left to the whole run or `toolcert merge`;
//! - every other row is scored: a MUST row (any row under `--strict`) that is `fail`,
//!   `blocked`, `error` or `flaky` denies, so does a pass below the required tier, and under
//!   `--strict` so do `warn` and an `inapplicable` row of a claimed profile.
//!
//! A run that did not cover the whole suite never says "certified": it is *partial*, names how
//! many rows it judged of how many, and exits 0 only when no judged row denies. With an
//! expectation baseline (`--expect`), the exit status is the baseline gate's verdict.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::fold::RowVerdict;
use super::outcome::Disposition;
use crate::partition::Partition;
use crate::suite::Evidence;
use crate::suite::{Level, Suite};

/// What a run asks of a certification.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CertifyOptions {
    /// `--strict`: `warn` rows and `inapplicable` rows of a claimed profile deny too.
    pub strict: bool,
    /// `--require-evidence`: the weakest tier a profile may certify at (default: `self-report`,
    /// named as such in every output).
    pub require_evidence: Evidence,
    /// `--include-tentative`: rows from drafts are scored like accepted ones.
    pub include_tentative: bool,
}

impl Default for CertifyOptions {
    fn default() -> Self {
        CertifyOptions {
            strict: false,
            require_evidence: Evidence::SelfReport,
            include_tentative: false,
        }
    }
}

/// Which scenarios a run selected, and how.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Selection {
    /// Scenario filters given (`toolcert run FILTER…`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub filters: Vec<String>,
    /// `--skip` filters.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skip: Vec<String>,
    /// `--exact`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub exact: bool,
    /// `--partition K/N`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partition: Option<Partition>,
    /// Scenarios that ran.
    pub scenarios_run: usize,
    /// Scenarios in the suite.
    pub scenarios_total: usize,
    /// Rows judged.
    pub rows_judged: usize,
    /// Rows the whole suite judges (rows some scenario covers).
    pub rows_total: usize,
}

impl Selection {
    /// Whether some scenario of the suite did not run.
    pub fn partial(&self) -> bool {
        self.scenarios_run < self.scenarios_total
    }

    /// How the selection was made, in words (`filter "idem", shard 2/3`).
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if !self.filters.is_empty() {
            parts.push(format!(
                "filter{} {}{}",
                if self.filters.len() > 1 { "s" } else { "" },
                quoted(&self.filters),
                if self.exact { " (exact)" } else { "" }
            ));
        }
        if !self.skip.is_empty() {
            parts.push(format!("--skip {}", quoted(&self.skip)));
        }
        if let Some(p) = self.partition {
            parts.push(format!("shard {p}"));
        }
        parts.join(", ")
    }
}

fn quoted(list: &[String]) -> String {
    list.iter()
        .map(|f| format!("{f:?}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// How a judged row counts for certification.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Standing {
    /// Scored: its disposition decides.
    Scored,
    /// From a draft: measured and shown, not scored.
    Tentative,
    /// Only toolcert's extensions could witness it on this host: reported, not scored.
    NeedsExtension,
    /// Some of its scenarios did not run here: only a verdict no other leg could soften counts.
    Incomplete,
}

/// One judged row's place in the certification.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RowStanding {
    /// The row.
    pub row: String,
    /// How it counts.
    pub standing: Standing,
    /// Whether it denies certification.
    pub denies: bool,
    /// Why it denies (or, for a pass below the required tier, that it does), else empty.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub why: String,
}

/// One profile's verdict.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProfileVerdict {
    /// The profile id.
    pub id: String,
    /// Its title.
    pub title: String,
    /// Whether the host claims it (some row of it applies here).
    pub claimed: bool,
    /// Whether all its rows come from drafts (then it never decides the run).
    pub tentative: bool,
    /// Whether every row of it that applies here could be witnessed only through toolcert's
    /// extensions, which the host does not offer: nothing of it can be measured through the
    /// upstream contract, so it is reported and does not decide the run.
    pub extension_only: bool,
    /// Whether it is certified (never for an unclaimed or tentative profile).
    pub certified: bool,
    /// The weakest evidence its scored rows passed at, when any passed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tier: Option<Evidence>,
    /// Scored rows measured on at least one observation.
    pub witnesses: u32,
    /// Judged rows per disposition.
    pub counts: BTreeMap<String, usize>,
    /// Rows only toolcert's extensions could witness here.
    pub needs_extension: u32,
    /// Rows that deny certification.
    pub denying: u32,
    /// Why it is not certified (empty when it is, or when it is not claimed).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
}

impl ProfileVerdict {
    /// Whether the profile decides the run: claimed, scored, and measurable here.
    pub fn decides(&self) -> bool {
        self.claimed && !self.tentative && !self.extension_only
    }
}

/// The run's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// Every claimed profile is certified at the required tier.
    Certified,
    /// Some claimed profile is not, or nothing was measured.
    NotCertified,
    /// The run covered part of the suite: it certifies nothing.
    Partial,
}

/// The certification of a run: one computation every output reads.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Certification {
    /// The verdict.
    pub verdict: Verdict,
    /// The verdict in one line, as every output prints it.
    pub headline: String,
    /// The exit status of the run: 0 certified, or partial with no denying row, or the
    /// baseline gate passed; 1 otherwise; 130 or 143 when a signal interrupted it.
    pub exit_code: u8,
    /// What was asked.
    pub options: CertifyOptions,
    /// What ran.
    pub selection: Selection,
    /// Every profile, in registry order.
    pub profiles: Vec<ProfileVerdict>,
    /// Every judged row's standing, in registry order.
    pub rows: Vec<RowStanding>,
    /// The baseline gate (`--expect`), when one was given: it decides the exit status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gate: Option<bool>,
    /// Why the run could not judge the host at all (discovery failed), when so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<String>,
    /// The signal that interrupted the run, when one did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interrupted: Option<String>,
}

impl Certification {
    /// Certify `rows`, judged by the scenarios `ran` of `suite`.
    pub fn compute(
        suite: &Suite,
        rows: &[RowVerdict],
        ran: &BTreeSet<&str>,
        options: CertifyOptions,
        mut selection: Selection,
    ) -> Certification {
        selection.scenarios_run = ran.len();
        selection.scenarios_total = suite.scenarios.len();
        selection.rows_judged = rows.len();
        selection.rows_total = suite
            .registry
            .rows
            .iter()
            .filter(|r| suite.scenarios.iter().any(|s| s.rows.contains(&r.id)))
            .count();
        let claimed_profiles: BTreeSet<&str> = suite
            .registry
            .profiles
            .iter()
            .filter(|p| {
                rows.iter().any(|r| {
                    p.families.contains(&r.family) && r.disposition != Disposition::Inapplicable
                })
            })
            .map(|p| p.id.as_str())
            .collect();
        let standings: Vec<RowStanding> = rows
            .iter()
            .map(|r| {
                let claimed = suite
                    .registry
                    .profile_of(&r.family)
                    .is_some_and(|p| claimed_profiles.contains(p.id.as_str()));
                standing_of(suite, r, ran, options, claimed)
            })
            .collect();
        let profiles: Vec<ProfileVerdict> = suite
            .registry
            .profiles
            .iter()
            .map(|p| {
                let of: Vec<(&RowVerdict, &RowStanding)> = rows
                    .iter()
                    .zip(&standings)
                    .filter(|(r, _)| p.families.contains(&r.family))
                    .collect();
                let tentative = !options.include_tentative
                    && suite
                        .registry
                        .rows
                        .iter()
                        .filter(|r| p.families.contains(&r.family))
                        .all(|r| r.tentative());
                profile_verdict(
                    p,
                    &of,
                    claimed_profiles.contains(p.id.as_str()),
                    tentative,
                    options,
                )
            })
            .collect();
        let mut profiles = profiles;
        if selection.partial() {
            // A partial run certifies no profile either: each says only whether a row it
            // judged denies.
            for p in &mut profiles {
                p.certified = false;
            }
        }
        let denied: Vec<&RowStanding> = standings.iter().filter(|s| s.denies).collect();
        let deciding: Vec<&ProfileVerdict> = profiles.iter().filter(|p| p.decides()).collect();
        let (verdict, headline) = if selection.partial() {
            let how = selection.describe();
            let head = format!(
                "partial: {} of {} rows judged ({} of {} scenarios{}); a partial run certifies nothing",
                selection.rows_judged,
                selection.rows_total,
                selection.scenarios_run,
                selection.scenarios_total,
                if how.is_empty() {
                    String::new()
                } else {
                    format!(", {how}")
                }
            );
            let tail = if denied.is_empty() {
                "no judged row denies".to_string()
            } else {
                format!("{} denying: {}", count(denied.len(), "row"), ids(&denied))
            };
            (Verdict::Partial, format!("{head}; {tail}"))
        } else if deciding.is_empty() {
            (
                Verdict::NotCertified,
                "NOT CERTIFIED: nothing was measured (the host claims no profile toolcert scores)"
                    .to_string(),
            )
        } else if deciding.iter().all(|p| p.certified) {
            let tier = deciding
                .iter()
                .filter_map(|p| p.tier)
                .min()
                .unwrap_or(Evidence::SelfReport);
            (
                Verdict::Certified,
                format!(
                    "certified: {} ({}), at the {tier} tier or stronger",
                    count(deciding.len(), "profile"),
                    deciding
                        .iter()
                        .map(|p| p.id.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )
        } else {
            let failed: Vec<String> = deciding
                .iter()
                .filter(|p| !p.certified)
                .map(|p| format!("{} ({})", p.id, p.reason))
                .collect();
            (
                Verdict::NotCertified,
                format!("NOT CERTIFIED: {}", failed.join("; ")),
            )
        };
        let exit_code = match verdict {
            Verdict::Certified => 0,
            Verdict::Partial if denied.is_empty() => 0,
            _ => 1,
        };
        Certification {
            verdict,
            headline,
            exit_code,
            options,
            selection,
            profiles,
            rows: standings,
            gate: None,
            stopped: None,
            interrupted: None,
        }
    }

    /// The certification of a run that stopped before judging anything (discovery failed).
    pub fn stopped(
        suite: &Suite,
        why: &str,
        options: CertifyOptions,
        selection: Selection,
    ) -> Certification {
        let mut c = Certification::compute(suite, &[], &BTreeSet::new(), options, selection);
        c.verdict = Verdict::NotCertified;
        c.headline = format!("NOT CERTIFIED: the run stopped before any scenario: {why}");
        c.exit_code = 1;
        c.stopped = Some(why.to_string());
        c
    }

    /// A run a signal interrupted: what it measured is reported, it certifies nothing, and it
    /// exits 128 + the signal's number (130 for SIGINT, 143 for SIGTERM), whatever a baseline
    /// says of the rows it reached.
    pub fn interrupted(mut self, signal: &str) -> Certification {
        self.verdict = Verdict::Partial;
        self.headline = format!(
            "partial: interrupted by {signal} after {} of {} rows were judged; an interrupted run certifies nothing",
            self.selection.rows_judged, self.selection.rows_total
        );
        self.exit_code = if signal == "SIGTERM" { 143 } else { 130 };
        self.interrupted = Some(signal.to_string());
        self
    }

    /// Record the baseline gate's verdict: with `--expect` it is the exit status.
    pub fn with_gate(mut self, gate_passed: bool) -> Certification {
        self.gate = Some(gate_passed);
        if self.interrupted.is_none() {
            self.exit_code = u8::from(!gate_passed);
        }
        self
    }

    /// Whether the run is certified (never for a partial run).
    pub fn certified(&self) -> bool {
        self.verdict == Verdict::Certified
    }

    /// The standing of `row`, when it was judged.
    pub fn standing(&self, row: &str) -> Option<&RowStanding> {
        self.rows.iter().find(|s| s.row == row)
    }

    /// Rows a `--partition` shard or a filtered run leaves to the whole run (incomplete and
    /// not denying): the baseline gate does not judge them either.
    pub fn deferred(&self) -> BTreeSet<String> {
        self.rows
            .iter()
            .filter(|s| s.standing == Standing::Incomplete && !s.denies)
            .map(|s| s.row.clone())
            .collect()
    }

    /// The last line every output ends with: the gate's verdict when there is a baseline,
    /// the certification's otherwise (an interrupted run says so first).
    pub fn final_line(&self) -> String {
        if self.interrupted.is_some() {
            return self.headline.clone();
        }
        match self.gate {
            Some(true) => format!(
                "gate passed (the baseline accepts this run; {})",
                self.headline
            ),
            Some(false) => format!("gate FAILED ({})", self.headline),
            None => self.headline.clone(),
        }
    }
}

fn count(n: usize, what: &str) -> String {
    format!("{n} {what}{}", if n == 1 { "" } else { "s" })
}

fn ids(rows: &[&RowStanding]) -> String {
    const SHOWN: usize = 6;
    let mut list: Vec<&str> = rows.iter().take(SHOWN).map(|s| s.row.as_str()).collect();
    let more = rows.len().saturating_sub(SHOWN);
    if more > 0 {
        list.push("…");
    }
    let mut text = list.join(", ");
    if more > 0 {
        text.push_str(&format!(" ({more} more)"));
    }
    text
}

/// A verdict no leg that did not run could soften: the whole run would deny on it too.
fn definitive(d: Disposition, strict: bool) -> bool {
    matches!(
        d,
        Disposition::Fail | Disposition::Error | Disposition::Flaky
    ) || (strict && d == Disposition::Warn)
}

fn standing_of(
    suite: &Suite,
    r: &RowVerdict,
    ran: &BTreeSet<&str>,
    options: CertifyOptions,
    claimed: bool,
) -> RowStanding {
    let row = suite.registry.row(&r.requirement_id);
    let tentative = !options.include_tentative && row.is_some_and(|x| x.tentative());
    let complete = suite
        .scenarios
        .iter()
        .filter(|s| s.rows.contains(&r.requirement_id))
        .all(|s| ran.contains(s.id.as_str()));
    let binds = r.level == Level::Must || options.strict;
    let standing = if tentative {
        Standing::Tentative
    } else if r.disposition == Disposition::Blocked && !r.needs.is_empty() {
        Standing::NeedsExtension
    } else if !complete {
        Standing::Incomplete
    } else {
        Standing::Scored
    };
    let mut why = String::new();
    let denies = match standing {
        Standing::Tentative | Standing::NeedsExtension => false,
        Standing::Incomplete => binds && definitive(r.disposition, options.strict),
        Standing::Scored => match r.disposition {
            Disposition::Pass | Disposition::Warn
                if r.evidence.is_some_and(|e| e < options.require_evidence) =>
            {
                why = format!(
                    "passed at the {} tier; --require-evidence {} asks for more",
                    r.evidence.map_or("", |e| e.as_str()),
                    options.require_evidence
                );
                true
            }
            Disposition::Warn => binds && options.strict,
            Disposition::Inapplicable => options.strict && claimed,
            d => binds && d.denies(options.strict),
        },
    };
    if denies && why.is_empty() {
        why = format!("{}: {}", r.disposition, r.detail);
    }
    RowStanding {
        row: r.requirement_id.clone(),
        standing,
        denies,
        why,
    }
}

fn profile_verdict(
    p: &crate::suite::Profile,
    rows: &[(&RowVerdict, &RowStanding)],
    claimed: bool,
    tentative: bool,
    options: CertifyOptions,
) -> ProfileVerdict {
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for (r, _) in rows {
        *counts
            .entry(r.disposition.as_str().to_string())
            .or_default() += 1;
    }
    let scored = || {
        rows.iter()
            .filter(|(_, s)| matches!(s.standing, Standing::Scored | Standing::Incomplete))
    };
    let witnesses = scored().filter(|(r, _)| r.assertions > 0).count() as u32;
    let tier = scored()
        .filter(|(r, _)| matches!(r.disposition, Disposition::Pass | Disposition::Warn))
        .filter_map(|(r, _)| r.evidence)
        .min();
    let needs_extension = rows
        .iter()
        .filter(|(_, s)| s.standing == Standing::NeedsExtension)
        .count() as u32;
    let denying: Vec<&RowStanding> = rows
        .iter()
        .filter(|(_, s)| s.denies)
        .map(|(_, s)| *s)
        .collect();
    let applicable = rows
        .iter()
        .filter(|(r, _)| r.disposition != Disposition::Inapplicable)
        .count() as u32;
    let extension_only = claimed && !tentative && applicable > 0 && applicable == needs_extension;
    let reason = if !claimed {
        String::new()
    } else if tentative {
        "tentative: its rows come from a draft; not scored (--include-tentative scores it)".into()
    } else if extension_only {
        format!(
            "not measurable through the upstream contract here: its {} applicable row{} need toolcert extensions",
            applicable,
            if applicable == 1 { "" } else { "s" }
        )
    } else if !denying.is_empty() {
        format!("{} denying: {}", count(denying.len(), "row"), ids(&denying))
    } else if witnesses == 0 {
        "nothing measured".into()
    } else if tier.is_some_and(|t| t < options.require_evidence) {
        format!(
            "reached the {} tier; --require-evidence {} asks for more",
            tier.map_or("", |t| t.as_str()),
            options.require_evidence
        )
    } else {
        String::new()
    };
    let certified = claimed && !tentative && reason.is_empty();
    ProfileVerdict {
        id: p.id.clone(),
        title: p.title.clone(),
        claimed,
        tentative,
        extension_only,
        certified,
        tier,
        witnesses,
        counts,
        needs_extension,
        denying: denying.len() as u32,
        reason,
    }
}
