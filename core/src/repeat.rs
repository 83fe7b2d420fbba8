//! pass^k (`toolcert run --repeat K`): every scenario runs K times, and a row passes only if it
//! passed in every trial.
//!
//! Trial `i` (1-based, like the flag) runs with its own seed, derived from the run seed and `i`
//! ([`trial_seed`]); trial 1 runs with the run seed itself, so `--repeat 1` is a plain run and
//! any trial can be rerun alone with `--seed` set to its seed. Each trial gets its own nonce,
//! canary, receiver ids, tool names and doubles' state (they all derive from the trial seed),
//! so trials of one scenario overlap without interfering.
//!
//! Rows are folded per trial first (exactly as a single run folds them), then across the
//! trials ([`across_trials`]):
//!
//! - every trial `pass` ⇒ `pass` (pass^k holds), at the weakest evidence any trial reached;
//! - some trials `pass`, others not (whatever they were: `warn`, `blocked`, `fail`, `error`)
//!   ⇒ `flaky`, which always denies certification: a row that holds only sometimes does not
//!   hold;
//! - no trial `pass` ⇒ the worst of the trials by [`Disposition::severity`] (`fail` and
//!   `blocked` fold to `fail`, anything and `error` to `error`), so a repeated run is never
//!   milder than its worst trial.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::suite::Suite;
use crate::verdict::{CheckOutcome, Disposition, FoldOptions, RowVerdict, fold_rows};

/// The most trials `--repeat` accepts: past it a run of the whole suite takes hours and its
/// report hundreds of megabytes, and a flaky row shows up far sooner.
pub const MAX_REPEAT: u32 = 64;

/// A `--repeat` value that cannot be used.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error(
    "--repeat {given:?}: {why}; expected a whole number of trials from 1 to {MAX_REPEAT}, e.g. --repeat 8"
)]
pub struct RepeatError {
    /// What was given.
    pub given: String,
    /// What is wrong with it.
    pub why: String,
}

/// Parse a `--repeat` value: a whole number from 1 to [`MAX_REPEAT`].
pub fn parse_repeat(s: &str) -> Result<u32, RepeatError> {
    let err = |why: &str| RepeatError {
        given: s.to_string(),
        why: why.to_string(),
    };
    let k: u64 = s.trim().parse().map_err(|_| err("not a whole number"))?;
    match u32::try_from(k) {
        Ok(0) => Err(err("0 trials run nothing")),
        Ok(k) if k <= MAX_REPEAT => Ok(k),
        _ => Err(err("too many trials")),
    }
}

/// Derived trial seeds keep to 53 bits: a report's digest is over RFC 8785 JSON, whose numbers
/// are IEEE doubles, so a larger integer would not survive canonicalization exactly.
const SEED_MASK: u64 = (1 << 53) - 1;

/// The seed of trial `trial` (1-based) of a run seeded `seed`: the run seed for trial 1, else
/// the low 53 bits of the first 64 of SHA-256 over the run seed and the trial number.
/// Deterministic, so a report's trial seeds can be recomputed from its seed.
pub fn trial_seed(seed: u64, trial: u32) -> u64 {
    if trial <= 1 {
        return seed;
    }
    let hex =
        toolcert_base::canonical::sha256_hex(format!("toolcert-trial\0{seed}\0{trial}").as_bytes());
    u64::from_str_radix(&hex[..16], 16).map_or(seed, |h| h & SEED_MASK)
}

/// The seeds of trials 1 to `trials`.
pub fn trial_seeds(seed: u64, trials: u32) -> Vec<u64> {
    (1..=trials.max(1)).map(|t| trial_seed(seed, t)).collect()
}

/// What a repeated run's report records (`repeat`): K and every trial's seed, in trial order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Repeat {
    /// K.
    pub trials: u32,
    /// The seed of trial i at index i - 1.
    pub seeds: Vec<u64>,
}

/// The disposition of something judged once per trial: `pass` only if every trial passed,
/// `flaky` if some did, else the worst trial (see the module docs). No trial at all is
/// `error`: nothing was judged.
pub fn across_trials(trials: &[Disposition]) -> Disposition {
    let passes = trials.iter().filter(|d| **d == Disposition::Pass).count();
    if trials.is_empty() {
        Disposition::Error
    } else if passes == trials.len() {
        Disposition::Pass
    } else if passes > 0 {
        Disposition::Flaky
    } else {
        trials
            .iter()
            .copied()
            .max_by_key(|d| d.severity())
            .unwrap_or(Disposition::Error)
    }
}

