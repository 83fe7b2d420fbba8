//! The mutation matrix runs in `cargo test`: the clean reference host passes every scenario,
//! each mutant fails at least the scenarios that name it, every covered row is killed by some
//! mutant, and the committed `reports/mutation-matrix.md` is current.
//!
//! Each column runs the scenarios the probe says can tell its mutant apart, plus one it says
//! cannot (`Selection::Sampled`): if the probe were wrong about that one, the column would
//! change and the matrix would no longer equal the committed one. The draw follows
//! `TOOLCERT_MATRIX_SEED` (CI sets it from the commit, so over many commits every pair is
//! drawn); this replaces running the whole matrix a second time with every scenario in every
//! column (`toolcert matrix --full`, still there by hand).

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
    let seed = std::env::var("TOOLCERT_MATRIX_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let matrix = rt
        .block_on(toolcert::matrix::run_matrix_observed(
            &suite,
            &options(),
            8,
            toolcert::matrix::Selection::Sampled {
                per_column: 1,
                seed,
            },
            &|_| {},
        ))
        .unwrap();
    let problems = matrix.problems(&suite);
    assert!(
        problems.is_empty(),
        "mutation matrix problems:\n{}",
        problems.join("\n")
    );
    assert!(matrix.clean_run.certification.certified());
    assert_eq!(
        matrix.mutants.len(),
        reference_host::mutants::ALL.len() + suite.data_mutants.len()
    );

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
