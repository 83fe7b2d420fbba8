//! `toolcert run`: certify a host, with libtest-style console output.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use anyhow::Context as _;
use libtest_mimic::{Arguments, Completion, Failed, Trial};

use crate::host::{Budgets, CaCerts, HostProfile};
use crate::runner::{RunOptions, ScenarioResult, Session, Target, conclude};
use crate::verdict::Disposition;

/// Arguments of `toolcert run`.
#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// Run only scenarios whose id contains one of these strings (exact match with --exact).
    #[arg(value_name = "FILTER")]
    pub filters: Vec<String>,
    /// List the scenarios instead of running them.
    #[arg(long)]
    pub list: bool,
    /// Filters match scenario ids exactly.
    #[arg(long)]
    pub exact: bool,
    /// Skip scenarios whose id contains this string (repeatable).
    #[arg(long, value_name = "FILTER")]
    pub skip: Vec<String>,
    /// Scenarios run in parallel (each isolated by its own nonce, receiver ids and tool names).
    #[arg(long, short = 'j', default_value_t = 4, value_name = "N")]
    pub jobs: usize,
    /// Seed for every random choice (default: from the clock; printed and reported).
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// Fail `warn` (SHOULD) and `inapplicable` rows too.
    #[arg(long)]
    pub strict: bool,
    /// Count a row as passing only at this evidence level or stronger: `double` (counted at a
    /// double toolcert owns) or `wire` (the default: the host's answer, judged by toolcert).
    /// Weaker passes become `blocked`.
    #[arg(long, value_name = "LEVEL", value_parser = parse_evidence)]
    pub require_evidence: Option<crate::verdict::Evidence>,
    /// Multiply every timeout (connect 2 s, read 5 s, request 10 s) by F.
    #[arg(long, default_value_t = 1.0, value_name = "F")]
    pub timeout_scale: f64,
    /// Bound the whole run to this many seconds: scenarios not started by then are `error`,
    /// running ones stop at it; reports are still written.
    #[arg(long, value_name = "SECS", value_parser = parse_deadline)]
    pub deadline: Option<std::time::Duration>,
    /// Certify the host at this base URL instead of the embedded reference host.
    #[arg(long, value_name = "URL")]
    pub host: Option<String>,
    /// Host profile file: roles (token, principal) and scopes; see the README.
    #[arg(long, value_name = "FILE")]
    pub profile: Option<PathBuf>,
    /// Bearer token for a role, ROLE=TOKEN (repeatable; wins over the profile).
    #[arg(long = "token", value_name = "ROLE=TOKEN")]
    pub tokens: Vec<String>,
    /// PEM file of a CA to trust for an https host (repeatable): given, these CAs are the only
    /// roots trusted (the system's are not consulted), like `curl --cacert`.
    #[arg(long = "ca-cert", value_name = "FILE")]
    pub ca_certs: Vec<PathBuf>,
    /// Start the host with this shell command and certify it; toolcert also starts one more
    /// instance per kill-and-restart scenario. `{port}` and `{data_dir}` are filled in (keep
    /// both, so a restart finds its port and its data); the host must print its
    /// http://127.0.0.1:PORT URL on stdout.
    #[arg(long, value_name = "CMD", conflicts_with_all = ["host", "reference_mutant"])]
    pub spawn: Option<String>,
    /// Switch one mutant on in the embedded reference host (`toolcert mutants` lists them).
    #[arg(long, value_name = "NAME", conflicts_with = "host")]
    pub reference_mutant: Option<String>,
    /// Run the embedded reference host as a plain upstream OpenWOP v1 host (v1 discovery, only
    /// upstream seams, seam fields and fixtures): what toolcert can judge on a host that
    /// implements none of toolcert's extensions.
    #[arg(long, conflicts_with_all = ["host", "spawn"])]
    pub reference_upstream_only: bool,
    /// Write the JSON report here.
    #[arg(long, value_name = "PATH")]
    pub report: Option<PathBuf>,
    /// Write JUnit XML here.
    #[arg(long, value_name = "PATH")]
    pub junit: Option<PathBuf>,
    /// Write the Markdown certification report here.
    #[arg(long, value_name = "PATH")]
    pub markdown: Option<PathBuf>,
    /// Load the suite from this checkout instead of the embedded one.
    #[arg(long, value_name = "DIR")]
    pub suite: Option<PathBuf>,
    /// Print only failures and the summary.
    #[arg(long, short = 'q')]
    pub quiet: bool,
}

