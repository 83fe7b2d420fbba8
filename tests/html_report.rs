//! The HTML report (`toolcert run --html`) in a real browser: headless Chromium (Debian's
//! `chromium`, which `.ci/run` installs) loads the page the binary wrote, and the tests read the
//! DOM it rendered (`--dump-dom`, after the page's script ran). The filter state is the URL
//! fragment, so loading `r.html#disposition=fail` is what clicking the `fail` chip does.
//!
//! Chromium missing is a failure that says how to install it, never a skip.

use crate::hostile;
use crate::support::scratch;

use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read as _, Write as _};
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::Value;

/// Where Debian puts Chromium; `TOOLCERT_CHROMIUM` overrides it.
const CHROMIUM: &str = "/usr/bin/chromium";

/// The longest one page load may take (startup, render, script) before Chromium is killed.
const LOAD_BUDGET: Duration = Duration::from_secs(90);

fn exe() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_toolcert"))
}

fn chromium() -> PathBuf {
    let path = std::env::var_os("TOOLCERT_CHROMIUM")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(CHROMIUM));
    assert!(
        path.is_file(),
        "{} not found: the HTML report tests need headless Chromium. Install it with \
         `apt-get install -y chromium` (Debian; .ci/run does this on CI), or point \
         TOOLCERT_CHROMIUM at a Chromium binary",
        path.display()
    );
    path
}

/// A scratch directory that outlives the test (under cargo's per-target tmp dir, one per
/// test process), so the screenshot it prints can be opened afterwards.
fn scratch(name: &str) -> PathBuf {
    scratch::process_scratch("html_report", name)
}

/// Run headless Chromium on `file://page#fragment` with `extra` flags and return its stdout.
/// It starts in its own process group, which is killed when it is done or over
/// [`LOAD_BUDGET`], so no renderer or crash handler outlives the load.
fn chromium_run(page: &Path, fragment: &str, extra: &[String], dir: &Path) -> String {
    let profile = dir.join(format!("profile-{}", uuid::Uuid::new_v4().simple()));
    let url = format!("file://{}{fragment}", page.display());
    let mut child = Command::new(chromium())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-extensions",
            "--virtual-time-budget=5000",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(extra)
        .arg(&url)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", chromium().display()));
    let pgid = child.id() as i32;
    let drain = |mut r: Box<dyn std::io::Read + Send>| {
        std::thread::spawn(move || {
            let mut v = Vec::new();
            let _ = r.read_to_end(&mut v);
            String::from_utf8_lossy(&v).into_owned()
        })
    };
    let out = drain(Box::new(child.stdout.take().expect("stdout")));
    let err = drain(Box::new(child.stderr.take().expect("stderr")));
    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if started.elapsed() > LOAD_BUDGET => break None,
            Ok(None) => std::thread::sleep(Duration::from_millis(50)),
            Err(e) => panic!("waiting for chromium: {e}"),
        }
    };
    // SAFETY: kill(2) on the process group this test started (its id is the child's pid).
    unsafe {
        libc::kill(-pgid, libc::SIGKILL);
    }
    let _ = child.wait();
    let (stdout, stderr) = (
        out.join().unwrap_or_default(),
        err.join().unwrap_or_default(),
    );
    let _ = std::fs::remove_dir_all(&profile);
    match status {
        Some(s) if s.success() => stdout,
        Some(s) => panic!("chromium on {url} exited {s}\n--- stderr\n{stderr}"),
        None => panic!(
            "chromium on {url} did not finish within {LOAD_BUDGET:?} and was killed\n--- stderr\n{stderr}"
        ),
    }
}

/// The DOM Chromium rendered for `page#fragment`, after the page's script ran.
fn dom(page: &Path, fragment: &str, dir: &Path) -> String {
    let out = chromium_run(page, fragment, &["--dump-dom".into()], dir);
    assert!(
        out.contains("</html>"),
        "chromium printed no DOM for {}{fragment}:\n{out}",
        page.display()
    );
    out
}

/// One start tag's attributes.
type Attrs = BTreeMap<String, String>;

