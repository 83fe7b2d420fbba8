//! Idempotency benchmarks against the embedded reference host.
//!
//! `cargo bench --bench idempotency`:
//! 1. detection strength: the atomic-claim race scenario 100 times against the read-then-write
//!    mutant and 100 times against the clean host (targets: caught 100/100, clean 100/100,
//!    each run under 1 s wall);
//! 2. a bounded Layer-1 load run: 10,000 `POST /runs` over 2,500 keys, 32 in flight, on
//!    loopback (target: no lost record, no duplicate run).
//!
//! Iterations: `TOOLCERT_RACE_ITERS` (default 100), `TOOLCERT_LOAD_REQUESTS` (default 10000).

#[path = "support/load.rs"]
mod load;

use std::time::{Duration, Instant};

use reference_host::mutants::Mutant;
use toolcert::runner::{RunOptions, Target, run_selected};
use toolcert::suite::{Scenario, Suite};
use toolcert::verdict::Disposition;

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() {
    let iters = env_usize("TOOLCERT_RACE_ITERS", 100);
    let suite = Suite::embedded().expect("embedded suite loads");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let opts = RunOptions::default();
    let select = |s: &Scenario| s.id == "eff.atomic-claim-race";
    for (label, mutant) in [
        ("clean", None),
        ("claim-read-then-write", Some(Mutant::ClaimReadThenWrite)),
    ] {
        let mut passes = 0;
        let mut times: Vec<Duration> = Vec::new();
        for _ in 0..iters {
            let (run, elapsed) = rt.block_on(async {
                let target = Target::embedded(mutant).await.expect("host starts");
                let started = Instant::now();
                let run = run_selected(&suite, &target, &opts, Some(&select))
                    .await
                    .expect("run");
                let elapsed = started.elapsed();
                target.shutdown().await;
                (run, elapsed)
            });
            times.push(elapsed);
            if run.scenarios[0].disposition == Disposition::Pass {
                passes += 1;
            }
        }
        times.sort();
        let verdict = match mutant {
            None => format!("clean passed {passes}/{iters}"),
            Some(_) => format!("caught {}/{iters}", iters - passes),
        };
        println!(
            "eff.atomic-claim-race vs {label}: {verdict}; wall per run median {:.1} ms, max {:.1} ms (target < 1000 ms)",
            times[times.len() / 2].as_secs_f64() * 1e3,
            times[times.len() - 1].as_secs_f64() * 1e3
        );
    }

    let requests = env_usize("TOOLCERT_LOAD_REQUESTS", 10_000);
    let outcome = rt.block_on(async {
        let host = reference_host::start(reference_host::HostConfig::default())
            .await
            .expect("host starts");
        let outcome = load::layer1_load(
            &host.base_url,
            "refhost-alice-token",
            requests,
            requests / 4,
            32,
        )
        .await
        .expect("load runs");
        host.shutdown().await;
        outcome
    });
    println!(
        "layer-1 load: {} requests over {} keys in {:.2} s: receiver calls {}, keys with several runs {}, keys lost {}, unexpected answers {} ({})",
        outcome.requests,
        outcome.keys,
        outcome.elapsed.as_secs_f64(),
        outcome.receiver_calls,
        outcome.keys_with_several_runs,
        outcome.keys_lost,
        outcome.unexpected,
        if outcome.clean() {
            "clean"
        } else {
            "NOT CLEAN"
        }
    );
}
