//! The bounded crash test (`cargo bench --bench crash`): kill/restart cycles at seeded random
//! points of running tool loops against the reference host on a data directory. Targets: no
//! recorded event lost, no non-deterministic effect fired twice, every run completed or failed
//! with a TTC crash code.
//!
//! `TOOLCERT_CRASH_CYCLES` (default 50), `TOOLCERT_CRASH_SEED` (default 1),
//! `TOOLCERT_CRASH_MUTANT` (run a reference-host mutant instead, to see the test catch it).

#[path = "support/crash.rs"]
mod crash;

use crash::crash_cycles;
use toolcert::host::SpawnCommand;

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn main() {
    let cycles = env_u64("TOOLCERT_CRASH_CYCLES", 50) as usize;
    let seed = env_u64("TOOLCERT_CRASH_SEED", 1);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let mutant = std::env::var("TOOLCERT_CRASH_MUTANT").ok();
    let command = SpawnCommand::reference_host(
        env!("CARGO_BIN_EXE_toolcert").as_ref(),
        mutant.as_deref(),
        None,
    );
    let outcome = rt
        .block_on(crash_cycles(&command, cycles, seed))
        .expect("the crash test runs");
    println!(
        "crash: {} kill/restart cycles (seed {seed}) in {:.2} s",
        outcome.cycles,
        outcome.elapsed.as_secs_f64()
    );
    println!(
        "  runs: {} completed, failed by code {:?}; bad endings: {:?}",
        outcome.completed, outcome.failed, outcome.bad_endings
    );
    println!(
        "  events recorded {}, lost {}; non-deterministic calls {} (fired twice: {}); idempotent calls {}",
        outcome.events,
        outcome.lost_events,
        outcome.nondeterministic_calls,
        outcome.double_fired,
        outcome.idempotent_calls
    );
    println!("  clean: {}", outcome.clean());
    if mutant.is_none() {
        assert!(
            outcome.clean(),
            "the crash test found a defect: {outcome:?}"
        );
    }
}
