//! Bad input is refused with exit status 2 before any request, whatever it is (a device, a
//! FIFO, a huge number, a URL that only looks like loopback, a token with a control
//! character, a report path that is not a regular file), and a signal ends every process
//! toolcert started, removes its scratch directories and leaves a partial report that
//! rechecks (issue 30).

use crate::hostile;

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

fn exe() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_toolcert"))
}

/// A scratch directory, removed on drop unless a test is failing.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let dir = std::env::temp_dir().join(format!(
            "toolcert-inputs-{}-{name}-{}",
            std::process::id(),
            uuid::Uuid::new_v4().simple()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    fn path(&self, name: &str) -> String {
        self.0.join(name).display().to_string()
    }

    fn file(&self, name: &str, text: &str) -> String {
        std::fs::write(self.0.join(name), text).unwrap();
        self.path(name)
    }

    fn fifo(&self, name: &str) -> String {
        let path = self.path(name);
        let c = std::ffi::CString::new(path.clone()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        path
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

/// A listener that counts the connections made to it (and answers none).
struct Counting {
    url: String,
    port: u16,
    seen: Arc<AtomicUsize>,
}

impl Counting {
    fn on(ip: &str) -> Counting {
        let listener = TcpListener::bind((ip, 0)).expect("bind");
        let port = listener.local_addr().unwrap().port();
        let seen = Arc::new(AtomicUsize::new(0));
        let counter = seen.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                counter.fetch_add(1, Ordering::SeqCst);
                drop(conn);
            }
        });
        Counting {
            url: format!("http://{ip}:{port}"),
            port,
            seen,
        }
    }

    fn seen(&self) -> usize {
        self.seen.load(Ordering::SeqCst)
    }
}

/// Run toolcert with `args`; stdin closed, killed after 20 s.
fn toolcert(args: &[String]) -> (Option<i32>, String, Duration) {
    let started = Instant::now();
    let mut child = Command::new(exe())
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (o, e) = hostile::read_output(&mut child);
    let code = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status.code();
        }
        if started.elapsed() > Duration::from_secs(20) {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let text = format!("{}{}", o.join().unwrap(), e.join().unwrap());
    (code, text, started.elapsed())
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| s.to_string()).collect()
}

/// Refused: exit 2 within a few seconds, saying `needle`, no panic, and (for `run`) no
/// request at `host`.
fn assert_refused(args: &[String], needle: &str, host: Option<&Counting>) {
    let (code, text, took) = toolcert(args);
    assert_eq!(code, Some(2), "{args:?}: {text}");
    assert!(
        text.contains(needle),
        "{args:?} should say {needle:?}: {text}"
    );
    assert!(!text.contains("panicked"), "{args:?}: {text}");
    assert!(took < Duration::from_secs(10), "{args:?} took {took:?}");
    if let Some(h) = host {
        assert_eq!(h.seen(), 0, "{args:?} sent a request: {text}");
    }
}

#[test]
fn unreadable_inputs_are_refused_before_any_request() {
    let dir = Scratch::new("inputs");
    let host = Counting::on("127.0.0.1");
    let fifo = dir.fifo("fifo.json");
    let big = dir.file("big.json", &" ".repeat(2 * 1024 * 1024));
    let run = |extra: &[&str]| {
        let mut a = strings(&["run", "--host", &host.url]);
        a.extend(strings(extra));
        a
    };
    let cases: Vec<(Vec<String>, &str)> = vec![
        (
            run(&["--profile", "/dev/zero"]),
            "not a regular file (it is a character device)",
        ),
        (
            run(&["--profile", &fifo]),
            "not a regular file (it is a FIFO)",
        ),
        (
            run(&["--profile", &big]),
            "larger than the 1 MiB toolcert reads",
        ),
        (run(&["--expect", "/dev/zero"]), "not a regular file"),
        (run(&["--expect", &fifo]), "it is a FIFO"),
        (run(&["--ca-cert", "/dev/zero"]), "not a regular file"),
        (run(&["--ca-cert", &fifo]), "it is a FIFO"),
        (
            run(&["--bundle", &dir.path("b.json"), "--sign", "/dev/zero"]),
            "not a regular file",
        ),
        (
            run(&["--bundle", &dir.path("b.json"), "--sign", &fifo]),
            "it is a FIFO",
        ),
    ];
    for (args, needle) in cases {
        assert_refused(&args, needle, Some(&host));
    }
    // The commands that read reports, bundles and keys.
    let out = dir.path("merged.json");
    for (args, needle) in [
        (strings(&["recheck", "/dev/zero"]), "not a regular file"),
        (strings(&["recheck", &fifo]), "it is a FIFO"),
        (strings(&["baseline", "/dev/zero"]), "not a regular file"),
        (
            strings(&["bundle", "verify", "/dev/zero"]),
            "not a regular file",
        ),
        (strings(&["bundle", "verify", &fifo]), "it is a FIFO"),
        (
            strings(&["bundle", "verify", &big, "--key", "/dev/zero"]),
            "not a regular file",
        ),
        (
            strings(&["merge", "/dev/zero", "-o", &out]),
            "not a regular file",
        ),
    ] {
        assert_refused(&args, needle, None);
    }
    assert!(!Path::new(&out).exists());
}

