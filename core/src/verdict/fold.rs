//! Folding check outcomes into one disposition per requirement row.
//!
//! Each scenario that judges a row is one *leg* of it. A leg is as good as its worst check.
//! The row is the worst of its legs, with one allowance: a leg of a scenario that witnesses at
//! a toolcert double or needs one of toolcert's extensions, and could not be witnessed on this
//! host (`blocked`: the host ignores a toolcert extension, a fixture is not seeded, the double
//! was never reached) does not hold the row back when the row's other legs held; the row then
//! passes at the evidence level those legs reached. When every leg of a row is such a leg, the
//! row is `blocked` and names the extensions it needs ([`RowVerdict::needs`]): the upstream
//! contract gives no way to witness it on this host, which is reported and does not deny
//! certification (see [`super::certify`]). A row whose only observations are the host's own
//! account passes at the `self-report` evidence level, named as such; a self-report can prove
//! a violation but never outweighs a contradicting observation, and nothing measured never
//! reads as pass.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::outcome::{CheckOutcome, CheckStatus, Disposition};
use crate::suite::Evidence;
use crate::suite::{Level, Registry, Suite};

/// The verdict on one requirement row.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RowVerdict {
    /// The row id (stable across suite versions).
    pub requirement_id: String,
    /// The row's family.
    pub family: String,
    /// MUST or SHOULD.
    pub level: Level,
    /// The folded disposition.
    pub disposition: Disposition,
    /// For `pass` and `warn`: the strongest evidence the row's observations reached.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence: Option<Evidence>,
    /// For a `blocked` row every leg of which needs a toolcert extension (or a double) this
    /// host does not offer: the extension surfaces those legs declare (`scenarios/surfaces.json`
    /// ids). Such a row cannot be witnessed through the upstream contract on this host.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub needs: Vec<String>,
    /// The scenario whose outcome decided the disposition.
    pub scenario_id: String,
    /// Every scenario that contributed checks to this row.
    pub scenarios: Vec<String>,
    /// Why: the deciding check's detail (for a pass, what could not be witnessed, if anything).
    pub detail: String,
    /// How many checks were actually observed (pass or fail); blocked and errored checks do
    /// not count. A pass always has at least one.
    pub assertions: u32,
    /// Under `--repeat K` (K > 1): trials the row was judged in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trials: Option<u32>,
    /// Under `--repeat K`: trials in which the row passed (`passes`/`trials` is its pass rate).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub passes: Option<u32>,
    /// Under `--repeat K`: pass^k, whether the row passed in every trial.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pass_k: Option<bool>,
}

/// How to fold.
#[derive(Debug, Clone, Copy, Default)]
pub struct FoldOptions {
    /// `--strict`: failures of `warnUnlessStrict` rows and checks are `fail`.
    pub strict: bool,
}

/// One scenario's outcomes for one row, whether the scenario witnesses at a double, and the
/// extension surfaces it declares.
struct LegOutcomes<'a> {
    scenario: String,
    double: bool,
    extensions: Vec<String>,
    outcomes: Vec<&'a CheckOutcome>,
}

/// One scenario's contribution to one row.
struct Leg {
    scenario: String,
    /// The extension surfaces the leg's scenario declares.
    extensions: Vec<String>,
    disposition: Disposition,
    detail: String,
    /// Strongest evidence among the leg's passed checks.
    passed_at: Option<Evidence>,
    /// Strongest evidence among the leg's observed (passed or failed) checks.
    judged_at: Option<Evidence>,
    /// Whether the leg's scenario witnesses at a toolcert double (a receiver, the mock
    /// provider, the MCP server) or needs one of toolcert's extensions: a leg of toolcert's
    /// own setup, which a host that lacks it cannot be held to.
    observes_double: bool,
    /// Whether every judged check of the leg is a self-report.
    only_self_report: bool,
}

impl Leg {
    /// A leg whose double could not be reached on this host, or that could only ever have
    /// proved a violation: it does not hold back a row whose other legs held.
    fn excusable(&self) -> bool {
        self.disposition == Disposition::Blocked && (self.observes_double || self.only_self_report)
    }
}