fn target_for(args: &RunArgs, rt: &tokio::runtime::Runtime) -> anyhow::Result<Target> {
    let mut profile = match &args.profile {
        Some(path) => HostProfile::load(path)?,
        None if args.host.is_none() => HostProfile::reference(),
        None => HostProfile::default(),
    };
    for flag in &args.tokens {
        profile.set_token_flag(flag)?;
    }
    if let Some(command) = &args.spawn {
        anyhow::ensure!(
            !command.trim().is_empty(),
            "--spawn: expected a command that starts the host, e.g. --spawn 'my-host --port {{port}} --data {{data_dir}}'"
        );
        let command = crate::host::SpawnCommand::Shell(command.clone());
        return Ok(rt.block_on(Target::spawned(command, profile))?);
    }
    let url = args.host.clone().or_else(|| profile.base_url.clone());
    match url {
        Some(url) => {
            anyhow::ensure!(
                url.starts_with("http://") || url.starts_with("https://"),
                "--host {url:?}: expected an http:// or https:// base URL"
            );
            Ok(Target::remote(&url, profile))
        }
        None => {
            let mutant = args
                .reference_mutant
                .as_deref()
                .map(|name| name.parse::<reference_host::mutants::Mutant>())
                .transpose()
                .map_err(|e| anyhow::anyhow!("--reference-mutant: {e}"))?;
            let variant = crate::runner::ReferenceVariant {
                mutant,
                upstream_only: args.reference_upstream_only,
            };
            let mut target = rt.block_on(Target::embedded_variant(variant))?;
            // A profile may still override tokens of the embedded host's roles.
            for flag in &args.tokens {
                target.profile.set_token_flag(flag)?;
            }
            Ok(target)
        }
    }
}

