//! Hosts toolcert starts itself (`--spawn 'CMD'`, or the embedded reference host run as a
//! child process), so recovery scenarios can kill one with SIGKILL at a chosen point and start
//! it again on the same data directory (TTC §D, TURN-D3, D7, D8).
//!
//! A spawned host gets a port and a data directory from toolcert: `{port}` and `{data_dir}` in
//! the command are replaced before it runs, and a restart runs the same command with the same
//! values. Its base URL is the first `http://127.0.0.1:…` or `http://localhost:…` URL it prints
//! on stdout; every wait for it is bounded.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};
use tokio::process::{Child, Command};

/// How long a spawned host may take to print its URL.
pub const STARTUP_BUDGET: Duration = Duration::from_secs(15);

/// How long a killed host may take to be reaped.
const REAP_BUDGET: Duration = Duration::from_secs(5);

/// Why a spawned host could not be started, stopped or restarted.
#[derive(Debug, Clone, thiserror::Error)]
pub enum SpawnError {
    /// The process could not be started at all.
    #[error("could not start `{command}`: {reason}")]
    Start {
        /// The command as run.
        command: String,
        /// The OS error.
        reason: String,
    },
    /// The process exited or stayed silent before printing a loopback URL.
    #[error(
        "`{command}` printed no http://127.0.0.1:PORT URL on stdout within {budget_ms} ms ({how}); stderr: {stderr}"
    )]
    NoUrl {
        /// The command as run.
        command: String,
        /// Budget in milliseconds.
        budget_ms: u64,
        /// What happened instead.
        how: String,
        /// The last lines it wrote to stderr.
        stderr: String,
    },
    /// The host came back on another URL, so requests already rendered would miss it.
    #[error(
        "the restarted host listens on {now}, not {before}: put {{port}} in the --spawn command so toolcert can pin the port"
    )]
    Moved {
        /// URL before the restart.
        before: String,
        /// URL after it.
        now: String,
    },
    /// The data directory could not be made.
    #[error("could not create the data directory {path}: {reason}")]
    DataDir {
        /// The directory.
        path: String,
        /// The OS error.
        reason: String,
    },
}

/// The command that starts a host: a shell command line (`--spawn`) or an argument vector
/// (the embedded reference host). `{port}` and `{data_dir}` are placeholders.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SpawnCommand {
    /// Run through `sh -c 'exec …'` (exec, so SIGKILL reaches the host and not a shell).
    Shell(String),
    /// Run this program with these arguments.
    Argv(Vec<String>),
}

impl SpawnCommand {
    /// toolcert's own binary serving the reference host (`toolcert reference-host`), seams on,
    /// on a pinned port and a data directory, with `mutant` switched on, and as a plain
    /// upstream host of major `upstream_only` (`v1` or `v2`) when given.
    pub fn reference_host(
        exe: &Path,
        mutant: Option<&str>,
        upstream_only: Option<&str>,
    ) -> SpawnCommand {
        let mut argv = vec![
            exe.display().to_string(),
            "reference-host".into(),
            "--port".into(),
            "{port}".into(),
            "--data-dir".into(),
            "{data_dir}".into(),
            "--enable-seams".into(),
        ];
        if let Some(m) = mutant {
            argv.push("--mutant".into());
            argv.push(m.into());
        }
        if let Some(major) = upstream_only {
            argv.push(format!("--upstream-only={major}"));
        }
        SpawnCommand::Argv(argv)
    }

    /// [`SpawnCommand::reference_host`] as the mutation matrix's probe host: the clean host
    /// that appends each mutant site it reaches to `reach_file` (`--probe-reach`), so a
    /// kill-and-restart scenario's own host process is in the probe's sight too.
    pub fn reference_probe(
        exe: &Path,
        reach_file: &Path,
        upstream_only: Option<&str>,
    ) -> SpawnCommand {
        let SpawnCommand::Argv(mut argv) = SpawnCommand::reference_host(exe, None, upstream_only)
        else {
            unreachable!("reference_host builds an argv")
        };
        argv.push("--probe-reach".into());
        argv.push(reach_file.display().to_string());
        SpawnCommand::Argv(argv)
    }

    /// Whether toolcert picks the port (`{port}` appears).
    fn pins_port(&self) -> bool {
        match self {
            SpawnCommand::Shell(s) => s.contains("{port}"),
            SpawnCommand::Argv(a) => a.iter().any(|s| s.contains("{port}")),
        }
    }

    fn render(&self, port: u16, data_dir: &Path) -> (String, Command) {
        let fill = |s: &str| {
            s.replace("{port}", &port.to_string())
                .replace("{data_dir}", &data_dir.display().to_string())
        };
        match self {
            SpawnCommand::Shell(line) => {
                let line = fill(line);
                let mut cmd = Command::new("sh");
                cmd.arg("-c").arg(format!("exec {line}"));
                (line, cmd)
            }
            SpawnCommand::Argv(argv) => {
                let argv: Vec<String> = argv.iter().map(|s| fill(s)).collect();
                let mut cmd = Command::new(&argv[0]);
                cmd.args(&argv[1..]);
                (argv.join(" "), cmd)
            }
        }
    }
}

