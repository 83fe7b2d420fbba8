//! Wall time of each scenario family against the embedded reference host.
//!
//! `cargo bench --bench families` starts a fresh embedded host per iteration, runs every
//! scenario of one family (`hooks.*`, `turn.*`, …), and prints the median and worst wall
//! time per family over N iterations (default 10, `TOOLCERT_BENCH_ITERS`). Targets on a
//! 2-core machine: tool hooks under 2 s, the tool-turn family under 3 s.

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
    let opts = RunOptions {
        reference_host_exe: Some(env!("CARGO_BIN_EXE_toolcert").into()),
        ..RunOptions::default()
    };
    for (family, target_ms) in [("hooks", 2000.0), ("turn", 3000.0)] {
        let prefix = format!("{family}.");
        let select = |s: &Scenario| s.id.starts_with(&prefix);
        let count = suite.scenarios.iter().filter(|s| select(s)).count();
        let mut times: Vec<Duration> = Vec::with_capacity(iters);
        for _ in 0..iters {
            let started = Instant::now();
            let run = rt
                .block_on(run_embedded(&suite, None, &opts, Some(&select)))
                .expect("the embedded host runs the family");
            times.push(started.elapsed());
            assert!(
                !run.denied(),
                "the clean host must pass the {family} family"
            );
        }
        times.sort();
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        println!(
            "{family} family ({count} scenarios) against the embedded reference host: {iters} runs, median {:.1} ms, worst {:.1} ms (target < {target_ms} ms)",
            ms(times[times.len() / 2]),
            ms(times[times.len() - 1]),
        );
    }
}
