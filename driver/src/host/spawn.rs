//! Hosts toolcert starts itself (`--spawn 'CMD'`, or the embedded reference host run as a
//! child process), so recovery scenarios can kill one with SIGKILL at a chosen point and start
//! it again on the same data directory (TTC §D, TURN-D3, D7, D8).
//!
//! A spawned host gets a port and a data directory from toolcert: `{port}` and `{data_dir}` in
//! the command are replaced before it runs, and a restart runs the same command with the same
//! values. Its base URL is the first loopback `http://` URL it prints on stdout, parsed whole
//! ([`super::loopback`]: userinfo or a host off loopback is refused); every wait for it is
//! bounded, and so is what toolcert reads of its output: at most [`MAX_STDOUT_BEFORE_URL`]
//! before the URL (a line is kept up to [`MAX_LINE`]), then stdout is drained and dropped and
//! stderr drained into a short tail for error messages, so a host that writes without end costs
//! no memory. It runs in a process group of its own and is ended as a whole, a command that
//! daemonizes included ([`super::reap`]).

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tokio::io::AsyncRead;
use tokio::process::{Child, Command};

/// How long a spawned host may take to print its URL.
pub const STARTUP_BUDGET: Duration = Duration::from_secs(15);

/// How long a killed host may take to be reaped.
const REAP_BUDGET: Duration = Duration::from_secs(5);

/// The most a host may write to stdout before its URL line.
pub const MAX_STDOUT_BEFORE_URL: usize = 1024 * 1024;

/// The longest line of a host's output toolcert keeps (the rest of the line is dropped).
pub const MAX_LINE: usize = 8 * 1024;

/// Lines of a host's stderr kept for error messages (the last ones).
const STDERR_TAIL: usize = 8;

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
    /// It printed a URL meant for loopback that is not one: userinfo before the host
    /// (`http://127.0.0.1:1@198.51.100.7/`), a host off loopback, or no URL at all.
    #[error("`{command}` printed a URL toolcert refuses: {reason}")]
    BadUrl {
        /// The command as run.
        command: String,
        /// Why (the URL's credentials masked).
        reason: String,
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
        super::reap::track_dir(&path);
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
        super::reap::untrack_dir(&self.path);
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
    /// The mark of the current start ([`super::reap::MARK_VAR`]).
    mark: String,
    base_url: String,
    starts: u32,
}

impl Drop for SpawnedHost {
    fn drop(&mut self) {
        if let Some(child) = self.child.take() {
            super::reap::end_tree(child.id(), &self.mark);
            if let Some(pid) = child.id() {
                super::reap::untrack(pid);
            }
        }
    }
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
            mark: String::new(),
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