/// A private directory under the system temp dir, removed when dropped.
#[derive(Debug)]
pub struct DataDir {
    path: PathBuf,
}

impl DataDir {
    /// Create a fresh directory named after `label`.
    pub fn create(label: &str) -> Result<DataDir, SpawnError> {
        let unique = format!(
            "toolcert-{}-{}-{}",
            std::process::id(),
            label,
            uuid::Uuid::new_v4().simple()
        );
        let path = std::env::temp_dir().join(unique);
        std::fs::create_dir_all(&path).map_err(|e| SpawnError::DataDir {
            path: path.display().to_string(),
            reason: e.to_string(),
        })?;
        Ok(DataDir { path })
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for DataDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// A host process toolcert started; killed when dropped.
#[derive(Debug)]
pub struct SpawnedHost {
    command: SpawnCommand,
    port: u16,
    data_dir: DataDir,
    budget: Duration,
    child: Option<Child>,
    base_url: String,
    starts: u32,
}

impl SpawnedHost {
    /// Start `command` on a free port and a fresh data directory, and wait (bounded by
    /// `budget`) for its URL.
    pub async fn start(
        command: &SpawnCommand,
        label: &str,
        budget: Duration,
    ) -> Result<SpawnedHost, SpawnError> {
        let data_dir = DataDir::create(label)?;
        let port = if command.pins_port() { free_port()? } else { 0 };
        let mut host = SpawnedHost {
            command: command.clone(),
            port,
            data_dir,
            budget,
            child: None,
            base_url: String::new(),
            starts: 0,
        };
        host.base_url = host.launch().await?;
        Ok(host)
    }

    /// The base URL it printed.
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// Its data directory.
    pub fn data_dir(&self) -> &Path {
        self.data_dir.path()
    }

    /// How many times it was started (1 before any restart).
    pub fn starts(&self) -> u32 {
        self.starts
    }

    /// Whether the process is running.
    pub fn is_running(&mut self) -> bool {
        self.child
            .as_mut()
            .is_some_and(|c| matches!(c.try_wait(), Ok(None)))
    }

    /// SIGKILL the host and reap it (bounded). Killing a host that is not running is a no-op.
    pub async fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.start_kill();
            let _ = tokio::time::timeout(REAP_BUDGET, child.wait()).await;
        }
    }

    /// Start the same command again on the same port and data directory.
    pub async fn restart(&mut self) -> Result<(), SpawnError> {
        self.kill().await;
        let url = self.launch().await?;
        if url != self.base_url {
            let before = std::mem::replace(&mut self.base_url, url.clone());
            return Err(SpawnError::Moved { before, now: url });
        }
        Ok(())
    }

    async fn launch(&mut self) -> Result<String, SpawnError> {
        let (shown, mut cmd) = self.command.render(self.port, self.data_dir.path());
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut child = cmd.spawn().map_err(|e| SpawnError::Start {
            command: shown.clone(),
            reason: e.to_string(),
        })?;
        self.starts += 1;
        let stderr_tail = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
        if let Some(err) = child.stderr.take() {
            tokio::spawn(drain(err, Some(stderr_tail.clone())));
        }
        let stdout = child.stdout.take();
        let found = async {
            let Some(out) = stdout else {
                return Err("its stdout could not be read".to_string());
            };
            let mut lines = BufReader::new(out).lines();
            loop {
                match lines.next_line().await {
                    Ok(Some(line)) => {
                        if let Some(url) = loopback_url(&line) {
                            // Keep reading so a chatty host never blocks on a full pipe.
                            tokio::spawn(async move {
                                while let Ok(Some(_)) = lines.next_line().await {}
                            });
                            return Ok(url);
                        }
                    }
                    Ok(None) => return Err("it closed stdout (exited?)".to_string()),
                    Err(e) => return Err(format!("reading its stdout failed: {e}")),
                }
            }
        };
        let outcome = match tokio::time::timeout(self.budget, found).await {
            Ok(r) => r,
            Err(_) => Err("it stayed silent".to_string()),
        };
        match outcome {
            Ok(url) => {
                self.child = Some(child);
                Ok(url)
            }
            Err(how) => {
                let _ = child.start_kill();
                let _ = tokio::time::timeout(REAP_BUDGET, child.wait()).await;
                // Give the stderr reader a moment to collect the reason.
                tokio::time::sleep(Duration::from_millis(50)).await;
                let stderr = stderr_tail
                    .lock()
                    .map(|l| l.join(" | "))
                    .unwrap_or_default();
                Err(SpawnError::NoUrl {
                    command: shown,
                    budget_ms: self.budget.as_millis() as u64,
                    how,
                    stderr: if stderr.is_empty() {
                        "(empty)".into()
                    } else {
                        stderr
                    },
                })
            }
        }
    }
}

