//! The mutation matrix: the clean reference host against every mutant.
//!
//! It proves every check can fail. A mutant is *killed* only by a `fail` or `warn`: a mutant
//! that merely makes rows `blocked` or `error` proves nothing about the checks (a host that
//! breaks its own setup is not caught, it is just not judged), so those are reported beside
//! the kills and never counted as one. The clean host must pass every scenario; each mutant
//! must be killed by the scenarios that name it in `kills`; every row that has a scenario
//! must be turned to `fail`/`warn` by at least one mutant; every mutant must be named by some
//! scenario. Kills are also tracked per check, so "every check can fail" is measured.
//!
//! A mutant's column runs only the scenarios that can tell it apart ([`Selection::Reached`]):
//! each scenario first runs alone on a probe host (`Mutant::Probe`, the clean host that
//! records every mutant site its code compares against; up to 16 such windows overlap, each
//! recording into a slot of its own), and a scenario that never reached a mutant's site does
//! on that mutant exactly what it did on the clean host. The probe tells apart the sites a
//! host reaches while starting (their mutants run every scenario), while serving discovery
//! (their mutants run the scenarios whose view of the captured discovery they change) and in
//! the scenario's own steps. `--full` runs every scenario in every column; `cargo test` runs,
//! besides the reached scenarios, a sample of unreached ones per column (seeded per commit in
//! CI, `--sample N --sample-seed S` by hand); one that judged differently on the mutant than
//! on the clean host would change the matrix, and the committed report would no longer match:
//! over commits, a proof that skipping them is right.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use reference_host::UpstreamMajor;
use reference_host::mutants::{ALL, Mutant, MutantInfo};

use serde_json::Value;

use crate::runner::{
    ReferenceVariant, RunOptions, RunOutcome, ScenarioResult, Session, Target, TargetError,
    probe_child_file, run_reference, run_reference_staged,
};
use crate::suite::{DataMutant, Scenario, Step, Suite, SuiteError};
use crate::verdict::{Disposition, FoldOptions, fold_rows};

/// Why the matrix could not be run.
#[derive(Debug, thiserror::Error)]
pub enum MatrixError {
    /// A scenario's `kills` names no mutant of the reference host ([`check_kills`]).
    #[error(transparent)]
    Suite(#[from] SuiteError),
    /// A column's embedded host or doubles did not start.
    #[error(transparent)]
    Target(#[from] TargetError),
    /// `--mutant` names no mutant.
    #[error(
        "unknown mutant \"{0}\": `toolcert mutants` lists the reference host's mutants and the suite's data mutants"
    )]
    Unknown(String),
}

/// Every scenario's `kills` names a mutant of the reference host (`toolcert mutants` lists
/// them) or one of the suite's data mutants, and no data mutant takes a reference host
/// mutant's name; the error names the file and the JSON pointer of the first wrong name.
/// The suite loader cannot check this (it does not know the reference host), so the matrix
/// does before it runs, and so does the CLI when it loads a suite.
pub fn check_kills(suite: &Suite) -> Result<(), SuiteError> {
    let mut known: BTreeSet<&str> = ALL.iter().map(|m| m.name).collect();
    for data in suite.data_mutants.values() {
        if !known.insert(data.name.as_str()) {
            return Err(SuiteError::Reference {
                file: data.file.clone(),
                pointer: String::new(),
                message: format!(
                    "the data mutant \"{}\" has the name of a reference host mutant (`toolcert mutants` lists them); rename the file",
                    data.name
                ),
            });
        }
    }
    for s in &suite.scenarios {
        if let Some((i, mutant)) = s
            .kills
            .iter()
            .enumerate()
            .find(|(_, m)| !known.contains(m.as_str()))
        {
            return Err(SuiteError::Reference {
                file: s.file.clone(),
                pointer: format!("/kills/{i}"),
                message: format!(
                    "unknown mutant \"{mutant}\"; `toolcert mutants` lists the reference host's mutants, and scenarios/mutants/<name>.json defines a data mutant"
                ),
            });
        }
    }
    Ok(())
}

/// Whether a disposition kills a mutant: only an observed wrong answer does.
fn kills(d: Disposition) -> bool {
    matches!(d, Disposition::Fail | Disposition::Warn)
}

/// Whether a disposition shows the mutant changed something without convicting it.
fn only_disturbs(d: Disposition) -> bool {
    matches!(d, Disposition::Blocked | Disposition::Error)
}

/// One column of the matrix: a run against one host variant.
#[derive(Debug, Clone)]
pub struct Column {
    /// `clean` or the mutant's name.
    pub name: String,
    /// What the mutant breaks (empty for clean).
    pub breaks: String,
    /// Scenario id ⇒ disposition.
    pub scenarios: BTreeMap<String, Disposition>,
    /// Scenarios with at least one check that failed or warned (a real kill).
    pub killing: BTreeSet<String>,
    /// `(scenario, check)` pairs that failed or warned.
    pub failing_checks: BTreeSet<(String, String)>,
    /// Row id ⇒ disposition.
    pub rows: BTreeMap<String, Disposition>,
}

impl Column {
    /// A column that saw nothing (stands in for a column a run did not produce).
    fn empty(name: &str) -> Column {
        Column {
            name: name.to_string(),
            breaks: String::new(),
            scenarios: BTreeMap::new(),
            killing: BTreeSet::new(),
            failing_checks: BTreeSet::new(),
            rows: BTreeMap::new(),
        }
    }

    fn from_run(suite: &Suite, name: &str, breaks: &str, run: &RunOutcome) -> Column {
        let scenarios: Vec<&ScenarioResult> = run.scenarios.iter().collect();
        Column::of(suite, name, breaks, &scenarios, &run.rows)
    }

    /// The column of `info`: its own results for the scenarios it ran, the clean run's for
    /// the others, with the rows folded over all of them.
    fn merged(
        suite: &Suite,
        fold: FoldOptions,
        info: &MutantInfo,
        ran: &[ScenarioResult],
        clean: &RunOutcome,
    ) -> Column {
        let mut scenarios: Vec<&ScenarioResult> = ran.iter().collect();
        scenarios.extend(
            clean
                .scenarios
                .iter()
                .filter(|c| !ran.iter().any(|r| r.scenario_id == c.scenario_id)),
        );
        scenarios.sort_by(|a, b| (&a.scenario_id, a.trial).cmp(&(&b.scenario_id, b.trial)));
        let rows = fold_rows(
            suite,
            fold,
            scenarios
                .iter()
                .map(|s| (s.scenario_id.as_str(), s.checks.as_slice())),
        );
        Column::of(suite, info.name, info.breaks, &scenarios, &rows)
    }

