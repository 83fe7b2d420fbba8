//! The mutation matrix runs in `cargo test`: the clean reference host passes every scenario,
//! each mutant fails at least the scenarios that name it, every covered row is killed by some
//! mutant, and the committed `reports/mutation-matrix.md` is current.

use toolcert::runner::RunOptions;
use toolcert::suite::Suite;

/// Kill-and-restart scenarios run the reference host as a child process of toolcert's binary;
/// each column runs as wide as `toolcert matrix` runs it.
fn options() -> RunOptions {
    RunOptions {
        reference_host_exe: Some(env!("CARGO_BIN_EXE_toolcert").into()),
        jobs: toolcert::runner::EMBEDDED_JOBS,
        ..RunOptions::default()
    }
}

#[test]
fn the_matrix_proves_every_check_can_fail() {
    let suite = Suite::embedded().unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let matrix = rt
        .block_on(toolcert::matrix::run_matrix(&suite, &options(), 8))
        .unwrap();
    let problems = matrix.problems(&suite);
    assert!(
        problems.is_empty(),
        "mutation matrix problems:\n{}",
        problems.join("\n")
    );
    assert!(matrix.clean_run.certification.certified());
    assert_eq!(matrix.mutants.len(), reference_host::mutants::ALL.len());

    let committed = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/reports/mutation-matrix.md"
    ))
    .unwrap_or_default();
    assert_eq!(
        committed,
        matrix.render_markdown(&suite),
        "reports/mutation-matrix.md is stale: regenerate it with `cargo run --release -- matrix`"
    );
}