pub(super) fn run(args: RunArgs) -> anyhow::Result<ExitCode> {
    anyhow::ensure!(
        args.timeout_scale.is_finite() && args.timeout_scale > 0.0,
        "--timeout-scale {}: expected a positive number",
        args.timeout_scale
    );
    let ca_certs = CaCerts::load(&args.ca_certs)?;
    let suite = Arc::new(super::load_suite(args.suite.as_deref()).context("loading the suite")?);
    let mut libtest = Arguments {
        list: args.list,
        exact: args.exact,
        quiet: args.quiet,
        skip: args.skip.clone(),
        test_threads: Some(args.jobs.max(1)),
        filter: None,
        ..Arguments::default()
    };
    if args.list {
        let trials = suite
            .scenarios
            .iter()
            .map(|s| Trial::test(s.id.clone(), || Ok(())))
            .filter(|t| matches_filters(&args, t.name()))
            .collect();
        let _listed = libtest_mimic::run(&libtest, trials);
        return Ok(ExitCode::SUCCESS);
    }
    let rt = super::runtime()?;
    let seed = args.seed.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0)
    });
    let opts = RunOptions {
        seed,
        budgets: Budgets::scaled(args.timeout_scale),
        jobs: args.jobs.max(1),
        strict: args.strict,
        ca_certs,
        require_evidence: args.require_evidence,
        scenario_budget: crate::runner::SCENARIO_BUDGET.mul_f64(args.timeout_scale),
        deadline: args.deadline,
        ..RunOptions::default()
    };
    let target = target_for(&args, &rt)?;
    let started = std::time::Instant::now();
    let session = Arc::new(rt.block_on(Session::open(&target, &opts))?);
    let redactor = session.redactor(&suite);
    if !args.quiet {
        println!(
            "toolcert {}: certifying {} (seed {seed})",
            env!("CARGO_PKG_VERSION"),
            target.base_url
        );
        match session.discovery() {
            // The reason quotes what the host served: scrubbed like everything else.
            Ok(d) => println!(
                "discovery: wire major {} ({}), sha256 {}",
                d.wire.number(),
                redactor.text(&d.wire_reason),
                d.sha256
            ),
            Err(e) => println!("discovery failed: {}", redactor.text(e)),
        }
    }

    let results: Arc<Mutex<Vec<ScenarioResult>>> = Arc::default();
    let handle = rt.handle().clone();
    let strict = args.strict;
    let trials: Vec<Trial> = suite
        .scenarios
        .iter()
        .filter(|s| matches_filters(&args, &s.id))
        .map(|s| {
            let (suite, session, results, handle) = (
                suite.clone(),
                session.clone(),
                results.clone(),
                handle.clone(),
            );
            let id = s.id.clone();
            Trial::ignorable_test(s.id.clone(), move || {
                let scenario = suite
                    .scenario(&id)
                    .ok_or_else(|| Failed::from("scenario vanished"))?;
                let result = handle.block_on(session.run_scenario(&suite, scenario));
                let disposition = result.disposition;
                let message = result.failure_message();
                results
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push(result);
                match disposition {
                    Disposition::Pass => Ok(Completion::Completed),
                    Disposition::Warn if !strict => {
                        println!("warning ({id}): {message}");
                        Ok(Completion::Completed)
                    }
                    Disposition::Inapplicable if !strict => {
                        Ok(Completion::ignored_with(message_first(&message)))
                    }
                    other => Err(Failed::from(format!("{other}:\n{message}"))),
                }
            })
            .with_kind(family_of(s))
        })
        .collect();
    // Filtering already happened above; libtest-mimic only runs and prints.
    libtest.filter = None;
    libtest.skip.clear();
    let conclusion = libtest_mimic::run(&libtest, trials);

    let collected = std::mem::take(&mut *results.lock().unwrap_or_else(|p| p.into_inner()));
    let run = conclude(
        &suite,
        &session,
        &target,
        &opts,
        collected,
        started.elapsed().as_millis() as u64,
    );
    print_summary(&run);
    let report = crate::report::build(&suite, &run);
    if let Some(path) = &args.report {
        crate::report::write_json(&suite, &report, path)?;
    }
    if let Some(path) = &args.junit {
        std::fs::write(path, crate::report::render_junit(&report))
            .with_context(|| format!("writing {}", path.display()))?;
    }
    if let Some(path) = &args.markdown {
        std::fs::write(path, crate::report::render_markdown(&report))
            .with_context(|| format!("writing {}", path.display()))?;
    }
    drop(session);
    rt.block_on(target.shutdown());
    Ok(if run.denied() || conclusion.has_failed() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

fn parse_deadline(s: &str) -> Result<std::time::Duration, String> {
    match s.parse::<u64>() {
        Ok(secs) if (1..=86_400).contains(&secs) => Ok(std::time::Duration::from_secs(secs)),
        _ => Err(format!(
            "{s:?} is not a whole number of seconds from 1 to 86400 (e.g. --deadline 600)"
        )),
    }
}

fn parse_evidence(s: &str) -> Result<crate::verdict::Evidence, String> {
    match s.parse()? {
        crate::verdict::Evidence::SelfReport => {
            Err("self-report can never make a row pass; use double or wire".to_string())
        }
        level => Ok(level),
    }
}

fn message_first(message: &str) -> String {
    message.lines().next().unwrap_or("").to_string()
}

fn matches_filters(args: &RunArgs, id: &str) -> bool {
    let hit = |f: &String| {
        if args.exact {
            id == f
        } else {
            id.contains(f.as_str())
        }
    };
    (args.filters.is_empty() || args.filters.iter().any(hit)) && !args.skip.iter().any(hit)
}

fn family_of(s: &crate::suite::Scenario) -> String {
    s.id.split('.').next().unwrap_or("").to_string()
}

fn print_summary(run: &crate::runner::RunOutcome) {
    let counts = crate::report::counts_for(&run.rows);
    let line: Vec<String> = counts.iter().map(|(d, n)| format!("{n} {d}")).collect();
    let at = |e: crate::verdict::Evidence| {
        run.rows
            .iter()
            .filter(|r| r.disposition == Disposition::Pass && r.evidence == Some(e))
            .count()
    };
    println!(
        "toolcert: {} rows judged ({} measured): {}; passes at double evidence {}, at wire {}; {} rows not covered by a scenario yet",
        run.rows.len(),
        run.measured(),
        line.join(", "),
        at(crate::verdict::Evidence::Double),
        at(crate::verdict::Evidence::Wire),
        run.uncovered.len()
    );
    let verdict = if run.measured() == 0 {
        "NOT CERTIFIED: nothing was measured"
    } else if run.denied() {
        "NOT CERTIFIED"
    } else {
        "certified"
    };
    println!("toolcert: {verdict}");
}