    fn of(
        suite: &Suite,
        name: &str,
        breaks: &str,
        scenarios: &[&ScenarioResult],
        rows: &[crate::verdict::RowVerdict],
    ) -> Column {
        let mut killing = BTreeSet::new();
        let mut failing_checks = BTreeSet::new();
        for s in scenarios {
            for c in &s.checks {
                if kills(c.disposition(&suite.registry, false)) {
                    killing.insert(s.scenario_id.clone());
                    failing_checks.insert((s.scenario_id.clone(), c.check_id.clone()));
                }
            }
        }
        Column {
            name: name.to_string(),
            breaks: breaks.to_string(),
            scenarios: scenarios
                .iter()
                .map(|s| (s.scenario_id.clone(), s.disposition))
                .collect(),
            killing,
            failing_checks,
            rows: rows
                .iter()
                .map(|r| (r.requirement_id.clone(), r.disposition))
                .collect(),
        }
    }

    /// Scenarios this variant only made `blocked` or `error`, without any failing check.
    pub fn disturbed_only(&self) -> Vec<&str> {
        self.scenarios
            .iter()
            .filter(|(s, d)| only_disturbs(**d) && !self.killing.contains(*s))
            .map(|(s, _)| s.as_str())
            .collect()
    }
}

/// The problem of a scenario that names `col`'s mutant in `kills` and did not kill it.
fn survives(col: &Column, scenario: &str) -> String {
    let how = match col.scenarios.get(scenario) {
        Some(d) if only_disturbs(*d) => format!(" (it only made it {d}, which is no kill)"),
        Some(d) => format!(" ({d})"),
        None => String::new(),
    };
    format!(
        "mutant {} survives {scenario}, which claims to kill it{how}",
        col.name
    )
}

/// The problems of a mutant's column as a whole: no scenario names it in `kills`, or none
/// kills it (`killed_elsewhere`: its column in another mode did).
fn unproven(suite: &Suite, col: &Column, killed_elsewhere: bool) -> Vec<String> {
    let mut out = Vec::new();
    if !suite.scenarios.iter().any(|s| s.kills.contains(&col.name)) {
        out.push(format!(
            "mutant {} is named by no scenario's kills",
            col.name
        ));
    }
    if col.killing.is_empty() && !killed_elsewhere {
        out.push(format!(
            "mutant {} is killed by no scenario (no check fails or warns)",
            col.name
        ));
    }
    out
}

/// The modes the matrix runs every mutant in: the full (v2) reference host, and the plain
/// upstream v1 and v2 hosts of `--reference-upstream-only`.
pub const MODES: [Option<UpstreamMajor>; 3] =
    [None, Some(UpstreamMajor::V1), Some(UpstreamMajor::V2)];

/// The whole matrix.
#[derive(Debug, Clone)]
pub struct Matrix {
    /// The clean host's run (kept whole: it is the reference certification).
    pub clean_run: RunOutcome,
    /// The clean column.
    pub clean: Column,
    /// One column per mutant, in `mutants::ALL` order, then one per data mutant of the suite,
    /// in name order.
    pub mutants: Vec<Column>,
    /// The same in each upstream-only mode (v1, then v2): what the upstream contract alone
    /// catches.
    pub upstream: Vec<UpstreamColumns>,
    /// Scenarios the probe host judged otherwise than the clean host (must be none).
    pub probe_problems: Vec<String>,
}

/// The clean host and every mutant in one upstream-only mode.
#[derive(Debug, Clone)]
pub struct UpstreamColumns {
    /// The mode's major.
    pub major: UpstreamMajor,
    /// The clean reference host in this mode.
    pub clean: Column,
    /// One column per mutant, in `mutants::ALL` order.
    pub mutants: Vec<Column>,
}

impl UpstreamColumns {
    /// Mutants the upstream contract alone catches in this mode: their column has a row that
    /// fails or warns.
    pub fn caught(&self) -> Vec<&str> {
        self.mutants
            .iter()
            .filter(|c| c.rows.values().any(|d| kills(*d)))
            .map(|c| c.name.as_str())
            .collect()
    }
}

/// How a mutant column picks its scenarios.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Selection {
    /// Only the scenarios that can tell the mutant apart: those whose run on the probe host
    /// reached the mutant's site, those that name it in `kills`, and those the probe cannot
    /// watch (they restart a host process of their own). Every other scenario does on the
    /// mutant exactly what it did on the clean host, so the column takes the clean result.
    #[default]
    Reached,
    /// Every scenario in every column (`toolcert matrix --full`): the slow proof that
    /// [`Selection::Reached`] leaves the matrix unchanged.
    Full,
    /// [`Selection::Reached`], plus `per_column` scenarios per column that the probe says
    /// cannot tell the mutant apart, picked by `seed`: the cheap proof that the probe is right.
    /// A sampled scenario that did tell the mutant apart changes the column, so the matrix no
    /// longer equals the committed one; over many seeds (CI takes one from the commit) every
    /// pair is drawn.
    Sampled {
        /// Unreached scenarios run per column.
        per_column: usize,
        /// Which ones.
        seed: u64,
    },
}