#[test]
fn nonsense_numbers_urls_tokens_and_report_paths_are_refused_before_any_request() {
    let dir = Scratch::new("flags");
    let host = Counting::on("127.0.0.1");
    let bell_profile = dir.file(
        "bell.json",
        r#"{"roles": {"actor": {"token": "abc\u0007def", "principal": "alice"}}}"#,
    );
    let with_password = format!("http://user:s3cretpw@127.0.0.1:{}/", host.port);
    let run = |extra: &[&str]| {
        let mut a = strings(&["run", "--host", &host.url]);
        a.extend(strings(extra));
        a
    };
    let cases: Vec<(Vec<String>, &str)> = vec![
        (
            run(&["--jobs", "18446744073709551615"]),
            "--jobs 18446744073709551615: expected from 1 to 256",
        ),
        (run(&["--jobs", "100000"]), "expected from 1 to 256"),
        (
            strings(&["run", "--host", "http://127.0.0.1:99999"]),
            "invalid port number",
        ),
        (strings(&["run", "--host", "http://[::1"]), "is not a URL"),
        (
            strings(&["run", "--host", "http://198.51.100.7:80"]),
            "not a loopback address",
        ),
        (
            strings(&["run", "--host", "http://example.com"]),
            "not a loopback address",
        ),
        (
            strings(&["run", "--host", &with_password]),
            "carries credentials",
        ),
        (
            run(&["--token", "operator=abc\ndef"]),
            "control character U+000A",
        ),
        (
            run(&["--token", "operator=abc\u{7f}def"]),
            "control character U+007F",
        ),
        (
            run(&["--profile", &bell_profile]),
            "\"/roles/actor/token\": the token holds the control character U+0007",
        ),
        (
            run(&["--report", "/proc/version"]),
            "cannot create a file in /proc",
        ),
        (run(&["--report", "/dev/full"]), "is a character device"),
        (
            run(&["--junit", "/proc/self/comm"]),
            "cannot create a file in /proc/self",
        ),
        (run(&["--markdown", "/dev/null"]), "is a character device"),
    ];
    for (args, needle) in cases {
        let (code, text, took) = toolcert(&args);
        assert_eq!(code, Some(2), "{args:?}: {text}");
        assert!(
            text.contains(needle),
            "{args:?} should say {needle:?}: {text}"
        );
        assert!(!text.contains("panicked"), "{args:?}: {text}");
        assert!(
            !text.contains("s3cretpw"),
            "the password is never printed: {text}"
        );
        assert!(
            !text.contains("abc\ndef") && !text.contains("abc\u{7f}def"),
            "{text}"
        );
        assert!(took < Duration::from_secs(10), "{args:?} took {took:?}");
    }
    assert_eq!(host.seen(), 0, "a request was sent");
}

#[test]
fn a_spawned_url_with_userinfo_is_refused_and_nothing_reaches_its_host() {
    // 127.0.0.2 is on loopback, but the parser-confusing URL must never be followed at all.
    let behind = Counting::on("127.0.0.2");
    let marker = format!("toolcert-userinfo-{}", uuid::Uuid::new_v4().simple());
    let spawn = format!(
        "sh -c 'echo listening on http://127.0.0.1:1@127.0.0.2:{}/; sleep 30; echo {marker}'",
        behind.port
    );
    let args = strings(&[
        "run",
        "--spawn",
        &spawn,
        "--token",
        "operator=abcdefgh12345678",
    ]);
    let (code, text, took) = toolcert(&args);
    assert_eq!(code, Some(2), "{text}");
    assert!(text.contains("carries credentials"), "{text}");
    assert!(
        text.contains("\"http://[credentials]@127.0.0.2:"),
        "the refusal masks the credentials: {text}"
    );
    assert!(took < Duration::from_secs(10), "{took:?}");
    assert_eq!(
        behind.seen(),
        0,
        "a request reached the host behind the userinfo"
    );
    assert!(
        hostile::alive_with(&marker).is_empty(),
        "the command was ended"
    );
}

