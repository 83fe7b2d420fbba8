//! Wall time of each scenario family, and of the whole suite, against the embedded reference
//! host.
//!
//! `cargo bench --bench families` starts a fresh embedded host per iteration, runs every
//! scenario of one family (the id's first segment: `hooks.*`, `turn.*`, `cat.*`, …), and
//! prints the median and worst wall time per family over N iterations (default 10,
//! `TOOLCERT_BENCH_ITERS`); then the same for the whole suite, every family at once, as
//! `toolcert run` does it. Targets on a 2-core machine: the tool-turn family under 3 s, every
//! other family under 2 s, and the whole suite under 2 s (issue 16). A run over its target
//! is printed as `OVER`, not failed: a benchmark reports, the tests judge.

use std::time::{Duration, Instant};

use toolcert::runner::{RunOptions, run_embedded};
use toolcert::suite::{Scenario, Suite};

fn main() {
    let iters: usize = std::env::var("TOOLCERT_BENCH_ITERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10);
    let suite = Suite::embedded().expect("embedded suite loads");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    // As `toolcert run` runs against the embedded host (`--jobs` defaults to 16 there).
    let opts = RunOptions {
        reference_host_exe: Some(env!("CARGO_BIN_EXE_toolcert").into()),
        jobs: toolcert::runner::EMBEDDED_JOBS,
        ..RunOptions::default()
    };
    let mut families: Vec<String> = suite
        .scenarios
        .iter()
        .filter_map(|s| s.id.split('.').next().map(str::to_owned))
        .collect();
    families.sort();
    families.dedup();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let measure = |label: &str, select: &dyn Fn(&Scenario) -> bool, target_ms: f64| {
        let count = suite.scenarios.iter().filter(|s| select(s)).count();
        let mut times: Vec<Duration> = Vec::with_capacity(iters);
        for _ in 0..iters {
            let started = Instant::now();
            let run = rt
                .block_on(run_embedded(&suite, None, &opts, Some(select)))
                .expect("the embedded host runs the scenarios");
            times.push(started.elapsed());
            assert_eq!(
                run.certification.exit_code, 0,
                "the clean host must pass {label}"
            );
        }
        times.sort();
        let median = ms(times[times.len() / 2]);
        println!(
            "{label} ({count} scenarios) against the embedded reference host: {iters} runs, median {median:.1} ms, worst {:.1} ms (target < {target_ms} ms){}",
            ms(times[times.len() - 1]),
            if median < target_ms { "" } else { " OVER" },
        );
    };
    for family in &families {
        let prefix = format!("{family}.");
        let target_ms = if family == "turn" { 3000.0 } else { 2000.0 };
        measure(
            &format!("{family} family"),
            &|s: &Scenario| s.id.starts_with(&prefix),
            target_ms,
        );
    }
    measure("the whole suite", &|_: &Scenario| true, 2000.0);
}