/// A stable 64-bit hash (FNV-1a) of the parts, for the sample of [`Selection::Sampled`].
fn sample_rank(seed: u64, parts: &[&str]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325 ^ seed;
    for part in parts {
        for b in part.bytes().chain([0xff]) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    h
}

/// Run the clean host and every mutant through the suite, `columns` mutants at a time.
///
/// A run spends most of its wall time waiting on timeouts the scenarios set (approval expiry,
/// held receivers), not on the CPU, so columns overlap well; each column has its own embedded
/// host and doubles, and the columns keep `mutants::ALL` order whatever finishes first.
pub async fn run_matrix(
    suite: &Suite,
    opts: &RunOptions,
    columns: usize,
) -> Result<Matrix, MatrixError> {
    run_matrix_observed(suite, opts, columns, Selection::Reached, &|_| {}).await
}

/// How many columns [`run_matrix`] runs: the clean host and every mutant, in each of
/// [`MODES`], and each of the suite's data mutants (default mode only: their rewrites are
/// written against the default host's answers).
pub fn column_count(suite: &Suite) -> usize {
    MODES.len() * (ALL.len() + 1) + suite.data_mutants.len()
}

/// The index of `mode` in [`MODES`].
fn mode_index(mode: Option<UpstreamMajor>) -> usize {
    MODES.iter().position(|m| *m == mode).unwrap_or(0)
}

/// ` (upstream-only v1)` and the like, for problems and progress.
fn mode_note(mode: Option<UpstreamMajor>) -> String {
    mode.map_or_else(String::new, |m| format!(" (upstream-only {m})"))
}

/// Which mutant sites each scenario reaches on the probe host ([`Mutant::Probe`]), in one
/// mode; `None` for a scenario the probe could not watch (a child host process of its own
/// that left no record of what it reached): it runs in every column.
type Reach = BTreeMap<String, Option<BTreeSet<&'static str>>>;

/// What the probe saw in one mode.
#[derive(Default)]
struct Probed {
    /// The sites each scenario's own steps reached (after its session opened).
    reach: Reach,
    /// Sites a host reached while starting: a mutant there may change any scenario, so its
    /// column runs them all.
    at_start: BTreeSet<&'static str>,
    /// Sites reached while the session read discovery (and not while starting): a mutant
    /// there reaches a scenario that does not reach it itself only through the discovery its
    /// session captured ([`crate::runner::Session::discovery_view`]).
    at_discovery: BTreeSet<&'static str>,
    /// The probe's results, which must equal the clean host's.
    results: Vec<ScenarioResult>,
}

/// The probe slots of this process ([`Mutant::probe`]): each probe window running at once
/// holds one, so its host records into a slot no other window uses, and so does its child
/// file ([`probe_child_file`]). A window waits for a free slot.
static PROBE_SLOTS_FREE: std::sync::Mutex<Vec<usize>> = std::sync::Mutex::new(Vec::new());

/// Notified whenever a slot is handed back.
static PROBE_SLOT_RETURNED: tokio::sync::Notify = tokio::sync::Notify::const_new();

/// Every slot starts free; the pool is filled on first use.
static PROBE_POOL_FILLED: std::sync::Once = std::sync::Once::new();

/// A probe slot held for one window; handed back when dropped.
struct ProbeSlot(usize);

impl ProbeSlot {
    async fn take() -> ProbeSlot {
        PROBE_POOL_FILLED.call_once(|| {
            let mut free = PROBE_SLOTS_FREE.lock().unwrap_or_else(|p| p.into_inner());
            free.extend((0..reference_host::mutants::PROBE_SLOTS).rev());
        });
        loop {
            let returned = PROBE_SLOT_RETURNED.notified();
            if let Some(slot) = PROBE_SLOTS_FREE
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .pop()
            {
                return ProbeSlot(slot);
            }
            returned.await;
        }
    }
}

impl Drop for ProbeSlot {
    fn drop(&mut self) {
        PROBE_SLOTS_FREE
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(self.0);
        PROBE_SLOT_RETURNED.notify_waiters();
    }
}

/// Run every scenario alone on a fresh probe host, in both modes, and record the mutant sites
/// each reached: while its host started, while its session read discovery, and in its own
/// steps. Also returns the probe's results, which must equal the clean host's (the probe is
/// inert).
///
/// Windows overlap, `parallel` at a time, each on a probe slot of its own ([`ProbeSlot`]), so
/// a host's record holds only its own scenario's sites. A kill-and-restart scenario runs on a
/// host process of its own: that child is a probe too (`reference-host --probe-reach FILE`)
/// and appends each site it reaches (its start and discovery included: more is safe) to its
/// slot's [`probe_child_file`], so its reach is the in-process probe's plus the file's.
async fn probe_reach(
    suite: &Suite,
    opts: &RunOptions,
    parallel: usize,
) -> Result<[Probed; 3], TargetError> {
    use futures_util::StreamExt as _;
    let windows: Vec<(Option<UpstreamMajor>, &Scenario)> = MODES
        .into_iter()
        .flat_map(|mode| suite.scenarios.iter().map(move |s| (mode, s)))
        .collect();
    let ran: Vec<Result<ProbedWindow, TargetError>> = futures_util::stream::iter(windows)
        .map(|(upstream_only, scenario)| async move {
            let slot = ProbeSlot::take().await;
            let window = probe_window(suite, opts, upstream_only, scenario, slot.0).await?;
            Ok((upstream_only, scenario.id.clone(), window))
        })
        .buffer_unordered(windows_at_once(parallel))
        .collect()
        .await;
    let mut both: [Probed; 3] = Default::default();
    for window in ran {
        let (upstream_only, id, window) = window?;
        let probed = &mut both[mode_index(upstream_only)];
        probed.reach.insert(id, window.steps);
        probed.at_start.extend(window.at_start);
        probed.at_discovery.extend(window.at_discovery);
        probed.results.extend(window.run.scenarios);
    }
    for probed in &mut both {
        let Probed {
            at_start,
            at_discovery,
            ..
        } = probed;
        at_discovery.retain(|site| !at_start.contains(site));
    }
    Ok(both)
}

/// How many probe windows run at once: `--columns`, within the probe slots there are.
fn windows_at_once(columns: usize) -> usize {
    columns.clamp(1, reference_host::mutants::PROBE_SLOTS)
}

/// One probe window's mode, scenario id and what it saw.
type ProbedWindow = (Option<UpstreamMajor>, String, Window);

/// What one probe window saw.
struct Window {
    at_start: BTreeSet<&'static str>,
    at_discovery: BTreeSet<&'static str>,
    /// `None`: a child host of its own left no record, so the scenario runs in every column.
    steps: Option<BTreeSet<&'static str>>,
    run: RunOutcome,
}

/// One probe window: `scenario` alone on a fresh probe host of `slot`, in one mode.
async fn probe_window(
    suite: &Suite,
    opts: &RunOptions,
    upstream_only: Option<UpstreamMajor>,
    scenario: &Scenario,
    slot: usize,
) -> Result<Window, TargetError> {
    use std::sync::Mutex;
    let probe = Mutant::probe(slot).expect("a slot from the pool names a probe");
    let spawns = spawns_a_host(scenario);
    let child_file = probe_child_file(slot);
    let sites = |slot| -> BTreeSet<&'static str> {
        reference_host::mutants::probe_reached(slot)
            .into_iter()
            .map(Mutant::name)
            .collect()
    };
    reference_host::mutants::probe_reset(slot);
    // A leftover file would only widen the reach (safe), but start clean.
    let _ = std::fs::remove_file(&child_file);
    let at_start = Mutex::new(BTreeSet::new());
    let at_discovery = Mutex::new(BTreeSet::new());
    let run = run_reference_staged(
        suite,
        ReferenceVariant {
            mutant: Some(probe),
            upstream_only,
            front: None,
        },
        opts,
        Some(&|s: &Scenario| s.id == scenario.id),
        &|| {
            *at_start.lock().unwrap_or_else(|p| p.into_inner()) = sites(slot);
            reference_host::mutants::probe_reset(slot);
        },
        &|_| {
            *at_discovery.lock().unwrap_or_else(|p| p.into_inner()) = sites(slot);
            reference_host::mutants::probe_reset(slot);
        },
    )
    .await?;
    let mut reached = sites(slot);
    let steps = if spawns {
        // No file: the child never started or could not write; it cannot be trusted to
        // have reached nothing, so the scenario runs in every column.
        std::fs::read_to_string(&child_file).ok().map(|text| {
            reached.extend(
                reference_host::mutants::probe_reached_in(&text)
                    .into_iter()
                    .map(Mutant::name),
            );
            reached
        })
    } else {
        Some(reached)
    };
    let _ = std::fs::remove_file(&child_file);
    Ok(Window {
        at_start: at_start.into_inner().unwrap_or_else(|p| p.into_inner()),
        at_discovery: at_discovery.into_inner().unwrap_or_else(|p| p.into_inner()),
        steps,
        run,
    })
}

