//! Folding check outcomes into one disposition per requirement row.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{CheckOutcome, CheckStatus, Disposition};
use crate::suite::{Level, Registry};

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
    /// The scenario whose outcome decided the disposition.
    pub scenario_id: String,
    /// Every scenario that contributed checks to this row.
    pub scenarios: Vec<String>,
    /// Why: the deciding check's detail (empty for a pass).
    pub detail: String,
    /// How many checks were actually observed (pass or fail); blocked and errored checks do
    /// not count. A pass always has at least one.
    pub assertions: u32,
}

/// Fold the outcomes of scenarios (`(scenario id, outcomes)`) into row verdicts, one per row
/// that received at least one outcome, in registry order. `strict` turns the failures of
/// `warnUnlessStrict` rows into `fail` (see [`CheckOutcome::disposition`]).
pub fn fold_rows<'a>(
    registry: &Registry,
    strict: bool,
    results: impl IntoIterator<Item = (&'a str, &'a [CheckOutcome])>,
) -> Vec<RowVerdict> {
    struct Acc {
        disposition: Option<Disposition>,
        scenario: String,
        detail: String,
        scenarios: Vec<String>,
        assertions: u32,
    }
    let mut acc: BTreeMap<String, Acc> = BTreeMap::new();
    for (scenario, outcomes) in results {
        for outcome in outcomes {
            let disposition = outcome.disposition(registry, strict);
            let entry = acc.entry(outcome.row.clone()).or_insert_with(|| Acc {
                disposition: None,
                scenario: scenario.to_string(),
                detail: String::new(),
                scenarios: Vec::new(),
                assertions: 0,
            });
            if !entry.scenarios.iter().any(|s| s == scenario) {
                entry.scenarios.push(scenario.to_string());
            }
            if matches!(outcome.status, CheckStatus::Pass | CheckStatus::Fail) {
                entry.assertions += 1;
            }
            let worse = match entry.disposition {
                None => true,
                Some(current) => disposition.severity() > current.severity(),
            };
            if worse {
                entry.disposition = Some(disposition);
                entry.scenario = scenario.to_string();
                entry.detail = if disposition == Disposition::Pass {
                    String::new()
                } else {
                    format!("{}: {}", outcome.check_id, outcome.detail)
                };
            }
        }
    }
    registry
        .rows
        .iter()
        .filter_map(|row| {
            let a = acc.remove(&row.id)?;
            let mut disposition = a.disposition.unwrap_or(Disposition::Error);
            let mut detail = a.detail;
            // Nothing measured never reads as pass.
            if disposition == Disposition::Pass && a.assertions == 0 {
                disposition = Disposition::Error;
                detail = "no check of this row was observed".to_string();
            }
            Some(RowVerdict {
                requirement_id: row.id.clone(),
                family: row.family.clone(),
                level: row.level,
                disposition,
                scenario_id: a.scenario,
                scenarios: a.scenarios,
                detail,
                assertions: a.assertions,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suite::Suite;

    fn outcome(row: &str, status: CheckStatus) -> CheckOutcome {
        CheckOutcome {
            check_id: format!("c-{row}"),
            row: row.to_string(),
            says: "x".into(),
            status,
            detail: "why".into(),
        }
    }

    #[test]
    fn worst_outcome_wins_and_inapplicable_yields_to_observations() {
        let suite = Suite::embedded().unwrap();
        let a = [outcome("HOOKS-AUTH-1", CheckStatus::Pass)];
        let b = [outcome("HOOKS-AUTH-1", CheckStatus::Blocked)];
        let c = [outcome("HOOKS-AUTH-1", CheckStatus::Inapplicable)];
        let rows = fold_rows(
            &suite.registry,
            false,
            [("a", &a[..]), ("b", &b[..]), ("c", &c[..])],
        );
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].disposition, Disposition::Blocked);
        assert_eq!(rows[0].scenario_id, "b");
        assert_eq!(rows[0].assertions, 1);
    }

    #[test]
    fn should_rows_warn_and_unobserved_pass_is_impossible() {
        let suite = Suite::embedded().unwrap();
        let a = [outcome("HOOKS-AUDIT-5", CheckStatus::Fail)];
        let rows = fold_rows(&suite.registry, false, [("a", &a[..])]);
        assert_eq!(rows[0].disposition, Disposition::Warn);
        let only_inapplicable = [outcome("HOOKS-RL-1", CheckStatus::Inapplicable)];
        let rows = fold_rows(&suite.registry, false, [("a", &only_inapplicable[..])]);
        assert_eq!(rows[0].disposition, Disposition::Inapplicable);
        assert_eq!(rows[0].assertions, 0);
    }

    #[test]
    fn a_stance_row_warns_unless_strict() {
        let suite = Suite::embedded().unwrap();
        let a = [outcome("HOOKS-FAIL-7", CheckStatus::Fail)];
        let rows = fold_rows(&suite.registry, false, [("a", &a[..])]);
        assert_eq!(rows[0].level, Level::Must);
        assert_eq!(rows[0].disposition, Disposition::Warn);
        let rows = fold_rows(&suite.registry, true, [("a", &a[..])]);
        assert_eq!(rows[0].disposition, Disposition::Fail);
        // An ordinary MUST row fails either way.
        let b = [outcome("HOOKS-AUTH-1", CheckStatus::Fail)];
        let rows = fold_rows(&suite.registry, false, [("b", &b[..])]);
        assert_eq!(rows[0].disposition, Disposition::Fail);
    }
}