/// The attributes of every `<name …>` start tag of `class` (any, when `None`) in a serialized
/// DOM. Chromium serializes every attribute as `name="value"` with `&` and `"` escaped, so a
/// tag ends at the first `>` outside a quoted value.
fn tags(dom: &str, name: &str, class: Option<&str>) -> Vec<Attrs> {
    let open = format!("<{name}");
    let mut out = Vec::new();
    let mut rest = dom;
    while let Some(at) = rest.find(&open) {
        rest = &rest[at + open.len()..];
        if !rest.starts_with([' ', '>', '\n']) {
            continue;
        }
        let mut attrs = Attrs::new();
        let mut chars = rest.char_indices().peekable();
        let mut end = rest.len();
        loop {
            while chars.next_if(|(_, c)| c.is_whitespace()).is_some() {}
            let Some(&(i, c)) = chars.peek() else { break };
            if c == '>' || c == '/' {
                end = i;
                break;
            }
            let mut key = String::new();
            while let Some((_, c)) = chars.next_if(|(_, c)| !matches!(c, '=' | '>' | ' ' | '/')) {
                key.push(c);
            }
            let mut value = String::new();
            if chars.next_if(|(_, c)| *c == '=').is_some() {
                if chars.next_if(|(_, c)| *c == '"').is_some() {
                    for (_, c) in chars.by_ref() {
                        if c == '"' {
                            break;
                        }
                        value.push(c);
                    }
                } else {
                    while let Some((_, c)) = chars.next_if(|(_, c)| !matches!(c, ' ' | '>')) {
                        value.push(c);
                    }
                }
            }
            attrs.insert(key, value.replace("&quot;", "\"").replace("&amp;", "&"));
        }
        rest = &rest[end..];
        let classes = attrs.get("class").cloned().unwrap_or_default();
        if class.is_none_or(|want| classes.split(' ').any(|c| c == want)) {
            out.push(attrs);
        }
    }
    out
}

/// Row ids of the `article.row` elements, split into (shown, hidden).
fn row_visibility(dom: &str) -> (BTreeSet<String>, BTreeSet<String>) {
    let (mut shown, mut hidden) = (BTreeSet::new(), BTreeSet::new());
    for a in tags(dom, "article", Some("row")) {
        let id = a.get("data-row").cloned().expect("a row carries data-row");
        if a.contains_key("hidden") {
            hidden.insert(id);
        } else {
            shown.insert(id);
        }
    }
    (shown, hidden)
}

/// The `data-shown` count the page displays.
fn shown_count(dom: &str) -> usize {
    tags(dom, "b", None)
        .into_iter()
        .find(|a| a.get("id").map(String::as_str) == Some("shown"))
        .and_then(|a| a.get("data-shown").and_then(|n| n.parse().ok()))
        .expect("the page shows how many rows are shown")
}

/// Chips of one filter group: value → (count it shows, pressed).
fn chips(dom: &str, filter: &str) -> BTreeMap<String, (usize, bool)> {
    tags(dom, "a", Some("chip"))
        .into_iter()
        .filter(|a| a.get("data-filter").map(String::as_str) == Some(filter))
        .map(|a| {
            let n = a["data-count"].parse().expect("a chip's count is a number");
            (
                a["data-value"].clone(),
                (n, a.get("aria-pressed").map(String::as_str) == Some("true")),
            )
        })
        .collect()
}

/// The report pair the browser tests read: the embedded host with a mutant that makes
/// rows `pass`, `fail` and `blocked` (so the filters have something to separate), run once.
struct Run {
    dir: PathBuf,
    html: PathBuf,
    report: Value,
}

fn mixed_run() -> &'static Run {
    static RUN: OnceLock<Run> = OnceLock::new();
    RUN.get_or_init(|| {
        let dir = scratch("mixed");
        let (json, html) = (dir.join("r.json"), dir.join("r.html"));
        let out = Command::new(exe())
            .args([
                "run",
                "-q",
                "--seed",
                "1",
                "--reference-mutant",
                "rate-limit-absent",
            ])
            .arg("--report")
            .arg(&json)
            .arg("--html")
            .arg(&html)
            .stdin(Stdio::null())
            .output()
            .expect("toolcert runs");
        let text = std::fs::read_to_string(&json).unwrap_or_else(|e| {
            panic!(
                "no r.json ({e}); exit {:?}\n{}\n{}",
                out.status,
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            )
        });
        assert!(html.is_file(), "--html wrote nothing");
        Run {
            dir,
            html,
            report: serde_json::from_str(&text).expect("r.json is JSON"),
        }
    })
}