/// Scratch directories a toolcert process `pid` made (spawned hosts' data directories).
fn scratch_of(pid: u32) -> Vec<PathBuf> {
    let prefix = format!("toolcert-{pid}-");
    std::fs::read_dir(std::env::temp_dir())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
        .map(|e| e.path())
        .collect()
}

/// Children of `pid` (zombies excepted).
fn children_of(pid: u32) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_string_lossy().parse::<u32>().ok())
        .filter(|p| {
            std::fs::read_to_string(format!("/proc/{p}/stat")).is_ok_and(|stat| {
                let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
                let mut f = rest.split_whitespace();
                let state = f.next().unwrap_or("Z");
                f.next().and_then(|x| x.parse::<u32>().ok()) == Some(pid) && state != "Z"
            })
        })
        .collect()
}

/// Processes carrying any toolcert spawn mark in their environment (a spawned host of some
/// toolcert run).
fn marked_processes(marks: &[String]) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_string_lossy().parse::<u32>().ok())
        .filter(|p| {
            std::fs::read(format!("/proc/{p}/environ")).is_ok_and(|env| {
                env.split(|b| *b == 0).any(|v| {
                    marks
                        .iter()
                        .any(|m| v == format!("TOOLCERT_SPAWN_MARK={m}").as_bytes())
                })
            })
        })
        .collect()
}

/// The `--port N` a process was started with, if any.
fn port_of(pid: u32) -> Option<u16> {
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    let args: Vec<&[u8]> = cmdline.split(|b| *b == 0).collect();
    let at = args.iter().position(|a| *a == b"--port")?;
    std::str::from_utf8(args.get(at + 1)?).ok()?.parse().ok()
}

/// Whether some TCP connection to 127.0.0.1:`port` is established (`/proc/net/tcp`, state
/// 01; the port is the hex after the local or remote address's colon).
fn connected_to(port: u16) -> bool {
    let hex = format!(":{port:04X}");
    ["/proc/net/tcp", "/proc/net/tcp6"].iter().any(|table| {
        std::fs::read_to_string(table).is_ok_and(|text| {
            text.lines().skip(1).any(|line| {
                let f: Vec<&str> = line.split_whitespace().collect();
                f.len() > 3 && f[3] == "01" && (f[1].ends_with(&hex) || f[2].ends_with(&hex))
            })
        })
    })
}

/// The spawn marks in the environments of `pids`.
fn marks_of(pids: &[u32]) -> Vec<String> {
    pids.iter()
        .filter_map(|p| std::fs::read(format!("/proc/{p}/environ")).ok())
        .flat_map(|env| {
            env.split(|b| *b == 0)
                .filter_map(|v| v.strip_prefix(b"TOOLCERT_SPAWN_MARK=".as_slice()))
                .map(|m| String::from_utf8_lossy(m).into_owned())
                .collect::<Vec<_>>()
        })
        .collect()
}