/// For each mutant reached only while discovery is served (`probed.at_discovery`), in one
/// mode: the scenarios whose view of discovery ([`crate::runner::Session::discovery_view`])
/// differs between a session against that mutant and one against the clean host. Those are
/// the scenarios the mutant can change without their steps reaching its site.
async fn discovery_sensitive(
    suite: &Suite,
    opts: &RunOptions,
    upstream_only: Option<UpstreamMajor>,
    probed: &Probed,
    parallel: usize,
) -> Result<BTreeMap<&'static str, BTreeSet<String>>, TargetError> {
    use futures_util::StreamExt as _;
    async fn views(
        suite: &Suite,
        opts: &RunOptions,
        variant: ReferenceVariant,
    ) -> Result<Vec<Value>, TargetError> {
        let target = Target::embedded_variant(variant).await?;
        let session = Session::open(&target, opts).await;
        let views = session.map(|session| {
            suite
                .scenarios
                .iter()
                .map(|s| session.discovery_view(s))
                .collect()
        });
        target.shutdown().await;
        views
    }
    let clean = views(
        suite,
        opts,
        ReferenceVariant {
            mutant: None,
            upstream_only,
            front: None,
        },
    )
    .await?;
    let found: Vec<Result<(&'static str, BTreeSet<String>), TargetError>> =
        futures_util::stream::iter(ALL.iter().filter(|i| probed.at_discovery.contains(i.name)))
            .map(|info| {
                let clean = &clean;
                async move {
                    let variant = ReferenceVariant {
                        mutant: Some(info.mutant),
                        upstream_only,
                        front: None,
                    };
                    let differ = views(suite, opts, variant)
                        .await?
                        .iter()
                        .zip(clean)
                        .zip(&suite.scenarios)
                        .filter(|((mine, clean), _)| mine != clean)
                        .map(|(_, s)| s.id.clone())
                        .collect();
                    Ok((info.name, differ))
                }
            })
            .buffer_unordered(parallel.max(1))
            .collect()
            .await;
    found.into_iter().collect()
}

/// A scenario that kills and restarts a host process: that process is a child of its own,
/// whose reach the probe reads from [`probe_child_file`].
fn spawns_a_host(scenario: &Scenario) -> bool {
    scenario.steps.iter().any(|s| matches!(s, Step::Host(_)))
}

/// The scenarios of `mutant`'s column in mode `mode` under `selection`.
fn selected<'s>(
    suite: &'s Suite,
    probed: &Probed,
    sensitive: &BTreeMap<&'static str, BTreeSet<String>>,
    selection: Selection,
    mode: Option<UpstreamMajor>,
    info: &MutantInfo,
) -> BTreeSet<&'s str> {
    let everywhere = probed.at_start.contains(info.name);
    let through_discovery = sensitive.get(info.name);
    let (reached, unreached): (Vec<&Scenario>, Vec<&Scenario>) =
        suite.scenarios.iter().partition(|s| {
            selection == Selection::Full
                || everywhere
                || s.kills.iter().any(|k| k == info.name)
                || probed
                    .reach
                    .get(&s.id)
                    .is_none_or(|r| r.as_ref().is_none_or(|r| r.contains(info.name)))
                || through_discovery.is_some_and(|ids| ids.contains(&s.id))
        });
    let mut chosen: BTreeSet<&str> = reached.iter().map(|s| s.id.as_str()).collect();
    if let Selection::Sampled { per_column, seed } = selection {
        let mode = mode_note(mode);
        let mut ranked: Vec<(u64, &str)> = unreached
            .iter()
            .map(|s| (sample_rank(seed, &[&mode, info.name, &s.id]), s.id.as_str()))
            .collect();
        ranked.sort_unstable();
        chosen.extend(ranked.into_iter().take(per_column).map(|(_, id)| id));
    }
    chosen
}

