//! The progress bar stays out of piped output: a run long enough for a bar (`--repeat 8`)
//! with stdout and stderr piped and `CI` unset prints no carriage return and no ANSI escape.

use std::process::Command;

use super::common::text;

#[test]
fn piped_output_carries_no_progress_bar() {
    let out = Command::new(env!("CARGO_BIN_EXE_toolcert"))
        .env_remove("CI")
        .args(["run", "-v", "--seed", "1", "--repeat", "8", "disc."])
        .output()
        .expect("toolcert runs");
    assert!(out.status.success(), "{}", text(&out));
    for (name, bytes) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
        assert!(
            !bytes.iter().any(|b| *b == b'\r' || *b == 0x1b),
            "{name} carries progress-bar bytes: {:?}",
            String::from_utf8_lossy(bytes)
        );
    }
    // The per-scenario lines (--verbose) are still there, whole.
    assert!(
        text(&out).contains("scenario disc.etag ... leg pass"),
        "{}",
        text(&out)
    );
}