/// Start `toolcert run ARGS`, wait until it has started a child process, send it `signal`
/// (`SIGINT` or `SIGTERM`), and check what it leaves: exit 128 + the signal, no process it
/// started, no scratch directory, and a report marked partial that rechecks.
fn interrupt_and_check(dir: &Scratch, args: &[String], signal: &str) {
    let (signo, code) = match signal {
        "SIGTERM" => (libc::SIGTERM, 143),
        _ => (libc::SIGINT, 130),
    };
    let report = dir.path("r.json");
    let mut argv = args.to_vec();
    argv.extend(strings(&[
        "-q",
        "--report",
        &report,
        "--markdown",
        &dir.path("r.md"),
    ]));
    let mut child = Command::new(exe())
        .args(&argv)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let (o, e) = hostile::read_output(&mut child);
    // Wait for a host process of toolcert's own, then give the run a moment to be under way.
    // A host counts once it carries its spawn mark: a child seen between fork and exec still
    // has toolcert's own environment, without the mark (seen with many tests running at once).
    let started = Instant::now();
    let mut kids = Vec::new();
    let mut marks = Vec::new();
    while started.elapsed() < Duration::from_secs(30) {
        kids = children_of(pid);
        marks = marks_of(&kids);
        if !marks.is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!kids.is_empty(), "toolcert started no host process");
    assert!(!marks.is_empty(), "its hosts carry a spawn mark");
    // A host that is up is not yet a run under way: toolcert writes its partial report only
    // once the run has begun, so wait (bounded) until toolcert has connected to its host
    // (discovery is its first request), then give the run a moment.
    let ports: Vec<u16> = kids.iter().filter_map(|k| port_of(*k)).collect();
    while !ports.is_empty()
        && !ports.iter().any(|p| connected_to(*p))
        && started.elapsed() < Duration::from_secs(30)
    {
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(100));
    // SAFETY: signalling the child this test started.
    unsafe {
        libc::kill(pid as i32, signo);
    }
    let signalled = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(
            signalled.elapsed() < Duration::from_secs(20),
            "toolcert did not exit after {signal}"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    let text = format!("{}{}", o.join().unwrap(), e.join().unwrap());
    assert_eq!(status.code(), Some(code), "{text}");
    assert!(!text.contains("panicked"), "{text}");
    // Nothing it started is left, and none of its scratch directories.
    std::thread::sleep(Duration::from_millis(100));
    let left = marked_processes(&marks);
    assert!(left.is_empty(), "processes left: {left:?}");
    assert!(children_of(pid).is_empty());
    let dirs = scratch_of(pid);
    assert!(dirs.is_empty(), "scratch directories left: {dirs:?}");
    // The report of what was measured, marked partial, that rechecks.
    let text_report = std::fs::read_to_string(&report).expect("a partial report was written");
    let value: serde_json::Value = serde_json::from_str(&text_report).unwrap();
    assert_eq!(
        value["interrupted"]["signal"], signal,
        "{}",
        value["interrupted"]
    );
    // What was not measured says why (a row's detail may show another leg's reason).
    let interrupted = value["scenarios"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|s| s["checks"].as_array().unwrap())
        .filter(|c| {
            c["detail"]
                .as_str()
                .is_some_and(|d| d.contains(&format!("interrupted by {signal}")))
        })
        .count();
    assert!(interrupted > 0, "checks not judged say why");
    assert!(
        value["rows"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["disposition"] != "pass" || r["assertions"].as_u64() > Some(0)),
        "nothing unmeasured passes"
    );
    let (code, recheck, _) = toolcert(&strings(&["recheck", &report]));
    assert_eq!(code, Some(0), "recheck: {recheck}");
}

#[test]
fn sigint_during_an_embedded_run_ends_every_process_and_leaves_a_partial_report() {
    let dir = Scratch::new("sigint-embedded");
    // The kill-and-restart scenarios run the reference host as child processes, one per
    // scenario and trial.
    let args = strings(&["run", "--repeat", "4", "--seed", "5"]);
    interrupt_and_check(&dir, &args, "SIGINT");
}

#[test]
fn sigint_during_a_spawn_run_ends_the_host_and_leaves_a_partial_report() {
    let dir = Scratch::new("sigint-spawn");
    let profile = dir.file(
        "profile.json",
        r#"{"roles": {
          "operator": {"token": "refhost-operator-token", "principal": "toolcert-operator"},
          "actor": {"token": "refhost-alice-token", "principal": "alice"},
          "peer": {"token": "refhost-bob-token", "principal": "bob"},
          "lacking": {"token": "refhost-carol-token", "principal": "carol"},
          "unevaluable": {"token": "refhost-dave-token", "principal": "dave"},
          "foreign": {"token": "refhost-erin-token", "principal": "erin"}},
          "scopes": {"granted": "tools:write"},
          "facts": {"recordLimitBytes": 65536, "clarificationTool": "ask_user", "mcpServerPath": "/mcp", "rateLimitCapacity": 5}}"#,
    );
    let spawn = format!(
        "{} reference-host --port {{port}} --data-dir {{data_dir}} --enable-seams",
        exe().display()
    );
    let args = strings(&[
        "run",
        "--spawn",
        &spawn,
        "--profile",
        &profile,
        "--jobs",
        "2",
    ]);
    interrupt_and_check(&dir, &args, "SIGINT");
    // SIGTERM takes the same path, exiting 143.
    let dir = Scratch::new("sigterm-spawn");
    interrupt_and_check(&dir, &args, "SIGTERM");
}