/// Fold the outcomes of scenarios (`(scenario id, outcomes)`) into row verdicts, one per row
/// that received at least one outcome, in registry order.
pub fn fold_rows<'a>(
    suite: &Suite,
    opts: FoldOptions,
    results: impl IntoIterator<Item = (&'a str, &'a [CheckOutcome])>,
) -> Vec<RowVerdict> {
    // row ⇒ scenario ⇒ outcomes, in the order they came.
    let mut by_row: BTreeMap<String, Vec<LegOutcomes<'a>>> = BTreeMap::new();
    let registry = &suite.registry;
    for (scenario, outcomes) in results {
        // A leg of toolcert's own setup: it witnesses at a double, or it needs one of
        // toolcert's extensions (a seam, a seam member, a fixture of its own).
        let extensions: Vec<String> = suite
            .scenario(scenario)
            .map(|s| {
                s.surfaces
                    .iter()
                    .filter(|id| {
                        suite
                            .surfaces
                            .get(id)
                            .is_some_and(|x| x.kind.is_extension())
                    })
                    .cloned()
                    .collect()
            })
            .unwrap_or_default();
        let double =
            !extensions.is_empty() || outcomes.iter().any(|o| o.evidence == Evidence::Double);
        for outcome in outcomes {
            let legs = by_row.entry(outcome.row.clone()).or_default();
            match legs.iter_mut().find(|l| l.scenario == scenario) {
                Some(l) => l.outcomes.push(outcome),
                None => legs.push(LegOutcomes {
                    scenario: scenario.to_string(),
                    double,
                    extensions: extensions.clone(),
                    outcomes: vec![outcome],
                }),
            }
        }
    }
    registry
        .rows
        .iter()
        .filter_map(|row| {
            let legs = by_row.remove(&row.id)?;
            Some(fold_row(
                registry,
                opts,
                &row.id,
                &row.family,
                row.level,
                &legs,
            ))
        })
        .collect()
}

fn leg_of(registry: &Registry, opts: FoldOptions, leg: &LegOutcomes<'_>) -> Option<Leg> {
    let (scenario, outcomes) = (leg.scenario.as_str(), &leg.outcomes);
    let judged: Vec<&&CheckOutcome> = outcomes
        .iter()
        .filter(|o| o.status != CheckStatus::Inapplicable)
        .collect();
    let first = outcomes.first()?;
    if judged.is_empty() {
        return Some(Leg {
            scenario: scenario.to_string(),
            extensions: leg.extensions.clone(),
            disposition: Disposition::Inapplicable,
            detail: format!("{}: {}", first.check_id, first.detail),
            passed_at: None,
            judged_at: None,
            observes_double: false,
            only_self_report: false,
        });
    }
    let mut disposition = Disposition::Pass;
    let mut detail = String::new();
    for o in &judged {
        let d = o.disposition(registry, opts.strict);
        if d.severity() > disposition.severity() {
            disposition = d;
            detail = format!("{}: {}", o.check_id, o.detail);
        }
    }
    // Controls prove the setup, not the rule: the evidence a leg reached is that of the
    // checks that judge the rule.
    let judging: Vec<&&&CheckOutcome> = judged.iter().filter(|o| !o.control).collect();
    Some(Leg {
        scenario: scenario.to_string(),
        extensions: leg.extensions.clone(),
        disposition,
        detail,
        passed_at: judging
            .iter()
            .filter(|o| o.status == CheckStatus::Pass)
            .map(|o| o.evidence)
            .max(),
        judged_at: judging
            .iter()
            .filter(|o| matches!(o.status, CheckStatus::Pass | CheckStatus::Fail))
            .map(|o| o.evidence)
            .max(),
        observes_double: leg.double,
        only_self_report: !judging.is_empty()
            && judging.iter().all(|o| o.evidence == Evidence::SelfReport),
    })
}