    /// SIGKILL the host, its process group and whatever it forked that carries its mark,
    /// and reap it (bounded). Killing a host that is not running is a no-op.
    pub async fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let pid = child.id();
            super::reap::end_tree(pid, &self.mark);
            let _ = child.start_kill();
            let _ = tokio::time::timeout(REAP_BUDGET, child.wait()).await;
            if let Some(pid) = pid {
                super::reap::untrack(pid);
            }
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
        self.mark = uuid::Uuid::new_v4().simple().to_string();
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .env(super::reap::MARK_VAR, &self.mark)
            .kill_on_drop(true);
        // A process group of its own, ended as one.
        #[cfg(unix)]
        cmd.process_group(0);
        let mut child = cmd.spawn().map_err(|e| SpawnError::Start {
            command: shown.clone(),
            reason: e.to_string(),
        })?;
        if let Some(pid) = child.id() {
            super::reap::track(pid, &self.mark);
        }
        self.starts += 1;
        let stderr_tail = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
        if let Some(err) = child.stderr.take() {
            tokio::spawn(drain(err, Some(stderr_tail.clone())));
        }
        let stdout = child.stdout.take();
        let found = async {
            let Some(out) = stdout else {
                return Err(Failed::Silent("its stdout could not be read".to_string()));
            };
            let mut lines = BoundedLines::new(out).limited(MAX_STDOUT_BEFORE_URL);
            loop {
                match lines.next_line().await {
                    Ok(Some(line)) => {
                        if let Some(url) = loopback_url(&line).map_err(Failed::Refused)? {
                            // Keep reading so a chatty host never blocks on a full pipe.
                            tokio::spawn(drain_lines(lines.unlimited(), None));
                            return Ok(url);
                        }
                    }
                    Ok(None) => {
                        return Err(Failed::Silent("it closed stdout (exited?)".to_string()));
                    }
                    Err(e) => {
                        return Err(Failed::Silent(format!("reading its stdout failed: {e}")));
                    }
                }
            }
        };
        let outcome = match tokio::time::timeout(self.budget, found).await {
            Ok(r) => r,
            Err(_) => Err(Failed::Silent("it stayed silent".to_string())),
        };
        match outcome {
            Ok(url) => {
                self.child = Some(child);
                Ok(url)
            }
            Err(failed) => {
                let pid = child.id();
                super::reap::end_tree(pid, &self.mark);
                let _ = child.start_kill();
                let _ = tokio::time::timeout(REAP_BUDGET, child.wait()).await;
                if let Some(pid) = pid {
                    super::reap::untrack(pid);
                }
                let how = match failed {
                    Failed::Refused(reason) => {
                        return Err(SpawnError::BadUrl {
                            command: shown,
                            reason,
                        });
                    }
                    Failed::Silent(how) => how,
                };
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

/// Why no URL was taken from a host's stdout.
enum Failed {
    /// None came (what happened instead).
    Silent(String),
    /// One came that is refused (why).
    Refused(String),
}

/// Lines of a pipe, each kept up to [`MAX_LINE`] bytes (the rest of a longer line is read and
/// dropped), so a host writing one endless line costs a bounded buffer.
struct BoundedLines<R> {
    pipe: R,
    buf: Vec<u8>,
    start: usize,
    consumed: usize,
    /// Reading more than this from the pipe is an error (what a host may write before its
    /// URL).
    limit: Option<usize>,
    eof: bool,
}

impl<R: AsyncRead + Unpin> BoundedLines<R> {
    fn new(pipe: R) -> Self {
        BoundedLines {
            pipe,
            buf: Vec::new(),
            start: 0,
            consumed: 0,
            limit: None,
            eof: false,
        }
    }

    /// Fail once more than `limit` bytes were read.
    fn limited(mut self, limit: usize) -> Self {
        self.limit = Some(limit);
        self
    }

    /// Read on without a limit (only a line's length is bounded).
    fn unlimited(mut self) -> Self {
        self.limit = None;
        self
    }

    /// The next line (lossy UTF-8, at most [`MAX_LINE`] bytes of it), `None` at the end.
    async fn next_line(&mut self) -> std::io::Result<Option<String>> {
        use tokio::io::AsyncReadExt as _;
        let mut line: Vec<u8> = Vec::new();
        let mut dropping = false;
        loop {
            if let Some(nl) = self.buf[self.start..].iter().position(|b| *b == b'\n') {
                let end = self.start + nl;
                if !dropping {
                    let room = MAX_LINE.saturating_sub(line.len());
                    line.extend_from_slice(&self.buf[self.start..end.min(self.start + room)]);
                }
                self.start = end + 1;
                return Ok(Some(String::from_utf8_lossy(&line).into_owned()));
            }
            if !dropping {
                let room = MAX_LINE.saturating_sub(line.len());
                let take = (self.buf.len() - self.start).min(room);
                line.extend_from_slice(&self.buf[self.start..self.start + take]);
                dropping = line.len() >= MAX_LINE;
            }
            self.buf.clear();
            self.start = 0;
            if self.eof {
                return Ok((!line.is_empty()).then(|| String::from_utf8_lossy(&line).into_owned()));
            }
            if let Some(limit) = self.limit.filter(|l| self.consumed > *l) {
                return Err(std::io::Error::other(format!(
                    "it wrote more than {} without printing its URL",
                    toolcert_core::input::human(limit as u64)
                )));
            }
            let mut chunk = [0u8; 8192];
            let n = self.pipe.read(&mut chunk).await?;
            self.consumed += n;
            if n == 0 {
                self.eof = true;
            } else {
                self.buf.extend_from_slice(&chunk[..n]);
            }
        }
    }
}

/// Reads a pipe to its end, keeping the last few lines (each at most [`MAX_LINE`]) when asked.
async fn drain<R: AsyncRead + Unpin>(
    pipe: R,
    tail: Option<std::sync::Arc<std::sync::Mutex<Vec<String>>>>,
) {
    drain_lines(BoundedLines::new(pipe), tail).await;
}

async fn drain_lines<R: AsyncRead + Unpin>(
    mut lines: BoundedLines<R>,
    tail: Option<std::sync::Arc<std::sync::Mutex<Vec<String>>>>,
) {
    while let Ok(Some(line)) = lines.next_line().await {
        if let Some(tail) = &tail
            && let Ok(mut t) = tail.lock()
        {
            t.push(line.chars().take(512).collect());
            if t.len() > STDERR_TAIL {
                t.remove(0);
            }
        }
    }
}

/// The first URL in a line that is meant for loopback (`http://` then `127.`, `localhost`,
/// `[::1]` or `[::ffff:127.`), parsed whole and without a trailing slash; `Err` when such a
/// URL is refused (userinfo, a host off loopback once parsed), `Ok(None)` when the line has
/// none. Other URLs (a host logging `http://example.com/docs`) are not its URL and are skipped.
fn loopback_url(line: &str) -> Result<Option<String>, String> {
    for (at, _) in line.match_indices("http://") {
        let rest = &line[at..];
        let end = rest
            .find(|c: char| c.is_whitespace() || c == '"' || c == '\'' || c == '<' || c == '>')
            .unwrap_or(rest.len());
        let candidate = &rest[..end];
        let after = candidate["http://".len()..].to_ascii_lowercase();
        let meant = ["127.", "localhost", "[::1]", "[::ffff:127."]
            .iter()
            .any(|p| after.starts_with(p));
        if !meant {
            continue;
        }
        return super::loopback::parse_base_url(candidate, false)
            .map(|u| Some(u.as_base()))
            .map_err(|e| e.to_string());
    }
    Ok(None)
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
            loopback_url("reference-host listening on http://127.0.0.1:4242/"),
            Ok(Some("http://127.0.0.1:4242".into()))
        );
        assert_eq!(
            loopback_url("up at \"http://localhost:8080\" now"),
            Ok(Some("http://localhost:8080".into()))
        );
        assert_eq!(loopback_url("listening on https://example.com"), Ok(None));
        assert_eq!(
            loopback_url("docs at http://example.com/x, up on http://127.0.0.1:9"),
            Ok(Some("http://127.0.0.1:9".into()))
        );
    }

    #[test]
    fn a_url_that_only_looks_like_loopback_is_refused() {
        for line in [
            "http://127.0.0.1:1@127.0.0.2:8080/",
            "listening on http://127.0.0.1:1@198.51.100.7:80/",
            "http://localhost:1@example.com/",
            "http://127.0.0.1:99999",
        ] {
            assert!(loopback_url(line).is_err(), "{line}");
        }
    }

    #[tokio::test]
    async fn an_endless_line_before_the_url_costs_a_bounded_read() {
        // `yes` without newlines: one line without end.
        let cmd = SpawnCommand::Shell("sh -c 'yes spam | tr -d \"\\n\"'".into());
        let started = std::time::Instant::now();
        let err = SpawnedHost::start(&cmd, "t", Duration::from_secs(10))
            .await
            .unwrap_err()
            .to_string();
        assert!(err.contains("without printing its URL"), "{err}");
        assert!(started.elapsed() < Duration::from_secs(10));
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