/// Reads a pipe to its end, keeping the last few lines when asked.
async fn drain<R: AsyncRead + Unpin>(
    pipe: R,
    tail: Option<std::sync::Arc<std::sync::Mutex<Vec<String>>>>,
) {
    let mut lines = BufReader::new(pipe).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        if let Some(tail) = &tail
            && let Ok(mut t) = tail.lock()
        {
            t.push(line);
            if t.len() > 8 {
                t.remove(0);
            }
        }
    }
}

/// The first loopback http URL in a line, without a trailing slash.
fn loopback_url(line: &str) -> Option<String> {
    for prefix in ["http://127.0.0.1:", "http://localhost:"] {
        if let Some(at) = line.find(prefix) {
            let rest = &line[at..];
            let end = rest
                .find(|c: char| c.is_whitespace() || c == '"' || c == '\'')
                .unwrap_or(rest.len());
            return Some(rest[..end].trim_end_matches('/').to_string());
        }
    }
    None
}

/// A port on 127.0.0.1 that was free a moment ago.
fn free_port() -> Result<u16, SpawnError> {
    let listener =
        std::net::TcpListener::bind(("127.0.0.1", 0)).map_err(|e| SpawnError::Start {
            command: "bind 127.0.0.1:0".into(),
            reason: e.to_string(),
        })?;
    listener
        .local_addr()
        .map(|a| a.port())
        .map_err(|e| SpawnError::Start {
            command: "bind 127.0.0.1:0".into(),
            reason: e.to_string(),
        })
}

/// Where toolcert's own binary is, to run the embedded reference host as a child process:
/// `TOOLCERT_REFERENCE_HOST_EXE` when set, else the running executable when it is `toolcert`.
pub fn reference_host_exe() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("TOOLCERT_REFERENCE_HOST_EXE") {
        return Some(PathBuf::from(p));
    }
    let exe = std::env::current_exe().ok()?;
    let stem = exe.file_stem()?.to_str()?;
    (stem == "toolcert").then_some(exe)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_loopback_url_in_a_startup_line() {
        assert_eq!(
            loopback_url("reference-host listening on http://127.0.0.1:4242/").as_deref(),
            Some("http://127.0.0.1:4242")
        );
        assert_eq!(
            loopback_url("up at \"http://localhost:8080\" now").as_deref(),
            Some("http://localhost:8080")
        );
        assert_eq!(loopback_url("listening on https://example.com"), None);
    }

    #[test]
    fn placeholders_are_filled_in_both_command_forms() {
        let dir = Path::new("/tmp/x");
        let (shown, _) =
            SpawnCommand::Shell("host --port {port} --data {data_dir}".into()).render(7, dir);
        assert_eq!(shown, "host --port 7 --data /tmp/x");
        let cmd = SpawnCommand::reference_host(Path::new("/bin/toolcert"), Some("m"), None);
        assert!(cmd.pins_port());
        let (shown, _) = cmd.render(9, dir);
        assert_eq!(
            shown,
            "/bin/toolcert reference-host --port 9 --data-dir /tmp/x --enable-seams --mutant m"
        );
        for major in ["v1", "v2"] {
            let upstream =
                SpawnCommand::reference_host(Path::new("/bin/toolcert"), None, Some(major));
            assert!(
                upstream
                    .render(9, dir)
                    .0
                    .ends_with(&format!("--enable-seams --upstream-only={major}"))
            );
        }
    }

    #[tokio::test]
    async fn a_silent_command_is_a_bounded_error_with_its_stderr() {
        let cmd = SpawnCommand::Shell("sh -c 'echo boom >&2; exit 3'".into());
        let err = SpawnedHost::start(&cmd, "t", Duration::from_secs(5))
            .await
            .unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("printed no http://127.0.0.1:PORT URL"),
            "{text}"
        );
        assert!(text.contains("boom"), "{text}");
    }

    #[tokio::test]
    async fn a_spawned_process_is_killed_and_restarted_on_the_same_port() {
        // A stand-in host: prints its URL, then sleeps.
        let cmd = SpawnCommand::Shell(
            "sh -c 'echo listening on http://127.0.0.1:{port}; exec sleep 30'".into(),
        );
        let mut host = SpawnedHost::start(&cmd, "t", Duration::from_secs(5))
            .await
            .unwrap();
        let url = host.base_url().to_string();
        assert!(host.is_running());
        assert!(host.data_dir().is_dir());
        host.kill().await;
        assert!(!host.is_running());
        host.restart().await.unwrap();
        assert_eq!(host.base_url(), url);
        assert_eq!(host.starts(), 2);
        let dir = host.data_dir().to_path_buf();
        drop(host);
        assert!(!dir.exists());
    }
}