/// [`run_matrix`], with a `selection`, calling `on_column` with each column's name as it
/// finishes (a progress bar counts them; [`column_count`] is the total).
pub async fn run_matrix_observed(
    suite: &Suite,
    opts: &RunOptions,
    columns: usize,
    selection: Selection,
    on_column: &(dyn Fn(&str) + Sync),
) -> Result<Matrix, MatrixError> {
    use futures_util::StreamExt as _;
    check_kills(suite)?;
    async fn run_one(
        suite: &Suite,
        opts: &RunOptions,
        mutant: Option<Mutant>,
        upstream_only: Option<UpstreamMajor>,
        only: Option<BTreeSet<&str>>,
    ) -> Result<RunOutcome, TargetError> {
        let select = |s: &Scenario| only.as_ref().is_none_or(|o| o.contains(s.id.as_str()));
        run_reference(
            suite,
            ReferenceVariant {
                mutant,
                upstream_only,
                front: None,
            },
            opts,
            Some(&select),
        )
        .await
    }
    // The clean runs and the probe windows are independent: they overlap.
    let probing = async {
        match selection {
            Selection::Full => Ok(Default::default()),
            Selection::Reached | Selection::Sampled { .. } => {
                probe_reach(suite, opts, columns).await
            }
        }
    };
    let cleans =
        futures_util::future::join_all(MODES.map(|mode| run_one(suite, opts, None, mode, None)));
    let (clean_runs, probed) = futures_util::future::join(cleans, probing).await;
    let probed = probed?;
    let clean_runs: Vec<RunOutcome> = clean_runs.into_iter().collect::<Result<_, _>>()?;
    let clean_columns: Vec<Column> = clean_runs
        .iter()
        .zip(MODES)
        .map(|(run, mode)| {
            on_column(&format!("clean{}", mode_note(mode)));
            Column::from_run(suite, "clean", "", run)
        })
        .collect();
    let mut probe_problems = Vec::new();
    for ((mode, clean), probed) in MODES.iter().zip(&clean_columns).zip(&probed) {
        for r in &probed.results {
            let was = clean.scenarios.get(&r.scenario_id);
            if was != Some(&r.disposition) {
                probe_problems.push(format!(
                    "{}{}: the probe host made it {:?}, the clean host {:?}: the probe is not inert, so the matrix cannot trust what it reached",
                    r.scenario_id,
                    mode_note(*mode),
                    r.disposition,
                    was
                ));
            }
        }
    }
    // Windows end in any order; the problems are listed in scenario order.
    probe_problems.sort();
    let sensitive: Vec<BTreeMap<&'static str, BTreeSet<String>>> = match selection {
        Selection::Full => vec![BTreeMap::new(); MODES.len()],
        Selection::Reached | Selection::Sampled { .. } => futures_util::future::join_all(
            MODES
                .iter()
                .zip(&probed)
                .map(|(mode, probed)| discovery_sensitive(suite, opts, *mode, probed, columns)),
        )
        .await
        .into_iter()
        .collect::<Result<_, _>>()?,
    };
    // Every (mode, mutant) pair is an independent column; the upstream-only ones are quick
    // (most of their scenarios stop at a 404), so they ride along in the same stream.
    let jobs: Vec<(Option<UpstreamMajor>, &MutantInfo)> = MODES
        .into_iter()
        .flat_map(|mode| ALL.iter().map(move |info| (mode, info)))
        .collect();
    // Each run is cut down to its column as soon as it ends: a whole run keeps every
    // transcript and observation, and holding all of them made the matrix's peak memory grow
    // with the number of mutants.
    let fold = FoldOptions {
        strict: opts.strict,
    };
    // Each column's scenarios, chosen up front so the longest columns start first (a column
    // lasts about as long as its slowest scenario, and the ones with the most scenarios hold
    // the slow ones); columns then end in any order and are put back in `jobs` order.
    let mut planned: Vec<(usize, BTreeSet<&str>)> = jobs
        .iter()
        .enumerate()
        .map(|(i, (mode, info))| {
            let m = mode_index(*mode);
            (
                i,
                selected(suite, &probed[m], &sensitive[m], selection, *mode, info),
            )
        })
        .collect();
    planned.sort_by_key(|(i, only)| (std::cmp::Reverse(only.len()), *i));
    let mut columns_run: Vec<(usize, Result<Column, TargetError>)> =
        futures_util::stream::iter(planned)
            .map(|(i, only)| {
                let (upstream, info) = jobs[i];
                let clean_run = &clean_runs[mode_index(upstream)];
                async move {
                    let column = if only.is_empty() {
                        // Nothing can tell this mutant apart in this mode: its column is the
                        // clean one.
                        Ok(Column::merged(suite, fold, info, &[], clean_run))
                    } else {
                        run_one(suite, opts, Some(info.mutant), upstream, Some(only))
                            .await
                            .map(|run| Column::merged(suite, fold, info, &run.scenarios, clean_run))
                    };
                    on_column(info.name);
                    (i, column)
                }
            })
            .buffer_unordered(columns.max(1))
            .collect()
            .await;
    columns_run.sort_by_key(|(i, _)| *i);
    let columns_run = columns_run.into_iter().map(|(_, column)| column);
    let mut by_mode: Vec<Vec<Column>> = vec![Vec::with_capacity(ALL.len()); MODES.len()];
    for ((mode, _), column) in jobs.iter().zip(columns_run) {
        by_mode[mode_index(*mode)].push(column?);
    }
    let data_columns = run_data_columns(
        suite,
        opts,
        suite.data_mutants.keys().map(String::as_str),
        None,
        columns,
        on_column,
    )
    .await?;
    by_mode[0].extend(data_columns);
    let mut clean_columns = clean_columns.into_iter();
    let mut by_mode = by_mode.into_iter();
    let clean = clean_columns
        .next()
        .unwrap_or_else(|| Column::empty("clean"));
    let mutants = by_mode.next().unwrap_or_default();
    let upstream = MODES
        .iter()
        .skip(1)
        .flatten()
        .zip(clean_columns.zip(by_mode))
        .map(|(major, (clean, mutants))| UpstreamColumns {
            major: *major,
            clean,
            mutants,
        })
        .collect();
    let clean_run = clean_runs.into_iter().next().ok_or_else(|| {
        TargetError::Embedded("the clean reference host's run is missing".to_string())
    })?;
    Ok(Matrix {
        clean_run,
        clean,
        mutants,
        upstream,
        probe_problems,
    })
}

/// What a data mutant breaks, as the matrix report shows it: marked as data, with its file.
fn data_breaks(data: &DataMutant) -> String {
    format!("(data, `{}`) {}", data.file, data.breaks)
}