fn fold_row(
    registry: &Registry,
    opts: FoldOptions,
    id: &str,
    family: &str,
    level: Level,
    legs: &[LegOutcomes<'_>],
) -> RowVerdict {
    // Observations of the rule itself; a control proves only the setup.
    let assertions = legs
        .iter()
        .flat_map(|l| l.outcomes.iter())
        .filter(|o| !o.control && matches!(o.status, CheckStatus::Pass | CheckStatus::Fail))
        .count() as u32;
    let scenarios: Vec<String> = legs.iter().map(|l| l.scenario.clone()).collect();
    let all: Vec<Leg> = legs
        .iter()
        .filter_map(|l| leg_of(registry, opts, l))
        .collect();
    let verdict = |disposition: Disposition, leg: &str, detail: String| RowVerdict {
        requirement_id: id.to_string(),
        family: family.to_string(),
        level,
        disposition,
        evidence: None,
        needs: Vec::new(),
        scenario_id: leg.to_string(),
        scenarios: scenarios.clone(),
        detail,
        assertions,
        trials: None,
        passes: None,
        pass_k: None,
    };
    let live: Vec<&Leg> = all
        .iter()
        .filter(|l| l.disposition != Disposition::Inapplicable)
        .collect();
    let Some(first_live) = live.first() else {
        let leg = all.first();
        return verdict(
            Disposition::Inapplicable,
            leg.map_or("", |l| l.scenario.as_str()),
            leg.map(|l| l.detail.clone()).unwrap_or_default(),
        );
    };
    let (excused, remaining): (Vec<&Leg>, Vec<&Leg>) = live.iter().partition(|l| l.excusable());
    let Some(worst) = remaining.iter().copied().reduce(|a, b| {
        if b.disposition.severity() > a.disposition.severity() {
            b
        } else {
            a
        }
    }) else {
        // Every leg needs a surface this host does not offer: name the extensions they need.
        // A leg that needs none was blocked on the upstream contract: that is the reason shown.
        let shown = excused
            .iter()
            .find(|l| l.extensions.is_empty())
            .copied()
            .unwrap_or(first_live);
        let mut v = verdict(Disposition::Blocked, &shown.scenario, shown.detail.clone());
        // Only when each leg needs an extension: a leg excused for another reason (a lone
        // self-report, a double the host was to reach through an upstream surface) leaves the
        // row blocked on the upstream contract.
        if excused.iter().all(|l| !l.extensions.is_empty()) {
            let mut needs: Vec<String> = excused
                .iter()
                .flat_map(|l| l.extensions.iter().cloned())
                .collect();
            needs.sort();
            needs.dedup();
            v.needs = needs;
        }
        return v;
    };
    if worst.disposition == Disposition::Warn {
        // A failed SHOULD (or a relaxed MUST) is a finding whatever else held.
        let mut v = verdict(Disposition::Warn, &worst.scenario, worst.detail.clone());
        v.evidence = remaining.iter().filter_map(|l| l.judged_at).max();
        return v;
    }
    if worst.disposition != Disposition::Pass {
        return verdict(worst.disposition, &worst.scenario, worst.detail.clone());
    }
    let reached = remaining.iter().filter_map(|l| l.passed_at).max();
    let blocked = |why: String| verdict(Disposition::Blocked, &worst.scenario, why);
    let Some(evidence) = reached else {
        return blocked("no check of this row was observed".into());
    };
    if assertions == 0 {
        return blocked("no check of this row was observed".into());
    }
    let tier = if evidence == Evidence::SelfReport {
        "held on the host's own account only (self-report tier: it acquits at that tier and no higher)"
            .to_string()
    } else {
        format!("held at {evidence} evidence")
    };
    let detail = match excused.first() {
        Some(leg) => format!(
            "{tier}; not witnessable on this host: {}: {}",
            leg.scenario, leg.detail
        ),
        None if evidence == Evidence::SelfReport => tier,
        None => String::new(),
    };
    let mut v = verdict(Disposition::Pass, &worst.scenario, detail);
    v.evidence = Some(evidence);
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suite::Suite;

    fn outcome(row: &str, status: CheckStatus) -> CheckOutcome {
        outcome_at(row, status, Evidence::Wire)
    }

    fn outcome_at(row: &str, status: CheckStatus, evidence: Evidence) -> CheckOutcome {
        CheckOutcome {
            check_id: format!("c-{row}"),
            row: row.to_string(),
            says: "x".into(),
            status,
            detail: "why".into(),
            evidence,
            control: false,
            warn_unless_strict: None,
        }
    }

    fn fold(results: &[(&str, &[CheckOutcome])]) -> Vec<RowVerdict> {
        let suite = Suite::embedded().unwrap();
        fold_rows(
            &suite,
            FoldOptions::default(),
            results.iter().map(|(s, o)| (*s, *o)),
        )
    }

    #[test]
    fn worst_outcome_wins_and_inapplicable_yields_to_observations() {
        let a = [outcome("HOOKS-AUTH-1", CheckStatus::Pass)];
        let b = [outcome("HOOKS-AUTH-1", CheckStatus::Blocked)];
        let c = [outcome("HOOKS-AUTH-1", CheckStatus::Inapplicable)];
        let rows = fold(&[("a", &a[..]), ("b", &b[..]), ("c", &c[..])]);
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].disposition, Disposition::Blocked);
        assert_eq!(rows[0].scenario_id, "b");
        assert_eq!(rows[0].assertions, 1);
    }

    #[test]
    fn should_rows_warn_and_unobserved_pass_is_impossible() {
        let a = [outcome("HOOKS-AUDIT-5", CheckStatus::Fail)];
        let rows = fold(&[("a", &a[..])]);
        assert_eq!(rows[0].disposition, Disposition::Warn);
        let only_inapplicable = [outcome("HOOKS-RL-1", CheckStatus::Inapplicable)];
        let rows = fold(&[("a", &only_inapplicable[..])]);
        assert_eq!(rows[0].disposition, Disposition::Inapplicable);
        assert_eq!(rows[0].assertions, 0);
    }

    #[test]
    fn a_stance_row_warns_unless_strict() {
        let suite = Suite::embedded().unwrap();
        let a = [outcome("HOOKS-FAIL-7", CheckStatus::Fail)];
        let rows = fold_rows(&suite, FoldOptions::default(), [("a", &a[..])]);
        assert_eq!(rows[0].level, Level::Must);
        assert_eq!(rows[0].disposition, Disposition::Warn);
        let strict = FoldOptions { strict: true };
        let rows = fold_rows(&suite, strict, [("a", &a[..])]);
        assert_eq!(rows[0].disposition, Disposition::Fail);
        // An ordinary MUST row fails either way.
        let b = [outcome("HOOKS-AUTH-1", CheckStatus::Fail)];
        let rows = fold_rows(&suite, FoldOptions::default(), [("b", &b[..])]);
        assert_eq!(rows[0].disposition, Disposition::Fail);
        // A check-level stance relaxes one check of an ordinary row.
        let mut c = outcome("HOOKS-AUTH-1", CheckStatus::Fail);
        c.warn_unless_strict = Some("C-21".into());
        let c = [c];
        let rows = fold_rows(&suite, FoldOptions::default(), [("c", &c[..])]);
        assert_eq!(rows[0].disposition, Disposition::Warn);
        let rows = fold_rows(&suite, strict, [("c", &c[..])]);
        assert_eq!(rows[0].disposition, Disposition::Fail);
    }

    #[test]
    fn a_row_passes_at_the_strongest_level_it_reached() {
        let both = [
            outcome_at("HOOKS-AUTH-1", CheckStatus::Pass, Evidence::Double),
            outcome_at("HOOKS-AUTH-1", CheckStatus::Pass, Evidence::Wire),
        ];
        let rows = fold(&[("receiver", &both[..])]);
        assert_eq!(rows[0].disposition, Disposition::Pass);
        assert_eq!(rows[0].evidence, Some(Evidence::Double));
        assert!(rows[0].detail.is_empty());
    }

    #[test]
    fn an_unwitnessable_double_leg_leaves_the_row_passing_at_wire() {
        let double_leg = [
            outcome_at("HOOKS-AUTH-1", CheckStatus::Blocked, Evidence::Double),
            outcome_at("HOOKS-AUTH-1", CheckStatus::Blocked, Evidence::Wire),
        ];
        let wire_leg = [outcome_at(
            "HOOKS-AUTH-1",
            CheckStatus::Pass,
            Evidence::Wire,
        )];
        let rows = fold(&[("receiver", &double_leg[..]), ("upstream", &wire_leg[..])]);
        assert_eq!(rows[0].disposition, Disposition::Pass);
        assert_eq!(rows[0].evidence, Some(Evidence::Wire));
        assert!(rows[0].detail.contains("receiver"), "{}", rows[0].detail);
        // A blocked wire leg is no excuse: something the row needs was not observed.
        let blocked_wire = [outcome_at(
            "HOOKS-AUTH-1",
            CheckStatus::Blocked,
            Evidence::Wire,
        )];
        let rows = fold(&[("a", &blocked_wire[..]), ("upstream", &wire_leg[..])]);
        assert_eq!(rows[0].disposition, Disposition::Blocked);
        // A failing leg fails the row whatever else held.
        let failing = [outcome_at(
            "HOOKS-AUTH-1",
            CheckStatus::Fail,
            Evidence::Wire,
        )];
        let rows = fold(&[("receiver", &double_leg[..]), ("b", &failing[..])]);
        assert_eq!(rows[0].disposition, Disposition::Fail);
    }

    #[test]
    fn a_row_only_extensions_witness_is_blocked_naming_them() {
        // Both scenarios declare toolcert extension surfaces (scenarios/surfaces.json).
        let suite = Suite::embedded().unwrap();
        let declares = |id: &str| {
            suite
                .scenario(id)
                .unwrap()
                .surfaces
                .iter()
                .any(|s| suite.surfaces.get(s).is_some_and(|x| x.kind.is_extension()))
        };
        assert!(declares("hooks.content-free-audit"));
        assert!(!declares("hooks.content-free-audit-upstream"));
        let blocked = [outcome_at(
            "HOOKS-AUDIT-1",
            CheckStatus::Blocked,
            Evidence::Double,
        )];
        let rows = fold(&[("hooks.content-free-audit", &blocked[..])]);
        assert_eq!(rows[0].disposition, Disposition::Blocked);
        assert!(
            rows[0].needs.iter().all(|n| n.starts_with("field:")
                || n.starts_with("seam:")
                || n.starts_with("fixture:")),
            "{:?}",
            rows[0].needs
        );
        assert!(!rows[0].needs.is_empty());
        // An upstream leg blocked beside it: the row is blocked on the upstream contract.
        let upstream = [outcome_at(
            "HOOKS-AUDIT-1",
            CheckStatus::Blocked,
            Evidence::Wire,
        )];
        let rows = fold(&[
            ("hooks.content-free-audit", &blocked[..]),
            ("hooks.content-free-audit-upstream", &upstream[..]),
        ]);
        assert_eq!(rows[0].disposition, Disposition::Blocked);
        assert!(rows[0].needs.is_empty(), "{:?}", rows[0].needs);
    }

    #[test]
    fn self_reports_acquit_only_at_their_tier_and_can_fail_a_row() {
        let only_self = [outcome_at("EFF-4", CheckStatus::Pass, Evidence::SelfReport)];
        let rows = fold(&[("seam", &only_self[..])]);
        assert_eq!(rows[0].disposition, Disposition::Pass);
        assert_eq!(rows[0].evidence, Some(Evidence::SelfReport));
        assert!(rows[0].detail.contains("self-report"), "{}", rows[0].detail);
        let violation = [outcome_at("EFF-4", CheckStatus::Fail, Evidence::SelfReport)];
        let rows = fold(&[("seam", &violation[..])]);
        assert_eq!(rows[0].disposition, Disposition::Fail);
        // A self-report beside a double that held: the row passes at double.
        let mixed = [
            outcome_at("EFF-4", CheckStatus::Pass, Evidence::SelfReport),
            outcome_at("EFF-4", CheckStatus::Pass, Evidence::Double),
        ];
        let rows = fold(&[("seam", &mixed[..])]);
        assert_eq!(rows[0].evidence, Some(Evidence::Double));
    }
}
