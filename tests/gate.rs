//! End-to-end tests of the release-gate features, one module per feature:
//! expectation baselines, offline recheck, partitions with merge, `--repeat` (pass^k), the
//! progress bar's absence from piped output, and certification bundles.

/// Helpers the modules share.
mod common {
    use std::path::{Path, PathBuf};
    use std::process::{Command, Output};

    use serde_json::Value;

    /// Run the toolcert binary with `args`.
    pub fn toolcert(args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_toolcert"))
            .args(args)
            .output()
            .expect("toolcert runs")
    }

    /// A fresh scratch directory for one test (`prefix` names the module).
    pub fn scratch(prefix: &str, name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("toolcert-{prefix}-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// stdout then stderr, for assertions and their messages.
    pub fn text(o: &Output) -> String {
        format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        )
    }

    /// A JSON file.
    pub fn read(path: &Path) -> Value {
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
    }
}

mod baseline;
mod bundle;
mod partition;
mod progress;
mod recheck;
mod repeat;