/// Run the named data mutants of the suite, `parallel` at a time: each column is the clean
/// default host behind a front that applies the mutant's rewrites, and runs every scenario
/// (the probe sees the host's code, not the front's rewrites, so it cannot narrow them).
async fn run_data_columns<'n>(
    suite: &Suite,
    opts: &RunOptions,
    names: impl Iterator<Item = &'n str>,
    select: Option<&dyn Fn(&Scenario) -> bool>,
    parallel: usize,
    on_column: &(dyn Fn(&str) + Sync),
) -> Result<Vec<Column>, TargetError> {
    use futures_util::StreamExt as _;
    let data: Vec<&DataMutant> = names.filter_map(|n| suite.data_mutants.get(n)).collect();
    let ran: Vec<Result<Column, TargetError>> = futures_util::stream::iter(data)
        .map(|data| async move {
            let variant = ReferenceVariant {
                mutant: None,
                upstream_only: None,
                front: Some(std::sync::Arc::new(data.clone())),
            };
            let run = run_reference(suite, variant, opts, select).await?;
            on_column(&data.name);
            Ok(Column::from_run(
                suite,
                &data.name,
                &data_breaks(data),
                &run,
            ))
        })
        .buffered(parallel.max(1))
        .collect()
        .await;
    ran.into_iter().collect()
}

/// A matrix over some columns only (`toolcert matrix --mutant NAME`): the clean default host
/// and the named mutants, each running every scenario. How a spec editor proves a new row's
/// mutant in seconds; the whole matrix still decides.
#[derive(Debug, Clone)]
pub struct Focused {
    /// The clean default host.
    pub clean: Column,
    /// The named mutants' columns, in the order named.
    pub columns: Vec<Column>,
}

