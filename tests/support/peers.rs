//! The pinned real peers (MCP servers, the Python `mcp` and `a2a-sdk` SDKs) the interop tests
//! drive. `scripts/install-mcp-peers.sh` installs them into `target/mcp-peers`; a test asks for
//! one of its files and the script runs first, once per test binary, so `cargo test` on a fresh
//! checkout installs what it needs. A peer that cannot be installed fails the test with the
//! script's output: a skipped real-peer test would read as a pass.

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

/// The repository root.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Runs the install script once per test binary (a concurrent test waits for it). It keeps a
/// pinned install that is already present, so a warm run costs a `pip show`. `Err` carries the
/// script's output.
fn install() -> &'static Result<(), String> {
    static DONE: OnceLock<Result<(), String>> = OnceLock::new();
    DONE.get_or_init(|| {
        let script = root().join("scripts/install-mcp-peers.sh");
        match Command::new("bash").arg(&script).output() {
            Ok(out) if out.status.success() => Ok(()),
            Ok(out) => Err(format!(
                "{} exited with {}:\n{}{}",
                script.display(),
                out.status,
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            )),
            Err(e) => Err(format!("could not run {}: {e}", script.display())),
        }
    })
}

/// `target/mcp-peers/<relative>` once the install script ran; panics naming the missing file,
/// what installs it and the script's output when it is not there.
pub fn installed(relative: &str) -> PathBuf {
    let path = root().join("target/mcp-peers").join(relative);
    let why = match install() {
        Ok(()) => String::new(),
        Err(e) => format!("\n{e}"),
    };
    assert!(
        path.exists(),
        "{} is missing: the pinned peers are installed by `scripts/install-mcp-peers.sh` (needs npm and python3 with venv, and the npm and PyPI registries){why}",
        path.display()
    );
    path
}

/// The install's Python (its venv holds the `mcp` and `a2a-sdk` SDKs).
#[allow(dead_code)] // the test binaries that run only the MCP servers need no Python
pub fn python() -> PathBuf {
    installed("py/bin/python")
}

/// The lines `child` writes to stderr, read on a thread that keeps draining them (a child
/// that logs never blocks on a full pipe). Panics if its stderr was not piped.
#[allow(dead_code)] // not every test binary starts a child that announces itself
pub fn stderr_lines(child: &mut std::process::Child) -> std::sync::mpsc::Receiver<String> {
    use std::io::BufRead;
    let stderr = child.stderr.take().expect("stderr is piped");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
        {
            let _ = tx.send(line);
        }
    });
    rx
}

/// The rest of the first line starting with `prefix` within `within` (every line read is
/// shown to `check` first); panics naming `what` when none comes.
#[allow(dead_code)]
pub fn announced(
    lines: &std::sync::mpsc::Receiver<String>,
    prefix: &str,
    within: std::time::Duration,
    what: &str,
    mut check: impl FnMut(&str),
) -> String {
    let deadline = std::time::Instant::now() + within;
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        let line = lines
            .recv_timeout(left)
            .unwrap_or_else(|_| panic!("{what} did not say `{prefix}…` within {within:?}"));
        check(&line);
        if let Some(rest) = line.strip_prefix(prefix) {
            return rest.trim().to_string();
        }
    }
}
