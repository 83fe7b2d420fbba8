//! The entry points of a run: open a session on a target and run the selected scenarios
//! through the one scheduler.

use std::time::Instant;

use super::schedule;
use super::session::{RunOptions, RunOutcome, Session, conclude};
use super::target::{Target, TargetError};
use toolcert_core::suite::{Scenario, Suite};

/// Run the selected scenarios (all when `select` is `None`) against `target`, each
/// `opts.repeat` times, through the one scheduler ([`schedule::run_trials`]: at most `jobs`
/// trials in flight, `serial` scenarios alone).
pub async fn run_selected(
    suite: &Suite,
    target: &Target,
    opts: &RunOptions,
    select: Option<&dyn Fn(&Scenario) -> bool>,
) -> Result<RunOutcome, TargetError> {
    run_selected_after_open(suite, target, opts, select, &|_| {}).await
}

/// [`run_selected`], calling `opened` once the session is open (discovery captured) and
/// before any scenario starts: the mutation matrix's probe starts its record of the sites a
/// scenario reaches there.
pub async fn run_selected_after_open(
    suite: &Suite,
    target: &Target,
    opts: &RunOptions,
    select: Option<&dyn Fn(&Scenario) -> bool>,
    opened: &(dyn Fn(&Session) + Sync),
) -> Result<RunOutcome, TargetError> {
    let started = Instant::now();
    let session = Session::open(target, opts).await?;
    opened(&session);
    let chosen: Vec<&Scenario> = suite
        .scenarios
        .iter()
        .filter(|s| select.is_none_or(|f| f(s)))
        .collect();
    let collect = schedule::Collect::default();
    schedule::run_trials(&session, suite, &chosen, opts.jobs, &collect).await;
    let results = collect.into_results();
    Ok(conclude(
        suite,
        &session,
        target,
        opts,
        results,
        started.elapsed().as_millis() as u64,
    ))
}

/// Run every scenario of the suite.
pub async fn run_all(
    suite: &Suite,
    target: &Target,
    opts: &RunOptions,
) -> Result<RunOutcome, TargetError> {
    run_selected(suite, target, opts, None).await
}