/// Run the clean default host and the named mutants (reference host mutants or the suite's
/// data mutants), every scenario `select` keeps (all when `None`) in each. An unknown name is
/// an error naming the known ones' listing.
pub async fn run_focused(
    suite: &Suite,
    opts: &RunOptions,
    names: &[String],
    select: Option<&(dyn Fn(&Scenario) -> bool + Sync)>,
    parallel: usize,
) -> Result<Focused, MatrixError> {
    use futures_util::StreamExt as _;
    check_kills(suite)?;
    /// One named column: a data mutant of the suite or a reference host mutant.
    enum Named<'s> {
        Data(&'s str),
        Reference(&'static MutantInfo),
    }
    let named: Vec<Named> = names
        .iter()
        .map(|n| match suite.data_mutants.get_key_value(n.as_str()) {
            Some((name, _)) => Ok(Named::Data(name.as_str())),
            None => ALL
                .iter()
                .find(|m| m.name == n.as_str())
                .map(Named::Reference)
                .ok_or_else(|| MatrixError::Unknown(n.clone())),
        })
        .collect::<Result<_, _>>()?;
    let select = select.map(|f| f as &dyn Fn(&Scenario) -> bool);
    let clean = run_reference(suite, ReferenceVariant::default(), opts, select).await?;
    let clean = Column::from_run(suite, "clean", "", &clean);
    let columns: Vec<Result<Column, TargetError>> = futures_util::stream::iter(named)
        .map(|named| async move {
            match named {
                Named::Data(name) => {
                    let ran =
                        run_data_columns(suite, opts, std::iter::once(name), select, 1, &|_| {});
                    Ok(ran
                        .await?
                        .into_iter()
                        .next()
                        .unwrap_or_else(|| Column::empty(name)))
                }
                Named::Reference(info) => {
                    let variant = ReferenceVariant::with_mutant(Some(info.mutant));
                    let run = run_reference(suite, variant, opts, select).await?;
                    Ok(Column::from_run(suite, info.name, info.breaks, &run))
                }
            }
        })
        .buffered(parallel.max(1))
        .collect()
        .await;
    Ok(Focused {
        clean,
        columns: columns.into_iter().collect::<Result<_, _>>()?,
    })
}

impl Focused {
    /// What the named columns fall short of: a scenario the clean default host does not pass
    /// (v1-only scenarios, which it does not run, are left to the whole matrix), a scenario
    /// that ran naming one of these mutants in `kills` that it survives, a mutant no scenario
    /// names or none that ran kills. Empty when they prove what they must.
    pub fn problems(&self, suite: &Suite) -> Vec<String> {
        let mut out = Vec::new();
        for (scenario, d) in &self.clean.scenarios {
            if !matches!(d, Disposition::Pass | Disposition::Inapplicable) {
                out.push(format!(
                    "the clean reference host does not pass {scenario} ({d})"
                ));
            }
        }
        for col in &self.columns {
            for s in suite
                .scenarios
                .iter()
                .filter(|s| s.kills.contains(&col.name))
            {
                if !col.killing.contains(&s.id) {
                    out.push(survives(col, &s.id));
                }
            }
            out.extend(unproven(suite, col, false));
        }
        out
    }

    /// One line per column: the scenarios that kill it, and the rows it turns to fail or
    /// warn; then the problems, if any.
    pub fn render(&self, suite: &Suite) -> String {
        let mut out = String::new();
        for col in &self.columns {
            let killing: Vec<&str> = col.killing.iter().map(String::as_str).collect();
            let rows: Vec<&str> = col
                .rows
                .iter()
                .filter(|(_, d)| kills(**d))
                .map(|(r, _)| r.as_str())
                .collect();
            let _ = writeln!(
                out,
                "{}: {}; rows that fail or warn: {}",
                col.name,
                if killing.is_empty() {
                    "survives".to_string()
                } else {
                    format!("killed by {}", killing.join(", "))
                },
                if rows.is_empty() {
                    "none".to_string()
                } else {
                    rows.join(", ")
                }
            );
        }
        let problems = self.problems(suite);
        if problems.is_empty() {
            let _ = writeln!(out, "No problem.");
        } else {
            let _ = writeln!(out, "Problems:");
            for p in problems {
                let _ = writeln!(out, "- {p}");
            }
        }
        out
    }
}

impl Matrix {
    /// Mutants whose column turned this row to `fail` or `warn`.
    pub fn killers_of_row(&self, row: &str) -> Vec<&str> {
        self.mutants
            .iter()
            .filter(|c| c.rows.get(row).is_some_and(|d| kills(*d)))
            .map(|c| c.name.as_str())
            .collect()
    }

    /// Scenarios with a check that failed or warned against this mutant; a v1 scenario, which
    /// the default (v2) host never runs, counts where it killed the mutant on the upstream-only
    /// v1 host, marked `(v1)`.
    pub fn killed_by(&self, column: &Column) -> Vec<String> {
        let mut out: Vec<String> = column.killing.iter().cloned().collect();
        if let Some(v1) = self
            .upstream_mode(UpstreamMajor::V1)
            .and_then(|mode| mode.mutants.iter().find(|c| c.name == column.name))
        {
            out.extend(
                v1.killing
                    .iter()
                    .filter(|s| self.clean.scenarios.get(*s) == Some(&Disposition::Inapplicable))
                    .map(|s| format!("{s} (v1)")),
            );
        }
        out
    }

    /// Mutants that made this check fail or warn.
    pub fn killers_of_check(&self, scenario: &str, check: &str) -> Vec<&str> {
        let key = (scenario.to_string(), check.to_string());
        // A v1 scenario never runs on the default (v2) host: its checks are judged in the v1
        // upstream-only columns.
        let v1 = (self.clean.scenarios.get(scenario) == Some(&Disposition::Inapplicable))
            .then(|| self.upstream_mode(UpstreamMajor::V1))
            .flatten();
        self.mutants
            .iter()
            .filter(|c| {
                c.failing_checks.contains(&key)
                    || v1.is_some_and(|mode| {
                        mode.mutants
                            .iter()
                            .any(|u| u.name == c.name && u.failing_checks.contains(&key))
                    })
            })
            .map(|c| c.name.as_str())
            .collect()
    }

    /// `(killed, total)`: checks of the suite some mutant makes fail or warn, out of all
    /// checks that can convict (positive controls never fail: they block).
    pub fn checks_killed(&self, suite: &Suite) -> (usize, usize) {
        let all: Vec<(&str, &str)> = suite
            .scenarios
            .iter()
            .flat_map(|s| {
                s.checks
                    .iter()
                    .filter(|c| !c.control)
                    .map(move |c| (s.id.as_str(), c.id.as_str()))
            })
            .collect();
        let killed = all
            .iter()
            .filter(|(s, c)| !self.killers_of_check(s, c).is_empty())
            .count();
        (killed, all.len())
    }

    /// Whether `scenario`, which the default (v2) host never runs (a v1 scenario), kills
    /// `mutant` on the upstream-only v1 host, which speaks v1.
    fn killed_as_v1(&self, mutant: &str, scenario: &str) -> bool {
        self.clean.scenarios.get(scenario) == Some(&Disposition::Inapplicable)
            && self.upstream_mode(UpstreamMajor::V1).is_some_and(|mode| {
                mode.mutants
                    .iter()
                    .any(|c| c.name == mutant && c.killing.contains(scenario))
            })
    }

    /// The columns of upstream-only mode `major`.
    pub fn upstream_mode(&self, major: UpstreamMajor) -> Option<&UpstreamColumns> {
        self.upstream.iter().find(|u| u.major == major)
    }

    /// Every way the matrix falls short; empty when it proves what it must.
    pub fn problems(&self, suite: &Suite) -> Vec<String> {
        let mut out = self.probe_problems.clone();
        // The clean host as a plain upstream host: nothing may convict it; what it cannot
        // show is `blocked` or `inapplicable`.
        for mode in &self.upstream {
            for (row, d) in &mode.clean.rows {
                if matches!(
                    d,
                    Disposition::Fail | Disposition::Warn | Disposition::Error
                ) {
                    out.push(format!(
                        "the clean reference host in upstream-only {} mode gets {d} on {row}",
                        mode.major
                    ));
                }
            }
        }
        for (scenario, d) in &self.clean.scenarios {
            // A scenario of the other wire major (v1 only) must pass on the clean host in
            // upstream-only v1 mode, which speaks v1.
            let passes_as_v1 = *d == Disposition::Inapplicable
                && self
                    .upstream_mode(UpstreamMajor::V1)
                    .is_some_and(|m| m.clean.scenarios.get(scenario) == Some(&Disposition::Pass));
            // A leg that exists only to block a row where it cannot be witnessed, made of
            // positive controls only (checked below), never runs on the reference host.
            let blocking_leg = *d == Disposition::Inapplicable
                && suite.scenarios.iter().any(|s| {
                    &s.id == scenario
                        && s.tags
                            .iter()
                            .any(|t| t == crate::suite::ONLY_WHERE_UNWITNESSABLE)
                });
            if *d != Disposition::Pass && !passes_as_v1 && !blocking_leg {
                out.push(format!(
                    "the clean reference host does not pass {scenario} ({d})"
                ));
            }
        }
        for s in &suite.scenarios {
            for m in &s.kills {
                let Some(col) = self.mutants.iter().find(|c| &c.name == m) else {
                    out.push(format!(
                        "{} names mutant {m}, which the matrix did not run",
                        s.id
                    ));
                    continue;
                };
                if !col.killing.contains(&s.id) && !self.killed_as_v1(m, &s.id) {
                    out.push(survives(col, &s.id));
                }
            }
        }
        for row in &suite.registry.rows {
            let covered = suite.scenarios.iter().any(|s| s.rows.contains(&row.id));
            let killed_upstream = self.upstream.iter().any(|mode| {
                mode.mutants
                    .iter()
                    .any(|c| c.rows.get(&row.id).is_some_and(|d| kills(*d)))
            });
            if covered
                && row.unwitnessable.is_none()
                && self.killers_of_row(&row.id).is_empty()
                && !killed_upstream
            {
                out.push(format!(
                    "row {} has a scenario but no mutant turns it to fail or warn",
                    row.id
                ));
            }
        }
        for s in &suite.scenarios {
            let tagged = s
                .tags
                .iter()
                .any(|t| t == crate::suite::ONLY_WHERE_UNWITNESSABLE);
            if tagged && (s.checks.iter().any(|c| !c.control) || !s.kills.is_empty()) {
                out.push(format!(
                    "{} is tagged {}, so the clean host never runs it: it may hold positive controls only and kill no mutant",
                    s.id,
                    crate::suite::ONLY_WHERE_UNWITNESSABLE
                ));
            }
        }
        for col in &self.mutants {
            let killed_upstream = self.upstream.iter().any(|mode| {
                mode.mutants
                    .iter()
                    .any(|c| c.name == col.name && !c.killing.is_empty())
            });
            out.extend(unproven(suite, col, killed_upstream));
        }
        out
    }

    /// The section of `reports/mutation-matrix.md` on one upstream-only mode: the clean
    /// host's row counts there, and which rows each mutant turns to fail or warn.
    fn render_upstream(&self, out: &mut String, suite: &Suite, mode: &UpstreamColumns) {
        let count = |d: Disposition| mode.clean.rows.values().filter(|r| **r == d).count();
        let (title, what) = match mode.major {
            UpstreamMajor::V1 => (
                "The upstream contract alone",
                "a plain upstream v1 host (v1 discovery, every route under `/v1`, the v1 seams, which ignore members they do not know) that serves none of toolcert's extensions",
            ),
            UpstreamMajor::V2 => (
                "The upstream v2 contract alone",
                "a plain upstream v2 host (the closed v2 root, the seams profile `openwop-conformance-seams-v2` with closed bodies that refuse toolcert's members with a 400, tenant-bound run ids projected into one path segment) that serves none of toolcert's extensions",
            ),
        };
        let caught = mode.caught();
        let _ = writeln!(out, "\n## {title}\n");
        let _ = writeln!(
            out,
            "The same mutants with the reference host in upstream-only mode `{}` (`--reference-upstream-only={}`): {what}. A mutant is caught when some row fails or warns. The clean upstream-only {} host: {} rows pass, {} blocked, {} inapplicable, {} fail.\n",
            mode.major,
            mode.major,
            mode.major,
            count(Disposition::Pass),
            count(Disposition::Blocked),
            count(Disposition::Inapplicable),
            count(Disposition::Fail),
        );
        let _ = writeln!(
            out,
            "Caught by the upstream {} contract alone: {} of {} mutants.\n",
            mode.major,
            caught.len(),
            mode.mutants.len()
        );
        let _ = writeln!(
            out,
            "| mutant | rows that fail or warn (upstream-only {}) |",
            mode.major
        );
        let _ = writeln!(out, "|---|---|");
        for col in &mode.mutants {
            let rows: Vec<&str> = suite
                .registry
                .rows
                .iter()
                .filter(|r| col.rows.get(&r.id).is_some_and(|d| kills(*d)))
                .map(|r| r.id.as_str())
                .collect();
            let _ = writeln!(
                out,
                "| `{}` | {} |",
                col.name,
                if rows.is_empty() {
                    "not caught".to_string()
                } else {
                    rows.join(", ")
                }
            );
        }
    }

    /// The Markdown matrix (`reports/mutation-matrix.md`). Deterministic: no timings, ports
    /// or seeds, so it can be compared with the committed copy.
    pub fn render_markdown(&self, suite: &Suite) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "# Mutation matrix\n");
        let _ = writeln!(
            out,
            "Generated by `cargo run --release -- matrix`. Each mutant is the reference host with one known bug switched on. A scenario *kills* a mutant only when one of its checks fails or warns against it; a scenario the mutant merely made `blocked` or `error` is listed apart and is no kill (a host that breaks its own setup is not judged, so it is not caught either). `cargo test` fails when the clean host does not pass every scenario, when a mutant survives a scenario that names it, or when a covered row is turned to fail or warn by no mutant.\n"
        );
        let clean_pass = self
            .clean
            .scenarios
            .values()
            .filter(|d| **d == Disposition::Pass)
            .count();
        let _ = writeln!(
            out,
            "Clean reference host: {clean_pass} of {} scenarios pass.\n",
            self.clean.scenarios.len()
        );
        let (killed, total) = self.checks_killed(suite);
        let _ = writeln!(
            out,
            "Checks some mutant makes fail or warn: {killed} of {total} (positive controls are left out: they block, never fail).\n"
        );
        let _ = writeln!(out, "## Mutants\n");
        let _ = writeln!(
            out,
            "| mutant | breaks | named by | killed by (fail/warn) | only blocked/error in |"
        );
        let _ = writeln!(out, "|---|---|---|---|---|");
        for col in &self.mutants {
            let named: Vec<&str> = suite
                .scenarios
                .iter()
                .filter(|s| s.kills.contains(&col.name))
                .map(|s| s.id.as_str())
                .collect();
            let killed = self.killed_by(col);
            let disturbed = col.disturbed_only();
            let _ = writeln!(
                out,
                "| `{}` | {} | {} | {} | {} |",
                col.name,
                col.breaks,
                named.join(", "),
                if killed.is_empty() {
                    "**survives**".to_string()
                } else {
                    killed.join(", ")
                },
                if disturbed.is_empty() {
                    "—".to_string()
                } else {
                    disturbed.join(", ")
                }
            );
        }
        for mode in &self.upstream {
            self.render_upstream(&mut out, suite, mode);
        }
        let _ = writeln!(out, "\n## Rows\n");
        let _ = writeln!(out, "| row | clean | killed by |");
        let _ = writeln!(out, "|---|---|---|");
        for row in &suite.registry.rows {
            let Some(clean) = self.clean.rows.get(&row.id) else {
                continue;
            };
            let killers = self.killers_of_row(&row.id);
            let _ = writeln!(
                out,
                "| {} | {} | {} |",
                row.id,
                clean,
                if killers.is_empty() {
                    "**none**".to_string()
                } else {
                    killers.join(", ")
                }
            );
        }
        let _ = writeln!(out, "\n## Checks no mutant makes fail or warn\n");
        let mut any = false;
        for s in &suite.scenarios {
            for c in s.checks.iter().filter(|c| !c.control) {
                if self.killers_of_check(&s.id, &c.id).is_empty() {
                    any = true;
                    let _ = writeln!(out, "- `{}` / `{}` ({}): {}", s.id, c.id, c.row, c.says);
                }
            }
        }
        if !any {
            let _ = writeln!(out, "None.");
        }
        let problems = self.problems(suite);
        let _ = writeln!(out, "\n## Problems\n");
        if problems.is_empty() {
            let _ = writeln!(out, "None.");
        }
        for p in problems {
            let _ = writeln!(out, "- {p}");
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unknown_mutant_in_kills_names_its_file_and_pointer() {
        let mut suite = Suite::embedded().unwrap();
        check_kills(&suite).unwrap();
        let scenario = &mut suite.scenarios[0];
        scenario.kills.push("no-such-mutant".into());
        let (file, at) = (scenario.file.clone(), scenario.kills.len() - 1);
        let err = check_kills(&suite).unwrap_err().to_string();
        assert!(
            err.contains(&file)
                && err.contains(&format!("/kills/{at}"))
                && err.contains("no-such-mutant"),
            "{err}"
        );
    }
}