/// Fold scenario outcomes `(scenario id, trial, checks)` into row verdicts. Outcomes without a
/// trial (a run without `--repeat`) fold as one run; with trials, each trial is folded on its
/// own and the rows are then folded across trials, carrying `trials`, `passes` and `passK`.
/// `seeds` (a report's `repeat.seeds`) names the trial seed in a row's detail.
pub fn fold_trials<'a>(
    suite: &Suite,
    opts: FoldOptions,
    outcomes: impl IntoIterator<Item = (&'a str, Option<u32>, &'a [CheckOutcome])>,
    seeds: &[u64],
) -> Vec<RowVerdict> {
    let outcomes: Vec<(&str, Option<u32>, &[CheckOutcome])> = outcomes.into_iter().collect();
    if outcomes.iter().all(|(_, t, _)| t.is_none()) {
        return fold_rows(suite, opts, outcomes.iter().map(|(s, _, c)| (*s, *c)));
    }
    let mut by_trial: BTreeMap<u32, Vec<(&str, &[CheckOutcome])>> = BTreeMap::new();
    for (scenario, trial, checks) in &outcomes {
        by_trial
            .entry(trial.unwrap_or(1))
            .or_default()
            .push((scenario, checks));
    }
    let per_trial: Vec<(u32, Vec<RowVerdict>)> = by_trial
        .into_iter()
        .map(|(t, items)| (t, fold_rows(suite, opts, items)))
        .collect();
    suite
        .registry
        .rows
        .iter()
        .filter_map(|row| {
            let verdicts: Vec<(u32, &RowVerdict)> = per_trial
                .iter()
                .filter_map(|(t, rows)| {
                    rows.iter()
                        .find(|r| r.requirement_id == row.id)
                        .map(|r| (*t, r))
                })
                .collect();
            combine(&verdicts, seeds)
        })
        .collect()
}

/// One row's verdicts, one per trial, folded into one.
fn combine(verdicts: &[(u32, &RowVerdict)], seeds: &[u64]) -> Option<RowVerdict> {
    let (_, first) = verdicts.first()?;
    let dispositions: Vec<Disposition> = verdicts.iter().map(|(_, v)| v.disposition).collect();
    let disposition = across_trials(&dispositions);
    let trials = verdicts.len() as u32;
    let passes = dispositions
        .iter()
        .filter(|d| **d == Disposition::Pass)
        .count() as u32;
    let seed_of = |t: u32| {
        seeds
            .get(t.saturating_sub(1) as usize)
            .map_or(String::new(), |s| format!(" (seed {s})"))
    };
    let mut out = (*first).clone();
    out.disposition = disposition;
    out.assertions = verdicts.iter().map(|(_, v)| v.assertions).sum();
    out.trials = Some(trials);
    out.passes = Some(passes);
    out.pass_k = Some(passes == trials);
    let mut scenarios = first.scenarios.clone();
    for (_, v) in verdicts {
        for s in &v.scenarios {
            if !scenarios.contains(s) {
                scenarios.push(s.clone());
            }
        }
    }
    out.scenarios = scenarios;
    let uniform = dispositions.iter().all(|d| *d == first.disposition);
    if uniform {
        // Held (or failed) the same way every time: at the weakest level any trial reached.
        out.evidence = verdicts.iter().map(|(_, v)| v.evidence).min().flatten();
        return Some(out);
    }
    let (t, decider) = verdicts
        .iter()
        .filter(|(_, v)| v.disposition != Disposition::Pass)
        .max_by_key(|(t, v)| (v.disposition.severity(), std::cmp::Reverse(*t)))
        .copied()
        .unwrap_or((1, first));
    let mut tally: BTreeMap<&str, u32> = BTreeMap::new();
    for d in &dispositions {
        *tally.entry(d.as_str()).or_default() += 1;
    }
    let tally: Vec<String> = tally.iter().map(|(d, n)| format!("{d} {n}")).collect();
    out.evidence = None;
    out.scenario_id = decider.scenario_id.clone();
    out.detail = format!(
        "passed {passes} of {trials} trials ({}); trial {t}{} was {}: {}",
        tally.join(", "),
        seed_of(t),
        decider.disposition,
        decider.detail
    );
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use Disposition::*;

    #[test]
    fn a_row_passes_only_in_every_trial_and_is_flaky_in_some() {
        assert_eq!(across_trials(&[Pass, Pass, Pass]), Pass);
        assert_eq!(across_trials(&[Pass, Fail, Pass]), Flaky);
        assert_eq!(across_trials(&[Pass, Blocked]), Flaky);
        assert_eq!(across_trials(&[Warn, Pass]), Flaky);
        assert_eq!(across_trials(&[Fail, Blocked, Fail]), Fail);
        assert_eq!(across_trials(&[Blocked, Error]), Error);
        assert_eq!(across_trials(&[Warn, Warn]), Warn);
        assert_eq!(across_trials(&[]), Error);
        assert!(Flaky.denies(false));
    }

    #[test]
    fn trial_seeds_are_derived_deterministically() {
        assert_eq!(trial_seed(7, 1), 7);
        assert_eq!(trial_seed(7, 2), trial_seed(7, 2));
        assert_ne!(trial_seed(7, 2), trial_seed(7, 3));
        assert_ne!(trial_seed(7, 2), trial_seed(8, 2));
        let seeds = trial_seeds(7, 8);
        assert_eq!(seeds.len(), 8);
        let unique: std::collections::BTreeSet<u64> = seeds.iter().copied().collect();
        assert_eq!(unique.len(), 8);
    }

    #[test]
    fn bad_repeat_values_say_what_is_wrong() {
        assert_eq!(parse_repeat("8"), Ok(8));
        assert_eq!(parse_repeat("64"), Ok(64));
        for bad in ["0", "65", "-1", "x", "99999999999"] {
            let err = parse_repeat(bad).unwrap_err().to_string();
            assert!(err.contains("from 1 to 64"), "{bad}: {err}");
        }
    }
}