fn rows_where(report: &Value, key: &str, value: &str) -> BTreeSet<String> {
    report["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .filter(|r| r[key] == value)
        .map(|r| r["requirementId"].as_str().unwrap_or("").to_string())
        .collect()
}

#[test]
fn the_counts_the_browser_shows_are_the_json_report_s() {
    chromium(); // fail first, and say how to install it
    let run = mixed_run();
    let dom = dom(&run.html, "", &run.dir);
    let report = &run.report;
    let rows = report["rows"].as_array().expect("rows");

    let dispositions = chips(&dom, "disposition");
    let seen: BTreeSet<&str> = rows
        .iter()
        .filter_map(|r| r["disposition"].as_str())
        .collect();
    assert!(
        seen.len() >= 3,
        "the fixture run has pass, fail and blocked rows: {seen:?}"
    );
    for d in &seen {
        assert!(dispositions.contains_key(*d), "no chip for {d}");
    }
    for (d, (n, pressed)) in &dispositions {
        if d.is_empty() {
            assert_eq!(*n, rows.len(), "the `all` chip counts every row");
            assert!(pressed, "unfiltered, `all` is selected");
            continue;
        }
        assert_eq!(
            Some(*n as u64),
            report["summary"][d.as_str()].as_u64(),
            "the {d} count equals the JSON summary's"
        );
        assert_eq!(*n, rows_where(report, "disposition", d).len(), "{d} rows");
    }
    for (f, (n, _)) in chips(&dom, "family").iter().filter(|(f, _)| !f.is_empty()) {
        assert_eq!(*n, rows_where(report, "family", f).len(), "family {f}");
    }
    // The per-family table adds up to the same counts.
    let cells = tags(&dom, "td", None);
    for (d, (n, _)) in dispositions.iter().filter(|(d, _)| !d.is_empty()) {
        let in_table: usize = cells
            .iter()
            .filter(|c| c.get("data-disposition") == Some(d))
            .map(|c| c["data-count"].parse::<usize>().unwrap_or(0))
            .sum();
        assert_eq!(in_table, 2 * n, "family rows plus the `all` row, {d}");
    }
    let (shown, hidden) = row_visibility(&dom);
    assert_eq!(shown.len(), rows.len(), "unfiltered, every row is shown");
    assert!(hidden.is_empty());
    // Readable without JavaScript: the file itself, before any script, has every row shown.
    let raw = std::fs::read_to_string(&run.html).expect("r.html");
    let (raw_shown, raw_hidden) = row_visibility(&raw);
    assert_eq!(
        raw_shown, shown,
        "the rows are in the markup, not made by the script"
    );
    assert!(raw_hidden.is_empty() && raw.contains("<noscript>"));
    assert_eq!(shown_count(&dom), rows.len());
    let verdict = tags(&dom, "p", None)
        .into_iter()
        .find(|a| a.get("id").map(String::as_str) == Some("verdict"))
        .expect("a verdict");
    assert_eq!(
        verdict["data-certified"],
        report["summary"]["certified"].to_string()
    );
    assert!(
        dom.contains("curl -sS -X"),
        "the transcripts carry curl reproducers"
    );
    assert!(dom.contains(&format!(
        "<code id=\"digest\">{}</code>",
        report["digest"].as_str().unwrap_or("?")
    )));

    let size = std::fs::metadata(&run.html).map(|m| m.len()).unwrap_or(0);
    assert!(
        size < 4 * 1024 * 1024,
        "the full suite's page is {size} bytes"
    );
    let shot = run.dir.join("r.png");
    chromium_run(
        &run.html,
        "",
        &[
            format!("--screenshot={}", shot.display()),
            "--window-size=1280,2000".into(),
        ],
        &run.dir,
    );
    let png = std::fs::read(&shot).unwrap_or_default();
    assert!(
        png.starts_with(b"\x89PNG\r\n\x1a\n") && png.len() > 10_000,
        "no screenshot at {}",
        shot.display()
    );
    // Straight to stderr: libtest captures only the print macros.
    let _ = writeln!(
        std::io::stderr(),
        "screenshot: {} ({} bytes; page {size} bytes, {} rows)",
        shot.display(),
        png.len(),
        rows.len()
    );
}

/// A fragment, the rows it must leave shown, and the chip (filter, value) it presses.
type FilterCase<'a> = (String, BTreeSet<String>, Option<(&'a str, &'a str)>);

#[test]
fn a_filter_in_the_fragment_leaves_exactly_the_matching_rows_shown() {
    chromium(); // fail first, and say how to install it
    let run = mixed_run();
    let report = &run.report;
    let all: BTreeSet<String> = report["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| r["requirementId"].as_str().unwrap_or("").to_string())
        .collect();
    let family = "HOOKS-RL";
    let cases: Vec<FilterCase> = vec![
        (
            "#disposition=fail".into(),
            rows_where(report, "disposition", "fail"),
            Some(("disposition", "fail")),
        ),
        (
            "#disposition=blocked".into(),
            rows_where(report, "disposition", "blocked"),
            Some(("disposition", "blocked")),
        ),
        // A disposition no row has: nothing shown.
        ("#disposition=error".into(), BTreeSet::new(), None),
        (
            format!("#family={family}"),
            rows_where(report, "family", family),
            Some(("family", family)),
        ),
        (
            format!("#disposition=pass&family={family}"),
            rows_where(report, "family", family)
                .intersection(&rows_where(report, "disposition", "pass"))
                .cloned()
                .collect(),
            Some(("family", family)),
        ),
    ];
    for (fragment, want, pressed) in cases {
        let dom = dom(&run.html, &fragment, &run.dir);
        let (shown, hidden) = row_visibility(&dom);
        assert_eq!(shown, want, "{fragment}: the rows shown");
        assert_eq!(
            hidden,
            all.difference(&want).cloned().collect::<BTreeSet<_>>(),
            "{fragment}: the rows hidden"
        );
        assert_eq!(shown_count(&dom), want.len(), "{fragment}: the count shown");
        if let Some((filter, value)) = pressed {
            assert_eq!(
                chips(&dom, filter).get(value).map(|c| c.1),
                Some(true),
                "{fragment}: the {value} chip is pressed"
            );
            assert_eq!(
                chips(&dom, filter).get("").map(|c| c.1),
                Some(false),
                "{fragment}: `all` is not"
            );
        }
    }
    assert!(
        !rows_where(report, "disposition", "fail").is_empty()
            && !rows_where(report, "family", family).is_empty(),
        "the fixture has fail rows and {family} rows"
    );
}

#[test]
fn host_supplied_markup_is_text_in_the_browser() {
    chromium(); // fail first, and say how to install it
    // A host that puts `<script>`, terminal escapes and its callers' tokens into everything.
    let host = hostile::HostileHost::start_with_discovery(
        hostile::Behaviour::EchoAuth,
        hostile::DISCOVERY_WITH_CONTROLS,
    );
    let secrets = hostile::Secrets::fresh();
    let dir = scratch("hostile");
    let a = hostile::run_toolcert(
        exe(),
        &host.url(),
        &["-q", "--seed", "11", "--timeout-scale", "0.2", "hooks."],
        &secrets,
        &dir,
        Duration::from_secs(120),
    );
    let page = dir.join("r.html");
    let dom = dom(&page, "", &dir);
    assert_eq!(
        tags(&dom, "script", None).len(),
        1,
        "the page's own script is the only one"
    );
    assert!(tags(&dom, "img", None).is_empty(), "no host <img> element");
    assert!(
        dom.contains("&lt;script&gt;alert('toolcert')&lt;/script&gt;"),
        "the browser renders the host's script as text"
    );
    assert!(dom.contains("<title>toolcert report: http://127.0.0.1:"));
    let html = a.html.as_deref().expect("r.html written");
    assert!(
        html.contains(
            &hostile::SCRIPT
                .replace('<', "&lt;")
                .replace('>', "&gt;")
                .replace('\'', "&#39;")
        ),
        "the host's script is in the page, as text"
    );
    for token in secrets.all() {
        assert!(!dom.contains(token), "a token reached the page");
    }
}

#[test]
fn an_html_path_is_refused_like_every_report_path() {
    let dir = scratch("paths");
    let same = dir.join("r.json");
    let out = Command::new(exe())
        .args(["run", "--report"])
        .arg(&same)
        .arg("--html")
        .arg(&same)
        .output()
        .expect("toolcert runs");
    let text = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(
        text.contains("--html") && text.contains("give each report its own path"),
        "{text}"
    );
    let out = Command::new(exe())
        .args(["run", "--html"])
        .arg(dir.join("missing").join("r.html"))
        .output()
        .expect("toolcert runs");
    let text = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(
        text.contains("--html") && text.contains("does not exist"),
        "{text}"
    );
}
