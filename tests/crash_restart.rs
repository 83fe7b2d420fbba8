//! A short version of the crash bench in `cargo test`: kill/restart cycles at seeded random
//! points of running tool loops lose no recorded event, never fire the non-deterministic tool
//! twice, and end every run completed or failed with a TTC crash code.

// Shared with the bench, which reports fields this test does not read.
#[allow(dead_code)]
#[path = "../benches/support/crash.rs"]
mod crash;

use crash::crash_cycles;
use toolcert::host::SpawnCommand;

#[test]
fn kill_restart_cycles_lose_nothing_and_fire_nothing_twice() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let command = SpawnCommand::reference_host(env!("CARGO_BIN_EXE_toolcert").as_ref(), None, None);
    let outcome = rt.block_on(crash_cycles(&command, 8, 7)).unwrap();
    assert_eq!(outcome.cycles, 8);
    assert!(outcome.clean(), "{outcome:?}");
    // Something was measured: runs ended and the tools were reached.
    assert_eq!(
        outcome.completed + outcome.failed.values().sum::<usize>(),
        8
    );
    assert!(outcome.idempotent_calls > 0, "{outcome:?}");
}
