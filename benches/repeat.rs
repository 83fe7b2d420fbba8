//! pass^k cost: the whole suite against the embedded reference host with `--repeat 8` versus
//! one run (`cargo bench --bench repeat`). Trials overlap within `jobs` per host and each trial has an
//! embedded host of its own; goal: K=8 under 4× the wall time of K=1.

use std::time::Instant;

use toolcert::runner::{RunOptions, run_embedded};
use toolcert::suite::Suite;

fn main() {
    let suite = Suite::embedded().expect("embedded suite loads");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let jobs: usize = std::env::var("TOOLCERT_BENCH_JOBS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(16);
    let mut secs = Vec::new();
    for repeat in [1, 8] {
        let opts = RunOptions {
            reference_host_exe: Some(env!("CARGO_BIN_EXE_toolcert").into()),
            repeat,
            jobs,
            ..RunOptions::default()
        };
        let started = Instant::now();
        let run = rt
            .block_on(run_embedded(&suite, None, &opts, None))
            .expect("the embedded host runs the suite");
        let elapsed = started.elapsed().as_secs_f64();
        let flaky = run
            .rows
            .iter()
            .filter(|r| r.disposition == toolcert::verdict::Disposition::Flaky)
            .count();
        println!(
            "--repeat {repeat} --jobs {jobs}: {} rows, {flaky} flaky, {elapsed:.1} s",
            run.rows.len()
        );
        secs.push(elapsed);
    }
    println!(
        "K=8 took {:.2}× the time of one run (goal < 4×)",
        secs[1] / secs[0]
    );
}
