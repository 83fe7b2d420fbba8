//! Wall time of the tool-hooks family against the embedded reference host.
//!
//! `cargo bench --bench hooks_family` starts the embedded host, runs every `hooks.*` and
//! `disc.*` scenario, and repeats that N times (default 20, `TOOLCERT_BENCH_ITERS`), printing
//! the median and worst wall time. Target: under 2 s on a 2-core machine.

use std::time::{Duration, Instant};

use toolcert::runner::{RunOptions, Target, run_selected};
use toolcert::suite::Suite;

fn main() {
    let iters: usize = std::env::var("TOOLCERT_BENCH_ITERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20);
    let suite = Suite::embedded().expect("embedded suite loads");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let opts = RunOptions::default();
    let mut times: Vec<Duration> = Vec::with_capacity(iters);
    let select = |s: &toolcert::suite::Scenario| s.id.starts_with("hooks.");
    for _ in 0..iters {
        let started = Instant::now();
        let run = rt.block_on(async {
            let target = Target::embedded(None).await.expect("embedded host starts");
            let run = run_selected(&suite, &target, &opts, Some(&select))
                .await
                .expect("run");
            target.shutdown().await;
            run
        });
        times.push(started.elapsed());
        assert!(!run.denied(), "the clean host must pass the hooks family");
        assert!(!run.scenarios.is_empty());
    }
    times.sort();
    let median = times[times.len() / 2];
    let worst = times[times.len() - 1];
    println!(
        "hooks family against the embedded reference host: {iters} runs, median {:.1} ms, worst {:.1} ms (target < 2000 ms)",
        median.as_secs_f64() * 1e3,
        worst.as_secs_f64() * 1e3
    );
}
